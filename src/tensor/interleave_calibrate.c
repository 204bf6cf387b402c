#include "tensor/interleave_calibrate.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/threadpool.h"
#include "tensor/cpu.h"
#include "tensor/interleave.h"
#include "tensor/linear.h"
#include "tensor/quant.h"

/* A talker-like matrix; enough of them to overflow the last-level cache. */
enum { CAL_ROWS = 1024, CAL_COLS = 2048, CAL_PASSES = 3, CAL_MAX_THREADS = 16, CAL_BATCH = 8 };
#define CAL_MIN_BYTES (64.0 * 1024 * 1024)
#define CAL_MAX_BYTES (96.0 * 1024 * 1024) /* bounds the time; a larger cache then holds part of it */
#define CAL_MARGIN 1.03
/* An n = 1 rate within 10% counts as a tie that a >= 1.2x batch rate breaks. Why: a Zen 2 measured interleaved
 * Q4_K 5-8% under prefetching rows at n = 1 here (3-4% in the engine's steps) but 1.4x over them on batches;
 * in the engine that is a 62-frame utterance 1.5% slower, the prefill 30% faster (time to first audio 294 ->
 * 235 ms) and 8 streams 1.17x instead of 1.01x real time. AVX2 only: on a Zen 4 the AVX-512 interleaved Q8_0
 * kernel measured 7-18% under rows at n = 1 but cost 30% more in the engine's code predictor, so AVX-512 keeps
 * the plain n = 1 rule until a machine shows otherwise. */
#define CAL_TIE 1.10
#define CAL_BATCH_MARGIN 1.20

static double buffer_bytes(void) {
    double b = CAL_MIN_BYTES;
#if defined(_SC_LEVEL3_CACHE_SIZE)
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0 && 2.0 * (double)l3 > b) b = 2.0 * (double)l3;
#endif
    return b > CAL_MAX_BYTES ? CAL_MAX_BYTES : b;
}

/* Valid blocks with unit scales (no subnormal arithmetic) and varied quants. */
static void fill(qtts_dtype type, uint8_t *p, size_t bytes, uint32_t *seed) {
    enum { TILE = 1 << 16 }; /* a random 64 KiB tile, repeated: fast, and the cache never sees it again */
    uint8_t tile[TILE];
    for (size_t i = 0; i < TILE; i++) tile[i] = (uint8_t)((*seed = *seed * 1664525u + 1013904223u) >> 24);
    for (size_t o = 0; o < bytes; o += TILE) memcpy(p + o, tile, bytes - o < TILE ? bytes - o : TILE);
    const size_t bb = qtts_dtype_block_bytes(type);
    for (size_t o = 0; o + bb <= bytes; o += bb) {
        uint16_t one = 0x3C00; /* f16 1.0 */
        memcpy(p + o, &one, 2);
        if (type == QTTS_Q4_K) memcpy(p + o + 2, &one, 2);
    }
}

/* Best GB/s over CAL_PASSES passes of y = W x (n = 1) over every matrix. */
/* Best weight GB/s over `passes` passes of y = W x (`tokens` rows of x) over every matrix. */
static double pass_gbs_n(qtts_pool *pool, const qtts_mat *m, int n, int tokens, int passes, const float *x, float *y) {
    double best = 1e30;
    for (int p = 0; p < passes; p++) {
        double t0 = qtts_now_s();
        for (int i = 0; i < n; i++)
            if (qtts_linear(pool, &m[i], NULL, x, tokens, y)) return 0;
        double dt = qtts_now_s() - t0;
        if (dt < best) best = dt;
    }
    return (double)n * (double)m[0].rows * (double)m[0].row_bytes / best * 1e-9;
}

/* Batch-1 decoding: n = 1 over every matrix, CAL_PASSES passes. */
static double pass_gbs(qtts_pool *pool, const qtts_mat *m, int n, const float *x, float *y) {
    return pass_gbs_n(pool, m, n, 1, CAL_PASSES, x, y);
}

/* Batches (prefill, concurrent streams): CAL_BATCH tokens over a few
 * matrices; compute-bound, so it does not need the whole buffer. */
static double batch_gbs(qtts_pool *pool, const qtts_mat *m, int n, const float *x, float *y) {
    const int k = n < 4 ? n : 4;
    pass_gbs_n(pool, m, k, CAL_BATCH, 1, x, y);
    return pass_gbs_n(pool, m, k, CAL_BATCH, 2, x, y);
}

/* The same with the matrices' prefetch flag set (cleared again after). */
static double prefetching_gbs(qtts_pool *pool, qtts_mat *m, int n, const float *x, float *y) {
    for (int i = 0; i < n; i++) m[i].prefetch = 1;
    double gbs = pass_gbs(pool, m, n, x, y);
    for (int i = 0; i < n; i++) m[i].prefetch = 0;
    return gbs;
}

static void measure(qtts_dtype type, qtts_interleave_calibration *c) {
    memset(c, 0, sizeof *c);
    if (!qtts_interleave_kernels()) return;
    const double t0 = qtts_now_ms();
    const size_t row_bytes = (size_t)(CAL_COLS / qtts_dtype_block_elems(type)) * qtts_dtype_block_bytes(type);
    const size_t mat_bytes = row_bytes * CAL_ROWS;
    const int n = (int)(buffer_bytes() / (double)mat_bytes) + 1;
    qtts_mat *m = calloc((size_t)n, sizeof *m);
    float *x = malloc(sizeof(float) * CAL_COLS * CAL_BATCH), *y = malloc(sizeof(float) * CAL_ROWS * CAL_BATCH);
    int ok = m && x && y;
    uint32_t seed = 7;
    for (int i = 0; ok && i < n; i++) {
        void *p = aligned_alloc(64, (mat_bytes + 63) / 64 * 64);
        if (!p) {
            ok = 0;
            break;
        }
        fill(type, p, mat_bytes, &seed);
        m[i] =
            (qtts_mat){.type = type, .rows = CAL_ROWS, .cols = CAL_COLS, .row_bytes = row_bytes, .data = p, .owned = p};
    }
    /* every core, as the engine reads its weights: one thread alone ranks the layouts differently here */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    qtts_err perr = {0};
    qtts_pool *pool = ok ? qtts_pool_create(ncpu < 1                 ? 1
                                            : ncpu > CAL_MAX_THREADS ? CAL_MAX_THREADS
                                                                     : (int)ncpu,
                                            &perr)
                         : NULL;
    ok = ok && pool;
    if (ok) {
        c->threads = qtts_pool_size(pool);
        for (int i = 0; i < CAL_COLS * CAL_BATCH; i++) x[i] = (float)((i * 37) % 19) * 0.1f - 0.9f;
        pass_gbs(pool, m, n, x, y); /* warm-up: page faults, frequency */
        const int pf = qtts_cpu_isa() == QTTS_ISA_AVX2; /* only the AVX2 kernels prefetch */
        c->row_gbs = pass_gbs(pool, m, n, x, y);
        if (pf) c->row_pf_gbs = prefetching_gbs(pool, m, n, x, y);
        for (int i = 0; i < n; i++) m[i].prefetch = pf && c->row_pf_gbs >= CAL_MARGIN * c->row_gbs;
        c->row_batch_gbs = batch_gbs(pool, m, n, x, y);
        for (int i = 0; i < n; i++) m[i].prefetch = 0;
        qtts_err err = {0};
        for (int i = 0; ok && i < n; i++) ok = qtts_mat_interleave_force(&m[i], &err) == 0;
        if (ok) {
            pass_gbs(pool, m, n, x, y);
            c->x16_gbs = pass_gbs(pool, m, n, x, y);
            if (pf) c->x16_pf_gbs = prefetching_gbs(pool, m, n, x, y);
            c->measured = c->row_gbs > 0 && c->x16_gbs > 0;
            /* each layout at its better setting; a change from the default (rows, no prefetch) needs 1.03x */
            const int row_pf = c->row_pf_gbs >= CAL_MARGIN * c->row_gbs,
                      x16_pf = c->x16_pf_gbs >= CAL_MARGIN * c->x16_gbs;
            const double rows_best = row_pf ? c->row_pf_gbs : c->row_gbs, x16_best = x16_pf ? c->x16_pf_gbs : c->x16_gbs;
            /* the interleaved layout on batches, with the prefetch setting it would get */
            for (int i = 0; i < n; i++) m[i].prefetch = x16_pf;
            c->x16_batch_gbs = batch_gbs(pool, m, n, x, y);
            c->measured = c->measured && c->x16_batch_gbs > 0;
            c->faster = c->measured && (x16_best >= CAL_MARGIN * rows_best ||
                                        (pf && x16_best * CAL_TIE >= rows_best &&
                                         c->x16_batch_gbs >= CAL_BATCH_MARGIN * c->row_batch_gbs));
            c->prefetch = c->measured && (c->faster ? x16_pf : row_pf);
        }
        c->buffer_mb = (double)n * (double)mat_bytes / 1e6;
    }
    qtts_pool_free(pool);
    for (int i = 0; m && i < n; i++) qtts_mat_free(&m[i]);
    free(m);
    free(x);
    free(y);
    c->ms = qtts_now_ms() - t0;
}

/* Written once under pthread_once each, read-only afterwards. */
static pthread_once_t g_once_q8 = PTHREAD_ONCE_INIT, g_once_q4 = PTHREAD_ONCE_INIT;
static qtts_interleave_calibration g_cal_q8, g_cal_q4;
static void init_q8(void) { measure(QTTS_Q8_0, &g_cal_q8); }
static void init_q4(void) { measure(QTTS_Q4_K, &g_cal_q4); }

const qtts_interleave_calibration *qtts_interleave_calibrate(qtts_dtype type) {
    static const qtts_interleave_calibration none = {0};
    if (type == QTTS_Q8_0) {
        pthread_once(&g_once_q8, init_q8);
        return &g_cal_q8;
    }
    if (type == QTTS_Q4_K) {
        pthread_once(&g_once_q4, init_q4);
        return &g_cal_q4;
    }
    return &none;
}
