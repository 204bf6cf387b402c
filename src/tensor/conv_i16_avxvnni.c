/* AVX-VNNI twin of the int16 conv tile, for CPUs with the VEX-encoded
 * vpdpwssd but no AVX-512 (Intel cores from Alder Lake on): the AVX2 tile
 * (conv_i16_avx2.c) with each channel pair's vpmaddwd + vpaddd done by one
 * instruction, so the same int32 sums and the same bits. Only called after
 * a cpuid check (qtts_cpu_features_get()->avxvnni). */
#include "tensor/conv_i16_x86.h"

/* acc += the products of x's int16 pairs with w's. The emulated AVX-512 test
 * build (SIMDe) runs the AVX-512 VL form of the same operation. */
static inline __m256i dpwssd(__m256i acc, __m256i x, __m256i w) {
#ifdef QTTS_SIMDE_AVX512
    return _mm256_dpwssd_epi32(acc, x, w);
#else
    return _mm256_dpwssd_avx_epi32(acc, x, w);
#endif
}

/* 4 rows (of half h of the packed block) x NV vectors of 8 samples: 4-8
 * accumulators, the broadcast weight and the inputs fit the 16 registers */
#define I16_TILE_VNNI(NV)                                                                                    \
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
                    _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++) a[r][v] = dpwssd(a[r][v], xv[v], wv); \
                }                                                                                            \
            }                                                                                                \
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)                                             \
                _Pragma("GCC unroll 2") for (int v = 0; v < NV; v++)                                        \
                    out[r][v] = _mm256_add_ps(out[r][v], _mm256_cvtepi32_ps(a[r][v]));                       \
        }                                                                                                    \
    }

I16_TILE_VNNI(1)
I16_TILE_VNNI(2)

void qtts_conv_tile_i16_avxvnni(const qtts_conv *cv, const uint32_t *x, const float *xs, int64_t ldx, int64_t nt,
                                int64_t rb, float *y, int64_t ldy, const float *add, int64_t ldadd) {
    i16_tile_rows(tile_4x1, tile_4x2, cv, x, xs, ldx, nt, rb, y, ldy, add, ldadd);
}
