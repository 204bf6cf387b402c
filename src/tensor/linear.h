/* Dense layers: Y[n][rows] = X[n][cols] * W^T (+ bias), for every weight
 * storage type, multi-threaded over output rows on the pool. */
#ifndef QTTS_TENSOR_LINEAR_H
#define QTTS_TENSOR_LINEAR_H

#include "core/threadpool.h"
#include "tensor/cpu.h"
#include "tensor/tensor.h"

/* x: n rows of w->cols floats; y: n rows of w->rows floats; bias may be NULL.
 * Returns 0, or -1 if out of memory (for the per-call activation pack or
 * row scratch): then y is unspecified. There is no silent fallback to
 * another kernel path. */
int qtts_linear(qtts_pool *pool, const qtts_mat *w, const float *bias, const float *x, int64_t n, float *y);

/* Reference implementation (scalar, single thread; for tests): what every
 * SIMD path is tested against. 0, or -1 if out of memory (y unspecified). */
int qtts_linear_ref(const qtts_mat *w, const float *bias, const float *x, int64_t n, float *y);

/* qtts_linear with an explicit kernel family (capped to what the CPU
 * supports) and option flags; for tests and benchmarks. Same return value. */
enum {
    /* BF16 weights on AVX-512 BF16 CPUs: round x to bf16 and use bf16 dot
     * products (vdpbf16ps). About 2x the compute rate, for compute-bound
     * batched calls, at a relative error of ~2^-9 per product. Off by default:
     * qtts_linear keeps x in f32 (exact products, memory-bound anyway at n=1). */
    QTTS_LINEAR_BF16_DOT = 1u,
    /* Quantize the activations with the scalar packers even where a SIMD
     * packer exists (they must agree bit for bit; for tests). */
    QTTS_LINEAR_SCALAR_PACK = 2u,
};
int qtts_linear_isa(qtts_pool *pool, const qtts_mat *w, const float *bias, const float *x, int64_t n, float *y,
                    qtts_isa isa, unsigned flags);

#endif
