#include "tensor/quant.h"

#include <math.h>
#include <string.h>

#include "tensor/cpu.h"
#include "tensor/quant_kernels.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

_Static_assert(sizeof(qtts_block_q8_0) == 34, "Q8_0 block must be 34 bytes");
_Static_assert(sizeof(qtts_block_q4_k) == 144, "Q4_K block must be 144 bytes");

static void quantize_q8_0(const float *x, qtts_block_q8_0 *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++, x += 32) {
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
        /* quantize against the scale as stored (f16), not the exact one */
        y[b].d = qtts_f32_to_f16(amax / 127.0f);
        float d = qtts_f16_to_f32(y[b].d), id = d > 0 ? 1.0f / d : 0.0f;
        for (int i = 0; i < 32; i++) {
            long q = lrintf(x[i] * id);
            y[b].qs[i] = (int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
        }
    }
}

static void dequantize_q8_0(const qtts_block_q8_0 *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n / 32; b++) {
        float d = qtts_f16_to_f32(x[b].d);
        for (int i = 0; i < 32; i++) *y++ = d * (float)x[b].qs[i];
    }
}

void qtts_q4_k_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Q4_K: value = d*sc_j*q - dmin*m_j, q in 0..15, sc_j and m_j 6-bit codes per
 * 32-value sub-block j, d and dmin f16 per 256 values.
 *
 * Quantizer (minimises the squared error): per sub-block, a search over
 * candidate scales, each followed by the least-squares (scale, offset) for
 * the levels it assigns, with the format's constraint offset <= 0; then the
 * 6-bit codes; then a local search of each sub-block's codes (+-1) against
 * the error after the final rounding. */

/* Level for value x on the grid s*q + m (is = 1/s), q clamped to 0..15. */
static int level(float x, float is, float m) {
    /* round half up by truncation after clamping; written as select-style
     * ternaries so they compile to min/max (no unpredictable branches) */
    float v = (x - m) * is + 0.5f;
    v = v > 0.0f ? v : 0.0f;
    v = v < 15.5f ? v : 15.0f;
    return (int)v;
}

static float grid_err_scalar(const float *x, float s, float m) {
    float e[4] = {0, 0, 0, 0}, is = s > 0 ? 1.0f / s : 0.0f; /* 4 partial sums: short dependency chains */
    for (int i = 0; i < 32; i += 4)
        for (int k = 0; k < 4; k++) {
            float d = s * (float)level(x[i + k], is, m) + m - x[i + k];
            e[k] += d * d;
        }
    return (e[0] + e[1]) + (e[2] + e[3]);
}

static void levels32_scalar(const float *x, float is, float m, int *q) {
    for (int i = 0; i < 32; i++) q[i] = level(x[i], is, m);
}
#if defined(__SSE2__)
/* Four levels at once, each exactly as level() computes it (the same IEEE
 * operations in the same order: bit-identical quants). */
static __m128i level4(__m128 x, __m128 is, __m128 m) {
    __m128 v = _mm_add_ps(_mm_mul_ps(_mm_sub_ps(x, m), is), _mm_set1_ps(0.5f));
    v = _mm_max_ps(v, _mm_setzero_ps()); /* v > 0 ? v : 0 (NaN: 0) */
    const __m128 lt = _mm_cmplt_ps(v, _mm_set1_ps(15.5f));
    v = _mm_or_ps(_mm_and_ps(lt, v), _mm_andnot_ps(lt, _mm_set1_ps(15.0f)));
    return _mm_cvttps_epi32(v);
}

static float grid_err_sse(const float *x, float s, float m) {
    /* lane k is the scalar twin's partial sum e[k] */
    const float isf = s > 0 ? 1.0f / s : 0.0f;
    const __m128 vs = _mm_set1_ps(s), vm = _mm_set1_ps(m), vis = _mm_set1_ps(isf);
    __m128 e = _mm_setzero_ps();
    for (int i = 0; i < 32; i += 4) {
        const __m128 xv = _mm_loadu_ps(x + i);
        const __m128 q = _mm_cvtepi32_ps(level4(xv, vis, vm));
        const __m128 d = _mm_sub_ps(_mm_add_ps(_mm_mul_ps(vs, q), vm), xv);
        e = _mm_add_ps(e, _mm_mul_ps(d, d));
    }
    float l[4];
    _mm_storeu_ps(l, e);
    return (l[0] + l[1]) + (l[2] + l[3]);
}

/* The 32 levels of a sub-block on one grid. */
static void levels32_sse(const float *x, float is, float m, int *q) {
    const __m128 vis = _mm_set1_ps(is), vm = _mm_set1_ps(m);
    for (int i = 0; i < 32; i += 4) _mm_storeu_si128((__m128i *)(void *)(q + i), level4(_mm_loadu_ps(x + i), vis, vm));
}
#endif

/* simd 0: the scalar twin (qtts_quantize_row_ref), which tests compare against */
static float grid_err(const float *x, float s, float m, int simd) {
#if defined(__SSE2__)
    if (simd) return grid_err_sse(x, s, m);
#endif
    (void)simd;
    return grid_err_scalar(x, s, m);
}

static void levels32(const float *x, float is, float m, int *q, int simd) {
#if defined(__SSE2__)
    if (simd) {
        levels32_sse(x, is, m, q);
        return;
    }
#endif
    (void)simd;
    levels32_scalar(x, is, m, q);
}

static void fit_subblock(const float *x, float *scale, float *min, int simd) {
    float lo = x[0], hi = x[0];
    for (int i = 1; i < 32; i++) { /* as minps/maxps compute them (quant_avx2.c), NaN included */
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    if (lo > 0) lo = 0; /* the offset -dmin*m cannot be positive */
    if (hi <= lo) {
        *scale = 0;
        *min = -lo;
        return;
    }
    float best_s = (hi - lo) / 15.0f, best_m = lo;
    float best_e = grid_err(x, best_s, best_m, simd);
    float sx = 0;
    for (int i = 0; i < 32; i++) sx += x[i];
    for (int step = -6; step <= 6; step += 2) {
        float is = (15.0f + 0.1f * (float)step) / (hi - lo);
        /* levels from this grid, then the least-squares line through them
         * (integer sums are exact; two float chains for the cross term) */
        int sq = 0, sqq = 0, qv[32];
        float sxq0 = 0, sxq1 = 0;
        levels32(x, is, lo, qv, simd);
        for (int i = 0; i < 32; i += 2) {
            int q0 = qv[i], q1 = qv[i + 1];
            sq += q0 + q1;
            sqq += q0 * q0 + q1 * q1;
            sxq0 += x[i] * (float)q0;
            sxq1 += x[i + 1] * (float)q1;
        }
        double n = 32, sxq = (double)sxq0 + sxq1;
        double det = n * sqq - (double)sq * sq;
        if (det <= 0) continue;
        double ns = (n * sxq - sq * (double)sx) / det, nm = (sx - ns * sq) / n;
        if (nm > 0) { /* offset must stay <= 0: refit the scale alone with offset 0 */
            nm = 0;
            ns = sqq > 0 ? sxq / sqq : 0;
        }
        if (ns <= 0) continue;
        float e = grid_err(x, (float)ns, (float)nm, simd);
        if (e < best_e) {
            best_e = e;
            best_s = (float)ns;
            best_m = (float)nm;
        }
    }
    *scale = best_s;
    *min = -best_m;
}

void qtts_q4_k_pack_scales(uint8_t *s, const uint8_t *ls, const uint8_t *lm) {
    memset(s, 0, 12);
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            s[j] |= ls[j];
            s[j + 4] |= lm[j];
        } else {
            s[j + 4] = (uint8_t)((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
            s[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            s[j] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

static void quantize_q4_k(const float *x, qtts_block_q4_k *y, int64_t n, int simd) {
    for (int64_t b = 0; b < n / 256; b++, x += 256) {
        float scales[8], mins[8], max_scale = 0, max_min = 0;
        for (int j = 0; j < 8; j++) {
            fit_subblock(x + 32 * j, &scales[j], &mins[j], simd);
            /* ternaries, not fmaxf: its choice between +0 and -0 is the library's (a flat sub-block's min is -0) */
            max_scale = scales[j] > max_scale ? scales[j] : max_scale;
            max_min = mins[j] > max_min ? mins[j] : max_min;
        }
        qtts_block_q4_k *blk = &y[b];
        blk->d = qtts_f32_to_f16(max_scale / 63.0f);
        blk->dmin = qtts_f32_to_f16(max_min / 63.0f);
        const float d = qtts_f16_to_f32(blk->d), dmin = qtts_f16_to_f32(blk->dmin);
        uint8_t ls[8], lm[8];
        for (int j = 0; j < 8; j++) {
            const float *xs = x + 32 * j;
            int a = d > 0 ? qtts_q4_k_clamp63((int)lrintf(scales[j] / d)) : 0;
            int c = dmin > 0 ? qtts_q4_k_clamp63((int)lrintf(mins[j] / dmin)) : 0;
            /* the codes nearest the fit need not be best after rounding: try neighbours */
            int best_a = a, best_c = c;
            float best_e = grid_err(xs, d * (float)a, -dmin * (float)c, simd);
            for (int da = -1; da <= 1; da++)
                for (int dc = -1; dc <= 1; dc++) {
                    int a2 = a + da, c2 = c + dc;
                    if ((!da && !dc) || a2 < 0 || a2 > 63 || c2 < 0 || c2 > 63) continue;
                    float e = grid_err(xs, d * (float)a2, -dmin * (float)c2, simd);
                    if (e < best_e) {
                        best_e = e;
                        best_a = a2;
                        best_c = c2;
                    }
                }
            ls[j] = (uint8_t)best_a;
            lm[j] = (uint8_t)best_c;
        }
        qtts_q4_k_pack_scales(blk->scales, ls, lm);
        uint8_t q[256];
        for (int j = 0; j < 8; j++) {
            uint8_t sc, m;
            qtts_q4_k_scale_min(j, blk->scales, &sc, &m);
            float ds = d * (float)sc, is = ds > 0 ? 1.0f / ds : 0.0f;
            int qv[32];
            levels32(x + 32 * j, is, -dmin * (float)m, qv, simd);
            for (int i = 0; i < 32; i++) q[32 * j + i] = (uint8_t)qv[i];
        }
        for (int j = 0; j < 256; j += 64)
            for (int l = 0; l < 32; l++) blk->qs[j / 2 + l] = (uint8_t)(q[j + l] | (q[j + l + 32] << 4));
    }
}

static void dequantize_q4_k(const qtts_block_q4_k *x, float *y, int64_t n) {
    for (int64_t b = 0; b < n / 256; b++) {
        const float d = qtts_f16_to_f32(x[b].d), dmin = qtts_f16_to_f32(x[b].dmin);
        const uint8_t *q = x[b].qs;
        for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
            uint8_t sc, m;
            qtts_q4_k_scale_min(is, x[b].scales, &sc, &m);
            float d1 = d * sc, m1 = dmin * m;
            qtts_q4_k_scale_min(is + 1, x[b].scales, &sc, &m);
            float d2 = d * sc, m2 = dmin * m;
            for (int l = 0; l < 32; l++) *y++ = d1 * (float)(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++) *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

void qtts_quantize_row(qtts_dtype t, const float *src, void *dst, int64_t n) {
#if defined(__x86_64__) || defined(_M_X64)
    const qtts_isa isa = qtts_cpu_isa();
    if (t == QTTS_Q4_K && (isa == QTTS_ISA_AVX2 || isa == QTTS_ISA_AVX512)) {
        qtts_quantize_q4_k_avx2(src, dst, n / 256);
        return;
    }
#endif
    if (t == QTTS_Q8_0) quantize_q8_0(src, dst, n);
    else if (t == QTTS_Q4_K) quantize_q4_k(src, dst, n, 1);
}

void qtts_quantize_row_ref(qtts_dtype t, const float *src, void *dst, int64_t n) {
    if (t == QTTS_Q8_0) quantize_q8_0(src, dst, n);
    else if (t == QTTS_Q4_K) quantize_q4_k(src, dst, n, 0);
}

void qtts_dequantize_row(qtts_dtype t, const void *src, float *dst, int64_t n) {
    const uint16_t *h = src;
    switch (t) {
    case QTTS_Q8_0: dequantize_q8_0(src, dst, n); break;
    case QTTS_Q4_K: dequantize_q4_k(src, dst, n); break;
    case QTTS_F32: memcpy(dst, src, (size_t)n * sizeof(float)); break;
    case QTTS_BF16:
        for (int64_t i = 0; i < n; i++) dst[i] = qtts_bf16_to_f32(h[i]);
        break;
    case QTTS_F16:
        for (int64_t i = 0; i < n; i++) dst[i] = qtts_f16_to_f32(h[i]);
        break;
    default: qtts_dequantize_ggml_row(t, src, dst, n); break;
    }
}
