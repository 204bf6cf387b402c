/* AVX-512 (VNNI) twin of the int16 conv tile (conv_i16.c has the scalar
 * one): the same int32 sums per QTTS_CONV_I16_FLUSH pairs, added in f32 in
 * the same order, so the same bits. Only called after a cpuid check.
 *
 * One zmm holds a whole 16-sample panel of one channel pair, and vpdpwssd
 * multiplies, adds the pair and accumulates in one instruction with the
 * weight broadcast from memory: 32 multiply-adds per instruction, where the
 * AVX2 tile needs vpmaddwd + vpaddd for 16. The sums run in two chains per
 * row (even and odd pairs) so that 16 independent accumulators cover
 * vpdpwssd's latency at up to 2 per cycle; adding the two
 * halves at a flush gives the same int32 sum. */
#include "tensor/x86_simd.h"

#include "tensor/conv_kernels.h"

/* acc += the products of x's int16 pairs with the pair at w, broadcast.
 * GCC treats the intrinsic's accumulator as a fresh value and copied every
 * one of the 16 back into place on each step (80 register moves and stack
 * spills per 24 products); as asm it stays put and the weight is read by the
 * instruction's own broadcast. The emulated test build (SIMDe) has no
 * AVX-512 assembler operands, so it takes the intrinsic (same sums). */
static inline __m512i dpwssd_bcast(__m512i acc, __m512i x, const uint32_t *w) {
#ifdef QTTS_SIMDE_AVX512
    return _mm512_dpwssd_epi32(acc, x, _mm512_set1_epi32((int)*w));
#else
    __asm__("vpdpwssd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(x), "m"(*w));
    return acc;
#endif
}

/* the 8 rows of block rb x one panel of up to 16 samples (mask m) */
static void tile_8x16(const uint32_t *wp, const uint32_t *x, int64_t ldx, int64_t c2n, __mmask16 m,
                      __m512 out[QTTS_CONV_MR]) {
    for (int r = 0; r < QTTS_CONV_MR; r++) out[r] = _mm512_setzero_ps();
    for (int64_t c0 = 0; c0 < c2n; c0 += QTTS_CONV_I16_FLUSH) {
        const int64_t c1 = c0 + QTTS_CONV_I16_FLUSH < c2n ? c0 + QTTS_CONV_I16_FLUSH : c2n;
        __m512i a[QTTS_CONV_MR], b[QTTS_CONV_MR];
        _Pragma("GCC unroll 8") for (int r = 0; r < QTTS_CONV_MR; r++) a[r] = b[r] = _mm512_setzero_si512();
        int64_t c2 = c0;
        for (; c2 + 1 < c1; c2 += 2) {
            const __m512i x0 = _mm512_maskz_loadu_epi32(m, x + c2 * ldx);
            const __m512i x1 = _mm512_maskz_loadu_epi32(m, x + (c2 + 1) * ldx);
            const uint32_t *w0 = wp + c2 * QTTS_CONV_MR, *w1 = w0 + QTTS_CONV_MR;
            _Pragma("GCC unroll 8") for (int r = 0; r < QTTS_CONV_MR; r++) {
                a[r] = dpwssd_bcast(a[r], x0, w0 + r);
                b[r] = dpwssd_bcast(b[r], x1, w1 + r);
            }
        }
        if (c2 < c1) {
            const __m512i x0 = _mm512_maskz_loadu_epi32(m, x + c2 * ldx);
            const uint32_t *w0 = wp + c2 * QTTS_CONV_MR;
            for (int r = 0; r < QTTS_CONV_MR; r++) a[r] = dpwssd_bcast(a[r], x0, w0 + r);
        }
        for (int r = 0; r < QTTS_CONV_MR; r++)
            out[r] = _mm512_add_ps(out[r], _mm512_cvtepi32_ps(_mm512_add_epi32(a[r], b[r])));
    }
}

void qtts_conv_tile_i16_avx512(const qtts_conv *cv, const uint32_t *x, const float *xs, int64_t ldx, int64_t nt,
                               int64_t rb, float *y, int64_t ldy, const float *add, int64_t ldadd) {
    const int64_t c2n = (cv->c_in + 1) / 2;
    const uint32_t *wb = cv->wi16 + (size_t)rb * c2n * QTTS_CONV_MR;
    int64_t rows = cv->c_out - rb * QTTS_CONV_MR;
    if (rows > QTTS_CONV_MR) rows = QTTS_CONV_MR;
    for (int64_t ts = 0; ts < nt; ts += 16) {
        const int64_t n = nt - ts < 16 ? nt - ts : 16;
        const __mmask16 m = (__mmask16)(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
        __m512 acc[QTTS_CONV_MR];
        tile_8x16(wb, x + ts, ldx, c2n, m, acc);
        const __m512 sx = _mm512_maskz_loadu_ps(m, xs + ts);
        for (int64_t r = 0; r < rows; r++) {
            const int64_t row = rb * QTTS_CONV_MR + r;
            __m512 o = _mm512_mul_ps(acc[r], _mm512_set1_ps(cv->wscale[row]));
            o = _mm512_mul_ps(o, sx);
            o = _mm512_add_ps(o, _mm512_set1_ps(cv->bias[row]));
            if (add) o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(m, add + row * ldadd + ts));
            _mm512_mask_storeu_ps(y + row * ldy + ts, m, o);
        }
    }
}
