/* Dense layers: Y[n][rows] = X[n][cols] * W^T (+ bias), for every weight
 * storage type, multi-threaded over output rows on the pool. */
#ifndef QTTS_TENSOR_LINEAR_H
#define QTTS_TENSOR_LINEAR_H

#include "core/threadpool.h"
#include "tensor/tensor.h"

/* x: n rows of w->cols floats; y: n rows of w->rows floats; bias may be NULL. */
void qtts_linear(qtts_pool *pool, const qtts_mat *w, const float *bias, const float *x, int64_t n, float *y);

/* Reference implementation (scalar, single thread): what every SIMD path is tested against. */
void qtts_linear_ref(const qtts_mat *w, const float *bias, const float *x, int64_t n, float *y);

#endif
