#!/usr/bin/env bash
# Installs a build into a scratch prefix and checks that a C program compiles
# and links against libqtts with nothing but pkg-config, statically and against
# the shared library (which must export only the qtts.h API), then runs both
# and the installed binary.   usage: scripts/check_install.sh BUILD_DIR [PREFIX]
# EXTRA_CFLAGS / EXTRA_LDFLAGS are added to the compile (e.g. sanitizer flags
# when BUILD_DIR is a sanitizer build).
set -euo pipefail
build=${1:?usage: check_install.sh BUILD_DIR [PREFIX]}
prefix=${2:-}
cleanup=""
if [ -z "$prefix" ]; then prefix=$(mktemp -d /tmp/qtts_install.XXXXXX); cleanup=$prefix; fi
trap '[ -n "$cleanup" ] && rm -rf "$cleanup"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/qtts lib/libqtts.a lib/libqtts.so include/qtts.h lib/pkgconfig/qtts.pc; do
  [ -e "$prefix/$f" ] || { echo "check_install: $f was not installed" >&2; exit 1; }
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
pkg-config --exists --print-errors qtts
[ "$(pkg-config --variable=includedir qtts)" -ef "$prefix/include" ] || {
  echo "check_install: qtts.pc points at $(pkg-config --variable=includedir qtts), not $prefix/include" >&2; exit 1; }

# The shared library exports the public API and nothing else.
exported=$(nm -D --defined-only "$prefix/lib/libqtts.so" | awk '$2 == "T" {print $3}' | sort)
if echo "$exported" | grep -v '^qtts_' >/dev/null; then
  echo "check_install: libqtts.so exports non-qtts symbols:" $(echo "$exported" | grep -v '^qtts_' | head) >&2; exit 1
fi
declared=$(grep -o 'QTTS_API [^(]*(' "$prefix/include/qtts.h" | grep -o 'qtts_[a-z0-9_]*($' | tr -d '(' | sort)
if [ "$exported" != "$declared" ]; then
  echo "check_install: libqtts.so exports differ from qtts.h:" >&2
  diff <(echo "$declared") <(echo "$exported") >&2 || true
  exit 1
fi

cat >"$prefix/hello.c" <<'C'
#include <qtts.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    if (strcmp(qtts_version(), QTTS_VERSION)) { fprintf(stderr, "header/library version mismatch\n"); return 1; }
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = "/nonexistent/qtts-model";
    qtts_error err = {0};
    qtts_engine *e = qtts_engine_create(&p, &err);
    if (e || !err.message[0] || err.status != QTTS_ERR_MODEL) {
        fprintf(stderr, "expected a model error for a missing model\n");
        return 1;
    }
    printf("qtts %s linked; engine error as expected (%s): %s\n", qtts_version(), qtts_status_name(err.status),
           err.message);
    return 0;
}
C
# shellcheck disable=SC2046
${CC:-cc} ${EXTRA_CFLAGS:-} "$prefix/hello.c" -o "$prefix/hello_static" -I"$prefix/include" \
  "$prefix/lib/libqtts.a" $(pkg-config --libs-only-L --libs-only-l qtts | sed 's/-lqtts//') ${EXTRA_LDFLAGS:-}
"$prefix/hello_static"
# shellcheck disable=SC2046
${CC:-cc} ${EXTRA_CFLAGS:-} "$prefix/hello.c" -o "$prefix/hello_shared" $(pkg-config --cflags --libs qtts) \
  -Wl,-rpath,"$prefix/lib" ${EXTRA_LDFLAGS:-}
"$prefix/hello_shared"
# (grep without -q: an early exit would SIGPIPE ldd and fail the pipeline under pipefail)
ldd "$prefix/hello_shared" | grep "$prefix/lib/libqtts.so" >/dev/null || {
  echo "check_install: hello_shared does not use the installed libqtts.so" >&2; exit 1; }
"$prefix/bin/qtts" --version >/dev/null
echo "check_install: ok (static and shared) in $prefix"
