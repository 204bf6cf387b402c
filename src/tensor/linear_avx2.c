/* AVX2 + FMA + F16C dense-layer kernels (see linear_impl.h for the activation
 * layouts). Each weight row is loaded once per tile of up to 4 tokens and
 * applied to all of them, so batched calls cost little more weight traffic
 * than n = 1. Only called after a cpuid check (tensor/cpu.h). */
#include <immintrin.h>
#include <string.h>











#include "tensor/interleave.h"
#include "tensor/linear_x86.h"
#include "tensor/quant.h"

/* Prefetch distances (bytes) where the weights' prefetch flag is set: about
 * 2 KB ahead for the row kernels, one 2368-byte Q4_K super-block ahead for
 * the interleaved ones, with prefetchnta (faster than prefetcht0 where
 * weights stream from DRAM). prefetchnta keeps the streamed weights
 * out of L2/L3, which only matters where they would have fit there: the
 * load-time measurement then finds no gain and leaves it off. */
enum { PREFETCH_ROWS = 2048, PREFETCH_X16 = 2368 };

INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* 8 weights of a float-like row as f32. */
INLINE __m256 load_w8(const void *w, int64_t i, qtts_dtype type) {
    if (type == QTTS_F32) return _mm256_loadu_ps((const float *)w + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    if (type == QTTS_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); /* bf16 */
}

INLINE float load_w1(const void *w, int64_t i, qtts_dtype type) {
    if (type == QTTS_F32) return ((const float *)w)[i];
    if (type == QTTS_F16) return f16_to_f32(((const uint16_t *)w)[i]);
    return qtts_bf16_to_f32(((const uint16_t *)w)[i]);
}

INLINE void dense_tile(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out,
                       qtts_dtype type) {
    const void *wr = w_row(w, r);
    const int64_t cols = w->cols;
    const float *x = a->x + t0 * cols;
    __m256 acc[QTTS_TILE_TOKENS][2];
    for (int t = 0; t < nt; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= cols; i += 16) {
        __m256 w0 = load_w8(wr, i, type), w1 = load_w8(wr, i + 8, type);
        for (int t = 0; t < nt; t++) {
            acc[t][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + t * cols + i), acc[t][0]);
            acc[t][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + t * cols + i + 8), acc[t][1]);
        }
    }
    for (; i + 8 <= cols; i += 8) {
        __m256 w0 = load_w8(wr, i, type);
        for (int t = 0; t < nt; t++) acc[t][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + t * cols + i), acc[t][0]);
    }
    for (int t = 0; t < nt; t++) {
        float s = hsum8(_mm256_add_ps(acc[t][0], acc[t][1]));
        for (int64_t k = i; k < cols; k++) s += load_w1(wr, k, type) * x[t * cols + k];
        out[t] = s;
    }
}

/* DENSE_ROWS rows x nt tokens at once: each x load feeds 2 rows, each weight
 * load 4 tokens (8 accumulators of 16 ymm registers). */
enum { DENSE_ROWS = 2 };
INLINE void dense_tile_rows(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out,
                            qtts_dtype type) {
    const void *wr[DENSE_ROWS];
    for (int rr = 0; rr < DENSE_ROWS; rr++) wr[rr] = w_row(w, r + rr);
    const int64_t cols = w->cols;
    const float *x = a->x + t0 * cols;
    __m256 acc[DENSE_ROWS][QTTS_TILE_TOKENS];
    for (int rr = 0; rr < DENSE_ROWS; rr++)
        for (int t = 0; t < nt; t++) acc[rr][t] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= cols; i += 8) {
        __m256 wv[DENSE_ROWS];
        for (int rr = 0; rr < DENSE_ROWS; rr++) wv[rr] = load_w8(wr[rr], i, type);
        for (int t = 0; t < nt; t++) {
            __m256 xv = _mm256_loadu_ps(x + t * cols + i);
            for (int rr = 0; rr < DENSE_ROWS; rr++) acc[rr][t] = _mm256_fmadd_ps(wv[rr], xv, acc[rr][t]);
        }
    }
    for (int rr = 0; rr < DENSE_ROWS; rr++)
        for (int t = 0; t < nt; t++) {
            float s = hsum8(acc[rr][t]);
            for (int64_t k = i; k < cols; k++) s += load_w1(wr[rr], k, type) * x[t * cols + k];
            out[rr * QTTS_TILE_TOKENS + t] = s;
        }
}

/* Signed int8 x int8 dot of 32 values as 8 int32 partial sums. */
INLINE __m256i dot_i8(__m256i aw, __m256i w, __m256i x) {
    const __m256i ones = _mm256_set1_epi16(1);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(x, w)), ones);
}

/* One Q8_0 block against nt tokens, accumulating into acc[0..nt). */
INLINE void q8_0_block(const qtts_block_q8_0 *blk, const qtts_act *a, int64_t t0, int nt, int64_t b, __m256 *acc) {
    __m256i wq = _mm256_loadu_si256((const __m256i *)blk->qs);
    __m256i aw = _mm256_abs_epi8(wq);
    float dw = f16_to_f32(blk->d);
    for (int t = 0; t < nt; t++) {
        const int8_t *xq = a->q + (t0 + t) * a->cols + 32 * b;
        __m256i p = dot_i8(aw, wq, _mm256_loadu_si256((const __m256i *)xq));
        __m256 s = _mm256_set1_ps(dw * a->qd[(t0 + t) * a->nb + b]);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), s, acc[t]);
    }
}

INLINE void q8_0_tile(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out) {
    const qtts_block_q8_0 *wb = w_row(w, r);
    const int64_t nb = a->nb;
    __m256 acc0[QTTS_TILE_TOKENS], acc1[QTTS_TILE_TOKENS]; /* two chains hide the FMA latency at n = 1 */
    for (int t = 0; t < nt; t++) acc0[t] = acc1[t] = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        if (a->prefetch) _mm_prefetch((const char *)&wb[b] + PREFETCH_ROWS, _MM_HINT_NTA); /* 2 blocks = 68 bytes */
        q8_0_block(&wb[b], a, t0, nt, b, acc0);
        q8_0_block(&wb[b + 1], a, t0, nt, b + 1, acc1);
    }
    if (b < nb) q8_0_block(&wb[b], a, t0, nt, b, acc0);
    for (int t = 0; t < nt; t++) out[t] = hsum8(_mm256_add_ps(acc0[t], acc1[t]));
}

INLINE void q4_k_tile(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out) {
    const qtts_block_q4_k *wb = w_row(w, r);
    const int64_t nb = a->nb, cols = a->cols;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc[QTTS_TILE_TOKENS];
    __m128 accm[QTTS_TILE_TOKENS];
    for (int t = 0; t < nt; t++) {
        acc[t] = _mm256_setzero_ps();
        accm[t] = _mm_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
        const qtts_block_q4_k *blk = &wb[b];
        if (a->prefetch) { /* one block = 2.25 lines */
            _mm_prefetch((const char *)blk + PREFETCH_ROWS, _MM_HINT_NTA);
            _mm_prefetch((const char *)blk + PREFETCH_ROWS + 64, _MM_HINT_NTA);
            _mm_prefetch((const char *)blk + PREFETCH_ROWS + 128, _MM_HINT_NTA);
        }
        const __m128i scm = qtts_q4k_scales_vec(blk->scales);
        const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scm));
        const __m128i m16 = _mm_cvtepu8_epi16(_mm_srli_si128(scm, 8));
        const float d = f16_to_f32(blk->d), dmin = f16_to_f32(blk->dmin);
        __m256i isum[QTTS_TILE_TOKENS];
        for (int t = 0; t < nt; t++) isum[t] = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i wq = _mm256_loadu_si256((const __m256i *)(blk->qs + 32 * c));
            __m256i lo = _mm256_and_si256(wq, m4), hi = _mm256_and_si256(_mm256_srli_epi16(wq, 4), m4);
            /* broadcast int16 scales 2c and 2c+1 */
            __m256i slo = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16((short)(((4 * c + 1) << 8) | (4 * c))));
            __m256i shi = _mm256_shuffle_epi8(sc16, _mm256_set1_epi16((short)(((4 * c + 3) << 8) | (4 * c + 2))));
            const int64_t off_lo = 128 * (c >> 1) + 32 * (c & 1), off_hi = off_lo + 64;
            for (int t = 0; t < nt; t++) {
                const int8_t *xq = a->q + (t0 + t) * cols + 256 * b;
                __m256i plo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(xq + off_lo)));
                __m256i phi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(xq + off_hi)));
                isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(plo, slo),
                                                                     _mm256_madd_epi16(phi, shi)));
            }
        }
        for (int t = 0; t < nt; t++) {
            const float dx = a->qd[(t0 + t) * nb + b];
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_set1_ps(d * dx), acc[t]);
            accm[t] = qtts_q4k_mins_fma(a, t0 + t, b, m16, dmin * dx, accm[t]);
        }
    }
    for (int t = 0; t < nt; t++) out[t] = hsum8(acc[t]) - hsum4(accm[t]);
}

DEFINE_STANDARD_ROWS()

/* ---- interleaved weights (tensor/interleave.h): one row per 32-bit lane,
 * each 16-row group as two halves of 8 rows (one ymm register each) ---- */

/* An empty asm that takes and gives back v in a register: each integer sum
 * then stays one chain of adds. GCC otherwise reassociates the unrolled
 * adds into trees whose partial results spill (integer adds are exact, so
 * the order changes no bit). */
#define KEEP_CHAIN(v) __asm__("" : "+x"(v))

INLINE __m256i bcast4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* Block b of 8 rows (half h of a 16-row group) x nt tokens of interleaved
 * Q8_0, added to acc. The weights are stored as w ^ 0x80; vpmaddubsw needs an
 * unsigned operand whose pair sums cannot saturate, so the sign moves onto x
 * (|w| * sign(x, w)). */
INLINE void q8_0_x8_block(const uint8_t *grp, int h, const qtts_act *a, int64_t t0, int nt, int64_t b,
                          __m256 *acc) {
    const int64_t nb = a->nb, cols = a->cols;
    const uint16_t *dw = (const uint16_t *)(grp + (size_t)nb * 512);
    const __m256i flip = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
    const uint8_t *qs = grp + (size_t)b * 512 + 32 * h;
    __m256i isum[QTTS_TILE_TOKENS];
    for (int t = 0; t < nt; t++) isum[t] = _mm256_setzero_si256();
    if (a->prefetch && h == 0) { /* the block's 8 lines, and its scales 4 blocks ahead */
        for (int g = 0; g < 8; g++) _mm_prefetch((const char *)qs + 64 * g + PREFETCH_X16, _MM_HINT_NTA);
        if (b % 2 == 0) _mm_prefetch((const char *)(dw + 16 * (b + 4)), _MM_HINT_NTA);
    }
    for (int g = 0; g < 8; g++) {
        const __m256i w = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(qs + 64 * g)), flip);
        const __m256i aw = _mm256_abs_epi8(w);
        for (int t = 0; t < nt; t++) {
            __m256i xs = _mm256_sign_epi8(bcast4(a->q + (t0 + t) * cols + 32 * b + 4 * g), w);
            isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(aw, xs), ones));
            if (nt > 1) KEEP_CHAIN(isum[t]);
        }
    }
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(dw + 16 * b + 8 * h)));
    for (int t = 0; t < nt; t++) {
        __m256 s = _mm256_mul_ps(d, _mm256_set1_ps(a->qd[(t0 + t) * nb + b]));
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), s, acc[t]);
    }
}

/* The 8 u8 sub-block scales of half h as the int16 pair (s, s) in each
 * 32-bit lane, the multiplier vpmaddwd needs for a lane's two int16 sums. */
INLINE __m256i scale_pairs(const uint8_t *s8) {
    __m256i v;
    int64_t q;
    memcpy(&q, s8, 8);
    v = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(q));
    return _mm256_or_si256(v, _mm256_slli_epi32(v, 16));
}

/* imin[t] += the mins' totals of sub-block pair p, half h of super-block s for
 * tokens t0..t0+nt: the mins times the tokens' sub-block sums. They depend on no
 * quant, so the kernels below sum them before their quad loops, which then
 * keep fewer values live (with them inside, GCC spilled int16 sums, a store
 * and a reload on every quad). Integer sums are exact: the outputs are the
 * same bits either way. */
INLINE void q4_k_add_mins(const uint8_t *s, int p, int h, const qtts_act *a, int64_t t0, int nt, int64_t b,
                          __m256i *imin) {
    const __m256i mp = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(s + 192 + 32 * p + 16 * h)));
    for (int t = 0; t < nt; t++) {
        int32_t bs;
        memcpy(&bs, a->bsum + (t0 + t) * a->nsub + 8 * b + 2 * p, 4);
        imin[t] = _mm256_add_epi32(imin[t], _mm256_madd_epi16(mp, _mm256_set1_epi32(bs)));
    }
}

/* acc[t] += the super-block's float result for half h (8 rows) and tokens
 * t0..t0+nt: the quad sums times d * dx, less the mins' totals times
 * dmin * dx. One function for the token tiles (the lockstep kernel writes
 * the same steps out), so each applies the same float steps in the same
 * order and a token's bits do not depend on the tile it ran through. */
INLINE void q4_k_add_scaled(const uint8_t *s, int h, const qtts_act *a, int64_t t0, int nt, int64_t b,
                            const __m256i *isum, const __m256i *imin, __m256 *acc) {
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + 16 * h)));
    const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + 32 + 16 * h)));
    for (int t = 0; t < nt; t++) {
        const __m256 dx = _mm256_set1_ps(a->qd[(t0 + t) * a->nb + b]);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, dx), acc[t]);
        acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(imin[t]), _mm256_mul_ps(dmin, dx), acc[t]);
    }
}

/* Super-block b of a 16-row group x nt tokens of interleaved Q4_K, added to
 * acc[half][t] (rows 8 * half ..). The nibbles are the unsigned operand of
 * vpmaddubsw (pair sums <= 2 * 15 * 127), so the 8 quads of a sub-block add
 * up in int16 (<= 30480) before one vpmaddwd applies the per-row scales.
 * Both halves of a line are read together, so one prefetch serves both. */
INLINE void q4_k_x16_super(const uint8_t *s, const qtts_act *a, int64_t t0, int nt, int64_t b,
                           __m256 acc[2][QTTS_TILE_TOKENS]) {
    const int64_t cols = a->cols;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i isum[2][QTTS_TILE_TOKENS], imin[2][QTTS_TILE_TOKENS];
    for (int h = 0; h < 2; h++)
        for (int t = 0; t < nt; t++) isum[h][t] = imin[h][t] = _mm256_setzero_si256();
    for (int p = 0; p < 4; p++)
        for (int h = 0; h < 2; h++) q4_k_add_mins(s, p, h, a, t0, nt, b, imin[h]);
    for (int p = 0; p < 4; p++) {
        const uint8_t *qs = s + 320 + 512 * p;
        __m256i da[2][QTTS_TILE_TOKENS], db[2][QTTS_TILE_TOKENS];
        for (int h = 0; h < 2; h++)
            for (int t = 0; t < nt; t++) da[h][t] = db[h][t] = _mm256_setzero_si256();
        for (int g = 0; g < 8; g++) {
            if (a->prefetch) { /* the super-block's 37 lines, half a super-block ahead, one or two per step */
                _mm_prefetch((const char *)qs + 64 * g + PREFETCH_X16, _MM_HINT_NTA);
                if (g == 0) _mm_prefetch((const char *)s + 64 * p + PREFETCH_X16, _MM_HINT_NTA);
                if (g == 1 && p == 0) _mm_prefetch((const char *)s + 256 + PREFETCH_X16, _MM_HINT_NTA);
            }
            __m256i xa[QTTS_TILE_TOKENS], xb[QTTS_TILE_TOKENS];
            for (int t = 0; t < nt; t++) {
                const int8_t *xq = a->q + (t0 + t) * cols + 256 * b + 64 * p + 4 * g;
                xa[t] = bcast4(xq);
                xb[t] = bcast4(xq + 32);
            }
            for (int h = 0; h < 2; h++) {
                const __m256i wv = _mm256_loadu_si256((const __m256i *)(qs + 64 * g + 32 * h));
                const __m256i lo = _mm256_and_si256(wv, m4), hi = _mm256_and_si256(_mm256_srli_epi16(wv, 4), m4);
                for (int t = 0; t < nt; t++) {
                    da[h][t] = _mm256_add_epi16(da[h][t], _mm256_maddubs_epi16(lo, xa[t]));
                    db[h][t] = _mm256_add_epi16(db[h][t], _mm256_maddubs_epi16(hi, xb[t]));
                    if (nt > 1) { /* at nt = 1 (no lockstep) the chains cost more than they save */
                        KEEP_CHAIN(da[h][t]);
                        KEEP_CHAIN(db[h][t]);
                    }
                }
            }
        }
        for (int h = 0; h < 2; h++) {
            const __m256i sa = scale_pairs(s + 64 + 32 * p + 8 * h), sb = scale_pairs(s + 64 + 32 * p + 16 + 8 * h);
            for (int t = 0; t < nt; t++)
                isum[h][t] = _mm256_add_epi32(isum[h][t], _mm256_add_epi32(_mm256_madd_epi16(da[h][t], sa),
                                                                           _mm256_madd_epi16(db[h][t], sb)));
        }
    }
    for (int h = 0; h < 2; h++) q4_k_add_scaled(s, h, a, t0, nt, b, isum[h], imin[h], acc[h]);
}

/* The same for 8 rows (half h) only: with 3-4 tokens both halves' sums
 * would not fit in the 16 registers (spills would slow batches). */
INLINE void q4_k_x8_super(const uint8_t *grp, int h, const qtts_act *a, int64_t t0, int nt, int64_t b,
                          __m256 *acc) {
    const int64_t cols = a->cols;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const uint8_t *s = grp + (size_t)b * QTTS_Q4_K_X16_SUPER;
    __m256i isum[QTTS_TILE_TOKENS], imin[QTTS_TILE_TOKENS];
    for (int t = 0; t < nt; t++) isum[t] = imin[t] = _mm256_setzero_si256();
    for (int p = 0; p < 4; p++) q4_k_add_mins(s, p, h, a, t0, nt, b, imin);
    for (int p = 0; p < 4; p++) {
        const uint8_t *qs = s + 320 + 512 * p + 32 * h;
        __m256i da[QTTS_TILE_TOKENS], db[QTTS_TILE_TOKENS];
        for (int t = 0; t < nt; t++) da[t] = db[t] = _mm256_setzero_si256();
        for (int g = 0; g < 8; g++) {
            if (a->prefetch && h == 0) { /* as in q4_k_x16_super */
                _mm_prefetch((const char *)qs + 64 * g + PREFETCH_X16, _MM_HINT_NTA);
                if (g == 0) _mm_prefetch((const char *)s + 64 * p + PREFETCH_X16, _MM_HINT_NTA);
                if (g == 1 && p == 0) _mm_prefetch((const char *)s + 256 + PREFETCH_X16, _MM_HINT_NTA);
            }
            const __m256i wv = _mm256_loadu_si256((const __m256i *)(qs + 64 * g));
            const __m256i lo = _mm256_and_si256(wv, m4), hi = _mm256_and_si256(_mm256_srli_epi16(wv, 4), m4);
            for (int t = 0; t < nt; t++) {
                const int8_t *xq = a->q + (t0 + t) * cols + 256 * b + 64 * p + 4 * g;
                da[t] = _mm256_add_epi16(da[t], _mm256_maddubs_epi16(lo, bcast4(xq)));
                db[t] = _mm256_add_epi16(db[t], _mm256_maddubs_epi16(hi, bcast4(xq + 32)));
                KEEP_CHAIN(da[t]);
                KEEP_CHAIN(db[t]);
            }
        }
        const __m256i sa = scale_pairs(s + 64 + 32 * p + 8 * h), sb = scale_pairs(s + 64 + 32 * p + 16 + 8 * h);
        for (int t = 0; t < nt; t++)
            isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(da[t], sa),
                                                                 _mm256_madd_epi16(db[t], sb)));
    }
    q4_k_add_scaled(s, h, a, t0, nt, b, isum, imin, acc);
}

/* q4_k_x8_super for exactly 4 tokens, written out so that GCC keeps the 8
 * int16 sums, the weights and the broadcasts in the 16 registers: the loop
 * form spilled sums, copied registers and tested the prefetch flag on every
 * quad (~13 cycles per quad where its 28 instructions need ~5). The
 * prefetches of a pair's 8 lines are issued together before its quads. Same
 * integer sums and the same float operations per row and token as
 * q4_k_x8_super, so the results are the same bits. */
INLINE void q4_k_x8_super4(const uint8_t *grp, int h, const qtts_act *a, int64_t t0, int64_t b, __m256 *acc) {
    const int64_t cols = a->cols;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const uint8_t *s = grp + (size_t)b * QTTS_Q4_K_X16_SUPER;
    const int8_t *x0 = a->q + t0 * cols + 256 * b, *x1 = x0 + cols, *x2 = x1 + cols, *x3 = x2 + cols;
    __m256i isum[4], imin[4];
    for (int t = 0; t < 4; t++) isum[t] = imin[t] = _mm256_setzero_si256();
    for (int p = 0; p < 4; p++) q4_k_add_mins(s, p, h, a, t0, 4, b, imin);
    for (int p = 0; p < 4; p++) {
        const uint8_t *qs = s + 320 + 512 * p + 32 * h;
        if (a->prefetch && h == 0) { /* the same lines as q4_k_x8_super, per pair */
            for (int g = 0; g < 8; g++) _mm_prefetch((const char *)qs + 64 * g + PREFETCH_X16, _MM_HINT_NTA);
            _mm_prefetch((const char *)s + 64 * p + PREFETCH_X16, _MM_HINT_NTA);
            if (p == 0) _mm_prefetch((const char *)s + 256 + PREFETCH_X16, _MM_HINT_NTA);
        }
        __m256i da0 = _mm256_setzero_si256(), da1 = da0, da2 = da0, da3 = da0;
        __m256i db0 = da0, db1 = da0, db2 = da0, db3 = da0;
        const int64_t o = 64 * p;
#pragma GCC unroll 8
        for (int g = 0; g < 8; g++) {
            const __m256i wv = _mm256_loadu_si256((const __m256i *)(qs + 64 * g));
            const __m256i lo = _mm256_and_si256(wv, m4), hi = _mm256_and_si256(_mm256_srli_epi16(wv, 4), m4);
            const int64_t k = o + 4 * g;
            da0 = _mm256_add_epi16(da0, _mm256_maddubs_epi16(lo, bcast4(x0 + k)));
            da1 = _mm256_add_epi16(da1, _mm256_maddubs_epi16(lo, bcast4(x1 + k)));
            da2 = _mm256_add_epi16(da2, _mm256_maddubs_epi16(lo, bcast4(x2 + k)));
            da3 = _mm256_add_epi16(da3, _mm256_maddubs_epi16(lo, bcast4(x3 + k)));
            db0 = _mm256_add_epi16(db0, _mm256_maddubs_epi16(hi, bcast4(x0 + k + 32)));
            db1 = _mm256_add_epi16(db1, _mm256_maddubs_epi16(hi, bcast4(x1 + k + 32)));
            db2 = _mm256_add_epi16(db2, _mm256_maddubs_epi16(hi, bcast4(x2 + k + 32)));
            db3 = _mm256_add_epi16(db3, _mm256_maddubs_epi16(hi, bcast4(x3 + k + 32)));
            KEEP_CHAIN(da0);
            KEEP_CHAIN(da1);
            KEEP_CHAIN(da2);
            KEEP_CHAIN(da3);
            KEEP_CHAIN(db0);
            KEEP_CHAIN(db1);
            KEEP_CHAIN(db2);
            KEEP_CHAIN(db3);
        }
        const __m256i sa = scale_pairs(s + 64 + 32 * p + 8 * h), sb = scale_pairs(s + 64 + 32 * p + 16 + 8 * h);
        isum[0] = _mm256_add_epi32(isum[0], _mm256_add_epi32(_mm256_madd_epi16(da0, sa), _mm256_madd_epi16(db0, sb)));
        isum[1] = _mm256_add_epi32(isum[1], _mm256_add_epi32(_mm256_madd_epi16(da1, sa), _mm256_madd_epi16(db1, sb)));
        isum[2] = _mm256_add_epi32(isum[2], _mm256_add_epi32(_mm256_madd_epi16(da2, sa), _mm256_madd_epi16(db2, sb)));
        isum[3] = _mm256_add_epi32(isum[3], _mm256_add_epi32(_mm256_madd_epi16(da3, sa), _mm256_madd_epi16(db3, sb)));
    }
    q4_k_add_scaled(s, h, a, t0, 4, b, isum, imin, acc);
}

INLINE void q4_k_x16_tile(const uint8_t *grp, const qtts_act *a, int64_t t0, int nt, __m256 acc[2][QTTS_TILE_TOKENS]) {
    for (int h = 0; h < 2; h++)
        for (int t = 0; t < nt; t++) acc[h][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < a->nb; b++) {
        if (nt <= 2) q4_k_x16_super(grp + (size_t)b * QTTS_Q4_K_X16_SUPER, a, t0, nt, b, acc);
        else if (nt == 4)
            for (int h = 0; h < 2; h++) q4_k_x8_super4(grp, h, a, t0, b, acc[h]);
        else
            for (int h = 0; h < 2; h++) q4_k_x8_super(grp, h, a, t0, nt, b, acc[h]);
    }
}

INLINE void q8_0_x16_tile(const uint8_t *grp, const qtts_act *a, int64_t t0, int nt, __m256 acc[2][QTTS_TILE_TOKENS]) {
    for (int h = 0; h < 2; h++)
        for (int t = 0; t < nt; t++) acc[h][t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < a->nb; b++)
        for (int h = 0; h < 2; h++) q8_0_x8_block(grp, h, a, t0, nt, b, acc[h]);
}

/* bias + the 16 rows' results of a token tile */
static void store_x16(const qtts_mat *w, const float *bias, float *y, int64_t r, int64_t t0, int nt,
                      __m256 acc[2][QTTS_TILE_TOKENS]) {
    for (int h = 0; h < 2; h++) {
        const __m256 bv = bias ? _mm256_loadu_ps(bias + r + 8 * h) : _mm256_setzero_ps();
        for (int t = 0; t < nt; t++) _mm256_storeu_ps(y + (t0 + t) * w->rows + r + 8 * h, _mm256_add_ps(acc[h][t], bv));
    }
}

/* One token against X16_STREAMS 16-row groups far apart, read in step: a
 * core can stream memory faster from two places than from one (more so
 * when they alternate 64-byte lines than when they switch every
 * super-block), and one token leaves compute to spare. With a->lockstep the
 * groups alternate line by line, else super-block by super-block; four
 * groups in step gained nothing more. Which one is faster differs between
 * CPUs, so the load-time measurement decides (interleave_calibrate.h). The
 * operations and their order per group are
 * those of q4_k_x16_super / q8_0_x8_block, so the results are the same bits. */
enum { X16_STREAMS = 2 };
/* Super-block b of the X16_STREAMS groups g[k], 1 token, added to acc[k]. */
INLINE void q4_k_x16_lockstep(const uint8_t *const *g, const qtts_act *a, int64_t b,
                              __m256 acc[X16_STREAMS][2][QTTS_TILE_TOKENS]) {
    enum { S = X16_STREAMS };
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i isum[S][2], imin[S][2];
    for (int k = 0; k < S; k++)
        for (int h = 0; h < 2; h++) isum[k][h] = imin[k][h] = _mm256_setzero_si256();
    for (int p = 0; p < 4; p++) /* 1 token: row 0 of the activations */
        for (int k = 0; k < S; k++)
            for (int h = 0; h < 2; h++)
                q4_k_add_mins(g[k] + (size_t)b * QTTS_Q4_K_X16_SUPER, p, h, a, 0, 1, b, &imin[k][h]);
    const int8_t *xq0 = a->q + 256 * b;
    for (int p = 0; p < 4; p++) {
        __m256i da[S][2], db[S][2];
        for (int k = 0; k < S; k++)
            for (int h = 0; h < 2; h++) da[k][h] = db[k][h] = _mm256_setzero_si256();
        for (int gi = 0; gi < 8; gi++) {
            const __m256i xa = bcast4(xq0 + 64 * p + 4 * gi), xb = bcast4(xq0 + 64 * p + 4 * gi + 32);
            for (int k = 0; k < S; k++) {
                const uint8_t *s = g[k] + (size_t)b * QTTS_Q4_K_X16_SUPER, *qs = s + 320 + 512 * p;
                if (a->prefetch) {
                    _mm_prefetch((const char *)qs + 64 * gi + PREFETCH_X16, _MM_HINT_NTA);
                    if (gi == 0) _mm_prefetch((const char *)s + 64 * p + PREFETCH_X16, _MM_HINT_NTA);
                    if (gi == 1 && p == 0) _mm_prefetch((const char *)s + 256 + PREFETCH_X16, _MM_HINT_NTA);
                }
                for (int h = 0; h < 2; h++) {
                    const __m256i wv = _mm256_loadu_si256((const __m256i *)(qs + 64 * gi + 32 * h));
                    const __m256i lo = _mm256_and_si256(wv, m4), hi = _mm256_and_si256(_mm256_srli_epi16(wv, 4), m4);
                    da[k][h] = _mm256_add_epi16(da[k][h], _mm256_maddubs_epi16(lo, xa));
                    db[k][h] = _mm256_add_epi16(db[k][h], _mm256_maddubs_epi16(hi, xb));
                }
            }
        }
        for (int k = 0; k < S; k++) {
            const uint8_t *s = g[k] + (size_t)b * QTTS_Q4_K_X16_SUPER;
            for (int h = 0; h < 2; h++) {
                const __m256i sa = scale_pairs(s + 64 + 32 * p + 8 * h), sb = scale_pairs(s + 64 + 32 * p + 16 + 8 * h);
                isum[k][h] = _mm256_add_epi32(isum[k][h], _mm256_add_epi32(_mm256_madd_epi16(da[k][h], sa),
                                                                           _mm256_madd_epi16(db[k][h], sb)));
            }
        }
    }
    /* the steps of q4_k_add_scaled, written out: through it, dx would be loaded again per group half */
    const __m256 dx = _mm256_set1_ps(a->qd[b]);
    for (int k = 0; k < S; k++) {
        const uint8_t *s = g[k] + (size_t)b * QTTS_Q4_K_X16_SUPER;
        for (int h = 0; h < 2; h++) {
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + 16 * h)));
            const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + 32 + 16 * h)));
            acc[k][h][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[k][h]), _mm256_mul_ps(d, dx), acc[k][h][0]);
            acc[k][h][0] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(imin[k][h]), _mm256_mul_ps(dmin, dx), acc[k][h][0]);
        }
    }
}

/* The same for block b of interleaved Q8_0. */
INLINE void q8_0_x16_lockstep(const uint8_t *const *g, const qtts_act *a, int64_t b,
                              __m256 acc[X16_STREAMS][2][QTTS_TILE_TOKENS]) {
    enum { S = X16_STREAMS };
    const int64_t nb = a->nb;
    const __m256i flip = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
    __m256i isum[S][2];
    for (int k = 0; k < S; k++)
        for (int h = 0; h < 2; h++) isum[k][h] = _mm256_setzero_si256();
    for (int gi = 0; gi < 8; gi++) {
        const __m256i xv = bcast4(a->q + 32 * b + 4 * gi);
        for (int k = 0; k < S; k++) {
            const uint8_t *qs = g[k] + (size_t)b * 512;
            if (a->prefetch) {
                _mm_prefetch((const char *)qs + 64 * gi + PREFETCH_X16, _MM_HINT_NTA);
                if (gi == 0 && b % 2 == 0)
                    _mm_prefetch((const char *)(g[k] + (size_t)nb * 512 + 32 * (b + 4)), _MM_HINT_NTA);
            }
            for (int h = 0; h < 2; h++) {
                const __m256i w = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(qs + 64 * gi + 32 * h)), flip);
                const __m256i xs = _mm256_sign_epi8(xv, w);
                isum[k][h] = _mm256_add_epi32(isum[k][h], _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(w), xs), ones));
            }
        }
    }
    const __m256 dx = _mm256_set1_ps(a->qd[b]);
    for (int k = 0; k < S; k++) {
        const uint16_t *dw = (const uint16_t *)(g[k] + (size_t)nb * 512);
        for (int h = 0; h < 2; h++) {
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(dw + 16 * b + 8 * h)));
            acc[k][h][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[k][h]), _mm256_mul_ps(d, dx), acc[k][h][0]);
        }
    }
}

static void x16_streams_n1(const qtts_mat *w, const qtts_act *a, const uint8_t *const *g,
                           __m256 acc[X16_STREAMS][2][QTTS_TILE_TOKENS]) {
    for (int k = 0; k < X16_STREAMS; k++)
        for (int h = 0; h < 2; h++) acc[k][h][0] = _mm256_setzero_ps();
    for (int64_t b = 0; b < a->nb; b++) {
        if (a->lockstep) {
            if (w->type == QTTS_Q4_K) q4_k_x16_lockstep(g, a, b, acc);
            else q8_0_x16_lockstep(g, a, b, acc);
            continue;
        }
        for (int k = 0; k < X16_STREAMS; k++) {
            if (w->type == QTTS_Q4_K) q4_k_x16_super(g[k] + (size_t)b * QTTS_Q4_K_X16_SUPER, a, 0, 1, b, acc[k]);
            else
                for (int h = 0; h < 2; h++) q8_0_x8_block(g[k], h, a, 0, 1, b, acc[k][h]);
        }
    }
}

/* r0, r1: multiples of 16 (the pool splits rows in QTTS_TILE_ROWS = 16). */
static void rows_x16(const qtts_mat *w, const qtts_act *a, const float *bias, float *y, int64_t r0, int64_t r1) {
    const size_t group_bytes = w->row_bytes * 16;
    if (a->n == 1) { /* the range in X16_STREAMS parts, read side by side; the groups left over alone */
        const int64_t part = (r1 - r0) / 16 / X16_STREAMS;
        for (int64_t i = 0; i < part; i++) {
            const uint8_t *g[X16_STREAMS];
            int64_t r[X16_STREAMS];
            for (int k = 0; k < X16_STREAMS; k++) {
                r[k] = r0 + 16 * (i + k * part);
                g[k] = (const uint8_t *)w->data + (size_t)(r[k] / 16) * group_bytes;
            }
            __m256 acc[X16_STREAMS][2][QTTS_TILE_TOKENS];
            x16_streams_n1(w, a, g, acc);
            for (int k = 0; k < X16_STREAMS; k++) store_x16(w, bias, y, r[k], 0, 1, acc[k]);
        }
        r0 += 16 * X16_STREAMS * part;
    }
    for (int64_t r = r0; r < r1; r += 16) {
        const uint8_t *grp = (const uint8_t *)w->data + (size_t)(r / 16) * group_bytes;
        for (int64_t t0 = 0; t0 < a->n; t0 += QTTS_TILE_TOKENS) {
            int nt = a->n - t0 < QTTS_TILE_TOKENS ? (int)(a->n - t0) : QTTS_TILE_TOKENS;
            __m256 acc[2][QTTS_TILE_TOKENS];
            if (w->type == QTTS_Q8_0) X16_NT_SWITCH(q8_0_x16_tile)
            else X16_NT_SWITCH(q4_k_x16_tile)
            store_x16(w, bias, y, r, t0, nt, acc);
        }
    }
}

void qtts_linear_rows_avx2(const qtts_mat *w, const qtts_act *a, const float *bias, float *y, int64_t r0,
                           int64_t r1) {
    if (w->interleave) {
        rows_x16(w, a, bias, y, r0, r1);
        return;
    }
    switch (w->type) {
    case QTTS_F32: rows_f32(w, a, bias, y, r0, r1); break;
    case QTTS_F16: rows_f16(w, a, bias, y, r0, r1); break;
    case QTTS_BF16: rows_bf16(w, a, bias, y, r0, r1); break;
    case QTTS_Q8_0: rows_q8_0(w, a, bias, y, r0, r1); break;
    case QTTS_Q4_K: rows_q4_k(w, a, bias, y, r0, r1); break;
    default: break;
    }
}

/* ---- activation packing (the scalar twins are pack_q8_0 / pack_q8_k in
 * linear.c; same operations in f32, so the results are bit-identical). At
 * n = 1 the scalar packers took as long as the weights of a 256x1024 Q4_K
 * matrix (libm calls per value) and left the other threads waiting. ---- */

INLINE __m256 abs8(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

INLINE float hmax8(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

INLINE int32_t hsum8_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* 8 values times id, rounded to nearest even (as lrintf), clamped to +-127. */
INLINE __m256i quant8(__m256 v, __m256 id) {
    __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(v, id));
    return _mm256_max_epi32(_mm256_min_epi32(q, _mm256_set1_epi32(127)), _mm256_set1_epi32(-127));
}

/* 32 values quantized with id to q[0..32); returns their sum. */
INLINE int32_t quant32(const float *x, __m256 id, int8_t *q) {
    const __m256i a = quant8(_mm256_loadu_ps(x), id), b = quant8(_mm256_loadu_ps(x + 8), id),
                  c = quant8(_mm256_loadu_ps(x + 16), id), d = quant8(_mm256_loadu_ps(x + 24), id);
    /* packs work per 128-bit lane: the dwords come out in the order 0 4 1 5 2 6 3 7 */
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
    _mm256_storeu_si256((__m256i *)q, _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    return hsum8_epi32(_mm256_add_epi32(_mm256_add_epi32(a, b), _mm256_add_epi32(c, d)));
}

void qtts_pack_q8_0_avx2(const float *x, int64_t cols, int8_t *q, float *qd, int32_t *xsum) {
    for (int64_t b = 0; b < cols / 32; b++, x += 32, q += 32) {
        __m256 m = _mm256_max_ps(_mm256_max_ps(abs8(_mm256_loadu_ps(x)), abs8(_mm256_loadu_ps(x + 8))),
                                 _mm256_max_ps(abs8(_mm256_loadu_ps(x + 16)), abs8(_mm256_loadu_ps(x + 24))));
        const float amax = hmax8(m);
        qd[b] = amax / 127.0f;
        const int32_t s = quant32(x, _mm256_set1_ps(amax > 0 ? 127.0f / amax : 0.0f), q);
        if (xsum) xsum[b] = 128 * s;
    }
}

void qtts_pack_q8_k_avx2(const float *x, int64_t cols, int8_t *q, float *qd, int16_t *bsum, int natural) {
    for (int64_t b = 0; b < cols / 256; b++, x += 256, q += 256) {
        __m256 m0 = _mm256_setzero_ps(), m1 = _mm256_setzero_ps();
        for (int i = 0; i < 256; i += 16) {
            m0 = _mm256_max_ps(m0, abs8(_mm256_loadu_ps(x + i)));
            m1 = _mm256_max_ps(m1, abs8(_mm256_loadu_ps(x + i + 8)));
        }
        const float amax = hmax8(_mm256_max_ps(m0, m1));
        qd[b] = amax / 127.0f;
        const __m256 id = _mm256_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
        for (int j = 0; j < 8; j++)
            bsum[8 * b + j] = (int16_t)quant32(x + 32 * j, id, q + 32 * qtts_q8_k_slot(j, natural));
    }
}
