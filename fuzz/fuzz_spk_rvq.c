/* Voice files from memory: the .spk reader (qtts_spk_from_bytes) and the .rvq
 * reader (qtts_rvq_unpack) on arbitrary bytes, with the model geometry picked
 * by the first byte (valid and invalid codebook counts, codebook sizes and
 * x-vector lengths). Beyond "no crash":
 *  - a vector read back is finite, has size/4 values, and writing it again
 *    (qtts_spk_to_bytes) gives the input bytes exactly;
 *  - unpacked codes are below the codebook size, fill size bytes exactly, and
 *    packing them again (qtts_rvq_pack) gives the input bytes exactly;
 *  - the input taken as codes (11 bits each) packs and unpacks to itself. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/rvq.h"
#include "io/spk.h"

static const int64_t k_nq[] = {16, 8, 24, 32, 1, 0, -8, 3};
static const int64_t k_cb[] = {2048, 1024, 1, 0, 4096, 2047, 3, -1};
static const int64_t k_dim[] = {0, 32, 1, 2048};

static void check_spk(const uint8_t *d, size_t n, int64_t dim) {
    qtts_err err = {0};
    int64_t got = -1;
    float *x = qtts_spk_from_bytes(d, n, dim, "fuzz", &got, &err);
    if (!x) {
        if (!err.msg[0]) abort(); /* a failure always says why */
        return;
    }
    if (got <= 0 || (size_t)got * 4 != n || (dim > 0 && got != dim)) abort();
    for (int64_t i = 0; i < got; i++)
        if (!isfinite(x[i])) abort();
    size_t m = 0;
    unsigned char *back = qtts_spk_to_bytes(x, got, &m, &err);
    if (!back || m != n || memcmp(back, d, n)) abort();
    free(back);
    free(x);
}

static void check_rvq(const uint8_t *d, size_t n, int64_t n_q, int64_t cb) {
    qtts_err err = {0};
    int32_t *codes = NULL;
    int64_t T = -1;
    if (qtts_rvq_unpack(d, n, n_q, cb, "fuzz", &codes, &T, &err)) {
        if (codes || T != 0 || !err.msg[0]) abort();
        return;
    }
    if (!codes || T <= 0 || qtts_rvq_size(n_q, T) != n) abort();
    for (int64_t i = 0; i < n_q * T; i++)
        if (codes[i] < 0 || codes[i] >= cb || codes[i] >= (1 << QTTS_RVQ_BITS)) abort();
    unsigned char *back = malloc(n);
    if (!back) abort();
    if (qtts_rvq_pack(codes, n_q, T, back, &err) || memcmp(back, d, n)) abort();
    free(back);
    free(codes);
}

/* Codes from the input (11 bits each, frame-major) -> pack -> unpack. */
static void check_codes(const uint8_t *d, size_t n, int64_t n_q) {
    if (n_q <= 0 || (n_q * QTTS_RVQ_BITS) % 8) return;
    int64_t T = (int64_t)(n / 2) / n_q;
    if (T <= 0) return;
    int32_t *codes = malloc((size_t)(n_q * T) * sizeof *codes);
    size_t bytes = qtts_rvq_size(n_q, T);
    unsigned char *buf = malloc(bytes);
    if (!codes || !buf) abort();
    for (int64_t i = 0; i < n_q * T; i++) codes[i] = (int32_t)((d[2 * i] | d[2 * i + 1] << 8) & 2047);
    qtts_err err = {0};
    if (qtts_rvq_pack(codes, n_q, T, buf, &err)) abort();
    int32_t *back = NULL;
    int64_t T2 = 0;
    if (qtts_rvq_unpack(buf, bytes, n_q, 2048, "fuzz", &back, &T2, &err)) abort();
    if (T2 != T || memcmp(back, codes, (size_t)(n_q * T) * sizeof *codes)) abort();
    free(back);
    free(buf);
    free(codes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t sel = data[0];
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    check_spk(d, n, k_dim[sel & 3]);
    int64_t n_q = k_nq[sel >> 2 & 7], cb = k_cb[sel >> 5 & 7];
    check_rvq(d, n, n_q, cb);
    check_codes(d, n, n_q);
    return 0;
}
