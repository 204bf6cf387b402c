/* AVX-512 (F/BW/VL/DQ + VNNI, optionally BF16) dense-layer kernels; the same
 * structure as linear_avx2.c with 512-bit vectors, masked tails, vpdpbusd for
 * Q8_0 and vpmaddubsw + vpdpwssd for Q4_K. Only called after a cpuid check. */
#include "tensor/x86_simd.h"
#include <string.h>

#include "tensor/linear_x86.h"
#include "tensor/quant.h"

/* 16 weights of a float-like row as f32; lanes outside `m` are zero. */
INLINE __m512 load_w16(const void *w, int64_t i, qtts_dtype type, __mmask16 m) {
    if (type == QTTS_F32) return _mm512_maskz_loadu_ps(m, (const float *)w + i);
    __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)w + i);
    if (type == QTTS_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); /* bf16 */
}

INLINE void dense_tile(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out,
                       qtts_dtype type) {
    const void *wr = w_row(w, r);
    const int64_t cols = w->cols;
    const float *x = a->x + t0 * cols;
    __m512 acc[QTTS_TILE_TOKENS][2];
    for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= cols; i += 32) {
        __m512 w0 = load_w16(wr, i, type, 0xFFFF), w1 = load_w16(wr, i + 16, type, 0xFFFF);
        for (int t = 0; t < nt; t++) {
            acc[t][0] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + t * cols + i), acc[t][0]);
            acc[t][1] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + t * cols + i + 16), acc[t][1]);
        }
    }
    for (; i < cols; i += 16) {
        __mmask16 m = cols - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (cols - i)) - 1);
        __m512 w0 = load_w16(wr, i, type, m);
        for (int t = 0; t < nt; t++)
            acc[t][0] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, x + t * cols + i), acc[t][0]);
    }
    for (int t = 0; t < nt; t++) out[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
}

/* DENSE_ROWS rows x nt tokens at once: each x vector load feeds 4 rows,
 * each weight vector 4 tokens (16 accumulators), which keeps batched calls
 * off the L2 bandwidth limit. out[rr * QTTS_TILE_TOKENS + t]. */
enum { DENSE_ROWS = 4 };
INLINE void dense_tile_rows(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out,
                            qtts_dtype type) {
    const void *wr[DENSE_ROWS];
    for (int rr = 0; rr < DENSE_ROWS; rr++) wr[rr] = w_row(w, r + rr);
    const int64_t cols = w->cols;
    const float *x = a->x + t0 * cols;
    __m512 acc[DENSE_ROWS][QTTS_TILE_TOKENS];
    for (int rr = 0; rr < DENSE_ROWS; rr++)
        for (int t = 0; t < nt; t++) acc[rr][t] = _mm512_setzero_ps();
    /* 16-bit rows: the same columns of the next DENSE_ROWS rows (the next call's), one line per 32
     * weights. The hardware prefetchers alone fetch them well below the f32 kernel's rate from DRAM:
     * four short interleaved streams per call, each restarted every row. */
    const int pf = r + 2 * DENSE_ROWS <= w->rows;
    const size_t ahead = (size_t)DENSE_ROWS * w->row_bytes;
    for (int64_t i = 0; i < cols; i += 16) {
        __mmask16 m = cols - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (cols - i)) - 1);
        __m512 wv[DENSE_ROWS];
        if (pf && (type == QTTS_F32 || !(i & 31)))
            for (int rr = 0; rr < DENSE_ROWS; rr++)
                _mm_prefetch((const char *)wr[rr] + ahead + (size_t)i * (type == QTTS_F32 ? 4 : 2), _MM_HINT_T0);
        for (int rr = 0; rr < DENSE_ROWS; rr++) wv[rr] = load_w16(wr[rr], i, type, m);
        for (int t = 0; t < nt; t++) {
            __m512 xv = _mm512_maskz_loadu_ps(m, x + t * cols + i);
            for (int rr = 0; rr < DENSE_ROWS; rr++) acc[rr][t] = _mm512_fmadd_ps(wv[rr], xv, acc[rr][t]);
        }
    }
    for (int rr = 0; rr < DENSE_ROWS; rr++)
        for (int t = 0; t < nt; t++) out[rr * QTTS_TILE_TOKENS + t] = _mm512_reduce_add_ps(acc[rr][t]);
}

/* bf16 x bf16 products with f32 accumulation (x pre-rounded to bf16). */
INLINE void bf16dot_tile(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out) {
    const uint16_t *wr = w_row(w, r);
    const int64_t cols = w->cols;
    const uint16_t *x = a->xbf + t0 * cols;
    __m512 acc[QTTS_TILE_TOKENS][2];
    for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= cols; i += 64) {
        __m512i w0 = _mm512_loadu_si512(wr + i), w1 = _mm512_loadu_si512(wr + i + 32);
        for (int t = 0; t < nt; t++) {
            __m512i x0 = _mm512_loadu_si512(x + t * cols + i), x1 = _mm512_loadu_si512(x + t * cols + i + 32);
            acc[t][0] = _mm512_dpbf16_ps(acc[t][0], (__m512bh)w0, (__m512bh)x0);
            acc[t][1] = _mm512_dpbf16_ps(acc[t][1], (__m512bh)w1, (__m512bh)x1);
        }
    }
    for (; i < cols; i += 32) {
        __mmask32 m = cols - i >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << (cols - i)) - 1);
        __m512i w0 = _mm512_maskz_loadu_epi16(m, wr + i);
        for (int t = 0; t < nt; t++) {
            __m512i x0 = _mm512_maskz_loadu_epi16(m, x + t * cols + i);
            acc[t][0] = _mm512_dpbf16_ps(acc[t][0], (__m512bh)w0, (__m512bh)x0);
        }
    }
    for (int t = 0; t < nt; t++) out[t] = _mm512_reduce_add_ps(_mm512_add_ps(acc[t][0], acc[t][1]));
}

/* Two consecutive Q8_0 blocks in one 512-bit vector (lanes 0-7: block b,
 * 8-15: block b+1), so each instruction covers 64 weights. */
INLINE void q8_0_block2(const qtts_block_q8_0 *blk, const qtts_act *a, int64_t t0, int nt, int64_t b,
                        __m512 *acc) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i idx01 = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512i wq = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)blk[0].qs)),
                                    _mm256_loadu_si256((const __m256i *)blk[1].qs), 1);
    __m512i aw = _mm512_abs_epi8(wq);
    __mmask64 neg = _mm512_movepi8_mask(wq);
    __m128i dh = _mm_cvtsi32_si128((int)((uint32_t)blk[0].d | ((uint32_t)blk[1].d << 16)));
    __m512 dw = _mm512_permutexvar_ps(idx01, _mm512_castps128_ps512(_mm_cvtph_ps(dh)));
    for (int t = 0; t < nt; t++) {
        __m512i xq = _mm512_loadu_si512(a->q + (t0 + t) * a->cols + 32 * b);
        __m512i sx = _mm512_mask_sub_epi8(xq, neg, zero, xq); /* x * sign(w) */
        __m512i p = _mm512_dpbusd_epi32(zero, aw, sx);
        __m128 dx2 = _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(a->qd + (t0 + t) * a->nb + b)));
        __m512 sc = _mm512_mul_ps(dw, _mm512_permutexvar_ps(idx01, _mm512_castps128_ps512(dx2)));
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), sc, acc[t]);
    }
}

/* A single Q8_0 block (odd tail). */
INLINE void q8_0_block(const qtts_block_q8_0 *blk, const qtts_act *a, int64_t t0, int nt, int64_t b, __m512 *acc) {
    const __m256i zero = _mm256_setzero_si256();
    __m256i wq = _mm256_loadu_si256((const __m256i *)blk->qs);
    __m256i aw = _mm256_abs_epi8(wq);
    __mmask32 neg = _mm256_movepi8_mask(wq);
    float dw = f16_to_f32(blk->d);
    for (int t = 0; t < nt; t++) {
        __m256i xq = _mm256_loadu_si256((const __m256i *)(a->q + (t0 + t) * a->cols + 32 * b));
        __m256i sx = _mm256_mask_sub_epi8(xq, neg, zero, xq);
        __m256i p = _mm256_dpbusd_epi32(zero, aw, sx);
        __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * a->qd[(t0 + t) * a->nb + b]));
        acc[t] = _mm512_add_ps(acc[t], _mm512_zextps256_ps512(v)); /* upper lanes zero */
    }
}

INLINE void q8_0_tile(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out) {
    const qtts_block_q8_0 *wb = w_row(w, r);
    const int64_t nb = a->nb;
    __m512 acc[QTTS_TILE_TOKENS];
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) q8_0_block2(&wb[b], a, t0, nt, b, acc);
    if (b < nb) q8_0_block(&wb[b], a, t0, nt, b, acc);
    for (int t = 0; t < nt; t++) out[t] = _mm512_reduce_add_ps(acc[t]);
}

INLINE void q4_k_tile(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out) {
    const qtts_block_q4_k *wb = w_row(w, r);
    const int64_t nb = a->nb, cols = a->cols;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    /* int16 lane -> scale index: pair p low nibbles use sub 4p (lanes 0-15) and 4p+2 (16-31). */
    const __m512i idx_lo0 = _mm512_set_epi16(2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0,
                                             0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i one16 = _mm512_set1_epi16(1), four16 = _mm512_set1_epi16(4);
    __m512 acc[QTTS_TILE_TOKENS];
    __m128 accm[QTTS_TILE_TOKENS];
    for (int t = 0; t < nt; t++) {
        acc[t] = _mm512_setzero_ps();
        accm[t] = _mm_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
        const qtts_block_q4_k *blk = &wb[b];
        const __m128i scm = qtts_q4k_scales_vec(blk->scales);
        const __m128i m16 = _mm_cvtepu8_epi16(_mm_srli_si128(scm, 8));
        const float d = f16_to_f32(blk->d), dmin = f16_to_f32(blk->dmin);
        __m512i sc16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(scm));
        __m512i s[4];
        s[0] = _mm512_permutexvar_epi16(idx_lo0, sc16);                                      /* 0 | 2 */
        s[1] = _mm512_permutexvar_epi16(_mm512_add_epi16(idx_lo0, one16), sc16);             /* 1 | 3 */
        s[2] = _mm512_permutexvar_epi16(_mm512_add_epi16(idx_lo0, four16), sc16);            /* 4 | 6 */
        s[3] = _mm512_permutexvar_epi16(_mm512_add_epi16(idx_lo0, _mm512_add_epi16(four16, one16)), sc16);
        __m512i isum[QTTS_TILE_TOKENS];
        for (int t = 0; t < nt; t++) isum[t] = _mm512_setzero_si512();
        for (int p = 0; p < 2; p++) {
            __m512i wq = _mm512_loadu_si512(blk->qs + 64 * p);
            __m512i lo = _mm512_and_si512(wq, m4), hi = _mm512_and_si512(_mm512_srli_epi16(wq, 4), m4);
            for (int t = 0; t < nt; t++) {
                const int8_t *xq = a->q + (t0 + t) * cols + 256 * b + 128 * p;
                __m512i plo = _mm512_maddubs_epi16(lo, _mm512_loadu_si512(xq));
                __m512i phi = _mm512_maddubs_epi16(hi, _mm512_loadu_si512(xq + 64));
                isum[t] = _mm512_dpwssd_epi32(isum[t], plo, s[2 * p]);
                isum[t] = _mm512_dpwssd_epi32(isum[t], phi, s[2 * p + 1]);
            }
        }
        for (int t = 0; t < nt; t++) {
            const float dx = a->qd[(t0 + t) * nb + b];
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_set1_ps(d * dx), acc[t]);
            accm[t] = qtts_q4k_mins_fma(a, t0 + t, b, m16, dmin * dx, accm[t]);
        }
    }
    for (int t = 0; t < nt; t++) out[t] = _mm512_reduce_add_ps(acc[t]) - hsum4(accm[t]);
}

DEFINE_STANDARD_ROWS()
DEFINE_ROWS_MR(rows_bf16dot, bf16dot_tile, no_tile_rows, 1)

/* ---- interleaved weights (tensor/interleave.h): one row per 32-bit lane ---- */

/* 16 rows x nt tokens of interleaved Q8_0. Per block: 8 vpdpbusd (unsigned
 * w+128 against a broadcast 4-byte slice of x), then subtract 128*sum(x). */
INLINE void q8_0_x16_tile(const uint8_t *grp, const qtts_act *a, int64_t t0, int nt, __m512 *acc) {
    const int64_t nb = a->nb, cols = a->cols;
    const uint16_t *dw = (const uint16_t *)(grp + (size_t)nb * 512);
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *qs = grp + (size_t)b * 512;
        __m512i isum[QTTS_TILE_TOKENS];
        for (int t = 0; t < nt; t++) isum[t] = _mm512_setzero_si512();
        for (int g = 0; g < 8; g++) {
            __m512i wv = _mm512_loadu_si512(qs + 64 * g);
            for (int t = 0; t < nt; t++) {
                int32_t xv;
                memcpy(&xv, a->q + (t0 + t) * cols + 32 * b + 4 * g, 4);
                isum[t] = _mm512_dpbusd_epi32(isum[t], wv, _mm512_set1_epi32(xv));
            }
        }
        __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(dw + 16 * b)));
        for (int t = 0; t < nt; t++) {
            __m512i v = _mm512_sub_epi32(isum[t], _mm512_set1_epi32(a->xsum[(t0 + t) * nb + b]));
            __m512 s = _mm512_mul_ps(d, _mm512_set1_ps(a->qd[(t0 + t) * nb + b]));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), s, acc[t]);
        }
    }
}

/* 16 rows x nt tokens of interleaved Q4_K. Nibbles are the unsigned operand:
 * the low ones as is, the high ones masked in place (16x the value; the
 * factor comes out with one shift per sub-block). */
INLINE void q4_k_x16_tile(const uint8_t *grp, const qtts_act *a, int64_t t0, int nt, __m512 *acc) {
    const int64_t nb = a->nb, cols = a->cols;
    const __m512i lo_mask = _mm512_set1_epi8(0x0F), hi_mask = _mm512_set1_epi8((char)0xF0);
    for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *s = grp + (size_t)b * 2368;
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)s));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + 32)));
        __m512i isum[QTTS_TILE_TOKENS], imin[QTTS_TILE_TOKENS];
        for (int t = 0; t < nt; t++) isum[t] = imin[t] = _mm512_setzero_si512();
        for (int p = 0; p < 4; p++) {
            const uint8_t *qs = s + 320 + 512 * p;
            __m512i da[QTTS_TILE_TOKENS], db[QTTS_TILE_TOKENS];
            for (int t = 0; t < nt; t++) da[t] = db[t] = _mm512_setzero_si512();
            for (int g = 0; g < 8; g++) {
                __m512i wv = _mm512_loadu_si512(qs + 64 * g);
                __m512i lo = _mm512_and_si512(wv, lo_mask), hi = _mm512_and_si512(wv, hi_mask);
                for (int t = 0; t < nt; t++) {
                    const int8_t *xq = a->q + (t0 + t) * cols + 256 * b + 64 * p + 4 * g;
                    int32_t xa, xb;
                    memcpy(&xa, xq, 4);
                    memcpy(&xb, xq + 32, 4);
                    da[t] = _mm512_dpbusd_epi32(da[t], lo, _mm512_set1_epi32(xa));
                    db[t] = _mm512_dpbusd_epi32(db[t], hi, _mm512_set1_epi32(xb));
                }
            }
            const __m512i sa = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(s + 64 + 32 * p)));
            const __m512i sb = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(s + 64 + 32 * p + 16)));
            const __m512i mp = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(s + 192 + 32 * p)));
            for (int t = 0; t < nt; t++) {
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(da[t], sa));
                isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(_mm512_srai_epi32(db[t], 4), sb));
                int32_t bs;
                memcpy(&bs, a->bsum + (t0 + t) * a->nsub + 8 * b + 2 * p, 4);
                imin[t] = _mm512_dpwssd_epi32(imin[t], mp, _mm512_set1_epi32(bs));
            }
        }
        for (int t = 0; t < nt; t++) {
            const __m512 dx = _mm512_set1_ps(a->qd[(t0 + t) * nb + b]);
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, dx), acc[t]);
            acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin[t]), _mm512_mul_ps(dmin, dx), acc[t]);
        }
    }
}

/* r0, r1: multiples of 16 (the pool splits rows in QTTS_TILE_ROWS = 16). */
static void rows_x16(const qtts_mat *w, const qtts_act *a, const float *bias, float *y, int64_t r0, int64_t r1) {
    const size_t group_bytes = w->row_bytes * 16;
    for (int64_t r = r0; r < r1; r += 16) {
        const uint8_t *grp = (const uint8_t *)w->data + (size_t)(r / 16) * group_bytes;
        const __m512 bv = bias ? _mm512_loadu_ps(bias + r) : _mm512_setzero_ps();
        for (int64_t t0 = 0; t0 < a->n; t0 += QTTS_TILE_TOKENS) {
            int nt = a->n - t0 < QTTS_TILE_TOKENS ? (int)(a->n - t0) : QTTS_TILE_TOKENS;
            __m512 acc[QTTS_TILE_TOKENS];
            if (w->type == QTTS_Q8_0) X16_NT_SWITCH(q8_0_x16_tile)
            else X16_NT_SWITCH(q4_k_x16_tile)
            for (int t = 0; t < nt; t++) _mm512_storeu_ps(y + (t0 + t) * w->rows + r, _mm512_add_ps(acc[t], bv));
        }
    }
}

void qtts_linear_rows_avx512(const qtts_mat *w, const qtts_act *a, const float *bias, float *y, int64_t r0,
                             int64_t r1, int bf16_dot) {
    if (w->interleave) {
        rows_x16(w, a, bias, y, r0, r1);
        return;
    }
    switch (w->type) {
    case QTTS_F32: rows_f32(w, a, bias, y, r0, r1); break;
    case QTTS_F16: rows_f16(w, a, bias, y, r0, r1); break;
    case QTTS_BF16:
        if (bf16_dot) rows_bf16dot(w, a, bias, y, r0, r1);
        else rows_bf16(w, a, bias, y, r0, r1);
        break;
    case QTTS_Q8_0: rows_q8_0(w, a, bias, y, r0, r1); break;
    case QTTS_Q4_K: rows_q4_k(w, a, bias, y, r0, r1); break;
    default: break;
    }
}

/* ---- activation packing (the scalar twins are pack_q8_0 / pack_q8_k in
 * linear.c; same operations in f32, so the results are bit-identical) ---- */

static inline __m512i quant16(__m512 v, __m512 id) {
    __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(v, id)); /* round to nearest even, as lrintf */
    return _mm512_max_epi32(_mm512_min_epi32(q, _mm512_set1_epi32(127)), _mm512_set1_epi32(-127));
}

void qtts_pack_q8_0_avx512(const float *x, int64_t cols, int8_t *q, float *qd) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    for (int64_t b = 0; b < cols / 32; b++, x += 32, q += 32) {
        __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
        float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1)));
        qd[b] = amax / 127.0f;
        __m512 id = _mm512_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
        _mm_storeu_si128((__m128i *)q, _mm512_cvtepi32_epi8(quant16(v0, id)));
        _mm_storeu_si128((__m128i *)(q + 16), _mm512_cvtepi32_epi8(quant16(v1, id)));
    }
}

void qtts_pack_q8_k_natural_avx512(const float *x, int64_t cols, int8_t *q, float *qd, int16_t *bsum) {
    const __m512 sign = _mm512_set1_ps(-0.0f);
    for (int64_t b = 0; b < cols / 256; b++, x += 256, q += 256) {
        __m512 m = _mm512_setzero_ps();
        for (int i = 0; i < 256; i += 16) m = _mm512_max_ps(m, _mm512_andnot_ps(sign, _mm512_loadu_ps(x + i)));
        float amax = _mm512_reduce_max_ps(m);
        qd[b] = amax / 127.0f;
        __m512 id = _mm512_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
        for (int j = 0; j < 8; j++) {
            __m512i q0 = quant16(_mm512_loadu_ps(x + 32 * j), id), q1 = quant16(_mm512_loadu_ps(x + 32 * j + 16), id);
            _mm_storeu_si128((__m128i *)(q + 32 * j), _mm512_cvtepi32_epi8(q0));
            _mm_storeu_si128((__m128i *)(q + 32 * j + 16), _mm512_cvtepi32_epi8(q1));
            bsum[8 * b + j] = (int16_t)_mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
        }
    }
}
