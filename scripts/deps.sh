#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages qtts needs to build and test.
set -euo pipefail
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# strace: tests/test_server_faults checks the voice write protocol's syscall order with it (SKIP without it)
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config clang libclang-rt-dev \
  libsndfile1-dev libsoxr-dev libpcre2-dev libutf8proc-dev libicu-dev libcjson-dev libmicrohttpd-dev librubberband-dev libavahi-client-dev \
  libavcodec-dev libavformat-dev libavutil-dev ffmpeg libzip-dev libxml2-dev \
  libcurl4-openssl-dev libssl-dev curl ca-certificates \
  nginx strace >/dev/null
# Python: the package (python/) and its tests, built and installed offline; numpy also writes the other-layout test files (tests/layouts)
$SUDO apt-get install -y -qq --no-install-recommends \
  python3 python3-numpy python3-pytest python3-setuptools python3-wheel python3-pip python3-venv >/dev/null
# PyYAML: the lint of the Home Assistant App's files (tests/ha_app_lint.py)
$SUDO apt-get install -y -qq --no-install-recommends python3-yaml >/dev/null
# Vulkan: the GPU backend builds where the loader and glslc are found; its tests run on Mesa's lavapipe
# (mesa-vulkan-drivers, a Vulkan device on the CPU) with the Khronos validation layer
$SUDO apt-get install -y -qq --no-install-recommends \
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers >/dev/null
# SIMDe: the AVX-512 kernels' twin tests run emulated on CPUs without AVX-512 (scripts/test.sh)
case "$(uname -m)" in x86_64|amd64) $SUDO apt-get install -y -qq --no-install-recommends libsimde-dev >/dev/null ;; esac
# Optional: node + the official openai npm package for tests/test_server_openai
# (that test prints SKIP without them). Never fails the install.
if ! command -v node >/dev/null 2>&1; then
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null 2>&1 || echo "deps: nodejs/npm not installed"
fi
# openai 7.x (the first major with audio.voices) needs node >= 22; Debian 12's node 18 gets 4.x, and the
# test then creates voices with fetch + FormData instead. ws: the WebSocket client where node has none built in.
node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
openai_pkg=openai@4
[ "$node_major" -ge 22 ] 2>/dev/null && openai_pkg=openai@7
[ "$node_major" = 20 ] && openai_pkg=openai@7 # works on 20 (tested), though it declares >= 22
if command -v npm >/dev/null 2>&1 && ! npm ls -g "$openai_pkg" >/dev/null 2>&1; then
  $SUDO npm install -g --silent "$openai_pkg" >/dev/null 2>&1 || echo "deps: npm install -g $openai_pkg failed"
fi
if command -v npm >/dev/null 2>&1 && ! npm ls -g ws@8 >/dev/null 2>&1; then
  $SUDO npm install -g --silent ws@8 >/dev/null 2>&1 || echo "deps: npm install -g ws@8 failed"
fi
# Optional: Chromium + puppeteer-core (drives the system browser, downloads none) for
# tests/test_web_page (that test prints a SKIP banner without them). Never fails the install.
if ! command -v chromium >/dev/null 2>&1; then
  $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 || echo "deps: chromium not installed"
fi
if command -v npm >/dev/null 2>&1 && ! npm ls -g puppeteer-core@24 >/dev/null 2>&1; then
  $SUDO npm install -g --silent puppeteer-core@24 >/dev/null 2>&1 || echo "deps: npm install -g puppeteer-core@24 failed"
fi
