#include "tensor/interleave_calibrate.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/threadpool.h"
#include "tensor/cpu.h"
#include "tensor/interleave.h"
#include "tensor/linear.h"
#include "tensor/quant.h"

/* The LMs' two matrix shapes (hidden 1024, MLP 3072: the 0.6B talker and both code predictors; the 1.7B
 * talker's are twice that), alternating; enough of them to overflow the last-level cache. A single
 * 1024x2048 shape can rank the layouts unlike the engine's use: per-row overheads differ between 1024
 * and 3072 columns. */
enum { CAL_SHORT = 1024, CAL_LONG = 3072 };
#define CAL_MIN_BYTES (64.0 * 1024 * 1024)
#define CAL_MAX_BYTES (96.0 * 1024 * 1024) /* bounds the time; a larger cache then holds part of it */
#define CAL_MARGIN 1.03
#define CAL_BATCH_MARGIN 1.15 /* where n = 1 ties, batches decide (prefill, several streams) */
enum { CAL_BATCH = 8 };

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

/* Every figure is the best of CAL_ROUNDS rounds, and each round measures
 * every variant of a layout once, in an order that rotates from round to
 * round (the rows layout first, then the interleaved one: converting between
 * them costs more than all the passes). Measured one variant after the other
 * (5 passes each), a shared host's bursts of memory traffic from other
 * tenants (lasting a few hundred ms) fall on one variant and flip the
 * choices from one run to the next. Interference only slows a pass, so the
 * best of rounds spread over the measurement is what the kernel can do. */
enum { CAL_ROUNDS = 5 };

/* Weight GB/s of one pass of y = W x (n = 1) over every matrix, with their
 * prefetch and lockstep flags set as given (cleared again after). */
static double pass_gbs(qtts_pool *pool, qtts_mat *m, int n, int prefetch, int lockstep, const float *x, float *y) {
    for (int i = 0; i < n; i++) {
        m[i].prefetch = prefetch;
        m[i].lockstep = lockstep;
    }
    double t0 = qtts_now_s(), bytes = 0;
    int ok = 1;
    for (int i = 0; ok && i < n; i++) ok = qtts_linear(pool, &m[i], NULL, x, 1, y) == 0;
    double dt = qtts_now_s() - t0;
    for (int i = 0; i < n; i++) {
        m[i].prefetch = m[i].lockstep = 0;
        bytes += (double)m[i].rows * (double)m[i].row_bytes;
    }
    return ok && dt > 0 ? bytes / dt * 1e-9 : 0;
}

/* Best GFLOP/s of CAL_BATCH_PASSES passes of Y = W X (n = CAL_BATCH) over
 * the first two matrices (one of each shape; compute-bound, so cache is fine:
 * a first pass warms it). */
enum { CAL_BATCH_PASSES = 3 };
static double batch_gflops(qtts_pool *pool, qtts_mat *m, int pf, const float *x, float *y) {
    double flop = 0, best = 0;
    for (int i = 0; i < 2; i++) {
        m[i].prefetch = pf;
        flop += 2.0 * CAL_BATCH * (double)m[i].rows * (double)m[i].cols;
    }
    int ok = 1;
    for (int p = 0; ok && p <= CAL_BATCH_PASSES; p++) {
        double t0 = qtts_now_s();
        for (int i = 0; ok && i < 2; i++) ok = qtts_linear(pool, &m[i], NULL, x, CAL_BATCH, y) == 0;
        double dt = qtts_now_s() - t0;
        if (ok && p && dt > 0 && flop / dt * 1e-9 > best) best = flop / dt * 1e-9;
    }
    for (int i = 0; i < 2; i++) m[i].prefetch = 0;
    return best;
}

/* The variants of one layout, each once, starting at a rotating offset.
 * Rows: plain, prefetching. Interleaved: {in lockstep, super-block by
 * super-block} x {plain, prefetching}. Without the AVX2 flags, plain only. */
enum { V_PLAIN, V_PF, V_BLOCKS, V_BLOCKS_PF, V_COUNT };
static void measure_round(qtts_pool *pool, qtts_mat *m, int n, int x16, int flags, int round, const float *x, float *y,
                          double best[V_COUNT]) {
    const int nv = !flags ? 1 : x16 ? 4 : 2;
    for (int k = 0; k < nv; k++) {
        const int v = (k + round) % nv;
        const int pf = v == V_PF || v == V_BLOCKS_PF, lockstep = x16 && flags && v < V_BLOCKS;
        const double gbs = pass_gbs(pool, m, n, pf, lockstep, x, y);
        if (gbs > best[v]) best[v] = gbs;
    }
}

void qtts_interleave_measure(qtts_pool *pool, qtts_dtype type, qtts_interleave_calibration *c) {
    memset(c, 0, sizeof *c);
    if (!qtts_interleave_kernels() || (type != QTTS_Q8_0 && type != QTTS_Q4_K)) return;
    const double t0 = qtts_now_ms();
    const size_t mat_bytes = (size_t)(CAL_SHORT * CAL_LONG / qtts_dtype_block_elems(type)) * qtts_dtype_block_bytes(type);
    const int n = 2 * (int)(buffer_bytes() / (double)(2 * mat_bytes)) + 2; /* even: both shapes alike */
    qtts_mat *m = calloc((size_t)n, sizeof *m);
    float *x = malloc(sizeof(float) * CAL_LONG * CAL_BATCH), *y = malloc(sizeof(float) * CAL_LONG * CAL_BATCH);
    int ok = m && x && y;
    uint32_t seed = 7;
    for (int i = 0; ok && i < n; i++) {
        void *p = aligned_alloc(64, (mat_bytes + 63) / 64 * 64);
        if (!p) {
            ok = 0;
            break;
        }
        fill(type, p, mat_bytes, &seed);
        const int64_t rows = i % 2 ? CAL_SHORT : CAL_LONG, cols = i % 2 ? CAL_LONG : CAL_SHORT;
        m[i] = (qtts_mat){.type = type, .rows = rows, .cols = cols, .row_bytes = qtts_dtype_row_bytes(type, cols),
                          .data = p, .owned = p};
    }
    /* the engine's own threads, as it reads its weights: one thread alone ranks the layouts differently here */
    if (ok) {
        c->threads = pool ? qtts_pool_size(pool) : 1;
        for (int i = 0; i < CAL_LONG * CAL_BATCH; i++) x[i] = (float)((i * 37) % 19) * 0.1f - 0.9f;
        pass_gbs(pool, m, n, 0, 0, x, y); /* warm-up: page faults, frequency */
        const int pf = qtts_cpu_isa() == QTTS_ISA_AVX2; /* only the AVX2 kernels prefetch and step in lockstep */
        double rows[V_COUNT] = {0}, x16[V_COUNT] = {0};
        qtts_err err = {0};
        for (int r = 0; r < CAL_ROUNDS; r++) measure_round(pool, m, n, 0, pf, r, x, y, rows);
        c->row_gbs = rows[V_PLAIN];
        c->row_pf_gbs = rows[V_PF];
        const int row_pf = c->row_pf_gbs >= CAL_MARGIN * c->row_gbs;
        c->row_batch_gflops = batch_gflops(pool, m, row_pf, x, y);
        for (int i = 0; ok && i < n; i++) ok = qtts_mat_interleave_force(&m[i], &err) == 0;
        if (ok) pass_gbs(pool, m, n, 0, 0, x, y); /* warm-up of the new buffers */
        for (int r = 0; ok && r < CAL_ROUNDS; r++) measure_round(pool, m, n, 1, pf, r, x, y, x16);
        if (ok) {
            /* AVX2 (pf): x16_gbs and x16_pf_gbs are the groups in lockstep; x16_blocks_gbs super-block by
             * super-block at the better prefetch setting (the flags exist there only) */
            c->x16_gbs = x16[V_PLAIN];
            c->x16_pf_gbs = x16[V_PF];
            const int x16_pf = c->x16_pf_gbs >= CAL_MARGIN * c->x16_gbs;
            const double x16_step = x16_pf ? c->x16_pf_gbs : c->x16_gbs;
            c->x16_blocks_gbs = x16[x16_pf ? V_BLOCKS_PF : V_BLOCKS];
            c->lockstep = pf && x16_step >= CAL_MARGIN * c->x16_blocks_gbs;
            c->x16_batch_gflops = batch_gflops(pool, m, x16_pf, x, y);
            c->measured = c->row_gbs > 0 && c->x16_gbs > 0;
            /* each layout at its better setting; a change from the default (rows, no prefetch) needs 1.03x,
             * or a tie at n = 1 and 1.15x on batches (the interleaved kernels load each weight once for
             * 16 rows' worth of multiplies, which batches feel most) */
            const double rows_best = row_pf ? c->row_pf_gbs : c->row_gbs,
                         x16_best = c->lockstep || !pf ? x16_step : c->x16_blocks_gbs;
            c->faster = c->measured && (x16_best >= CAL_MARGIN * rows_best ||
                                        (CAL_MARGIN * x16_best >= rows_best &&
                                         c->x16_batch_gflops >= CAL_BATCH_MARGIN * c->row_batch_gflops));
            c->prefetch = c->measured && (c->faster ? x16_pf : row_pf);
            c->lockstep = c->lockstep && c->faster;
        }
        c->buffer_mb = (double)n * (double)mat_bytes / 1e6;
    }
    for (int i = 0; m && i < n; i++) qtts_mat_free(&m[i]);
    free(m);
    free(x);
    free(y);
    c->ms = qtts_now_ms() - t0;
}

qtts_interleave_choice qtts_interleave_calibration_choice(const qtts_interleave_calibration *c) {
    if (!c->measured) return (qtts_interleave_choice){0, 0, 0};
    return (qtts_interleave_choice){.interleave = c->faster, .prefetch = c->prefetch, .lockstep = c->lockstep};
}
