#!/bin/sh
# Puts the qtts source (this git tree's HEAD) in qtts/src, the App's build
# context, so the folder can be copied to Home Assistant's /addons (a local
# App) or pushed as an App repository.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
top="$(git -C "$here" rev-parse --show-toplevel)"
rm -rf "$here/qtts/src"
mkdir -p "$here/qtts/src"
git -C "$top" archive HEAD | tar -x -C "$here/qtts/src" --exclude=deploy
echo "qtts source of $(git -C "$top" rev-parse --short HEAD) in $here/qtts/src"
