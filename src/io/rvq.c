#include "io/rvq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/file.h"

/* 64 MiB of codes is about 800 hours of audio: larger is not a code file. */
#define MAX_RVQ_FILE_BYTES ((size_t)64 << 20)

size_t qtts_rvq_size(int64_t n_q, int64_t T) { return (size_t)((n_q * T * QTTS_RVQ_BITS + 7) / 8); }

static int check_nq(int64_t n_q, qtts_err *err) {
    if (n_q <= 0 || (n_q * QTTS_RVQ_BITS) % 8)
        return qtts_fail(err, "rvq: %lld codebooks do not fill whole bytes per frame (need a multiple of 8)",
                         (long long)n_q);
    return 0;
}

int qtts_rvq_pack(const int32_t *codes, int64_t n_q, int64_t T, unsigned char *buf, qtts_err *err) {
    if (check_nq(n_q, err)) return -1;
    memset(buf, 0, qtts_rvq_size(n_q, T));
    for (int64_t q = 0; q < n_q; q++)
        for (int64_t t = 0; t < T; t++) {
            int32_t c = codes[t * n_q + q];
            if (c < 0 || c >= (1 << QTTS_RVQ_BITS))
                return qtts_fail(err, "rvq: code %d (frame %lld, codebook %lld) does not fit in %d bits", c,
                                 (long long)t, (long long)q, QTTS_RVQ_BITS);
            uint64_t bit = (uint64_t)(q * T + t) * QTTS_RVQ_BITS;
            for (int b = 0; b < QTTS_RVQ_BITS; b++, bit++)
                if (c >> b & 1) buf[bit / 8] |= (unsigned char)(1u << (bit % 8));
        }
    return 0;
}

int qtts_rvq_unpack(const unsigned char *buf, size_t size, int64_t n_q, int64_t codebook_size, const char *label,
                    int32_t **codes_out, int64_t *T_out, qtts_err *err) {
    *codes_out = NULL;
    *T_out = 0;
    if (check_nq(n_q, err)) return qtts_fail_prefix(err, "%s", label);
    size_t per_frame = (size_t)(n_q * QTTS_RVQ_BITS / 8);
    if (size == 0) return qtts_fail(err, "%s: empty .rvq file (no frames)", label);
    if (size % per_frame)
        return qtts_fail(err, "%s: size %zu bytes is not a multiple of %zu bytes per frame (%lld codebooks x %d bits)",
                         label, size, per_frame, (long long)n_q, QTTS_RVQ_BITS);
    int64_t T = (int64_t)(size / per_frame);
    int32_t *codes = qtts_malloc((size_t)(n_q * T) * sizeof *codes, err);
    if (!codes) return -1;
    for (int64_t q = 0; q < n_q; q++)
        for (int64_t t = 0; t < T; t++) {
            uint64_t bit = (uint64_t)(q * T + t) * QTTS_RVQ_BITS;
            int32_t c = 0;
            for (int b = 0; b < QTTS_RVQ_BITS; b++, bit++) c |= (int32_t)(buf[bit / 8] >> (bit % 8) & 1u) << b;
            if (c >= codebook_size) {
                free(codes);
                return qtts_fail(err, "%s: code %d at frame %lld, codebook %lld is out of range (codebook size %lld)",
                                 label, c, (long long)t, (long long)q, (long long)codebook_size);
            }
            codes[t * n_q + q] = c;
        }
    *codes_out = codes;
    *T_out = T;
    return 0;
}

int qtts_rvq_write(const char *path, const int32_t *codes, int64_t n_q, int64_t T, qtts_err *err) {
    size_t size = qtts_rvq_size(n_q, T);
    unsigned char *buf = qtts_malloc(size ? size : 1, err);
    if (!buf) return -1;
    if (qtts_rvq_pack(codes, n_q, T, buf, err)) {
        free(buf);
        return qtts_fail_prefix(err, "%s", path);
    }
    int rc = qtts_write_file(path, buf, size, err);
    free(buf);
    return rc;
}

int qtts_rvq_read(const char *path, int64_t n_q, int64_t codebook_size, int32_t **codes_out, int64_t *T_out,
                  qtts_err *err) {
    *codes_out = NULL;
    *T_out = 0;
    char *buf;
    size_t size;
    if (qtts_read_file(path, MAX_RVQ_FILE_BYTES, &buf, &size, err)) return -1;
    int rc = qtts_rvq_unpack((const unsigned char *)buf, size, n_q, codebook_size, path, codes_out, T_out, err);
    free(buf);
    return rc;
}
