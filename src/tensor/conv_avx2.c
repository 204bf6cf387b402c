/* AVX2+FMA tiles of the channel-major conv and SnakeBeta (built with -mavx2
 * -mfma; only called after a cpuid check in conv.c). Scalar twins:
 * qtts_conv_tile_scalar / qtts_snake_row_ref. */
#include <immintrin.h>

#include "tensor/conv_kernels.h"

/* Input rows the 1-tap loop prefetches ahead. Where x is a GEMM's B panel
 * (the time-major decoder layers, qtts_gemm) it is one stream read once
 * from memory, which the tile alone reads well below the memory's rate; 8
 * rows ahead cover that, and the in-cache tiles lose nothing. */
enum { PREFETCH_ROWS_1TAP = 8 };

static inline __m256i tail_mask(int64_t n) {
    __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n > 8 ? 8 : n)), idx);
}

/* R rows (of half h of the 8-row packed block) x NV vectors of 8 time
 * samples; the last vector is masked to mlast where it is partial (full = 0).
 * Whole vectors use plain loads: vmaskmovps is slow on some cores, enough
 * to slow the whole decoder. R = 1
 * serves row blocks with one valid row (time-major layers of 1-frame steps,
 * where the "rows" are time steps). */
#define CONV_TILE_AVX2(R, NV)                                                                              \
    static void tile_##R##x##NV(const float *wp, const float *x, int64_t ldx, int64_t c_in, int64_t K,     \
                                int64_t dil, int full, __m256i mlast, __m256 out[4][3]) {                  \
        __m256 a[R][NV];                                                                                   \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)                                                \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) a[r][v] = _mm256_setzero_ps();                                    \
        if (K == 1 && full) { /* 1-tap (1x1 convs, Winograd products): one flat loop, no tap loop */      \
            _Pragma("GCC unroll 2") for (int64_t ci = 0; ci < c_in; ci++, wp += QTTS_CONV_MR) {           \
                const float *xp = x + ci * ldx;                                                            \
                _mm_prefetch((const char *)(xp + PREFETCH_ROWS_1TAP * ldx), _MM_HINT_T0); /* both ends: 96 bytes */ \
                _mm_prefetch((const char *)(xp + PREFETCH_ROWS_1TAP * ldx + 8 * NV - 1), _MM_HINT_T0);     \
                __m256 xv[NV];                                                                             \
                _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) xv[v] = _mm256_loadu_ps(xp + 8 * v);  \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                      \
                    __m256 w = _mm256_broadcast_ss(wp + r);                                                \
                    _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) a[r][v] = _mm256_fmadd_ps(w, xv[v], a[r][v]); \
                }                                                                                          \
            }                                                                                              \
        } else                                                                                             \
        for (int64_t ci = 0; ci < c_in; ci++) {                                                            \
            const float *xr = x + ci * ldx;                                                                \
            for (int64_t kk = 0; kk < K; kk++, wp += QTTS_CONV_MR) {                                       \
                const float *xp = xr + kk * dil;                                                           \
                __m256 xv[NV];                                                                             \
                _Pragma("GCC unroll 3") for (int v = 0; v < NV - 1; v++) xv[v] = _mm256_loadu_ps(xp + 8 * v);                      \
                xv[NV - 1] = full ? _mm256_loadu_ps(xp + 8 * (NV - 1))                                     \
                                  : _mm256_maskload_ps(xp + 8 * (NV - 1), mlast);                          \
                _Pragma("GCC unroll 4") for (int r = 0; r < R; r++) {                                                              \
                    __m256 w = _mm256_broadcast_ss(wp + r);                                                \
                    _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) a[r][v] = _mm256_fmadd_ps(w, xv[v], a[r][v]);             \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
        _Pragma("GCC unroll 4") for (int r = 0; r < R; r++)                                                \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) out[r][v] = a[r][v];                                              \
    }

CONV_TILE_AVX2(4, 1)
CONV_TILE_AVX2(4, 2)
CONV_TILE_AVX2(4, 3)
CONV_TILE_AVX2(1, 1)
CONV_TILE_AVX2(1, 2)
CONV_TILE_AVX2(1, 3)

typedef void (*tile_avx2_fn)(const float *, const float *, int64_t, int64_t, int64_t, int64_t, int, __m256i,
                             __m256[4][3]);
static const tile_avx2_fn k_tiles[2][3] = {{tile_1x1, tile_1x2, tile_1x3}, {tile_4x1, tile_4x2, tile_4x3}};

void qtts_conv_tile_avx2(const qtts_conv *cv, const float *x, int64_t ldx, int64_t nt, int64_t rb, float *y,
                         int64_t ldy, const float *add, int64_t ldadd) {
    const float *wb = cv->w + (size_t)rb * cv->c_in * cv->k * QTTS_CONV_MR;
    for (int64_t ts = 0; ts < nt; ts += 24) {
        const int64_t n = nt - ts < 24 ? nt - ts : 24;
        const int nv = (int)((n + 7) / 8), full = n % 8 == 0;
        const __m256i mlast = tail_mask(n - 8 * (nv - 1));
        for (int h = 0; h < 2; h++) {
            const int64_t rows = cv->c_out - (rb * QTTS_CONV_MR + 4 * h);
            if (rows <= 0) break;
            __m256 acc[4][3];
            k_tiles[rows > 1][nv - 1](wb + 4 * h, x + ts, ldx, cv->c_in, cv->k, cv->dil, full, mlast, acc);
            for (int r = 0; r < 4 && r < rows; r++) {
                int64_t row = rb * QTTS_CONV_MR + 4 * h + r;
                __m256 b = _mm256_set1_ps(cv->bias[row]);
                float *yr = y + row * ldy + ts;
                const float *ar = add ? add + row * ldadd + ts : NULL;
                for (int v = 0; v < nv; v++) {
                    __m256 o = _mm256_add_ps(acc[r][v], b);
                    if (n - 8 * v >= 8) { /* plain loads and stores where the vector is whole (see above) */
                        if (ar) o = _mm256_add_ps(o, _mm256_loadu_ps(ar + 8 * v));
                        _mm256_storeu_ps(yr + 8 * v, o);
                        continue;
                    }
                    __m256i m = tail_mask(n - 8 * v);
                    if (ar) o = _mm256_add_ps(o, _mm256_maskload_ps(ar + 8 * v, m));
                    _mm256_maskstore_ps(yr + 8 * v, m, o);
                }
            }
        }
    }
}

static inline __m256 sin2_256(__m256 v) {
    __m256 q = _mm256_round_ps(_mm256_mul_ps(v, _mm256_set1_ps(QTTS_SIN_2_OVER_PI)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(q, _mm256_set1_ps(QTTS_SIN_DP1), v);
    r = _mm256_fnmadd_ps(q, _mm256_set1_ps(QTTS_SIN_DP2), r);
    r = _mm256_fnmadd_ps(q, _mm256_set1_ps(QTTS_SIN_DP3), r);
    r = _mm256_min_ps(_mm256_max_ps(r, _mm256_set1_ps(-QTTS_SIN_PI_4)), _mm256_set1_ps(QTTS_SIN_PI_4));
    __m256 z = _mm256_mul_ps(r, r);
    __m256 ps = _mm256_fmadd_ps(z, _mm256_set1_ps(QTTS_SIN_S3), _mm256_set1_ps(QTTS_SIN_S2));
    ps = _mm256_fmadd_ps(z, ps, _mm256_set1_ps(QTTS_SIN_S1));
    __m256 s = _mm256_fmadd_ps(_mm256_mul_ps(r, z), ps, r);
    __m256 pc = _mm256_fmadd_ps(z, _mm256_set1_ps(QTTS_COS_C3), _mm256_set1_ps(QTTS_COS_C2));
    pc = _mm256_fmadd_ps(z, pc, _mm256_set1_ps(QTTS_COS_C1));
    __m256 c = _mm256_fmadd_ps(_mm256_mul_ps(z, z), pc, _mm256_fnmadd_ps(_mm256_set1_ps(0.5f), z, _mm256_set1_ps(1.0f)));
    __m256 half_floor = _mm256_round_ps(_mm256_mul_ps(q, _mm256_set1_ps(0.5f)), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m256 odd = _mm256_fnmadd_ps(_mm256_set1_ps(2.0f), half_floor, q);
    __m256 is_odd = _mm256_cmp_ps(odd, _mm256_setzero_ps(), _CMP_NEQ_UQ);
    __m256 m = _mm256_blendv_ps(s, c, is_odd);
    return _mm256_mul_ps(m, m);
}

void qtts_snake_row_avx2(const float *x, float *y, int64_t n, float ea, float inv_b) {
    __m256 a = _mm256_set1_ps(ea), ib = _mm256_set1_ps(inv_b);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(ib, sin2_256(_mm256_mul_ps(a, v)), v));
    }
    if (i < n) {
        __m256i m = tail_mask(n - i);
        __m256 v = _mm256_maskload_ps(x + i, m);
        _mm256_maskstore_ps(y + i, m, _mm256_fmadd_ps(ib, sin2_256(_mm256_mul_ps(a, v)), v));
    }
}
