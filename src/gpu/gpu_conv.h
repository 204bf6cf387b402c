/* The speech-tokenizer decoder's kernels on the device (Vulkan builds only):
 * causal dilated and transposed 1-D convolutions with their streaming
 * histories kept in device buffers, SnakeBeta, the ConvNeXt depthwise conv,
 * LayerNorm, erf-GELU, LayerScale residuals, the layout transposes and the
 * output clamp. The pointwise linears are
 * qtts_gpu_gemv. Layouts are the CPU decoder's (tensor/conv.h): channel-major
 * rows with the conv's history first at high rates, time-major rows for the
 * depthwise conv. Each kernel has a scalar CPU twin the tests compare it
 * against (tests/test_gpu_decoder_kernels.c). Recorded like the kernels of
 * gpu_ops.h: every kernel waits for the writes of the ones before it. */
#ifndef QTTS_GPU_GPU_CONV_H
#define QTTS_GPU_GPU_CONV_H

#include <stdint.h>

#include "core/err.h"
#include "gpu/gpu_ops.h"

/* Rows of floats in a device buffer: element (r, i) at off + r*ld + i. */
typedef struct {
    qtts_gpu_buf *buf;
    int64_t off, ld;
} qtts_gpu_rows;

/* A convolution's weights and bias on the device. */
typedef struct qtts_gpu_conv qtts_gpu_conv;

/* w: PyTorch Conv1d weight [c_out][c_in][k], dilation dil; bias [c_out] or NULL. */
qtts_gpu_conv *qtts_gpu_conv_new(qtts_gpu *g, const float *w, const float *bias, int64_t c_out, int64_t c_in, int64_t k,
                                 int64_t dil, qtts_err *err);
/* w: PyTorch ConvTranspose1d weight [c_in][c_out][k], stride s; bias [c_out] or NULL.
 * Causal: the output is trimmed to T*s samples as the reference does. */
qtts_gpu_conv *qtts_gpu_conv_new_transposed(qtts_gpu *g, const float *w, const float *bias, int64_t c_in, int64_t c_out,
                                            int64_t k, int64_t stride, qtts_err *err);
void qtts_gpu_conv_free(qtts_gpu *g, qtts_gpu_conv *cv);
/* History samples each input row needs before its T new ones: (k-1)*dil, or
 * ceil(k/s)-1 for a transposed conv (qtts_conv_history of the CPU form). */
int64_t qtts_gpu_conv_history(const qtts_gpu_conv *cv);

/* Conv: y[co][t] = bias[co] + sum W x[ci][t + ...] (+ add[co][t]) for t < T,
 * x rows holding history then T samples (a buffer other than y's); add may be
 * y (an in-place residual) or have a NULL buffer. Transposed: y[co] gets T*s samples. */
int qtts_gpu_conv1d(qtts_gpu_seq *s, const qtts_gpu_conv *cv, qtts_gpu_rows x, int64_t T, qtts_gpu_rows y,
                    qtts_gpu_rows add, qtts_err *err);

/* The streaming form of a conv's input (the CPU decoder's cm_pad):
 * xp[c] = [hist[c] (H samples) | f(in[c]) (T samples)], then hist[c] = the
 * last H samples of xp[c], for C channels; f is SnakeBeta with per-channel
 * ea/ib buffers, or a copy when ea is NULL. hist lives on the device across
 * steps, so a signal fed in chunks gives what one call gives. */
int qtts_gpu_conv_pad(qtts_gpu_seq *s, qtts_gpu_rows in, int64_t C, int64_t T, qtts_gpu_buf *ea, qtts_gpu_buf *ib,
                      qtts_gpu_rows hist, int64_t H, qtts_gpu_rows xp, qtts_err *err);

/* SnakeBeta over C channel-major rows of T samples: y = x + ib[c] sin^2(ea[c] x)
 * (qtts_snake_row's sin^2); y may be x. */
int qtts_gpu_snake(qtts_gpu_seq *s, qtts_gpu_rows x, qtts_gpu_rows y, int64_t C, int64_t T, qtts_gpu_buf *ea,
                   qtts_gpu_buf *ib, qtts_err *err);
/* dst[r][i] = src[r][i] for r < rows, i < n. */
int qtts_gpu_copy_rows(qtts_gpu_seq *s, qtts_gpu_rows src, qtts_gpu_rows dst, int64_t rows, int64_t n, qtts_err *err);
/* dst[i][r] = src[r][i] for r < rows, i < n: channel-major <-> time-major. */
int qtts_gpu_transpose(qtts_gpu_seq *s, qtts_gpu_rows src, qtts_gpu_rows dst, int64_t rows, int64_t n, qtts_err *err);
/* x = min(max(x, lo), hi) in place over rows x n (the output samples to [-1, 1]). */
int qtts_gpu_clamp(qtts_gpu_seq *s, qtts_gpu_rows x, int64_t rows, int64_t n, float lo, float hi, qtts_err *err);
/* Depthwise causal conv, time-major (qtts_dwconv_tm): xh (at xh_off) holds
 * k-1 history rows then T rows of C floats, wt [k][C], b [C] or NULL; y (at
 * y_off) gets T rows of C. */
int qtts_gpu_dwconv(qtts_gpu_seq *s, qtts_gpu_buf *xh, int64_t xh_off, int64_t C, int64_t T, qtts_gpu_buf *wt,
                    int64_t k, qtts_gpu_buf *b, qtts_gpu_buf *y, int64_t y_off, qtts_err *err);
/* LayerNorm of rows x dim, packed (qtts_layernorm); w, b may be NULL; y may be x. */
int qtts_gpu_layernorm(qtts_gpu_seq *s, qtts_gpu_buf *x, int64_t x_off, qtts_gpu_buf *w, qtts_gpu_buf *b,
                       qtts_gpu_buf *y, int64_t y_off, int64_t rows, int64_t dim, float eps, qtts_err *err);
/* Exact (erf) GELU in place over rows x n (qtts_gelu_erf). */
int qtts_gpu_gelu(qtts_gpu_seq *s, qtts_gpu_rows x, int64_t rows, int64_t n, qtts_err *err);
/* x[r][c] += g[c] * v[r][c] for rows x n (g NULL: 1); with a NULL v buffer,
 * x[r][c] += g[c] (a bias). */
int qtts_gpu_scale_add(qtts_gpu_seq *s, qtts_gpu_rows x, qtts_gpu_buf *g, qtts_gpu_rows v, int64_t rows, int64_t n,
                       qtts_err *err);

#endif
