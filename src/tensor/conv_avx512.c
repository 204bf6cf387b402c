/* AVX-512 tiles of the channel-major conv and SnakeBeta (built with
 * -mavx512f; only called after a cpuid check in conv.c). Scalar twins:
 * qtts_conv_tile_scalar / qtts_snake_row_ref. */
#include "tensor/x86_simd.h"

#include "tensor/conv_kernels.h"

/* R rows x NV vectors of 16 time samples; the last vector is masked to nt.
 * The packed weights always hold QTTS_CONV_MR rows per step; R < MR serves
 * row blocks with few valid rows (small-M products, single-output convs). */
#define CONV_TILE_512(R, NV)                                                                               \
    static void tile512_##R##_##NV(const float *wb, const float *x, int64_t ldx, int64_t c_in, int64_t K,  \
                                   int64_t dil, __mmask16 mlast, __m512 out[QTTS_CONV_MR][3]) {            \
        __m512 a[R][NV];                                                                                   \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                                \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) a[r][v] = _mm512_setzero_ps();            \
        const float *wp = wb;                                                                              \
        for (int64_t ci = 0; ci < c_in; ci++) {                                                            \
            const float *xr = x + ci * ldx;                                                                \
            for (int64_t kk = 0; kk < K; kk++, wp += QTTS_CONV_MR) {                                       \
                const float *xp = xr + kk * dil;                                                           \
                __m512 xv[NV];                                                                             \
                _Pragma("GCC unroll 3") for (int v = 0; v < NV - 1; v++) xv[v] = _mm512_loadu_ps(xp + 16 * v); \
                xv[NV - 1] = _mm512_maskz_loadu_ps(mlast, xp + 16 * (NV - 1));                             \
                _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                      \
                    __m512 w = _mm512_set1_ps(wp[r]);                                                      \
                    _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) a[r][v] =                         \
                        _mm512_fmadd_ps(w, xv[v], a[r][v]);                                                \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                                \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) out[r][v] = a[r][v];                      \
    }

CONV_TILE_512(8, 1)
CONV_TILE_512(8, 2)
CONV_TILE_512(8, 3)
CONV_TILE_512(4, 1)
CONV_TILE_512(4, 2)
CONV_TILE_512(4, 3)
CONV_TILE_512(1, 1)
CONV_TILE_512(1, 2)
CONV_TILE_512(1, 3)

typedef void (*tile512_fn)(const float *, const float *, int64_t, int64_t, int64_t, int64_t, __mmask16,
                           __m512[QTTS_CONV_MR][3]);
static const tile512_fn k_tiles[3][3] = {
    {tile512_1_1, tile512_1_2, tile512_1_3},
    {tile512_4_1, tile512_4_2, tile512_4_3},
    {tile512_8_1, tile512_8_2, tile512_8_3},
};

/* A tile's geometry: nv vectors of 16 samples (the last masked by mlast),
 * rows valid output rows, kind = which row-count variant (1, 4 or 8 rows). */
typedef struct {
    int nv, kind;
    __mmask16 mlast;
    int64_t rows;
} tile_shape;

static inline tile_shape shape_of(const qtts_conv *cv, int64_t nt, int64_t rb) {
    tile_shape sh;
    sh.nv = (int)((nt + 15) / 16);
    int rem = (int)(nt - 16 * (sh.nv - 1));
    sh.mlast = (__mmask16)(rem >= 16 ? 0xFFFF : (1u << rem) - 1u);
    sh.rows = cv->c_out - rb * QTTS_CONV_MR;
    if (sh.rows > QTTS_CONV_MR) sh.rows = QTTS_CONV_MR;
    sh.kind = sh.rows > 4 ? 2 : sh.rows > 1 ? 1 : 0;
    return sh;
}

/* bias (+ residual) and the masked store of a finished tile */
static inline void tile_store(const qtts_conv *cv, int64_t rb, int64_t rows, int nv, __mmask16 mlast,
                              __m512 acc[QTTS_CONV_MR][3], float *y, int64_t ldy, const float *add, int64_t ldadd) {
    for (int r = 0; r < rows; r++) {
        int64_t row = rb * QTTS_CONV_MR + r;
        __m512 b = _mm512_set1_ps(cv->bias[row]);
        float *yr = y + row * ldy;
        const float *ar = add ? add + row * ldadd : NULL;
        for (int v = 0; v < nv; v++) {
            __mmask16 m = v == nv - 1 ? mlast : (__mmask16)0xFFFF;
            __m512 o = _mm512_add_ps(acc[r][v], b);
            if (ar) o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(m, ar + 16 * v));
            _mm512_mask_storeu_ps(yr + 16 * v, m, o);
        }
    }
}

/* bf16 pairs: the same tile with vdpbf16ps, two input channels per step. */
#define CONV_TILE_BF16(R, NV)                                                                              \
    static void tilebf_##R##_##NV(const uint32_t *wb, const uint32_t *x, int64_t ldx, int64_t c2n,         \
                                  int64_t K, int64_t dil, __mmask16 mlast, __m512 out[QTTS_CONV_MR][3]) {  \
        __m512 a[R][NV];                                                                                   \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                                \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) a[r][v] = _mm512_setzero_ps();            \
        const uint32_t *wp = wb;                                                                           \
        for (int64_t c2 = 0; c2 < c2n; c2++) {                                                             \
            const uint32_t *xr = x + c2 * ldx;                                                             \
            for (int64_t kk = 0; kk < K; kk++, wp += QTTS_CONV_MR) {                                       \
                const uint32_t *xp = xr + kk * dil;                                                        \
                __m512bh xv[NV];                                                                           \
                _Pragma("GCC unroll 3") for (int v = 0; v < NV - 1; v++) xv[v] =                           \
                    (__m512bh)_mm512_loadu_si512(xp + 16 * v);                                             \
                xv[NV - 1] = (__m512bh)_mm512_maskz_loadu_epi32(mlast, xp + 16 * (NV - 1));                \
                _Pragma("GCC unroll 8") for (int r = 0; r < R; r++) {                                      \
                    __m512bh w = (__m512bh)_mm512_set1_epi32((int)wp[r]);                                  \
                    _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) a[r][v] =                         \
                        _mm512_dpbf16_ps(a[r][v], w, xv[v]);                                               \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
        _Pragma("GCC unroll 8") for (int r = 0; r < R; r++)                                                \
            _Pragma("GCC unroll 3") for (int v = 0; v < NV; v++) out[r][v] = a[r][v];                      \
    }

CONV_TILE_BF16(8, 1)
CONV_TILE_BF16(8, 2)
CONV_TILE_BF16(8, 3)
CONV_TILE_BF16(4, 1)
CONV_TILE_BF16(4, 2)
CONV_TILE_BF16(4, 3)
CONV_TILE_BF16(1, 1)
CONV_TILE_BF16(1, 2)
CONV_TILE_BF16(1, 3)

typedef void (*tilebf_fn)(const uint32_t *, const uint32_t *, int64_t, int64_t, int64_t, int64_t, __mmask16,
                          __m512[QTTS_CONV_MR][3]);
static const tilebf_fn k_tiles_bf16[3][3] = {
    {tilebf_1_1, tilebf_1_2, tilebf_1_3},
    {tilebf_4_1, tilebf_4_2, tilebf_4_3},
    {tilebf_8_1, tilebf_8_2, tilebf_8_3},
};

void qtts_conv_tile_bf16_avx512(const qtts_conv *cv, const uint32_t *x, int64_t ldx, int64_t nt, int64_t rb,
                                float *y, int64_t ldy, const float *add, int64_t ldadd) {
    const int64_t c2n = (cv->c_in + 1) / 2;
    const uint32_t *wb = cv->wbf + (size_t)rb * c2n * cv->k * QTTS_CONV_MR;
    tile_shape sh = shape_of(cv, nt, rb);
    __m512 acc[QTTS_CONV_MR][3];
    k_tiles_bf16[sh.kind][sh.nv - 1](wb, x, ldx, c2n, cv->k, cv->dil, sh.mlast, acc);
    tile_store(cv, rb, sh.rows, sh.nv, sh.mlast, acc, y, ldy, add, ldadd);
}

void qtts_bf16_pairs_row_avx512(const float *x0, const float *x1, uint32_t *pairs, int64_t n) {
    int64_t t = 0;
    for (; t < n; t += 16) {
        __mmask16 m = n - t >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - t)) - 1u);
        __m256i lo = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x0 + t));
        __m512i v = _mm512_cvtepu16_epi32(lo);
        if (x1) {
            __m256i hi = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x1 + t));
            v = _mm512_or_si512(v, _mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16));
        }
        _mm512_mask_storeu_epi32(pairs + t, m, v);
    }
}

void qtts_conv_tile_avx512(const qtts_conv *cv, const float *x, int64_t ldx, int64_t nt, int64_t rb, float *y,
                           int64_t ldy, const float *add, int64_t ldadd) {
    const float *wb = cv->w + (size_t)rb * cv->c_in * cv->k * QTTS_CONV_MR;
    tile_shape sh = shape_of(cv, nt, rb);
    __m512 acc[QTTS_CONV_MR][3];
    k_tiles[sh.kind][sh.nv - 1](wb, x, ldx, cv->c_in, cv->k, cv->dil, sh.mlast, acc);
    tile_store(cv, rb, sh.rows, sh.nv, sh.mlast, acc, y, ldy, add, ldadd);
}

static inline __m512 sin2_512(__m512 v) {
    __m512 q = _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(QTTS_SIN_2_OVER_PI)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(q, _mm512_set1_ps(QTTS_SIN_DP1), v);
    r = _mm512_fnmadd_ps(q, _mm512_set1_ps(QTTS_SIN_DP2), r);
    r = _mm512_fnmadd_ps(q, _mm512_set1_ps(QTTS_SIN_DP3), r);
    r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-QTTS_SIN_PI_4)), _mm512_set1_ps(QTTS_SIN_PI_4));
    __m512 z = _mm512_mul_ps(r, r);
    __m512 ps = _mm512_fmadd_ps(z, _mm512_set1_ps(QTTS_SIN_S3), _mm512_set1_ps(QTTS_SIN_S2));
    ps = _mm512_fmadd_ps(z, ps, _mm512_set1_ps(QTTS_SIN_S1));
    __m512 s = _mm512_fmadd_ps(_mm512_mul_ps(r, z), ps, r);
    __m512 pc = _mm512_fmadd_ps(z, _mm512_set1_ps(QTTS_COS_C3), _mm512_set1_ps(QTTS_COS_C2));
    pc = _mm512_fmadd_ps(z, pc, _mm512_set1_ps(QTTS_COS_C1));
    __m512 c = _mm512_fmadd_ps(_mm512_mul_ps(z, z), pc, _mm512_fnmadd_ps(_mm512_set1_ps(0.5f), z, _mm512_set1_ps(1.0f)));
    __m512 half_floor = _mm512_roundscale_ps(_mm512_mul_ps(q, _mm512_set1_ps(0.5f)),
                                             _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 odd = _mm512_fnmadd_ps(_mm512_set1_ps(2.0f), half_floor, q);
    __mmask16 is_odd = _mm512_cmp_ps_mask(odd, _mm512_setzero_ps(), _CMP_NEQ_UQ);
    __m512 m = _mm512_mask_blend_ps(is_odd, s, c);
    return _mm512_mul_ps(m, m);
}

void qtts_snake_row_avx512(const float *x, float *y, int64_t n, float ea, float inv_b) {
    __m512 a = _mm512_set1_ps(ea), ib = _mm512_set1_ps(inv_b);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(ib, sin2_512(_mm512_mul_ps(a, v)), v));
    }
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(ib, sin2_512(_mm512_mul_ps(a, v)), v));
    }
}
