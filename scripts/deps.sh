#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages qtts needs to build and test.
set -euo pipefail
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config clang libclang-rt-dev \
  libsndfile1-dev libsoxr-dev libpcre2-dev libutf8proc-dev libcjson-dev libmicrohttpd-dev librubberband-dev \
  libcurl4-openssl-dev curl ca-certificates >/dev/null
