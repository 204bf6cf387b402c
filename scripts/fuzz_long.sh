#!/usr/bin/env bash
# Long fuzzing run: builds the libFuzzer targets (clang, -DQTTS_FUZZ=ON) and
# runs every fuzz/fuzz_* target in turn for a fixed number of executions,
# each on a temporary copy of its seed corpus (fuzz/corpus/<target>/, plus
# larger seeds made at run time by fuzz/make_seeds.py --runtime) with its
# dictionary (fuzz/dict/<target>.dict) when there is one. Prints one line per
# target (execs, execs/s, crashes, peak RSS, coverage) and "N targets, N
# crashed"; exits 1 if any target crashed (crash/leak/timeout/oom, or
# undefined behaviour: fuzz/sanitizer_options.c makes it fatal).
#
# Usage: scripts/fuzz_long.sh [RUNS] [TARGET...]
#   RUNS                      executions per target (default 1000000; also $QTTS_FUZZ_LONG_RUNS)
#   TARGET                    only these (e.g. fuzz_b64 fuzz_split); default every fuzz/fuzz_*.c
# Environment:
#   QTTS_FUZZ_BUILD           build folder (default build-fuzz)
#   QTTS_FUZZ_RUNS_<target>   runs for one target, e.g. QTTS_FUZZ_RUNS_fuzz_tok_files=300000
#   QTTS_FUZZ_LONG_SECONDS    per-target time cap in seconds (default 0: none; the summary
#                             shows the executions reached)
#   QTTS_FUZZ_JOBS            parallel libFuzzer jobs per target (-jobs/-workers; default 1:
#                             the run splits RUNS among the jobs; more only helps on idle cores)
#   QTTS_FUZZ_WORK            working folder (default a new ${TMPDIR:-/tmp}/qtts-fuzz-long.XXXXXX);
#                             it keeps the grown corpora, logs and crash files
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

runs_default=${QTTS_FUZZ_LONG_RUNS:-1000000}
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then runs_default=$1; shift; fi
only=("$@")
build=${QTTS_FUZZ_BUILD:-build-fuzz}
jobs=${QTTS_FUZZ_JOBS:-1}
seconds=${QTTS_FUZZ_LONG_SECONDS:-0}

targets=()
for src in fuzz/fuzz_*.c; do
  t=$(basename "$src" .c)
  if [ ${#only[@]} -gt 0 ] && [[ ! " ${only[*]} " =~ " $t " ]]; then continue; fi
  targets+=("$t")
done
[ ${#targets[@]} -gt 0 ] || { echo "fuzz_long: no targets"; exit 2; }

command -v clang >/dev/null || { echo "fuzz_long: clang is needed"; exit 2; }
echo "building ${#targets[@]} targets in $build ..."
# only the fuzz targets (and the libraries they link), not the tests
if ! CC=clang cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DQTTS_FUZZ=ON >/dev/null ||
   ! cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target "${targets[@]}" \
     >"$build/fuzz_long_build.log" 2>&1; then
  tail -n 30 "$build/fuzz_long_build.log" 2>/dev/null; echo "fuzz_long: build failed"; exit 2
fi

work=${QTTS_FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/qtts-fuzz-long.XXXXXX")}
mkdir -p "$work/runtime_seeds"
if command -v python3 >/dev/null && ! python3 fuzz/make_seeds.py --runtime "$work/runtime_seeds" 2>"$work/seeds.log"; then
  echo "note: no run-time seeds ($(tail -1 "$work/seeds.log"))"
fi

# Longest input per target: room for its seeds, no more (long inputs are slow).
max_len_of() {
  case $1 in
    fuzz_gguf) echo 16384 ;; # the run-time seed with the tiny model's text files
    fuzz_audio_read) echo 8192 ;; # the WAV seeds; longer audio only slows each run (soxr)
    fuzz_spk_rvq) echo 9000 ;;  # a 2048-value x-vector + the selector byte
    fuzz_config | fuzz_hub_list | fuzz_voice_request) echo 8192 ;;
    fuzz_tokenizer) echo 2048 ;;
    *) echo 4096 ;;
  esac
}

summary=()
n_crashed=0
t_start=$(date +%s)
for t in "${targets[@]}"; do
  bin="$build/fuzz/$t"
  var="QTTS_FUZZ_RUNS_$t"
  runs=${!var:-$runs_default}
  max_len=$(max_len_of "$t")
  corpus="$work/$t/corpus" art="$work/$t/artifacts/" log="$work/$t/fuzz.log"
  mkdir -p "$corpus" "$art"
  [ -d "fuzz/corpus/$t" ] && cp -r "fuzz/corpus/$t/." "$corpus/"
  [ -d "$work/runtime_seeds/$t" ] && cp -r "$work/runtime_seeds/$t/." "$corpus/"
  args=(-runs="$runs" -max_len="$max_len" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1
        -artifact_prefix="$art")
  [ -f "fuzz/dict/$t.dict" ] && args+=(-dict="$root/fuzz/dict/$t.dict")
  [ "$seconds" -gt 0 ] && args+=(-max_total_time="$seconds")
  if [ ! -x "$bin" ]; then
    summary+=("$(printf '%-22s not built' "$t")"); n_crashed=$((n_crashed + 1)); continue
  fi
  echo "== $t: $runs runs, max_len $max_len ($(date +%H:%M:%S))"
  t0=$(date +%s.%N)
  if [ "$jobs" -gt 1 ]; then
    # each job runs its share; libFuzzer keeps each job's output in fuzz-<i>.log
    # (in the current folder) and repeats it on its own output when the job ends
    args[0]=-runs=$(((runs + jobs - 1) / jobs))
    (cd "$work/$t" && "$root/$bin" "${args[@]}" -jobs="$jobs" -workers="$jobs" "$corpus" >"$log" 2>&1)
    rc=$?
  else
    "$bin" "${args[@]}" "$corpus" >"$log" 2>&1
    rc=$?
  fi
  t1=$(date +%s.%N)
  # executions: the final stats (summed over jobs), else the last status line
  execs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
  [ "$execs" = 0 ] && execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  execs=${execs:-0}
  rate=$(awk -v n="$execs" -v a="$t0" -v b="$t1" 'BEGIN {d = b - a; printf("%.0f", (d > 0 ? n / d : 0))}')
  rss=$(sed -n 's/^stat::peak_rss_mb: *\([0-9]*\).*/\1/p' "$log" | sort -n | tail -1)
  [ -z "$rss" ] && rss=$(grep -o 'rss: [0-9]*Mb' "$log" | tail -1 | grep -o '[0-9]*')
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
  crash=$(ls "$art" 2>/dev/null | head -1)
  if [ "$rc" -ne 0 ] || [ -n "$crash" ]; then
    n_crashed=$((n_crashed + 1))
    crashes=${crash:+$art$crash}
    crashes=${crashes:-"exit $rc, see $log"}
    grep -E 'ERROR|runtime error|SUMMARY' "$log" | head -3
  else
    crashes=0
  fi
  summary+=("$(printf '%-22s execs %9s  execs/s %7s  crashes %s  peak RSS %s MB  %s' "$t" "$execs" "$rate" \
    "$crashes" "${rss:-?}" "${cov:-cov: ?}")")
  echo "${summary[-1]}"
done

echo
echo "== summary ($(( $(date +%s) - t_start )) s; work folder $work)"
printf '%s\n' "${summary[@]}"
echo "${#targets[@]} targets, $n_crashed crashed"
[ "$n_crashed" = 0 ]
