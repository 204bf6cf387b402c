#!/usr/bin/env bash
# Installs what the ARM64 cross build and its emulated tests need on a
# Debian/Ubuntu x86-64 host: the cross compiler, qemu's user-mode emulator
# and the arm64 (multiarch) -dev packages of qtts's dependencies.
set -euo pipefail
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO dpkg --add-architecture arm64
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static \
  libcjson-dev:arm64 libpcre2-dev:arm64 libutf8proc-dev:arm64 libicu-dev:arm64 libsndfile1-dev:arm64 libsoxr-dev:arm64 \
  libavcodec-dev:arm64 libavformat-dev:arm64 libavutil-dev:arm64 \
  libmicrohttpd-dev:arm64 librubberband-dev:arm64 libssl-dev:arm64 libcurl4-openssl-dev:arm64 \
  libavahi-client-dev:arm64 libzip-dev:arm64 libxml2-dev:arm64 >/dev/null
