/* Option values for the qtts command line: one parser, one message style.
 * Each function parses the whole value (integers in base 10), checks it
 * against [lo, hi] and stores it; otherwise it prints exactly one line
 *     qtts: --opt: expected an integer in [lo, hi], got 'value'
 * ("a number" for cli_float) and returns -1, so the caller exits CLI_USAGE.
 *
 * Header-only on purpose: tests/test_cloning_golden.c compiles
 * cmd_codec_encode.c into itself with only cli_error and cli_model_path, so
 * what that file calls must come with its headers. */
#ifndef QTTS_CLI_ARGS_H
#define QTTS_CLI_ARGS_H

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>

#include "cli/cli.h"

/* Returned by a subcommand's argument parser when the command should go on;
 * any other value is the exit status (CLI_OK after --help, CLI_USAGE). */
enum { CLI_CONTINUE = -1 };

static inline int cli_int(const char *opt, const char *value, long long lo, long long hi, long long *out) {
    const char *v = value ? value : "";
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        cli_error("%s: expected an integer in [%lld, %lld], got '%s'", opt, lo, hi, v);
        return -1;
    }
    *out = x;
    return 0;
}

/* cli_int into an int. */
static inline int cli_int_to(const char *opt, const char *value, int lo, int hi, int *out) {
    long long x;
    if (cli_int(opt, value, lo, hi, &x)) return -1;
    *out = (int)x;
    return 0;
}

/* An unsigned 64-bit integer, [0, UINT64_MAX]; a sign is refused (strtoull would wrap "-1"). */
static inline int cli_u64(const char *opt, const char *value, uint64_t *out) {
    const char *v = value ? value : "", *p = v;
    while (isspace((unsigned char)*p)) p++;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*p == '-' || errno || end == v || *end) {
        cli_error("%s: expected an integer in [0, %" PRIu64 "], got '%s'", opt, UINT64_MAX, v);
        return -1;
    }
    *out = (uint64_t)x;
    return 0;
}

/* A decimal number in [lo, hi] (NaN never passes), stored as float. */
static inline int cli_float(const char *opt, const char *value, double lo, double hi, float *out) {
    const char *v = value ? value : "";
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= lo && d <= hi)) {
        cli_error("%s: expected a number in [%g, %g], got '%s'", opt, lo, hi, v);
        return -1;
    }
    *out = (float)d;
    return 0;
}

#endif
