/* The 256-bit int16 conv tiles, shared by conv_i16_avx2.c (vpmaddwd +
 * vpaddd per channel pair) and conv_i16_avxvnni.c (vpdpwssd), which differ
 * only in that instruction: the 4-row tiles (I16_TILE), and around them the
 * panels of up to 16 samples, the 4-row halves of a row block, and the
 * scaling, bias, residual and (masked) stores in the scalar twin's order.
 * Included only by files built with AVX2 flags. */
#ifndef QTTS_TENSOR_CONV_I16_X86_H
#define QTTS_TENSOR_CONV_I16_X86_H

#include "tensor/conv_kernels.h"
#include "tensor/x86_simd.h"

static inline __m256i i16_tail_mask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n > 8 ? 8 : n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* out[r][v] = the f32 sums of 4 rows (weights wp, stride QTTS_CONV_MR) x
 * NV vectors of 8 samples of x (pair rows of stride ldx), c2n pairs */
typedef void (*i16_tile_fn)(const uint32_t *wp, const uint32_t *x, int64_t ldx, int64_t c2n, __m256 out[4][2]);

/* tile_4x<NV>, an i16_tile_fn: 4 rows (of half h of the packed block) x NV
 * vectors of 8 samples, each vector 8 samples x 2 channels, with
 * PAIR(acc, x, w) adding the products of one channel pair to an int32
 * accumulator (the includer's instruction for it). Up to 8 accumulators, the
 * broadcast weight and the inputs: at most 14 of the 16 registers. */
#define I16_TILE(NV, PAIR)                                                                                         \
    static void tile_4x##NV(const uint32_t *wp, const uint32_t *x, int64_t ldx, int64_t c2n, __m256 out[4][2]) { \
        for (int r = 0; r < 4; r++)                                                                          \
            for (int v = 0; v < NV; v++) out[r][v] = _mm256_setzero_ps();                                   \
        for (int64_t c0 = 0; c0 < c2n; c0 += QTTS_CONV_I16_FLUSH) {                                         \
            const int64_t c1 = c0 + QTTS_CONV_I16_FLUSH < c2n ? c0 + QTTS_CONV_I16_FLUSH : c2n;             \
            __m256i a[4][NV];                                                                                \
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)                                             \
                _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) a[r][v] = _mm256_setzero_si256();      \
            _Pragma("GCC unroll 16") for (int64_t c2 = c0; c2 < c1; c2++) {                                  \
                const uint32_t *xp = x + c2 * ldx, *w = wp + c2 * QTTS_CONV_MR;                             \
                __m256i xv[NV];                                                                              \
                _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                                        \
                    xv[v] = _mm256_loadu_si256((const __m256i *)(xp + 8 * v));                               \
                _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) {                                       \
                    const __m256i wv = _mm256_set1_epi32((int)w[r]);                                        \
                    _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                                    \
                        a[r][v] = PAIR(a[r][v], xv[v], wv);                                                \
                }                                                                                            \
            }                                                                                                \
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)                                             \
                _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                                        \
                    out[r][v] = _mm256_add_ps(out[r][v], _mm256_cvtepi32_ps(a[r][v]));                       \
        }                                                                                                    \
    }

/* qtts_conv_tile_i16_fn's contract (conv_kernels.h) on the includer's one-
 * and two-vector tiles (always inlined, so the calls are direct) */
__attribute__((always_inline)) static inline void i16_tile_rows(i16_tile_fn tile1, i16_tile_fn tile2,
                                                                 const qtts_conv *cv, const uint32_t *x,
                                                                 const float *xs, int64_t ldx, int64_t nt,
                                                                 int64_t rb, float *y, int64_t ldy,
                                                                 const float *add, int64_t ldadd) {
    const int64_t c2n = (cv->c_in + 1) / 2;
    const uint32_t *wb = cv->wi16 + (size_t)rb * c2n * QTTS_CONV_MR;
    for (int64_t ts = 0; ts < nt; ts += 16) {
        const int64_t n = nt - ts < 16 ? nt - ts : 16;
        const int nv = (int)((n + 7) / 8);
        for (int h = 0; h < 2; h++) {
            const int64_t rows = cv->c_out - (rb * QTTS_CONV_MR + 4 * h);
            if (rows <= 0) break;
            __m256 acc[4][2];
            if (nv == 2) tile2(wb + 4 * h, x + ts, ldx, c2n, acc);
            else tile1(wb + 4 * h, x + ts, ldx, c2n, acc);
            for (int r = 0; r < 4 && r < rows; r++) {
                const int64_t row = rb * QTTS_CONV_MR + 4 * h + r;
                const __m256 sw = _mm256_set1_ps(cv->wscale[row]), b = _mm256_set1_ps(cv->bias[row]);
                float *yr = y + row * ldy + ts;
                const float *ar = add ? add + row * ldadd + ts : NULL;
                for (int v = 0; v < nv; v++) {
                    const int64_t left = n - 8 * v;
                    __m256 o = _mm256_mul_ps(acc[r][v], sw);
                    o = _mm256_mul_ps(o, _mm256_loadu_ps(xs + ts + 8 * v)); /* xs is padded to whole vectors */
                    o = _mm256_add_ps(o, b);
                    if (left >= 8) {
                        if (ar) o = _mm256_add_ps(o, _mm256_loadu_ps(ar + 8 * v));
                        _mm256_storeu_ps(yr + 8 * v, o);
                        continue;
                    }
                    const __m256i m = i16_tail_mask(left);
                    if (ar) o = _mm256_add_ps(o, _mm256_maskload_ps(ar + 8 * v, m));
                    _mm256_maskstore_ps(yr + 8 * v, m, o);
                }
            }
        }
    }
}

#endif
