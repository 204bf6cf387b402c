/* The int16 form of 1-tap channel-major convs (tensor/conv.h,
 * qtts_conv_to_i16): weight conversion, the per-call input quantization, the
 * scalar twins of the tile and the quantizer, and the conv call. The AVX2
 * kernels are in conv_i16_avx2.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/conv.h"
#include "tensor/conv_kernels.h"
#include "tensor/conv_winograd.h"
#include "tensor/cpu.h"
#include "tensor/tensor.h"

int qtts_conv_i16_supported(void) {
#if defined(__x86_64__) || defined(_M_X64)
    return qtts_cpu_isa() == QTTS_ISA_AVX2 || qtts_cpu_isa() == QTTS_ISA_AVX512;
#else
    return 0; /* a NEON twin (vmlal_s16) is not written yet: the scalar tile alone would be slower than f32 */
#endif
}

int qtts_conv_i16_require(qtts_err *err) {
    if (qtts_conv_i16_supported()) return 0;
    return qtts_fail(err, "int16 convolutions need an x86-64 CPU with AVX2 (this one: %s kernels)",
                     qtts_conv_isa_name(qtts_conv_isa_best()));
}


/* q = round-to-even(v) clamped to +-QTTS_CONV_I16_XMAX, with the AVX2
 * quantizer's NaN rule (max then min, each keeping its second operand when
 * the first is NaN). */
static inline int32_t quantize_one(float v) {
    v = v > (float)-QTTS_CONV_I16_XMAX ? v : (float)-QTTS_CONV_I16_XMAX;
    v = v < (float)QTTS_CONV_I16_XMAX ? v : (float)QTTS_CONV_I16_XMAX;
    return (int32_t)nearbyintf(v);
}

/* A weight already scaled to +-WMAX: rounded half away from zero, branch-free (no libm call: a decoder
 * converts ~100 M of them at load), NaN to 0. */
static inline int32_t quantize_weight(float v) {
    v = v == v ? v : 0.0f;
    v = v > (float)-QTTS_CONV_I16_WMAX ? v : (float)-QTTS_CONV_I16_WMAX;
    v = v < (float)QTTS_CONV_I16_WMAX ? v : (float)QTTS_CONV_I16_WMAX;
    return (int32_t)(v + copysignf(0.5f, v));
}

static inline uint32_t pair_of(int32_t lo, int32_t hi) { return (uint32_t)(uint16_t)lo | (uint32_t)(uint16_t)hi << 16; }

/* The int16 weights of a 1-tap f32 conv as new buffers (cv unchanged). */
static int i16_weights(const qtts_conv *cv, uint32_t **wq, float **ws, qtts_err *err) {
    *wq = NULL;
    *ws = NULL;
    if (cv->k != 1) return qtts_fail(err, "int16: only 1-tap convolutions (this one has %lld taps)", (long long)cv->k);
    if (!cv->w) return qtts_fail(err, "int16: the conv has no f32 weights (already bf16?)");
    const int64_t nrb = cv->rows_pad / QTTS_CONV_MR, c2n = qtts_conv_pairs(cv->c_in);
    *wq = qtts_calloc((size_t)(nrb * c2n * QTTS_CONV_MR), sizeof **wq, err);
    *ws = qtts_calloc((size_t)cv->rows_pad, sizeof **ws, err);
    if (!*wq || !*ws) {
        free(*wq);
        free(*ws);
        *wq = NULL;
        *ws = NULL;
        return -1;
    }
    /* a row block is [c_in][MR]: its MR rows are the columns */
    for (int64_t rb = 0; rb < nrb; rb++)
        qtts_i16_quantize_weights(cv->w + rb * cv->c_in * QTTS_CONV_MR, QTTS_CONV_MR, cv->c_in, QTTS_CONV_MR,
                                  *wq + rb * c2n * QTTS_CONV_MR, QTTS_CONV_MR, *ws + rb * QTTS_CONV_MR);
    return 0;
}

static void i16_commit(qtts_conv *cv, uint32_t *wq, float *ws) {
    free(cv->w);
    cv->w = NULL;
    cv->wi16 = wq;
    cv->wscale = ws;
}

int qtts_conv_to_i16(qtts_conv *cv, qtts_err *err) {
    if (qtts_conv_i16_require(err)) return -1;
    if (cv->wg) { /* all points or none: the Winograd conv runs one form for all of them */
        struct qtts_winograd *wg = cv->wg;
        if (wg->point[0].wi16) return 0;
        uint32_t *wq[QTTS_WINOGRAD_NMAX] = {0};
        float *ws[QTTS_WINOGRAD_NMAX] = {0};
        for (int q = 0; q < wg->plan.n; q++)
            if (i16_weights(&wg->point[q], &wq[q], &ws[q], err)) {
                for (int r = 0; r < q; r++) {
                    free(wq[r]);
                    free(ws[r]);
                }
                return -1;
            }
        for (int q = 0; q < wg->plan.n; q++) i16_commit(&wg->point[q], wq[q], ws[q]);
        return 0;
    }
    if (cv->wi16) return 0;
    uint32_t *wq;
    float *ws;
    if (i16_weights(cv, &wq, &ws, err)) return -1;
    i16_commit(cv, wq, ws);
    return 0;
}

void qtts_i16_quantize_weights(const float *w, int64_t ldw, int64_t C, int64_t n, uint32_t *pairs, int64_t ldp,
                               float *scale) {
    /* row by row (the weights' layout), so converting a decoder's ~100 M weights takes a fraction of a
     * second: the maxima over all rows, then the scales, then the pairs (round half away from zero) */
    for (int64_t col = 0; col < n; col++) scale[col] = 0.0f;
    for (int64_t c = 0; c < C; c++)
        for (int64_t col = 0; col < n; col++) {
            const float a = fabsf(w[c * ldw + col]);
            scale[col] = a > scale[col] ? a : scale[col]; /* NaN ignored */
        }
    for (int64_t col = 0; col < n; col++) /* the column's maximum -> its multiplier, for now; inf: a zero column */
        scale[col] = scale[col] > 0.0f && isfinite(scale[col]) ? (float)(QTTS_CONV_I16_WMAX / (double)scale[col]) : 0.0f;
    for (int64_t c2 = 0; c2 < C / 2; c2++) { /* a zero column's multiplier 0 makes its pairs 0 */
        const float *w0 = w + 2 * c2 * ldw, *w1 = w0 + ldw;
        for (int64_t col = 0; col < n; col++)
            pairs[c2 * ldp + col] = pair_of(quantize_weight(w0[col] * scale[col]), quantize_weight(w1[col] * scale[col]));
    }
    if (C % 2)
        for (int64_t col = 0; col < n; col++)
            pairs[C / 2 * ldp + col] = pair_of(quantize_weight(w[(C - 1) * ldw + col] * scale[col]), 0);
    for (int64_t col = 0; col < n; col++) scale[col] = scale[col] > 0.0f ? 1.0f / scale[col] : 0.0f;
}

void qtts_i16_quantize_rows(const float *A, int64_t lda, int64_t M, int64_t K, int64_t rows_pad, uint32_t *pairs,
                            float *scale) {
    const int64_t c2n = qtts_conv_pairs(K);
    for (int64_t m = 0; m < rows_pad; m++) {
        uint32_t *d = pairs + (m / QTTS_CONV_MR) * c2n * QTTS_CONV_MR + m % QTTS_CONV_MR;
        float mx = 0.0f;
        for (int64_t k = 0; m < M && k < K; k++) {
            const float a = fabsf(A[m * lda + k]);
            mx = a > mx ? a : mx;
        }
        const float inv = mx > 0.0f ? (float)QTTS_CONV_I16_XMAX / mx : 0.0f;
        scale[m] = mx / (float)QTTS_CONV_I16_XMAX;
        for (int64_t c2 = 0; c2 < c2n; c2++) {
            if (m >= M) {
                d[c2 * QTTS_CONV_MR] = 0;
                continue;
            }
            const float *src = A + m * lda;
            const int32_t lo = quantize_one(src[2 * c2] * inv), hi = 2 * c2 + 1 < K ? quantize_one(src[2 * c2 + 1] * inv) : 0;
            d[c2 * QTTS_CONV_MR] = pair_of(lo, hi);
        }
    }
}

/* ---- scalar twins ------------------------------------------------------------ */

void qtts_i16_quantize_scalar(const float *x, int64_t ldx, int64_t C, int64_t t0, int64_t t1, uint32_t *pairs,
                              int64_t ldp, float *xs) {
    for (int64_t t = t0; t < t1; t++) {
        float mx = 0.0f;
        for (int64_t c = 0; c < C; c++) {
            const float a = fabsf(x[c * ldx + t]);
            mx = a > mx ? a : mx; /* as vmaxps(a, mx): mx when a is NaN */
        }
        const float inv = mx > 0.0f ? (float)QTTS_CONV_I16_XMAX / mx : 0.0f;
        xs[t] = mx / (float)QTTS_CONV_I16_XMAX;
        for (int64_t c2 = 0; c2 < qtts_conv_pairs(C); c2++) {
            const int32_t lo = quantize_one(x[2 * c2 * ldx + t] * inv);
            const int32_t hi = 2 * c2 + 1 < C ? quantize_one(x[(2 * c2 + 1) * ldx + t] * inv) : 0;
            pairs[c2 * ldp + t] = pair_of(lo, hi);
        }
    }
}

static inline int32_t lo16(uint32_t p) { return (int16_t)(uint16_t)(p & 0xFFFFu); }
static inline int32_t hi16(uint32_t p) { return (int16_t)(uint16_t)(p >> 16); }

void qtts_conv_tile_i16_scalar(const qtts_conv *cv, const uint32_t *x, const float *xs, int64_t ldx, int64_t nt,
                               int64_t rb, float *y, int64_t ldy, const float *add, int64_t ldadd) {
    const int64_t c2n = qtts_conv_pairs(cv->c_in);
    const uint32_t *wb = cv->wi16 + (size_t)rb * c2n * QTTS_CONV_MR;
    for (int r = 0; r < QTTS_CONV_MR; r++) {
        const int64_t row = rb * QTTS_CONV_MR + r;
        if (row >= cv->c_out) break;
        for (int64_t t = 0; t < nt; t++) {
            float facc = 0.0f;
            for (int64_t c0 = 0; c0 < c2n; c0 += QTTS_CONV_I16_FLUSH) {
                const int64_t c1 = c0 + QTTS_CONV_I16_FLUSH < c2n ? c0 + QTTS_CONV_I16_FLUSH : c2n;
                int32_t s = 0;
                for (int64_t c2 = c0; c2 < c1; c2++) {
                    const uint32_t w = wb[c2 * QTTS_CONV_MR + r], v = x[c2 * ldx + t];
                    s += lo16(w) * lo16(v) + hi16(w) * hi16(v);
                }
                facc += (float)s;
            }
            float o = facc * cv->wscale[row];
            o = o * xs[t];
            o = o + cv->bias[row];
            if (add) o = o + add[row * ldadd + t];
            y[row * ldy + t] = o;
        }
    }
}

qtts_conv_tile_i16_fn qtts_conv_tile_i16_for(qtts_conv_isa isa) {
#if defined(__x86_64__) || defined(_M_X64)
    const qtts_conv_isa r = qtts_conv_isa_resolve(isa);
    if (r == QTTS_CONV_ISA_AVX512) return qtts_conv_tile_i16_avx512;
    if (r == QTTS_CONV_ISA_AVX2)
        return qtts_cpu_features_get()->avxvnni ? qtts_conv_tile_i16_avxvnni : qtts_conv_tile_i16_avx2;
#else
    (void)isa;
#endif
    return qtts_conv_tile_i16_scalar;
}

const char *qtts_conv_tile_i16_name(qtts_conv_isa isa) {
    const qtts_conv_tile_i16_fn t = qtts_conv_tile_i16_for(isa);
#if defined(__x86_64__) || defined(_M_X64)
    if (t == qtts_conv_tile_i16_avx512) return "avx512-vnni";
    if (t == qtts_conv_tile_i16_avxvnni) return "avx-vnni";
    if (t == qtts_conv_tile_i16_avx2) return "avx2";
#endif
    return t == qtts_conv_tile_i16_scalar ? "scalar" : "?";
}

qtts_i16_quantize_fn qtts_i16_quantize_for(qtts_conv_isa isa) {
#if defined(__x86_64__) || defined(_M_X64)
    const qtts_conv_isa r = qtts_conv_isa_resolve(isa);
    if (r == QTTS_CONV_ISA_AVX2 || r == QTTS_CONV_ISA_AVX512) return qtts_i16_quantize_avx2;
#else
    (void)isa;
#endif
    return qtts_i16_quantize_scalar;
}

/* ---- one conv call ------------------------------------------------------------ */

/* Panels per quantization item. Each panel is one quantizer call, which reads all channels of its samples
 * twice (the maximum, then the pairs) while they are in cache. */
enum { QUANT_PANELS = 4 };

typedef struct {
    const qtts_conv *cv;
    const float *x, *add;
    float *y, *xs;
    uint32_t *pairs; /* [n_panels][c2n][QTTS_CONV_I16_PANEL] */
    int64_t ldx, ldy, ldadd, T, c2n, n_rb, n_panels;
    int rows_outer;
    qtts_i16_quantize_fn quantize;
    qtts_conv_tile_i16_fn tile;
} i16_job;

/* Quantizes samples [t0, t1) of C rows: whole vectors with q, the tail with the scalar twin (the same bits),
 * and zero pairs and scales up to the row's padded end. */
void qtts_i16_quantize_range(qtts_i16_quantize_fn q, const float *x, int64_t ldx, int64_t C, int64_t t0, int64_t t1,
                             int64_t T, uint32_t *pairs, int64_t ldp, float *xs) {
    const int64_t tv = t1 < T ? t1 : t0 + (T - t0) / 8 * 8;
    if (tv > t0) q(x, ldx, C, t0, tv, pairs, ldp, xs);
    const int64_t te = t1 < T ? t1 : T;
    if (te > tv) qtts_i16_quantize_scalar(x, ldx, C, tv, te, pairs, ldp, xs);
    for (int64_t t = te; t < t1 && t < ldp; t++) {
        xs[t] = 0.0f;
        for (int64_t c2 = 0; c2 < qtts_conv_pairs(C); c2++) pairs[c2 * ldp + t] = 0;
    }
}

static void quant_items(void *p, int64_t i0, int64_t i1, int tid) {
    (void)tid;
    const i16_job *j = p;
    const int64_t W = QTTS_CONV_I16_PANEL;
    for (int64_t i = i0; i < i1; i++)
        for (int64_t pb = i * QUANT_PANELS; pb < (i + 1) * QUANT_PANELS && pb < j->n_panels; pb++)
            qtts_i16_quantize_range(j->quantize, j->x + pb * W, j->ldx, j->cv->c_in, 0, W, j->T - pb * W,
                                    j->pairs + pb * j->c2n * W, W, j->xs + pb * W);
}

/* Items are (panel, row block), in qtts_conv_item_blocks order. */
static void tile_items(void *p, int64_t i0, int64_t i1, int tid) {
    (void)tid;
    const i16_job *j = p;
    const int64_t W = QTTS_CONV_I16_PANEL;
    for (int64_t i = i0; i < i1; i++) {
        int64_t pb, rb;
        qtts_conv_item_blocks(i, j->n_panels, j->n_rb, j->rows_outer, &pb, &rb);
        const int64_t t0 = pb * W, nt = j->T - t0 < W ? j->T - t0 : W;
        j->tile(j->cv, j->pairs + pb * j->c2n * W, j->xs + t0, W, nt, rb, j->y + t0, j->ldy,
                j->add ? j->add + t0 : NULL, j->ldadd);
    }
}

int qtts_conv1d_cm_i16(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                       int64_t ldy, const float *add, int64_t ldadd, qtts_conv_isa isa, qtts_conv_ws *ws) {
    const int64_t len = qtts_i16_panels_len(T), c2n = qtts_conv_pairs(cv->c_in);
    int owned;
    uint32_t *buf = qtts_conv_ws_get(ws, (size_t)(c2n + 1) * (size_t)len * sizeof(uint32_t), &owned);
    if (!buf) return -1;
    i16_job j = {.cv = cv, .x = x, .add = add, .y = y, .xs = (float *)(buf + c2n * len), .pairs = buf, .ldx = ldx,
                 .ldy = ldy, .ldadd = ldadd, .T = T, .c2n = c2n, .n_panels = len / QTTS_CONV_I16_PANEL,
                 .quantize = qtts_i16_quantize_for(isa), .tile = qtts_conv_tile_i16_for(isa)};
    const double weights = (double)cv->c_out * (double)cv->c_in;
    qtts_parallel_for_work(pool, (j.n_panels + QUANT_PANELS - 1) / QUANT_PANELS, 1, (double)cv->c_in * (double)T,
                           quant_items, &j);
    j.n_rb = cv->rows_pad / QTTS_CONV_MR;
    j.rows_outer = cv->rows_pad > T;
    qtts_parallel_for_work(pool, j.n_panels * j.n_rb, 1, qtts_tile_work(weights * (double)T, weights), tile_items, &j);
    if (owned) free(buf);
    return 0;
}
