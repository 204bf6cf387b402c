#!/usr/bin/env bash
# Builds qtts twice (release, and ASan+UBSan) and runs the whole test suite in
# both, the AVX-512 kernel and golden tests with SIMDe (QTTS_EMU512=0 skips
# them) and the ARM64 ones under qemu (QTTS_ARM64=0 skips them), the Python
# package's tests on the release library (QTTS_PYTHON=0 skips them), then the
# bounded fuzz runs, and the Vulkan kernel tests on the machine's Vulkan
# device with the validation layer (QTTS_VULKAN=0 skips them). Ends with one
# line "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
passed=0; failed=0
fail_log=$(mktemp /tmp/qtts_fail.XXXXXX)

build_tree() { # dir label cmake-args...: configure + one build (warnings shown; there should be none)
  local dir=$1 label=$2; shift 2
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null || { echo "$label: configure failed"; failed=$((failed+1)); return 1; }
  if ! cmake --build "$dir" -j"$jobs" >"$dir/build.log" 2>&1; then
    tail -n 30 "$dir/build.log"; echo "$label: build failed"; failed=$((failed+1)); return 1
  fi
  grep -E "warning|error" "$dir/build.log" || true
}

# The test programs that exercise the kernels (and the golden models on them),
# run again where another kernel family is emulated.
kernel_tests="linear conv conv1d_pad quant ops mel sampler talker_golden talker_batch engine_golden cloning_golden encoder"

run_ctest() { # dir label ctest-args...: runs and counts the test programs
  local dir=$1 label=$2; shift 2
  local out
  out=$(cd "$dir" && ctest --output-on-failure -j"$jobs" "$@" 2>&1)
  echo "$out" | tail -n 40
  # the failing checks themselves, repeated at the end (CI shows the tail)
  echo "$out" | grep -E "^(FAIL |==[0-9]+==ERROR|.*runtime error:)" | head -n 20 | sed "s|^|[$label] |" >>"$fail_log" || true
  local total fail
  total=$(echo "$out" | sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' | tail -1)
  fail=$(echo "$out" | sed -n 's/.* \([0-9]*\) tests failed out of.*/\1/p' | tail -1)
  total=${total:-0}; fail=${fail:-0}
  [ "$total" = 0 ] && { echo "$label: no tests ran"; failed=$((failed+1)); return; }
  passed=$((passed + total - fail)); failed=$((failed + fail))
  echo "== $label: $((total - fail)) of $total test programs passed"
}

run_suite() { # dir label cmake-args...
  local dir=$1 label=$2
  build_tree "$@" && run_ctest "$dir" "$label"
}

# ARM64: cross-built, the kernel and golden test programs under qemu-aarch64
# (scripts/deps_arm64.sh installs the tools). "max" has dotprod, bf16 and i8mm,
# so every NEON path runs; a Cortex-A53 has none of them, so the fallbacks run.
# Tests that start the qtts binary (label cli) or a server stay native.
run_arm64() {
  if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64-static >/dev/null; then
    if [ "${QTTS_REQUIRE_ARM64:-0}" = 1 ]; then
      echo "arm64: aarch64-linux-gnu-gcc or qemu-aarch64-static missing (scripts/deps_arm64.sh)"; failed=$((failed+1))
    else
      echo "SKIP arm64: no cross compiler or qemu-aarch64-static (scripts/deps_arm64.sh installs them)"
    fi
    return
  fi
  build_tree build-arm64 "arm64 cross build" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake || return
  # test_incremental_text checks engine-thread timing (not kernels) and takes many minutes emulated
  QEMU_CPU=max run_ctest build-arm64 "arm64 qemu -cpu max" -L "unit|golden" -LE cli -E "test_incremental_text"
  QEMU_CPU=cortex-a53 run_ctest build-arm64 "arm64 qemu -cpu cortex-a53 (no dotprod/bf16)" \
    -R "^test_(${kernel_tests// /|})$"
  # the kernels built by clang too (its arm_neon.h and code generation differ from gcc's)
  if command -v clang >/dev/null; then
    if cmake -S . -B build-arm64-clang -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
         -DQTTS_CROSS_CLANG=ON >/dev/null && \
       cmake --build build-arm64-clang -j"$jobs" --target test_linear test_conv >build-arm64-clang/build.log 2>&1; then
      grep -E "warning|error" build-arm64-clang/build.log || true
      QEMU_CPU=max run_ctest build-arm64-clang "arm64 clang, qemu -cpu max" -R "^test_(linear|conv)$"
    else
      tail -n 30 build-arm64-clang/build.log; echo "arm64 clang build failed"; failed=$((failed+1))
    fi
  fi
}

# AVX-512: the kernels compiled against SIMDe and reported as supported, so
# their twin tests (every AVX-512 path against its scalar twin, bit for bit
# where the twins promise it) run on a CPU without AVX-512 too. Only the
# kernel and golden tests: the rest does not depend on the kernel family.
run_emu512() {
  case "$(uname -m)" in x86_64|amd64) ;; *) return ;; esac
  if [ ! -f /usr/include/simde/x86/avx512.h ]; then
    if [ "${QTTS_REQUIRE_EMU512:-0}" = 1 ]; then
      echo "emulated avx512: SIMDe missing (scripts/deps.sh installs libsimde-dev)"; failed=$((failed+1))
    else
      echo "SKIP emulated avx512: no SIMDe (scripts/deps.sh installs libsimde-dev)"
    fi
    return
  fi
  local tests="$kernel_tests codec_decoder"
  local targets="" t
  for t in $tests; do targets="$targets test_$t"; done
  cmake -S . -B build-emu512 -DCMAKE_BUILD_TYPE=Release -DQTTS_EMULATE_AVX512=ON >/dev/null || {
    echo "emulated avx512: configure failed"; failed=$((failed+1)); return; }
  # shellcheck disable=SC2086
  if ! cmake --build build-emu512 -j"$jobs" --target $targets >build-emu512/build.log 2>&1; then
    tail -n 30 build-emu512/build.log; echo "emulated avx512: build failed"; failed=$((failed+1)); return
  fi
  grep -E "warning|error" build-emu512/build.log || true
  run_ctest build-emu512 "avx512 emulated (SIMDe)" -R "^test_(${tests// /|})$"
}

# The Python package (python/): its pytest suite against the release build's libqtts, with the system's
# python3 and Debian's numpy/pytest/setuptools/wheel (scripts/deps.sh); it also builds a wheel and installs
# it into a fresh venv.
run_python() {
  local py=${QTTS_PYTHON_BIN:-/usr/bin/python3}
  [ -x "$py" ] || py=$(command -v python3 || echo python3)
  if ! "$py" -c "import numpy, pytest, setuptools, wheel, venv" 2>/dev/null; then
    if [ "${QTTS_REQUIRE_PYTHON:-0}" = 1 ]; then
      echo "python: $py lacks numpy, pytest, setuptools, wheel or venv (scripts/deps.sh)"; failed=$((failed+1))
    else
      echo "SKIP python: $py lacks numpy, pytest, setuptools, wheel or venv (scripts/deps.sh installs them)"
    fi
    return
  fi
  [ -f build/libqtts.so ] || { echo "python: no build/libqtts.so"; failed=$((failed+1)); return; }
  local out ok bad
  out=$(QTTS_LIBRARY="$PWD/build/libqtts.so" PYTHONPATH="$PWD/python" "$py" -m pytest -q -p no:cacheprovider \
        python/tests 2>&1)
  echo "$out" | tail -n 30
  echo "$out" | grep -E "^(FAILED|ERROR) " | head -n 20 | sed "s/^/[python] /" >>"$fail_log" || true
  ok=$(echo "$out" | tail -n 1 | sed -n 's/\(^\|.* \)\([0-9]*\) passed.*/\2/p')
  bad=$(echo "$out" | tail -n 1 | grep -oE "[0-9]+ (failed|error)" | awk '{s += $1} END {print s + 0}')
  ok=${ok:-0}
  if [ "$ok" = 0 ] && [ "$bad" = 0 ]; then echo "python: no tests ran"; failed=$((failed+1)); return; fi
  passed=$((passed + ok)); failed=$((failed + bad))
  echo "== python: $ok passed, $bad failed"
}

# Vulkan: the GPU kernel tests (label gpu) of the release build on whatever
# Vulkan device there is (CI: Mesa's lavapipe, a Vulkan 1.3 device on the CPU),
# with the Khronos validation layer on and its errors counted as failures.
# The release build has the backend where libvulkan-dev and glslc are found.
run_vulkan() {
  local why=""
  if ! grep -q "^QTTS_VULKAN:BOOL=ON" build/CMakeCache.txt 2>/dev/null; then
    why="the release build has no Vulkan backend (libvulkan-dev, glslc: scripts/deps.sh)"
  elif ! ls /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json >/dev/null 2>&1; then
    why="no Vulkan validation layer (vulkan-validationlayers)"
  fi
  if [ -n "$why" ]; then
    if [ "${QTTS_REQUIRE_VULKAN:-0}" = 1 ]; then echo "vulkan: $why"; failed=$((failed+1)); else echo "SKIP vulkan: $why"; fi
    return
  fi
  if ! build/qtts info --devices; then
    if [ "${QTTS_REQUIRE_VULKAN:-0}" = 1 ]; then echo "vulkan: no device"; failed=$((failed+1)); else echo "SKIP vulkan: no device"; fi
    return
  fi
  QTTS_VULKAN_VALIDATE=1 QTTS_REQUIRE_VULKAN=${QTTS_REQUIRE_VULKAN:-0} run_ctest build "vulkan (validation layer on)" -L gpu
}

run_suite build "release"
[ "${QTTS_VULKAN:-1}" = 0 ] || run_vulkan
[ "${QTTS_PYTHON:-1}" = 0 ] || run_python
[ "${QTTS_EMU512:-1}" = 0 ] || run_emu512
[ "${QTTS_ARM64:-1}" = 0 ] || run_arm64
# the soak at lower volume under the sanitizers (which slow it several times); the device tests that repeat
# the host paths of test_gpu_engine and test_gpu_decoder over more weight types, texts or through the CLI (1-3 min
# each in release on lavapipe, several times that under the sanitizers) run in the release and validation passes only.
# The device tests run without the leak check: on some Debian 12 machines Mesa's Vulkan loader/driver stack leaks
# 128 bytes when an instance is made (`qtts info --devices` alone shows it), from a library unloaded by exit, so
# LeakSanitizer reports it as "<unknown module>" and no suppression can name it.
if build_tree build-asan "asan+ubsan" -DQTTS_SANITIZE=ON; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 QTTS_SOAK_REQUESTS=300 \
    run_ctest build-asan "asan+ubsan" -LE "^gpu$"
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
    run_ctest build-asan "asan+ubsan, device tests" -L "^gpu$" \
    -E "^test_(gpu_quant|gpu_quant_scalar|gpu_cli_codec|incremental_text_vulkan)$"
fi

if command -v clang >/dev/null && [ -f fuzz/CMakeLists.txt ]; then
  if CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Release -DQTTS_FUZZ=ON >/dev/null && \
     cmake --build build-fuzz -j"$jobs" >/dev/null 2>&1; then
    fuzz_log=$(mktemp /tmp/qtts_fuzz.XXXXXX)
    for f in build-fuzz/fuzz/fuzz_*; do
      [ -x "$f" ] || continue
      # seeds and dictionary when the target has them; new inputs go to a
      # scratch folder (the first corpus argument), never into fuzz/corpus
      name=$(basename "$f"); seeds=(); dict=()
      [ -d "fuzz/corpus/$name" ] && seeds=("$(mktemp -d /tmp/qtts_fuzz_corpus.XXXXXX)" "fuzz/corpus/$name")
      [ -f "fuzz/dict/$name.dict" ] && dict=(-dict="fuzz/dict/$name.dict")
      if "$f" -runs="${QTTS_FUZZ_RUNS:-20000}" -max_total_time="${QTTS_FUZZ_SECONDS:-60}" -max_len=4096 -seed=1 \
           -artifact_prefix="${TMPDIR:-/tmp}/qtts_fuzz_${name}_" \
           ${dict[@]+"${dict[@]}"} ${seeds[@]+"${seeds[@]}"} >"$fuzz_log" 2>&1; then
        echo "  ok   fuzz $name"; passed=$((passed+1))
      else
        echo "FAIL fuzz $name"; tail -30 "$fuzz_log"; failed=$((failed+1))
      fi
      [ ${#seeds[@]} -gt 0 ] && rm -rf "${seeds[0]}"
    done
    rm -f "$fuzz_log"
  else
    echo "fuzz: build failed"; failed=$((failed+1))
  fi
fi

if [ -s "$fail_log" ]; then echo "failing checks:"; cat "$fail_log"; fi
rm -f "$fail_log"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
