#!/bin/sh
# Function count, median length and the longest functions of the C files
# under a folder (default src/), from ctags' function entries and their ends:
#   scripts/function_sizes.sh [DIR] [N longest to list]
dir=${1:-src}
top=${2:-10}
find "$dir" -name '*.c' | sort | xargs ctags --c-kinds=f --fields=+ne -f - 2>/dev/null |
    awk -F'\t' '{ s = e = 0; for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) s = substr($i, 6); if ($i ~ /^end:/) e = substr($i, 5) }
                  if (s && e) print e - s + 1 "\t" $2 ":" s "\t" $1 }' |
    sort -n | awk -v top="$top" -F'\t' '{ n[NR] = $1; row[NR] = $0; if ($1 >= 100) big++; if ($1 >= 60) mid++ }
        END { if (!NR) exit 1; m = NR % 2 ? n[(NR + 1) / 2] : (n[NR / 2] + n[NR / 2 + 1]) / 2
              printf "functions %d, median %s lines, >= 100 lines: %d, >= 60 lines: %d\n", NR, m, big + 0, mid + 0
              for (i = NR; i > NR - top && i > 0; i--) print "  " row[i] }'
