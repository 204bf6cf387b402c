/* Elementwise, normalization and RoPE kernels shared by the model
 * stages. Layouts are row-major [tokens][features]. In-place use (y == x) is
 * allowed where noted. The pool may be NULL (runs inline on the caller, which
 * must then be a pool thread itself). */
#ifndef QTTS_TENSOR_OPS_H
#define QTTS_TENSOR_OPS_H

#include <stdint.h>

#include "core/threadpool.h"
#include "tensor/cpu.h"

/* y = w * x / sqrt(mean(x^2) + eps) per row of dim; w may be NULL (= 1). In-place ok. */
void qtts_rmsnorm(qtts_pool *pool, const float *x, const float *w, int64_t rows, int64_t dim, float eps, float *y);
/* y = (x - mean) / sqrt(var + eps) * w + b per row; w, b may be NULL. In-place ok. */
void qtts_layernorm(qtts_pool *pool, const float *x, const float *w, const float *b, int64_t rows, int64_t dim,
                    float eps, float *y);

/* NeoX (split-half) rotary embedding, in place. x: n_tokens rows of stride
 * floats, each holding n_heads heads of head_dim; token i has position pos0+i.
 * cos/sin follow the reference's float32 arithmetic. head_dim <= 4096 (what
 * config.c and codec_config.c accept). */
void qtts_rope_neox(float *x, int64_t n_tokens, int64_t stride, int64_t n_heads, int64_t head_dim, int64_t pos0,
                    double theta);
/* The same in two parts, for callers that rotate many heads and layers at the
 * same positions (the LMs compute each row's angles once per forward, not
 * twice per layer): cos/sin of position pos (head_dim/2 each), and the
 * rotation of one token's n_heads heads with them. Same bits as qtts_rope_neox. */
void qtts_rope_angles(float *cs, float *sn, int64_t head_dim, int64_t pos, double theta);
void qtts_rope_neox_rotate(float *x, int64_t n_heads, int64_t head_dim, const float *cs, const float *sn);

void qtts_silu(float *x, int64_t n);
void qtts_gelu_erf(float *x, int64_t n);
/* gate[i] = silu(gate[i]) * up[i]; SIMD twins use a vector exp (tensor/vexp.h) */
void qtts_swiglu(float *gate, const float *up, int64_t n);
/* The same with the kernels of `isa` or the next family down that this CPU runs (tests). */
void qtts_swiglu_isa(float *gate, const float *up, int64_t n, qtts_isa isa);
/* out[r] = silu(gate_r) * up_r for rows of a fused [gate | up] projection
 * (rows x 2*inter floats); out is rows x inter. Rows split over the pool. */
void qtts_swiglu_fused(qtts_pool *pool, const float *fused, int64_t rows, int64_t inter, float *out);

/* y[i] = x[i] in f16 bits, rounded to nearest even, with magnitudes past
 * the largest finite f16 (65504) saturated to it rather than made infinite
 * (a KV cache entry that overflowed would turn its scores into NaN). */
void qtts_f32_to_f16_row(const float *x, uint16_t *y, int64_t n);
/* The same with the kernels of `isa` or the next family down that this CPU runs (tests). */
void qtts_f32_to_f16_row_isa(const float *x, uint16_t *y, int64_t n, qtts_isa isa);
/* y[i] = the f32 value of the f16 bits x[i] (exact: every ISA gives the same bits). */
void qtts_f16_to_f32_row(const uint16_t *x, float *y, int64_t n);
void qtts_f16_to_f32_row_isa(const uint16_t *x, float *y, int64_t n, qtts_isa isa);

#endif
