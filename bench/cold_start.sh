#!/usr/bin/env bash
# Cold start: wall time from exec to the first audio byte of `qtts say`, the
# whole run's wall time and its peak RSS, for a model folder loaded with
# each --quant and for .gguf files made from it by `qtts quantize`; with the
# page cache warm (a run before) and, where this user can drop it (root),
# cold (in a container or VM, drop_caches may only reach part of the host's
# cache: a cold row is then only somewhat slower than the warm one).
#
#   bench/cold_start.sh MODEL_DIR [path/to/qtts]
#   env: QUANTS ("q4_k q8_0") THREADS (all CPUs) FRAMES (10) RUNS (3, the best is kept)
#        GGUF_DIR (where the .gguf files are made, model-TYPE.gguf; one already there is used as it is,
#        so a file made by another qtts can be timed; default: a temporary folder)
#        COLD=0 skips the cold-cache rows
# MODEL_DIR may be made by bench/make_random_folder.sh (random weights at the
# real dimensions). Needs GNU time (/usr/bin/time).
set -euo pipefail
MODEL=${1:?usage: cold_start.sh MODEL_DIR [path/to/qtts]}
QTTS=${2:-build/qtts}
QUANTS=${QUANTS:-"q4_k q8_0"}
FRAMES=${FRAMES:-10}
RUNS=${RUNS:-3}
THREADS=${THREADS:-}
COLD=${COLD:-1}
GGUF_DIR=${GGUF_DIR:-$(mktemp -d)}
[ -x /usr/bin/time ] || { echo "cold_start.sh: needs GNU time at /usr/bin/time" >&2; exit 1; }
[ -x "$QTTS" ] || { echo "cold_start.sh: no qtts binary at $QTTS" >&2; exit 1; }
thr=()
[ -n "$THREADS" ] && thr=(--threads "$THREADS")
can_drop=0
[ "$COLD" = 1 ] && [ -w /proc/sys/vm/drop_caches ] && can_drop=1

# one run: prints "first_ms wall_ms peak_mb"
one() {
    local model=$1; shift
    local tf; tf=$(mktemp)
    local t0; t0=$(date +%s%N)
    /usr/bin/time -f '%e %M' -o "$tf" "$QTTS" say -m "$model" "${thr[@]}" "$@" --greedy --speaker ryan \
        --max-frames "$FRAMES" -q -o - --format pcm "Hello there, this is a cold start." |
        { head -c 1 >/dev/null; echo $(( ($(date +%s%N) - t0) / 1000000 )) > "$tf.first"; cat >/dev/null; }
    local t1; t1=$(date +%s%N)
    read -r _ rss < "$tf"
    echo "$(cat "$tf.first") $(( (t1 - t0) / 1000000 )) $(( rss / 1024 ))"
    rm -f "$tf" "$tf.first"
}

# best of RUNS (by first-byte time): prints "first_ms wall_ms peak_mb"
best() {
    local b="" r
    for _ in $(seq "$RUNS"); do
        r=$(one "$@")
        if [ -z "$b" ] || [ "${r%% *}" -lt "${b%% *}" ]; then b=$r; fi
    done
    echo "$b"
}

cold() {
    sync; echo 3 > /proc/sys/vm/drop_caches
    one "$@"
}

row() { # label cache first wall rss [load]: the 1-minute load average when the row was measured (a shared box)
    printf '| %-28s | %-5s | %8s | %8s | %8s | %6s |\n' "$1" "$2" "$3" "$4" "$5" "${6:-$(cut -d' ' -f1 /proc/loadavg)}"
}

echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, threads ${THREADS:-all}, $FRAMES frames, $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null || echo '?')"
row "source" "cache" "first ms" "wall ms" "peak MB" "load"
row "---" "---" "---:" "---:" "---:" "---:"
for q in $QUANTS; do
    one "$MODEL" --quant "$q" >/dev/null # warm the page cache
    read -r f w m <<<"$(best "$MODEL" --quant "$q")"
    row "folder --quant $q" warm "$f" "$w" "$m"
    if [ "$can_drop" = 1 ]; then read -r f w m <<<"$(cold "$MODEL" --quant "$q")"; row "folder --quant $q" cold "$f" "$w" "$m"; fi
    g="$GGUF_DIR/model-$q.gguf"
    [ -f "$g" ] || "$QTTS" quantize "$MODEL" -o "$g" --type "$q" >/dev/null
    one "$g" >/dev/null
    read -r f w m <<<"$(best "$g")"
    row "$q .gguf" warm "$f" "$w" "$m"
    if [ "$can_drop" = 1 ]; then read -r f w m <<<"$(cold "$g")"; row "$q .gguf" cold "$f" "$w" "$m"; fi
done
