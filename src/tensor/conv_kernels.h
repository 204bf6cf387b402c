/* Per-ISA inner kernels of conv.c (private to src/tensor). Each computes one
 * register tile of the channel-major conv: rows [rb*MR, rb*MR+MR) (clipped to
 * c_out) and nt <= QTTS_CONV_NT time samples; x, y and add point at the
 * tile's first sample (row strides ldx, ldy, ldadd). */
#ifndef QTTS_TENSOR_CONV_KERNELS_H
#define QTTS_TENSOR_CONV_KERNELS_H

#include <stdint.h>

#include "tensor/conv.h"

enum { QTTS_CONV_NT = 48 }; /* time samples per tile */

typedef void (*qtts_conv_tile_fn)(const qtts_conv *cv, const float *x, int64_t ldx, int64_t nt, int64_t rb,
                                  float *y, int64_t ldy, const float *add, int64_t ldadd);

/* Conv and GEMM tiles are compute-bound: for qtts_parallel_for_work a MAC
 * of theirs costs about 1/16 of a matrix-vector MAC (register-blocked FMA vs
 * one weight read per MAC). */
#define QTTS_TILE_MAC_WORK (1.0 / 16.0)

/* qtts_parallel_for_work units of a tiled product of `macs` MACs that reads
 * `weights` weights once: with a short other operand (a decoder step of one
 * frame: one pre-transformer row) reading the weights is the cost, as in a
 * matrix-vector product, and counting MACs alone kept it on one thread. */
static inline double qtts_tile_work(double macs, double weights) { return macs * QTTS_TILE_MAC_WORK + weights; }

/* Item i of n_tb time blocks x n_rb row blocks. When the weights are the
 * larger operand (rows_outer) the time block runs fastest, so each weight
 * block is read from memory once; otherwise the row block runs fastest (a
 * thread keeps one input panel hot while it sweeps the weights). */
static inline void qtts_conv_item_blocks(int64_t i, int64_t n_tb, int64_t n_rb, int rows_outer, int64_t *tb,
                                         int64_t *rb) {
    *tb = rows_outer ? i % n_tb : i / n_rb;
    *rb = rows_outer ? i / n_tb : i % n_rb;
}

/* The work memory of one conv call: ws's buffer grown to bytes, or (ws NULL)
 * a new one that *owned says to free. NULL when out of memory. */
void *qtts_conv_ws_get(qtts_conv_ws *ws, size_t bytes, int *owned);

/* The tile of isa (AUTO: the best here; unsupported: scalar), and the path AUTO or isa resolves to. */
qtts_conv_tile_fn qtts_conv_tile_for(qtts_conv_isa isa);
qtts_conv_isa qtts_conv_isa_resolve(qtts_conv_isa isa);

void qtts_conv_tile_scalar(const qtts_conv *cv, const float *x, int64_t ldx, int64_t nt, int64_t rb, float *y,
                           int64_t ldy, const float *add, int64_t ldadd);
void qtts_conv_tile_avx2(const qtts_conv *cv, const float *x, int64_t ldx, int64_t nt, int64_t rb, float *y,
                         int64_t ldy, const float *add, int64_t ldadd);
void qtts_conv_tile_avx512(const qtts_conv *cv, const float *x, int64_t ldx, int64_t nt, int64_t rb, float *y,
                           int64_t ldy, const float *add, int64_t ldadd);

void qtts_conv_tile_neon(const qtts_conv *cv, const float *x, int64_t ldx, int64_t nt, int64_t rb, float *y,
                         int64_t ldy, const float *add, int64_t ldadd);

/* bf16 tiles: x is the input in bf16 channel pairs (uint32 per pair, row
 * stride ldx in pairs), weights cv->wbf. */
typedef void (*qtts_conv_tile_bf16_fn)(const qtts_conv *cv, const uint32_t *x, int64_t ldx, int64_t nt, int64_t rb,
                                       float *y, int64_t ldy, const float *add, int64_t ldadd);
void qtts_conv_tile_bf16_scalar(const qtts_conv *cv, const uint32_t *x, int64_t ldx, int64_t nt, int64_t rb,
                                float *y, int64_t ldy, const float *add, int64_t ldadd);
void qtts_conv_tile_bf16_avx512(const qtts_conv *cv, const uint32_t *x, int64_t ldx, int64_t nt, int64_t rb,
                                float *y, int64_t ldy, const float *add, int64_t ldadd);
void qtts_conv_tile_bf16_neon(const qtts_conv *cv, const uint32_t *x, int64_t ldx, int64_t nt, int64_t rb,
                              float *y, int64_t ldy, const float *add, int64_t ldadd);
/* pairs[c2][t] = bf16(x[2*c2][t]) | bf16(x[2*c2+1][t]) << 16 for t < n (the odd
 * channel is zero when x1 is NULL). */
void qtts_bf16_pairs_row_scalar(const float *x0, const float *x1, uint32_t *pairs, int64_t n);
void qtts_bf16_pairs_row_avx512(const float *x0, const float *x1, uint32_t *pairs, int64_t n);
void qtts_bf16_pairs_row_neon(const float *x0, const float *x1, uint32_t *pairs, int64_t n);

/* int16 tiles (1-tap convs only): x is the input in int16 channel pairs
 * (uint32 per pair, low half = even channel; row stride ldx pairs, readable
 * up to nt rounded up to 8), xs its per-sample scales, weights cv->wi16:
 * y = sum_c w_q x_q * wscale[row] * xs[t] + bias (+ add), the sums exact in
 * int32 per QTTS_CONV_I16_FLUSH pairs and added in f32 in that order, so
 * every path gives the scalar twin's bits. */
typedef void (*qtts_conv_tile_i16_fn)(const qtts_conv *cv, const uint32_t *x, const float *xs, int64_t ldx,
                                      int64_t nt, int64_t rb, float *y, int64_t ldy, const float *add,
                                      int64_t ldadd);
void qtts_conv_tile_i16_scalar(const qtts_conv *cv, const uint32_t *x, const float *xs, int64_t ldx, int64_t nt,
                               int64_t rb, float *y, int64_t ldy, const float *add, int64_t ldadd);
void qtts_conv_tile_i16_avx2(const qtts_conv *cv, const uint32_t *x, const float *xs, int64_t ldx, int64_t nt,
                             int64_t rb, float *y, int64_t ldy, const float *add, int64_t ldadd);
void qtts_conv_tile_i16_avxvnni(const qtts_conv *cv, const uint32_t *x, const float *xs, int64_t ldx, int64_t nt,
                                int64_t rb, float *y, int64_t ldy, const float *add, int64_t ldadd);
void qtts_conv_tile_i16_avx512(const qtts_conv *cv, const uint32_t *x, const float *xs, int64_t ldx, int64_t nt,
                               int64_t rb, float *y, int64_t ldy, const float *add, int64_t ldadd);
/* Quantizes samples [t0, t1) of C channel rows (x, row stride ldx) to int16
 * pairs (pairs[c2*ldp + t], c2 < ceil(C/2); an absent odd channel is 0) with
 * xs[t] = max_c |x[c][t]| / QTTS_CONV_I16_XMAX and q = round-to-even(x *
 * (QTTS_CONV_I16_XMAX / max)) clamped to +-QTTS_CONV_I16_XMAX (a NaN becomes
 * -QTTS_CONV_I16_XMAX: garbage in, but defined). t1 - t0 a multiple of 8 for
 * the AVX2 one (x readable there). Bit-identical twins. */
void qtts_i16_quantize_scalar(const float *x, int64_t ldx, int64_t C, int64_t t0, int64_t t1, uint32_t *pairs,
                              int64_t ldp, float *xs);
void qtts_i16_quantize_avx2(const float *x, int64_t ldx, int64_t C, int64_t t0, int64_t t1, uint32_t *pairs,
                            int64_t ldp, float *xs);
/* Weights to int16 pairs, one scale per column: column col of C rows (w,
 * row stride ldw) -> pairs[c2*ldp + col], scale[col] = max |w| / WMAX
 * (a zero column gets scale 0). */
void qtts_i16_quantize_weights(const float *w, int64_t ldw, int64_t C, int64_t n, uint32_t *pairs, int64_t ldp,
                               float *scale);
/* A GEMM's A (M rows of K, row stride lda) as the int16 conv's weights:
 * pairs in qtts_conv.wi16's layout for rows_pad rows (padding rows zero),
 * one scale per row, quantized as the per-sample inputs (XMAX). One C
 * implementation for every ISA, so every path sees the same integers. */
void qtts_i16_quantize_rows(const float *A, int64_t lda, int64_t M, int64_t K, int64_t rows_pad, uint32_t *pairs,
                            float *scale);
/* qtts_i16_quantize_* over [t0, t1) of rows holding T samples: q where
 * whole vectors are inside T, the scalar twin for the rest of T, then zero
 * pairs and scales up to min(t1, ldp). */
typedef void (*qtts_i16_quantize_fn)(const float *, int64_t, int64_t, int64_t, int64_t, uint32_t *, int64_t, float *);
void qtts_i16_quantize_range(qtts_i16_quantize_fn q, const float *x, int64_t ldx, int64_t C, int64_t t0, int64_t t1, int64_t T,
                             uint32_t *pairs, int64_t ldp, float *xs);
/* The int16 inputs of a conv call are quantized into panels of this many
 * samples, each [ceil(C/2) pairs][QTTS_CONV_I16_PANEL] (the tile's two
 * vectors), so a tile streams one contiguous block instead of pair rows a
 * whole call apart: with T a multiple of 256 those rows fall into a few of
 * the 64 L1 sets and evict each other. 16, the tile's two vectors, rather
 * than the f32 Winograd panels' 24, which would leave a third of the work
 * to the one-vector tile. */
enum { QTTS_CONV_I16_PANEL = 16 };
/* Samples rounded up to whole int16 panels. */
static inline int64_t qtts_i16_panels_len(int64_t T) {
    return (T + QTTS_CONV_I16_PANEL - 1) / QTTS_CONV_I16_PANEL * QTTS_CONV_I16_PANEL;
}
/* qtts_conv1d_cm for an int16 conv (cv->wi16): -1 when its work memory could not be allocated. */
int qtts_conv1d_cm_i16(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                       int64_t ldy, const float *add, int64_t ldadd, qtts_conv_isa isa, qtts_conv_ws *ws);
/* The int16 tile and quantizer for isa (the AVX2 quantizer serves AVX-512 too). */
qtts_conv_tile_i16_fn qtts_conv_tile_i16_for(qtts_conv_isa isa);
qtts_i16_quantize_fn qtts_i16_quantize_for(qtts_conv_isa isa);

void qtts_snake_row_avx2(const float *x, float *y, int64_t n, float ea, float inv_b);
void qtts_snake_row_avx512(const float *x, float *y, int64_t n, float ea, float inv_b);
void qtts_snake_row_neon(const float *x, float *y, int64_t n, float ea, float inv_b);

/* sin^2 by Cody-Waite reduction modulo pi/2 and the Cephes sinf/cosf
 * polynomials on [-pi/4, pi/4]; shared constants so every path agrees. */
#define QTTS_SIN_2_OVER_PI 0.636619772367581343f
#define QTTS_SIN_DP1 1.5703125f
#define QTTS_SIN_DP2 4.837512969970703125e-4f
#define QTTS_SIN_DP3 7.54978995489188216e-8f
#define QTTS_SIN_PI_4 0.785398163397448310f
#define QTTS_SIN_S1 (-1.6666654611e-1f)
#define QTTS_SIN_S2 8.3321608736e-3f
#define QTTS_SIN_S3 (-1.9515295891e-4f)
#define QTTS_COS_C1 4.166664568298827e-2f
#define QTTS_COS_C2 (-1.388731625493765e-3f)
#define QTTS_COS_C3 2.443315711809948e-5f

/* int16 forms pack two channels per 32-bit word: the words for c channels. */
static inline int64_t qtts_conv_pairs(int64_t c) { return (c + 1) / 2; }

#endif
