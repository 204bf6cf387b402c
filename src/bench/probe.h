/* The machine's limits, measured in a second or so, for the ratios a
 * benchmark prints: DRAM read bandwidth (a buffer far larger than the last
 * level cache, streamed on 1 thread and on every thread of the pool) and the
 * f32 FMA peak (independent FMA chains on registers, best ISA available).
 * Runs on the pool it is given (the engine thread's). */
#ifndef QTTS_BENCH_PROBE_H
#define QTTS_BENCH_PROBE_H

#include <stddef.h>

#include "core/err.h"
#include "core/threadpool.h"

enum { QTTS_PROBE_DEFAULT_MIB = 512 };

typedef struct {
    int threads;               /* pool size used for the "all threads" figures */
    const char *isa;           /* kernel family of the loops ("avx512", "avx2", "scalar") */
    size_t buffer_bytes;       /* bandwidth buffer */
    double read_gbs_1;         /* GB/s (1e9 bytes), one thread */
    double read_gbs_all;       /* GB/s, all pool threads */
    double fma_gflops_1;       /* f32 FMA GFLOP/s (2 per FMA lane), one thread */
    double fma_gflops_all;     /* all pool threads */
    double bf16_gflops_1;      /* vdpbf16ps GFLOP/s (2 per product), one thread; 0 without AVX-512 BF16 */
    double bf16_gflops_all;    /* all pool threads */
} qtts_probe_result;

/* bytes: bandwidth buffer size (0 = QTTS_PROBE_DEFAULT_MIB MiB). The machine
 * may be shared: bandwidth is the best of 8 passes over the whole buffer, the
 * FMA peak the best of many ~1 ms runs. */
int qtts_probe_run(qtts_pool *pool, size_t bytes, qtts_probe_result *out, qtts_err *err);

/* One pass of the bandwidth loop over p[0..n) on the calling thread (best
 * ISA; n floats, read up to the last whole 512 floats): what a kernel
 * benchmark compares its own reads of the same buffer with. Returns a sum
 * of the values, to be kept so that the loads stay. */
float qtts_probe_read_pass(const float *p, size_t n);

/* The FMA peak alone (best of many ~1 ms runs): thread 0 only, or every pool thread. */
double qtts_probe_fma_gflops(qtts_pool *pool, int all_threads);
/* The bf16 dot-product peak the same way; 0 on CPUs without AVX-512 BF16. */
double qtts_probe_bf16_gflops(qtts_pool *pool, int all_threads);

#endif
