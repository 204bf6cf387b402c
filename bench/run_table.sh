#!/usr/bin/env bash
# Runs `qtts bench` (random weights at the real dimensions) for 0.6B and 1.7B
# at f32 / bf16 / q8_0 / q4_k, 1 stream and a batch of 8, and prints Markdown
# tables (wall-clock figures, then engine-thread CPU-time figures).
#
#   bench/run_table.sh [path/to/qtts]
#   env: FRAMES (24) RUNS (2) BATCH (8) THREADS (all CPUs) SIZES ("0.6b 1.7b")
#        QUANTS ("f32 bf16 q8_0 q4_k") DECODERS ("auto"; e.g. "auto f32 winograd bf16": the
#        decoder precision of each row) OUT (folder for the JSON of each run)
#        REUSE=1: keep the JSON already in OUT (only print the tables)
#        (the "1-thread bw" columns: each row's GB/s against its own 1-thread probe, the limit of
#        LM steps that run beside the decoder)
#        BW_GBS / PEAK_GFLOPS: the limits the % columns use (default: the
#        median of the rows' probe figures for the threads used)
#
# Needs jq. 1.7B f32 holds ~7 GB of random weights: it is skipped (and the
# table says so) when MemAvailable is under 10 GB.
set -euo pipefail

QTTS=${1:-build/qtts}
FRAMES=${FRAMES:-24}
RUNS=${RUNS:-2}
BATCH=${BATCH:-8}
THREADS=${THREADS:-}
SIZES=${SIZES:-"0.6b 1.7b"}
QUANTS=${QUANTS:-"f32 bf16 q8_0 q4_k"}
DECODERS=${DECODERS:-auto}
OUT=${OUT:-$(mktemp -d)}

command -v jq >/dev/null || { echo "run_table.sh: needs jq" >&2; exit 1; }
[ -x "$QTTS" ] || { echo "run_table.sh: no qtts binary at $QTTS (build first or pass its path)" >&2; exit 1; }
mkdir -p "$OUT"

avail_kb=$(awk '/MemAvailable/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)
thr_arg=()
[ -n "$THREADS" ] && thr_arg=(--threads "$THREADS")
skipped=()
start=$(date +%s)
for size in $SIZES; do
    for q in $QUANTS; do
      for dec in $DECODERS; do
        f="$OUT/$size-$q-$dec.json"
        [ "${REUSE:-0}" = 1 ] && [ -s "$f" ] && continue
        if [ "$size" = "1.7b" ] && [ "$q" = "f32" ] && [ "$avail_kb" -lt 10000000 ]; then
            skipped+=("$size $q (MemAvailable $((avail_kb / 1024)) MB < 10 GB)")
            continue
        fi
        cmd=("$QTTS" bench --size "$size" --quant "$q" --decoder-precision "$dec" --frames "$FRAMES" --batch "$BATCH"
             --runs "$RUNS" "${thr_arg[@]}" --json)
        echo "# ${cmd[*]}" >&2
        if ! "${cmd[@]}" > "$f"; then
            echo "run_table.sh: $size $q decoder $dec failed" >&2
            rm -f "$f"
        fi
      done
    done
done
elapsed=$(( $(date +%s) - start ))

files=()
for size in $SIZES; do
    for q in $QUANTS; do
        for dec in $DECODERS; do
            [ -s "$OUT/$size-$q-$dec.json" ] && files+=("$OUT/$size-$q-$dec.json")
        done
    done
done
[ ${#files[@]} -gt 0 ] || { echo "run_table.sh: no successful run" >&2; exit 1; }

first=${files[0]}
read -r jf jb jr jt jisa < <(jq -r '"\(.frames) \(.batch) \(.runs) \(.threads) \(.isa)"' "$first")
echo "Command per row: \`qtts bench --size SIZE --quant TYPE --decoder-precision P --frames $jf --batch $jb --runs $jr --threads $jt --json\`"
echo "(random weights at the real dimensions, CustomVoice, $jt thread(s), kernels $jisa; best of $jr run(s) per figure${REUSE:+}$([ "${REUSE:-0}" = 1 ] || echo "; total ${elapsed} s"))"
echo
jq -rs '"Machine limits (probe, best over the rows): read " + (map(.read_gbs_1) | max * 10 | round / 10 | tostring) +
  " GB/s on 1 thread, " + (map(.read_gbs_all) | max * 10 | round / 10 | tostring) + " GB/s on " +
  (.[0].probe_threads | tostring) + " thread(s); f32 FMA peak " + (map(.fma_gflops_1) | max | round | tostring) +
  " GFLOP/s on 1 thread, " + (map(.fma_gflops_all) | max | round | tostring) + " on " + (.[0].probe_threads | tostring) + "."' "${files[@]}"
echo
med='sort | .[length / 2 | floor]'
BW=${BW_GBS:-$(jq -s "map(.bw_gbs) | $med" "${files[@]}")}
PK=${PEAK_GFLOPS:-$(jq -s "map(.peak_gflops) | $med" "${files[@]}")}
printf 'The %% columns use %.1f GB/s and %.0f GFLOP/s (a bf16 decoder: its own run'"'"'s bf16 dot-product peak; a Winograd decoder counts the direct convolution'"'"'s FLOPs, so it can pass 100).\n\n' "$BW" "$PK"
echo "Wall clock (best of the runs):"
echo
echo "| model | weights | decoder | prefill ms | talker ms/step | CP ms/frame | decoder ms/frame | RTF | RTF steady | TTFA ms | ${jb}-stream xRT | RSS MB after load | peak RSS MB synthesizing | talker % bw | CP % bw | talker % 1-thread bw | CP % 1-thread bw | decoder % peak |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
jq -rs --argjson bw "$BW" --argjson pk "$PK" '.[] |
       [.model, .quant, (.decoder_precision // "f32"), (.prefill_ms|round), (.talker_ms*10|round/10), (.cp_ms*10|round/10),
        (.decoder_ms*10|round/10), (.rtf*1000|round/1000), (.rtf_steady*1000|round/1000), (.ttfa_ms|round),
        (.aggregate_xrt*100|round/100), (.rss_loaded_mb|round), (.peak_rss_mb|round), (100*.talker_gbs/$bw|round),
        (100*.cp_gbs/$bw|round),
        (if .read_gbs_1 > 0 then 100*.talker_gbs/.read_gbs_1|round else "-" end),
        (if .read_gbs_1 > 0 then 100*.cp_gbs/.read_gbs_1|round else "-" end),
        (if (.decoder_precision // "f32") == "bf16" then .decoder_pct_peak else 100*.decoder_gflops/$pk end | round)]
       | "| " + (map(tostring) | join(" | ")) + " |"' "${files[@]}"
echo
echo "Engine-thread CPU time (what the work costs when the thread is not preempted; exact with 1 thread,"
echo "with more it also counts the engine thread's waits for the others):"
echo
echo "| model | weights | prefill ms | talker ms/step | CP ms/frame | decoder ms/frame | RTF steady | TTFA ms | ${jb}-stream xRT | talker GB/s (% bw) | CP GB/s (% bw) | decoder GFLOP/s (% peak) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
jq -rs --argjson bw "$BW" --argjson pk "$PK" '.[] |
       [.model, .quant, (.prefill_cpu_ms|round), (.talker_cpu_ms*10|round/10), (.cp_cpu_ms*10|round/10),
        (.decoder_cpu_ms*10|round/10), (.rtf_steady_cpu*1000|round/1000), (.ttfa_cpu_ms|round),
        (.aggregate_xrt_cpu*100|round/100),
        ((.talker_gbs_cpu*10|round/10|tostring) + " (" + (100*.talker_gbs_cpu/$bw|round|tostring) + "%)"),
        ((.cp_gbs_cpu*10|round/10|tostring) + " (" + (100*.cp_gbs_cpu/$bw|round|tostring) + "%)"),
        ((.decoder_gflops_cpu|round|tostring) + " (" +
         (if (.decoder_precision // "f32") == "bf16" then .decoder_pct_peak_cpu else 100*.decoder_gflops_cpu/$pk end
          | round | tostring) + "%)")]
       | "| " + (map(tostring) | join(" | ")) + " |"' "${files[@]}"
for s in "${skipped[@]}"; do echo; echo "Skipped: $s."; done
echo
echo "JSON of each run: $OUT"
