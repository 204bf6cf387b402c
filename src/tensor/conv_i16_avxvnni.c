/* AVX-VNNI twin of the int16 conv tile, for CPUs with the VEX-encoded
 * vpdpwssd but no AVX-512: the AVX2 tile
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

I16_TILE(1, dpwssd)
I16_TILE(2, dpwssd)

void qtts_conv_tile_i16_avxvnni(const qtts_conv *cv, const uint32_t *x, const float *xs, int64_t ldx, int64_t nt,
                                int64_t rb, float *y, int64_t ldy, const float *add, int64_t ldadd) {
    i16_tile_rows(tile_4x1, tile_4x2, cv, x, xs, ldx, nt, rb, y, ldy, add, ldadd);
}
