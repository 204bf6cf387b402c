#include "io/spk.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/file.h"

/* Explicit little-endian byte order, whatever the host. */
static void put_f32le(unsigned char *p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    p[0] = (unsigned char)u;
    p[1] = (unsigned char)(u >> 8);
    p[2] = (unsigned char)(u >> 16);
    p[3] = (unsigned char)(u >> 24);
}

static float get_f32le(const unsigned char *p) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

unsigned char *qtts_spk_to_bytes(const float *xvec, int64_t dim, size_t *size, qtts_err *err) {
    if (dim <= 0) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "empty x-vector");
        return NULL;
    }
    unsigned char *buf = qtts_malloc((size_t)dim * 4, err);
    if (!buf) return NULL;
    for (int64_t i = 0; i < dim; i++) put_f32le(buf + 4 * i, xvec[i]);
    *size = (size_t)dim * 4;
    return buf;
}

int qtts_spk_write(const char *path, const float *xvec, int64_t dim, qtts_err *err) {
    if (dim <= 0) return qtts_fail(err, "%s: empty x-vector", path);
    size_t size;
    unsigned char *buf = qtts_spk_to_bytes(xvec, dim, &size, err);
    if (!buf) return -1;
    int rc = qtts_write_file(path, buf, size, err);
    free(buf);
    return rc;
}

float *qtts_spk_from_bytes(const void *data, size_t size, int64_t dim, const char *label, int64_t *out_dim,
                           qtts_err *err) {
    if (!label) label = "speaker vector";
    if (size == 0 || size % 4) {
        qtts_fail(err, "%s: %zu bytes is not a float32 x-vector (size must be a positive multiple of 4)", label,
                  size);
        return NULL;
    }
    int64_t n = (int64_t)(size / 4);
    if (dim > 0 && n != dim) {
        qtts_fail(err, "%s: x-vector has %lld values but the model's talker hidden size is %lld", label,
                  (long long)n, (long long)dim);
        return NULL;
    }
    float *v = qtts_malloc((size_t)n * sizeof(float), err);
    if (!v) return NULL;
    for (int64_t i = 0; i < n; i++) {
        v[i] = get_f32le((const unsigned char *)data + 4 * i);
        if (!isfinite(v[i])) {
            qtts_fail(err, "%s: value %lld is not finite", label, (long long)i);
            free(v);
            return NULL;
        }
    }
    if (out_dim) *out_dim = n;
    return v;
}

float *qtts_spk_read(const char *path, int64_t dim, int64_t *out_dim, qtts_err *err) {
    /* x-vectors are a few KB; refuse anything absurd before allocating */
    char *buf;
    size_t size;
    if (qtts_read_file(path, 1u << 20, &buf, &size, err)) return NULL;
    float *v = qtts_spk_from_bytes((const unsigned char *)buf, size, dim, path, out_dim, err);
    free(buf);
    return v;
}
