#!/usr/bin/env bash
# Installs a build into a scratch prefix and checks that a C program compiles
# and links against libqtts with nothing but pkg-config, then runs it and the
# installed binary.   usage: scripts/check_install.sh BUILD_DIR [PREFIX]
# EXTRA_CFLAGS / EXTRA_LDFLAGS are added to the compile (e.g. sanitizer flags
# when BUILD_DIR is a sanitizer build).
set -euo pipefail
build=${1:?usage: check_install.sh BUILD_DIR [PREFIX]}
prefix=${2:-}
cleanup=""
if [ -z "$prefix" ]; then prefix=$(mktemp -d /tmp/qtts_install.XXXXXX); cleanup=$prefix; fi
trap '[ -n "$cleanup" ] && rm -rf "$cleanup"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/qtts lib/libqtts.a include/qtts.h lib/pkgconfig/qtts.pc; do
  [ -f "$prefix/$f" ] || { echo "check_install: $f was not installed" >&2; exit 1; }
done
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
pkg-config --exists --print-errors qtts
[ "$(pkg-config --variable=includedir qtts)" -ef "$prefix/include" ] || {
  echo "check_install: qtts.pc points at $(pkg-config --variable=includedir qtts), not $prefix/include" >&2; exit 1; }

# With the public engine API implemented, link against it; before that, use
# internal entry points that pull in every dependency (sndfile, curl, crypto).
# (grep without -q: an early exit would SIGPIPE nm and fail the pipeline under pipefail)
if nm "$prefix/lib/libqtts.a" 2>/dev/null | grep ' T qtts_engine_create$' >/dev/null; then mode=engine; else mode=internal; fi
cat >"$prefix/hello.c" <<'C'
#include <qtts.h>
#include <stdio.h>
#include <string.h>
#ifdef USE_ENGINE
int main(void) {
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = "/nonexistent/qtts-model";
    char err[512] = "";
    qtts_engine *e = qtts_engine_create(&p, err, sizeof err);
    if (e || !err[0]) { fprintf(stderr, "expected a clear error for a missing model\n"); return 1; }
    printf("qtts %s linked; engine error as expected: %s\n", QTTS_VERSION, err);
    return 0;
}
#else
typedef struct { char msg[512]; } err_t;
void qtts_sha256_hex(const void *data, size_t n, char hex[65]);
int qtts_audio_format_parse(const char *name, int *out, err_t *err);
int qtts_download_repo(const char *repo, const char *dir, const void *opts, void *stats, err_t *err);
int main(void) {
    char hex[65];
    err_t e;
    int fmt;
    qtts_sha256_hex("abc", 3, hex);
    if (strncmp(hex, "ba7816bf", 8) || qtts_audio_format_parse("flac", &fmt, &e)) return 1;
    if (qtts_download_repo(NULL, NULL, NULL, NULL, &e) != -1) return 1;
    printf("qtts %s linked (internal symbols; engine API not in this build yet)\n", QTTS_VERSION);
    return 0;
}
#endif
C
def=""; [ $mode = engine ] && def="-DUSE_ENGINE"
# shellcheck disable=SC2046
${CC:-cc} ${EXTRA_CFLAGS:-} $def "$prefix/hello.c" -o "$prefix/hello" $(pkg-config --cflags --libs qtts) ${EXTRA_LDFLAGS:-}
"$prefix/hello"
"$prefix/bin/qtts" --version >/dev/null
echo "check_install: ok ($mode) in $prefix"
