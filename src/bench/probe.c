#include "bench/probe.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/probe_kernels.h"
#include "tensor/cpu.h"
#include "core/clock.h"

/* The machine may be shared: every figure is the best of several timed runs
 * (one that ran undisturbed shows the hardware's rate). */
enum { READ_PASSES = 8, FMA_REPS = 40 };

/* ---- scalar fallbacks (what the compiler makes of plain C) ---- */

static float read_scalar(const float *p, size_t n) {
    float a[8] = {0};
    for (size_t i = 0; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) a[k] += p[i + (size_t)k];
    float s = 0;
    for (int k = 0; k < 8; k++) s += a[k];
    return s;
}

enum { SCALAR_CHAINS = 8 };
static float fma_scalar(int64_t iters) {
    float a[SCALAR_CHAINS];
    for (int i = 0; i < SCALAR_CHAINS; i++) a[i] = 1e-3f * (float)i;
    for (int64_t it = 0; it < iters; it++)
        for (int i = 0; i < SCALAR_CHAINS; i++) a[i] = a[i] * 0.999999f + 1e-7f;
    float s = 0;
    for (int i = 0; i < SCALAR_CHAINS; i++) s += a[i];
    return s;
}

/* ---- jobs on the pool ---- */

typedef struct {
    qtts_isa isa;
    float *buf;     /* the piece being read */
    size_t n;       /* floats in it */
    int all;        /* 0: thread 0 only */
    int64_t iters;  /* FMA rounds per thread */
    int bf16;       /* vdpbf16ps instead of FMA */
    float sink[64]; /* per-thread results, kept so the loops stay */
} probe_job;

static void fill_body(void *ctx, int tid, int nt) {
    probe_job *j = ctx;
    int64_t b, e;
    qtts_split_range((int64_t)j->n, 1024, tid, nt, &b, &e);
    for (int64_t i = b; i < e; i++) j->buf[i] = (float)(i & 1023) * 1e-3f;
}

static float read_isa(qtts_isa isa, const float *p, size_t n) {
#if defined(__x86_64__)
    if (isa == QTTS_ISA_AVX512) return qtts_probe_read_avx512(p, n);
    if (isa == QTTS_ISA_AVX2) return qtts_probe_read_avx2(p, n);
#elif defined(__aarch64__)
    if (isa != QTTS_ISA_SCALAR) return qtts_probe_read_neon(p, n);
#endif
    return read_scalar(p, n);
}

float qtts_probe_read_pass(const float *p, size_t n) { return read_isa(qtts_cpu_isa(), p, n & ~(size_t)511); }

static void read_body(void *ctx, int tid, int nt) {
    probe_job *j = ctx;
    if (!j->all && tid) return;
    int64_t b = 0, e = (int64_t)j->n;
    if (j->all) qtts_split_range((int64_t)j->n, 4096, tid, nt, &b, &e);
    const float s = read_isa(j->isa, j->buf + b, (size_t)(e - b) & ~(size_t)63);
    if (tid < 64) j->sink[tid] += s;
}

static void fma_body(void *ctx, int tid, int nt) {
    (void)nt;
    probe_job *j = ctx;
    if (!j->all && tid) return;
    float s;
#if defined(__x86_64__)
    if (j->bf16) s = qtts_probe_bf16dot_avx512(j->iters);
    else if (j->isa == QTTS_ISA_AVX512) s = qtts_probe_fma_avx512(j->iters);
    else if (j->isa == QTTS_ISA_AVX2) s = qtts_probe_fma_avx2(j->iters);
    else
#elif defined(__aarch64__)
    if (j->bf16) s = qtts_probe_bf16dot_neon(j->iters);
    else if (j->isa != QTTS_ISA_SCALAR) s = qtts_probe_fma_neon(j->iters);
    else
#endif
        s = fma_scalar(j->iters);
    if (tid < 64) j->sink[tid] += s;
}

static double time_run(qtts_pool *pool, qtts_spmd_fn fn, probe_job *j) {
    double t0 = qtts_now_s();
    qtts_pool_run(pool, fn, j);
    double dt = qtts_now_s() - t0;
    return dt > 0 ? dt : 1e-9;
}

/* GB/s: the best of READ_PASSES passes over the whole buffer, each one pool
 * run (as STREAM does: a pass long enough that dispatch costs nothing). */
static double read_rate(qtts_pool *pool, probe_job *j, float *buf, size_t n) {
    j->buf = buf;
    j->n = n;
    double best = 1e30;
    for (int pass = 0; pass < READ_PASSES; pass++) {
        double dt = time_run(pool, read_body, j);
        if (dt < best) best = dt;
    }
    return (double)(n * sizeof(float)) * 1e-9 / best;
}

/* Best time of FMA_REPS FMA runs after a warm-up run. On a shared VM a
 * vCPU is sometimes not running for a whole series (the all-thread figure
 * then equals one thread's): all-thread series are retried after a pause
 * and the best kept. */
static double fma_time(qtts_pool *pool, probe_job *j) {
    double best = 1e30;
    for (int attempt = 0; attempt < (j->all ? 4 : 1); attempt++) {
        if (attempt) {
            struct timespec pause = {0, 50 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
        qtts_pool_run(pool, fma_body, j);
        for (int r = 0; r < FMA_REPS; r++) {
            double dt = time_run(pool, fma_body, j);
            if (dt < best) best = dt;
        }
    }
    return best;
}

/* GFLOP/s of the register-only loop: `products` multiply-adds (2 FLOP each)
 * per round, j->iters rounds per thread. */
static double peak_gflops(qtts_pool *pool, probe_job *j, double products) {
    j->iters = 500000; /* about a millisecond per run */
    const double gflop = 2.0 * products * (double)j->iters * 1e-9 * (j->all ? qtts_pool_size(pool) : 1);
    return gflop / fma_time(pool, j);
}

double qtts_probe_fma_gflops(qtts_pool *pool, int all_threads) {
    probe_job j;
    memset(&j, 0, sizeof j);
    j.isa = qtts_cpu_isa();
    j.all = all_threads != 0;
    /* chains x lanes */
    const double lanes = j.isa == QTTS_ISA_AVX512 ? 16 * QTTS_PROBE_CHAINS_AVX512
                         : j.isa == QTTS_ISA_AVX2 ? 8 * QTTS_PROBE_CHAINS_AVX2
                         : j.isa >= QTTS_ISA_NEON ? 4 * QTTS_PROBE_CHAINS_NEON
                                                  : SCALAR_CHAINS;
    return peak_gflops(pool, &j, lanes);
}

double qtts_probe_bf16_gflops(qtts_pool *pool, int all_threads) {
    probe_job j;
    memset(&j, 0, sizeof j);
    j.bf16 = 1;
    j.all = all_threads != 0;
    j.isa = qtts_cpu_isa();
    if (j.isa == QTTS_ISA_AVX512 && qtts_cpu_features_get()->avx512bf16)
        return peak_gflops(pool, &j, 32.0 * QTTS_PROBE_CHAINS_AVX512); /* chains x 32 products */
    if (j.isa == QTTS_ISA_NEON_BF16) return peak_gflops(pool, &j, 8.0 * QTTS_PROBE_CHAINS_NEON); /* x 8 products */
    return 0;
}

int qtts_probe_run(qtts_pool *pool, size_t bytes, qtts_probe_result *out, qtts_err *err) {
    memset(out, 0, sizeof *out);
    if (!bytes) bytes = (size_t)QTTS_PROBE_DEFAULT_MIB << 20;
    if (bytes < (1u << 20)) return qtts_fail(err, "probe: buffer of %zu bytes is too small (1 MiB at least)", bytes);
    probe_job j;
    memset(&j, 0, sizeof j);
    j.isa = qtts_cpu_isa();
    const size_t n = (bytes / sizeof(float)) & ~(size_t)4095;
    float *buf = qtts_malloc(n * sizeof(float), err);
    if (!buf) return qtts_fail_prefix(err, "probe buffer");
    out->threads = qtts_pool_size(pool);
    out->isa = qtts_isa_name(j.isa);
    out->buffer_bytes = n * sizeof(float);
    j.buf = buf;
    j.n = n;
    qtts_pool_run(pool, fill_body, &j); /* first touch, by every thread */
    j.all = 0;
    out->read_gbs_1 = read_rate(pool, &j, buf, n);
    j.all = 1;
    out->read_gbs_all = read_rate(pool, &j, buf, n);
    free(buf);
    out->fma_gflops_1 = qtts_probe_fma_gflops(pool, 0);
    out->fma_gflops_all = qtts_probe_fma_gflops(pool, 1);
    out->bf16_gflops_1 = qtts_probe_bf16_gflops(pool, 0);
    out->bf16_gflops_all = qtts_probe_bf16_gflops(pool, 1);
    return 0;
}
