/* How batch-1 decoding reads Q8_0 / Q4_K weights fastest on this CPU,
 * measured (not assumed): the interleaved-row layout (tensor/interleave.h) or
 * the GGML rows, and on AVX2 whether the row kernels prefetch. On some CPUs
 * the interleaved kernels are faster in cache but slower when the weights
 * stream from DRAM, which is how batch-1 decoding reads them; a
 * compute-heavy kernel whose loads the core issues late also streams below
 * the memory's rate unless it prefetches. */
#ifndef QTTS_TENSOR_INTERLEAVE_CALIBRATE_H
#define QTTS_TENSOR_INTERLEAVE_CALIBRATE_H

#include "core/threadpool.h"
#include "tensor/interleave.h"
#include "tensor/tensor.h"

typedef struct qtts_interleave_calibration {
    int measured;             /* 0: no x86 kernels (AVX-512/AVX2), or out of memory (then interleave is not used) */
    int faster;               /* the interleaved layout is taken: at n = 1 it read at least 1.03x the
                                 GB/s of the row layout (each with prefetching where that was faster),
                                 or it was within 1.03x there and at least 1.15x faster on batches */
    int prefetch;             /* AVX2: the chosen layout's kernel prefetches its weights (it read at
                                 least 1.03x the GB/s that way) */
    int lockstep;             /* AVX2, interleaved: one token's two groups per thread are read line by
                                 line in step (qtts_mat.lockstep): they read at least 1.03x the GB/s of
                                 super-block by super-block) */
    double row_gbs, x16_gbs;  /* n = 1 on `threads` threads, over a buffer larger than the last-level cache */
    double row_pf_gbs, x16_pf_gbs; /* the same, prefetching (AVX2 only; 0 elsewhere); x16 in lockstep */
    double x16_blocks_gbs;    /* AVX2: x16 at its prefetch setting, the groups super-block by super-block */
    double row_batch_gflops, x16_batch_gflops; /* n = 8 tokens (a prefill, several streams), in cache */
    int threads;              /* the pool's threads (the engine's: as its kernels read the weights) */
    double buffer_mb, ms;     /* the buffer measured and what the measurement took */
} qtts_interleave_calibration;

/* Measures QTTS_Q8_0 or QTTS_Q4_K on pool (its owner calls; NULL: this
 * thread alone) over 64-96 MB, twice the last-level cache where that fits,
 * a fraction of a second. The engine loader calls it once per
 * type and keeps the result (or reads it from its per-CPU cache); another
 * type, or no x86 kernel family, gives measured = 0. */
void qtts_interleave_measure(qtts_pool *pool, qtts_dtype type, qtts_interleave_calibration *c);

/* What a measurement decides: the faster layout and its kernel flags (all 0
 * where nothing was measured). */
qtts_interleave_choice qtts_interleave_calibration_choice(const qtts_interleave_calibration *c);

#endif
