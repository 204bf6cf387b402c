/* 1-D convolution kernels for the speech-tokenizer decoder (all causal).
 *
 * Two layouts are used:
 *  - channel-major ("cm"): a signal of C channels is C rows of floats, each row
 *    holding the conv's left history ((k-1)*dil samples) followed by the T new
 *    samples. Used at high sample rates, where T is large: the kernel
 *    vectorizes over time and broadcasts the weights (blocked direct
 *    convolution, no im2col).
 *  - time-major ("tm"): T rows of C floats (history rows first). Used at low
 *    rates (few samples per call), where a conv is an im2col row per output
 *    sample times a weight matrix (qtts_linear).
 *
 * A causal ConvTranspose with kernel K and stride s (output trimmed to L*s
 * samples, as the reference does by dropping the last K-s) is computed as s
 * phase convolutions over the INPUT: output sample t*s+j depends on inputs
 * t-h for h = 0..H, H = ceil(K/s)-1, through tap j+h*s. Keeping the last H
 * input samples as history is therefore the exact streaming form of the
 * overlap-add tail (no separate tail buffer is needed). */
#ifndef QTTS_TENSOR_CONV_H
#define QTTS_TENSOR_CONV_H

#include <stdint.h>

#include "core/err.h"
#include "core/threadpool.h"

/* Output rows per register tile of the channel-major kernel (packing unit). */
enum { QTTS_CONV_MR = 8 };

/* A channel-major conv with packed weights. For a transposed conv the rows are
 * the s phases: row j*c_out + co produces output channel co, phase j. */
typedef struct {
    int64_t c_in, c_out, k, dil; /* c_out: rows computed (c_out*stride for a transposed conv) */
    int64_t rows_pad;            /* c_out rounded up to QTTS_CONV_MR */
    float *w;                    /* [rows_pad/MR][c_in][k][MR]; NULL once converted to bf16 */
    float *bias;                 /* [rows_pad] */
    /* bf16 form (qtts_conv_to_bf16): input channels in pairs, one uint32 per
     * pair (low half = even channel), [rows_pad/MR][ceil(c_in/2)][k][MR]. */
    uint32_t *wbf;
    /* Winograd form (tensor/conv_winograd.h, qtts_conv_to_winograd): when set,
     * w is NULL and the conv runs through it. */
    struct qtts_winograd *wg;
    /* int16 form of a 1-tap conv (qtts_conv_to_i16): weights as int16 pairs
     * in wbf's layout ([rows_pad/MR][ceil(c_in/2)][MR], low half = even
     * channel), each row scaled by wscale[row]; w is NULL. */
    uint32_t *wi16;
    float *wscale;
} qtts_conv;

/* w: PyTorch Conv1d weight [c_out][c_in][k]; bias [c_out] or NULL. */
int qtts_conv_init(qtts_conv *cv, const float *w, const float *bias, int64_t c_out, int64_t c_in, int64_t k,
                   int64_t dil, qtts_err *err);
/* w: PyTorch ConvTranspose1d weight [c_in][c_out][k], stride s; bias [c_out] or NULL.
 * The result has c_out*s rows (phase-major) and k = H+1 taps over the input. */
int qtts_conv_init_transposed(qtts_conv *cv, const float *w, const float *bias, int64_t c_in, int64_t c_out,
                              int64_t k, int64_t stride, qtts_err *err);
/* The same two, packed on pool's threads (NULL: this thread; the same bits
 * either way), where bf16 is set straight into the bf16 form: the bytes
 * qtts_conv_to_bf16 leaves, with no f32 form in between (fails where
 * qtts_conv_bf16_supported() does not hold). */
int qtts_conv_init_pool(qtts_conv *cv, const float *w, const float *bias, int64_t c_out, int64_t c_in, int64_t k,
                        int64_t dil, int bf16, qtts_pool *pool, qtts_err *err);
int qtts_conv_init_transposed_pool(qtts_conv *cv, const float *w, const float *bias, int64_t c_in, int64_t c_out,
                                   int64_t k, int64_t stride, int bf16, qtts_pool *pool, qtts_err *err);
void qtts_conv_free(qtts_conv *cv);

/* bf16 convs: weights and inputs rounded to bf16 (round to nearest even),
 * products summed in f32 (vdpbf16ps), about twice the f32 FMA rate. The
 * f32 weights are freed. Only where qtts_conv_bf16_supported() (AVX-512
 * BF16); elsewhere it fails with a clear message. Every conv call then
 * converts its input to bf16 channel pairs first. */
int qtts_conv_bf16_supported(void);
/* 0 where qtts_conv_bf16_supported(), else -1 with the one message every bf16 form gives. */
int qtts_conv_bf16_require(qtts_err *err);
int qtts_conv_to_bf16(qtts_conv *cv, qtts_err *err);
/* int16 convs: integer products of 14-bit weights (one scale per output
 * row) and 14-bit inputs (one scale per time sample over all channels,
 * taken per call), summed exactly in int32 (vpmaddwd: two products per lane
 * and instruction, faster than f32 FMAs where measured) and scaled
 * back to f32. 16 channel pairs of such products always fit in int32
 * (2 * 8191^2 * 16 < 2^31), so the sums are flushed to f32 every
 * QTTS_CONV_I16_FLUSH pairs and no input can overflow. The bits: 12 each
 * gave the golden decoders 32 dB against the f32 reference, 14 each 43.8
 * (43.5 with the time-major layers too; one Winograd F(4, 7) conv alone:
 * 44 -> 54 dB). Only 1-tap convs (1x1 convs and the products of a Winograd
 * conv, whose points are 1-tap convs: converting a Winograd conv converts
 * all its points or, on failure, none); the f32 weights are freed. Where
 * qtts_conv_i16_supported() (x86-64 with AVX2); elsewhere it fails with a
 * clear message. */
enum { QTTS_CONV_I16_WMAX = 8191, QTTS_CONV_I16_XMAX = 8191, QTTS_CONV_I16_FLUSH = 16 };
int qtts_conv_i16_supported(void);
/* 0 where qtts_conv_i16_supported(), else -1 with the one message every int16 conversion gives. */
int qtts_conv_i16_require(qtts_err *err);
int qtts_conv_to_i16(qtts_conv *cv, qtts_err *err);
/* Input history samples the conv needs: (k-1)*dil. */
static inline int64_t qtts_conv_history(const qtts_conv *cv) { return (cv->k - 1) * cv->dil; }

/* Channel-major causal conv: y[co][t] = bias[co] + sum_{ci,k} W[co][ci][k] x[ci][t + k*dil]
 * (+ add[co][t] if add) for t in [0, T). Row ci of x starts with its history.
 * add may alias y (in-place residual). Multi-threaded over time and row blocks.
 * Returns 0, or -1 when a bf16 conv could not allocate its input pairs (y untouched). */
int qtts_conv1d_cm(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                    int64_t ldy, const float *add, int64_t ldadd);
/* Work memory a caller keeps across conv calls: a Winograd conv's
 * transformed tiles, a bf16 conv's rounded input, a 1x1 conv's input panels.
 * Allocated per call otherwise, where glibc serves a few MB from fresh pages
 * whenever its heap was trimmed (after load), whose page faults would slow
 * the load-time measurement of a Winograd conv. Grows to the largest
 * call; one per thread of use; zero-initialise, free with qtts_conv_ws_free. */
typedef struct {
    void *buf;
    size_t cap; /* bytes */
} qtts_conv_ws;
void qtts_conv_ws_free(qtts_conv_ws *ws);
/* qtts_conv1d_cm with its work memory from ws (NULL: allocated per call). */
int qtts_conv1d_cm_ws(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                      int64_t ldy, const float *add, int64_t ldadd, qtts_conv_ws *ws);
/* Scalar single-thread twin of qtts_conv1d_cm, for tests (what the SIMD
 * paths are tested against); for a bf16 conv it rounds x the same way. */
int qtts_conv1d_cm_ref(const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y, int64_t ldy,
                        const float *add, int64_t ldadd);

/* Dense product on the same register tiles: Y[m][n] = sum_k A[m][k] B[k][n]
 * (+ add[m*ldadd + n]; ldadd 0 adds one row to every row, i.e. a bias).
 * A (activations, row stride lda) is the broadcast operand, packed on the fly
 * into apack (qtts_gemm_pack_size floats). B is a weight packed once into
 * column panels so each tile streams contiguous memory. This is how the
 * time-major (low-rate) layers run: A = activations or im2col rows. */
typedef struct {
    float *p; /* [ceil(N/panel)][K][panel]; NULL when the weight is in bf16 or f16 */
    /* bf16 form (qtts_gemm_b_bf16_panels): rows of B in pairs, one uint32 per
     * pair (low half = even k), [ceil(N/panel)][ceil(K/2)][panel]. qtts_gemm
     * then rounds A to bf16 too and runs the bf16 conv tiles. */
    uint32_t *pbf;
    /* f16 form (qtts_gemm_b_f16_panels): p's layout in half precision.
     * qtts_gemm widens each panel exactly into a per-thread f32 copy and runs
     * the f32 tiles on it: f32 arithmetic on f16-rounded weights, half the
     * bytes from memory where a step has few rows (weight-bound). */
    uint16_t *ph;
    /* int16 form (qtts_gemm_b_i16_panels): rows of B in int16 pairs, in the
     * int16 tile's panels ([ceil(N/W)][ceil(K/2)][W], W =
     * QTTS_CONV_I16_PANEL, low half = even k), each column n scaled by
     * si16[n] (padded to whole panels). qtts_gemm then quantizes A per row
     * and runs the int16 conv tiles with A as their weights. */
    uint32_t *pi16;
    float *si16;
    int64_t K, N, panel;
} qtts_gemm_b;

/* B from a PyTorch-layout weight W [N][K] (B = W^T). */
int qtts_gemm_b_init(qtts_gemm_b *b, const float *w, int64_t N, int64_t K, qtts_err *err);
/* The same, its panels packed on pool's threads (NULL: this thread; the same
 * bits either way), where bf16 is set straight into b->pbf: the bytes
 * qtts_gemm_b_bf16_panels gives, with no f32 panels in between (fails where
 * qtts_conv_bf16_supported() does not hold). */
int qtts_gemm_b_init_pool(qtts_gemm_b *b, const float *w, int64_t N, int64_t K, int bf16, qtts_pool *pool,
                          qtts_err *err);
/* Frees b->p and b->pbf (for tests: the decoder hands them to its own owner list). */
void qtts_gemm_b_free(qtts_gemm_b *b);
/* The bf16 pair panels of b's f32 panels (a new buffer; b is unchanged: the
 * caller stores it in b->pbf and frees b->p). NULL on OOM or where the CPU
 * has no bf16 convolutions (qtts_conv_bf16_supported). */
uint32_t *qtts_gemm_b_bf16_panels(const qtts_gemm_b *b, qtts_err *err);
/* The f16 panels of b's f32 panels (a new buffer, rounded to nearest even;
 * b is unchanged: the caller stores it in b->ph and frees b->p). NULL on OOM. */
uint16_t *qtts_gemm_b_f16_panels(const qtts_gemm_b *b, qtts_err *err);
/* The int16 form of b's f32 panels (the int16 convs above: 14 bits, one
 * scale per column of B, i.e. per output channel) as new buffers; b is
 * unchanged (the caller stores them in b->pi16 / b->si16 and frees b->p).
 * -1 (nothing allocated) where qtts_conv_i16_supported() does not hold, or
 * on OOM. */
int qtts_gemm_b_i16_panels(const qtts_gemm_b *b, uint32_t **pairs, float **scales, qtts_err *err);
/* Floats of apack for an f32 or bf16 B; qtts_gemm_work_size for any B. */
size_t qtts_gemm_pack_size(int64_t M, int64_t K);
/* Floats of apack for qtts_gemm(pool, M, ..., B, ...): with f16 panels it
 * also holds one widened panel per pool thread. */
size_t qtts_gemm_work_size(int64_t M, const qtts_gemm_b *B, const qtts_pool *pool);
void qtts_gemm(qtts_pool *pool, int64_t M, const float *A, int64_t lda, const qtts_gemm_b *B, float *Y, int64_t ldy,
               const float *add, int64_t ldadd, float *apack);
/* Scalar reference, for tests: Y = A W^T (+ add), W [N][K] unpacked. */
void qtts_gemm_ref(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *w, float *Y,
                   int64_t ldy, const float *add, int64_t ldadd);

/* Interleaves the phase rows of a transposed conv: out[co][t*s+j] = ph[j*c_out+co][t]. */
void qtts_conv_interleave(qtts_pool *pool, const float *ph, int64_t ldph, int64_t c_out, int64_t s, int64_t T,
                          float *out, int64_t ldo);

/* Time-major weight matrix of a conv for qtts_linear: row co, column ci*k+kk
 * (the PyTorch Conv1d layout, so a plain conv needs no copy). For a
 * transposed conv: rows j*c_out+co (so a linear output row of c_out*s floats
 * is s consecutive output samples), columns ci*(H+1)+kk, tap j+(H-kk)*s. */
float *qtts_conv_tm_transposed_matrix(const float *w, int64_t c_in, int64_t c_out, int64_t k, int64_t stride,
                                      int64_t *taps, qtts_err *err);
/* Its taps per phase, ceil(k / stride) (k, stride > 0). */
int64_t qtts_conv_tm_transposed_taps(int64_t k, int64_t stride);
/* The same matrix written into m (stride*c_out rows of c_in*taps floats), on
 * pool's threads (NULL: this thread); k and stride are not checked. */
void qtts_conv_tm_transposed_matrix_into(const float *w, int64_t c_in, int64_t c_out, int64_t k, int64_t stride,
                                         float *m, qtts_pool *pool);
/* im2col for time-major convs: col[t][ci*k+kk] = xh[t + kk*dil][ci], xh has
 * (k-1)*dil history rows then T rows of c_in floats (row stride ldx). */
void qtts_im2col_tm(const float *xh, int64_t ldx, int64_t c_in, int64_t T, int64_t k, int64_t dil, float *col);

/* Depthwise causal conv, time-major: y[t][c] = b[c] + sum_kk wt[kk][c] xh[t+kk][c]
 * (wt: the PyTorch [c][1][k] weight transposed to [k][c]). xh has k-1 history rows. */
void qtts_dwconv_tm(const float *xh, int64_t C, int64_t T, const float *wt, int64_t k, const float *b, float *y);

/* SnakeBeta, y = x + inv_b * sin^2(ea * x), with ea = exp(alpha) and
 * inv_b = 1/(exp(beta)+1e-9) precomputed per channel. In-place allowed. */
void qtts_snake_row(const float *x, float *y, int64_t n, float ea, float inv_b);
/* Scalar twin (same algorithm, no SIMD) and the libm formula, for tests. */
void qtts_snake_row_ref(const float *x, float *y, int64_t n, float ea, float inv_b);
void qtts_snake_row_libm(const float *x, float *y, int64_t n, float ea, float inv_b);
/* Channel-major: row c of x (ldx) -> row c of y (ldy), T samples, parallel over channels. */
void qtts_snake_cm(qtts_pool *pool, const float *x, int64_t ldx, float *y, int64_t ldy, int64_t C, int64_t T,
                   const float *ea, const float *inv_b);
/* Time-major: rows of C floats (stride ld), in place. */
void qtts_snake_tm(float *x, int64_t ld, int64_t C, int64_t T, const float *ea, const float *inv_b);

/* SIMD paths. AUTO follows qtts_cpu_isa() (so QTTS_ISA caps it too). */
typedef enum {
    QTTS_CONV_ISA_AUTO,
    QTTS_CONV_ISA_SCALAR,
    QTTS_CONV_ISA_AVX2,
    QTTS_CONV_ISA_AVX512,
    QTTS_CONV_ISA_NEON
} qtts_conv_isa;
/* The path AUTO resolves to on this CPU. */
qtts_conv_isa qtts_conv_isa_best(void);
const char *qtts_conv_isa_name(qtts_conv_isa isa);
/* "avx512-vnni", "avx-vnni", "avx2" or "scalar": the int16 tile that isa runs (for info and bench) */
const char *qtts_conv_tile_i16_name(qtts_conv_isa isa);
/* 1 if this CPU (and build) can run isa. */
int qtts_conv_isa_supported(qtts_conv_isa isa);
/* Explicit-ISA forms for tests and benchmarks (an unsupported isa falls back to scalar). */
int qtts_conv1d_cm_isa(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                        int64_t ldy, const float *add, int64_t ldadd, qtts_conv_isa isa);
void qtts_snake_row_isa(const float *x, float *y, int64_t n, float ea, float inv_b, qtts_conv_isa isa);

#endif
