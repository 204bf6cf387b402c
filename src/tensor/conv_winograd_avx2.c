/* AVX2+FMA twins of the Winograd transforms (conv_winograd.c has the scalar
 * ones): 8 tiles per vector, the same fused multiply-adds in the same order,
 * so the results are the scalar twins' bits. The decoder's F(4, 7) (10
 * points), F(2, 7) (8) and F(4, 2) (5: its transposed convs) get fully
 * unrolled bodies, which keep a tile block's inputs in registers and take
 * each coefficient from memory inside the FMA (about a quarter of the
 * generic loop's instructions); other sizes run the generic loop. Only called after a cpuid check. */
#include <immintrin.h>

#include "tensor/conv_winograd.h"

#define WG_INPUT_BODY(N)                                                                                    \
    for (int64_t t = 0; t < ntp; t += 8) {                                                                  \
        __m256 x[QTTS_WINOGRAD_NMAX];                                                                                     \
        _Pragma("GCC unroll 12") for (int i = 0; i < N; i++) x[i] = _mm256_loadu_ps(src[i] + t);           \
        float *u = U + qtts_winograd_u_index(t, ntp, c_in, ci);                                             \
        _Pragma("GCC unroll 12") for (int q = 0; q < N; q++) {                                              \
            __m256 acc = _mm256_setzero_ps();                                                               \
            _Pragma("GCC unroll 12") for (int i = 0; i < N; i++)                                            \
                acc = _mm256_fmadd_ps(_mm256_loadu_ps(p->bt8[q][i]), x[i], acc);                            \
            _mm256_storeu_ps(u + q * ldu, acc);                                                             \
        }                                                                                                   \
    }

#define WG_OUTPUT_BODY(N, MM)                                                                               \
    for (int64_t t = 0; t < ntp; t += 8) {                                                                  \
        __m256 mv[QTTS_WINOGRAD_NMAX];                                                                                     \
        _Pragma("GCC unroll 12") for (int q = 0; q < N; q++) mv[q] = _mm256_loadu_ps(M + q * ldm + t);     \
        _Pragma("GCC unroll 12") for (int j = 0; j < MM; j++) {                                             \
            __m256 acc = _mm256_setzero_ps();                                                               \
            _Pragma("GCC unroll 12") for (int q = 0; q < N; q++)                                            \
                acc = _mm256_fmadd_ps(_mm256_loadu_ps(p->at8[j][q]), mv[q], acc);                           \
            _mm256_storeu_ps(Y + j * ldyp + t, acc);                                                        \
        }                                                                                                   \
    }

void qtts_winograd_input_avx2(const qtts_winograd_plan *p, const float *const *X, int64_t dil, int64_t ntp,
                              float *U, int64_t ldu, int64_t c_in, int64_t ci) {
    const float *src[QTTS_WINOGRAD_NMAX];
    for (int i = 0; i < p->n; i++) src[i] = X[i % p->m] + (i / p->m) * dil;
    if (p->n == 10) {
        WG_INPUT_BODY(10)
    } else if (p->n == 5) {
        WG_INPUT_BODY(5)
    } else if (p->n == 8) {
        WG_INPUT_BODY(8)
    } else {
        for (int64_t t = 0; t < ntp; t += 8) {
            float *u = U + qtts_winograd_u_index(t, ntp, c_in, ci);
            for (int q = 0; q < p->n; q++) {
                __m256 acc = _mm256_setzero_ps();
                for (int i = 0; i < p->n; i++)
                    acc = _mm256_fmadd_ps(_mm256_loadu_ps(p->bt8[q][i]), _mm256_loadu_ps(src[i] + t), acc);
                _mm256_storeu_ps(u + q * ldu, acc);
            }
        }
    }
}

void qtts_winograd_output_avx2(const qtts_winograd_plan *p, const float *M, int64_t ldm, int64_t ntp, float *Y,
                               int64_t ldyp) {
    if (p->n == 10 && p->m == 4) {
        WG_OUTPUT_BODY(10, 4)
    } else if (p->n == 8 && p->m == 2) {
        WG_OUTPUT_BODY(8, 2)
    } else if (p->n == 5 && p->m == 4) {
        WG_OUTPUT_BODY(5, 4)
    } else {
        for (int64_t t = 0; t < ntp; t += 8)
            for (int j = 0; j < p->m; j++) {
                __m256 acc = _mm256_setzero_ps();
                for (int q = 0; q < p->n; q++)
                    acc = _mm256_fmadd_ps(_mm256_loadu_ps(p->at8[j][q]), _mm256_loadu_ps(M + q * ldm + t), acc);
                _mm256_storeu_ps(Y + j * ldyp + t, acc);
            }
    }
}
