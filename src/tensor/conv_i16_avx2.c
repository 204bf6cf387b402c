/* AVX2 twins of the int16 conv tile and input quantizer (conv_i16.c has the
 * scalar ones; the same integer sums and the same f32 operations in the same
 * order, so the same bits). Only called after a cpuid check. */
#include "tensor/conv_i16_x86.h"

/* Integer adds are associative, so GCC regroups the unrolled sums into
 * trees (as in linear_avx2.c). The add is an asm statement, so each sum
 * stays one chain; the 16 pairs between flushes are unrolled whole. An empty
 * asm barrier after each pair (the first way, KEEP_CHAIN in linear_avx2.c)
 * kept the chains too, but left 8 register copies and 3 stack spills per
 * pair in the loop. */
static inline __m256i chain_add(__m256i acc, __m256i v) {
    __asm__("vpaddd %1, %0, %0" : "+x"(acc) : "x"(v));
    return acc;
}

/* one channel pair: vpmaddwd, then the add kept in its chain. The integer
 * sums depend on vpaddd (latency 1), not on the multiply, so the tile's 4-8
 * accumulators keep the multipliers busy. */
static inline __m256i madd_pair(__m256i acc, __m256i x, __m256i w) { return chain_add(acc, _mm256_madd_epi16(x, w)); }

I16_TILE(1, madd_pair)
I16_TILE(2, madd_pair)

void qtts_conv_tile_i16_avx2(const qtts_conv *cv, const uint32_t *x, const float *xs, int64_t ldx, int64_t nt,
                             int64_t rb, float *y, int64_t ldy, const float *add, int64_t ldadd) {
    i16_tile_rows(tile_4x1, tile_4x2, cv, x, xs, ldx, nt, rb, y, ldy, add, ldadd);
}

static inline __m256i quantize8(__m256 v) {
    v = _mm256_max_ps(v, _mm256_set1_ps((float)-QTTS_CONV_I16_XMAX));
    v = _mm256_min_ps(v, _mm256_set1_ps((float)QTTS_CONV_I16_XMAX));
    return _mm256_cvtps_epi32(v); /* round to nearest even (the default MXCSR mode) */
}

void qtts_i16_quantize_avx2(const float *x, int64_t ldx, int64_t C, int64_t t0, int64_t t1, uint32_t *pairs,
                            int64_t ldp, float *xs) {
    const __m256 sign = _mm256_set1_ps(-0.0f), qmax = _mm256_set1_ps((float)QTTS_CONV_I16_XMAX);
    for (int64_t t = t0; t < t1; t += 8) {
        __m256 mx = _mm256_setzero_ps();
        for (int64_t c = 0; c < C; c++) mx = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + c * ldx + t)), mx);
        const __m256 pos = _mm256_cmp_ps(mx, _mm256_setzero_ps(), _CMP_GT_OQ);
        const __m256 inv = _mm256_and_ps(pos, _mm256_div_ps(qmax, mx));
        _mm256_storeu_ps(xs + t, _mm256_div_ps(mx, qmax));
        for (int64_t c2 = 0; 2 * c2 < C; c2++) {
            const __m256i lo = quantize8(_mm256_mul_ps(_mm256_loadu_ps(x + 2 * c2 * ldx + t), inv));
            const __m256i hi = 2 * c2 + 1 < C ? quantize8(_mm256_mul_ps(_mm256_loadu_ps(x + (2 * c2 + 1) * ldx + t), inv))
                                              : _mm256_setzero_si256();
            /* |q| <= 2047: the low 16 bits of lo, the high 16 of hi */
            const __m256i p = _mm256_or_si256(_mm256_and_si256(lo, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(hi, 16));
            _mm256_storeu_si256((__m256i *)(pairs + c2 * ldp + t), p);
        }
    }
}
