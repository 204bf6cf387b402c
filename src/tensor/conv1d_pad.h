/* 1-D convolutions with the padding rules of the voice-cloning front end,
 * on channel-major data ([channels][time], PyTorch's NCT without the batch).
 * Weights are f32 in PyTorch Conv1d order [c_out][c_in][k]; bias may be NULL.
 *
 *  - "same" with reflect padding (speaker encoder / ECAPA-TDNN):
 *    total pad (k-1)*d, left = total/2, right = total - left, mirrored
 *    without repeating the edge sample (torch 'reflect'); output length = T.
 *  - causal Encodec/Mimi padding (Mimi encoder): left pad
 *    (k-1)*d - (stride-1), plus the "extra" right pad that completes the last
 *    window, so the output has ceil(T/stride) frames; the pad values are zeros
 *    or a copy of the edge sample (replicate).
 *
 * These are local to the voice-cloning branch; the lead may merge them with
 * the decoder's src/tensor/conv.* later. Work is split over (output channel,
 * time block) on the pool; the pool may be NULL (runs inline). */
#ifndef QTTS_TENSOR_CONV1D_PAD_H
#define QTTS_TENSOR_CONV1D_PAD_H

#include <stdint.h>

#include "core/err.h"
#include "core/threadpool.h"

typedef enum { QTTS_PAD_ZERO, QTTS_PAD_REPLICATE, QTTS_PAD_REFLECT } qtts_pad_mode;

/* Generic core: pads x ([c_in][t_in]) by pad_left/pad_right with mode, then
 * y[o][t] = bias[o] + sum_{i,j} w[o][i][j] * xp[i][t*stride + j*dil] for
 * t < t_out, where t_out = (t_in + pads - (k-1)*dil - 1)/stride + 1.
 * y must hold c_out * t_out floats. Reflect needs pads < t_in. */
int qtts_conv1d_padded(qtts_pool *pool, const float *x, int64_t c_in, int64_t t_in, const float *w,
                       const float *bias, int64_t c_out, int64_t k, int64_t stride, int64_t dil, int64_t pad_left,
                       int64_t pad_right, qtts_pad_mode mode, float *y, int64_t *t_out, qtts_err *err);

/* 'same' conv with reflect padding, stride 1: y is [c_out][t]. */
int qtts_conv1d_same_reflect(qtts_pool *pool, const float *x, int64_t c_in, int64_t t, const float *w,
                             const float *bias, int64_t c_out, int64_t k, int64_t dil, float *y, qtts_err *err);

/* Output length of a Mimi causal conv: ceil(t_in / stride). */
int64_t qtts_conv1d_causal_len(int64_t t_in, int64_t stride);
/* Mimi causal conv (MimiConv1d with use_causal_conv): y is [c_out][ceil(t_in/stride)].
 * mode is QTTS_PAD_ZERO (pad_mode "constant") or QTTS_PAD_REPLICATE. */
int qtts_conv1d_causal(qtts_pool *pool, const float *x, int64_t c_in, int64_t t_in, const float *w,
                       const float *bias, int64_t c_out, int64_t k, int64_t stride, int64_t dil, qtts_pad_mode mode,
                       float *y, qtts_err *err);

/* Scalar single-thread reference of qtts_conv1d_padded (same contract), for tests. */
int qtts_conv1d_padded_ref(const float *x, int64_t c_in, int64_t t_in, const float *w, const float *bias,
                           int64_t c_out, int64_t k, int64_t stride, int64_t dil, int64_t pad_left, int64_t pad_right,
                           qtts_pad_mode mode, float *y, int64_t *t_out, qtts_err *err);

#endif
