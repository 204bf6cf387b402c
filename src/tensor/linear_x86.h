/* Helpers shared by linear_avx2.c and linear_avx512.c (both compiled with
 * AVX2): the ISA-independent scalar/SSE helpers and the row-tiling driver
 * that turns a file's per-ISA tiles into row kernels. Not to be included
 * from files built without ISA flags. */
#ifndef QTTS_TENSOR_LINEAR_X86_H
#define QTTS_TENSOR_LINEAR_X86_H

#include <immintrin.h>
#include <stdint.h>

#include "tensor/linear_impl.h"

#define INLINE static inline __attribute__((always_inline))

/* Row r of a row-major weight matrix. */
INLINE const void *w_row(const qtts_mat *w, int64_t r) { return (const char *)w->data + (size_t)r * w->row_bytes; }

INLINE float hsum4(__m128 s) {
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

INLINE float f16_to_f32(uint16_t h) { return _cvtsh_ss(h); }

/* The Q4_K 12-byte scale field (s points at it inside a block) unpacked to
 * 16 bytes: scales 0-7, then mins 0-7, all 0..63. Reads 16 bytes (the last 4
 * belong to the block's nibbles), all in registers. */
INLINE __m128i qtts_q4k_scales_vec(const uint8_t *s) {
    const __m128i v = _mm_loadu_si128((const __m128i *)s);            /* dwords A B C . */
    const __m128i t1 = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0)); /* A C B C */
    const __m128i t2 = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0)); /* A A B B */
    const __m128i lo = _mm_and_si128(_mm_srlv_epi32(t1, _mm_set_epi32(4, 0, 0, 0)),
                                     _mm_set_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f));
    /* top two bits of A (scales) / B (mins) become bits 4-5 of entries 4-7 */
    const __m128i hi = _mm_and_si128(_mm_srli_epi32(t2, 2), _mm_set_epi32(0x30303030, 0, 0x30303030, 0));
    return _mm_or_si128(lo, hi);
}

/* The Q4_K mins term of block b for token t: acc + (mins . bsum) * s, in 4
 * lanes (m16: the block's 8 mins as int16; s = dmin * the token's scale). */
INLINE __m128 qtts_q4k_mins_fma(const qtts_act *a, int64_t t, int64_t b, __m128i m16, float s, __m128 acc) {
    const __m128i bs = _mm_loadu_si128((const __m128i *)(a->bsum + t * a->nsub + 8 * b));
    return _mm_fmadd_ps(_mm_cvtepi32_ps(_mm_madd_epi16(m16, bs)), _mm_set1_ps(s), acc);
}

/* Placeholder for kernels without a multi-row tile (never called: mr = 1). */
INLINE void no_tile_rows(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt, float *out) {
    (void)w, (void)a, (void)r, (void)t0, (void)nt, (void)out;
}

/* A tile fn(w, a, r, t0, nt, out) computes row r (or rows r..r+mr-1, out
 * [rr * QTTS_TILE_TOKENS + t]) for tokens t0..t0+nt-1; nt is made a
 * constant so each size gets its own fully unrolled copy. */
#define NT_SWITCH(fn)                                                                                      \
    switch (nt) {                                                                                          \
    case 1: fn(w, a, r, t0, 1, out); break;                                                                \
    case 2: fn(w, a, r, t0, 2, out); break;                                                                \
    case 3: fn(w, a, r, t0, 3, out); break;                                                                \
    default: fn(w, a, r, t0, 4, out); break;                                                               \
    }

/* Rows [r0, r1) in blocks of QTTS_TILE_ROWS; within a block, token tiles of
 * up to 4 so the block's weights stay in cache while all tokens pass. tile
 * handles one row; tile_rows mr rows at once (mr = 1: tile only). */
#define DEFINE_ROWS_MR(name, tile, tile_rows, mr)                                                          \
    static void name(const qtts_mat *w, const qtts_act *a, const float *bias, float *y, int64_t r0,       \
                     int64_t r1) {                                                                         \
        for (int64_t rb = r0; rb < r1; rb += QTTS_TILE_ROWS) {                                             \
            int64_t re = rb + QTTS_TILE_ROWS < r1 ? rb + QTTS_TILE_ROWS : r1;                              \
            for (int64_t t0 = 0; t0 < a->n; t0 += QTTS_TILE_TOKENS) {                                      \
                int nt = a->n - t0 < QTTS_TILE_TOKENS ? (int)(a->n - t0) : QTTS_TILE_TOKENS;               \
                int64_t r = rb;                                                                            \
                for (; (mr) > 1 && r + (mr) <= re; r += (mr)) {                                            \
                    float out[(mr) * QTTS_TILE_TOKENS];                                                    \
                    NT_SWITCH(tile_rows)                                                                   \
                    for (int rr = 0; rr < (mr); rr++) {                                                    \
                        float bv = bias ? bias[r + rr] : 0.0f;                                             \
                        for (int t = 0; t < nt; t++)                                                       \
                            y[(t0 + t) * w->rows + r + rr] = out[rr * QTTS_TILE_TOKENS + t] + bv;          \
                    }                                                                                      \
                }                                                                                          \
                for (; r < re; r++) {                                                                      \
                    float out[QTTS_TILE_TOKENS];                                                           \
                    NT_SWITCH(tile)                                                                        \
                    float bv = bias ? bias[r] : 0.0f;                                                      \
                    for (int t = 0; t < nt; t++) y[(t0 + t) * w->rows + r] = out[t] + bv;                  \
                }                                                                                          \
            }                                                                                              \
        }                                                                                                  \
    }

/* Row kernel `name` for a float-like weight type (F32/F16/BF16), built from
 * the including file's dense_tile(..., type) and dense_tile_rows(..., type)
 * (DENSE_ROWS rows at once). */
#define DEFINE_DENSE_ROWS(name, type)                                                                      \
    INLINE void name##_tile(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt,           \
                            float *out) {                                                                  \
        dense_tile(w, a, r, t0, nt, out, type);                                                            \
    }                                                                                                      \
    INLINE void name##_tile_rows(const qtts_mat *w, const qtts_act *a, int64_t r, int64_t t0, int nt,      \
                                 float *out) {                                                             \
        dense_tile_rows(w, a, r, t0, nt, out, type);                                                       \
    }                                                                                                      \
    DEFINE_ROWS_MR(name, name##_tile, name##_tile_rows, DENSE_ROWS)

/* The row kernels every x86 family has: rows_f32, rows_f16, rows_bf16 (from
 * dense_tile / dense_tile_rows), rows_q8_0 and rows_q4_k (from q8_0_tile and
 * q4_k_tile, one row at a time), all defined by the including file. */
#define DEFINE_X86_ROWS()                                                                                  \
    DEFINE_DENSE_ROWS(rows_f32, QTTS_F32)                                                                  \
    DEFINE_DENSE_ROWS(rows_f16, QTTS_F16)                                                                  \
    DEFINE_DENSE_ROWS(rows_bf16, QTTS_BF16)                                                                \
    DEFINE_ROWS_MR(rows_q8_0, q8_0_tile, no_tile_rows, 1)                                                  \
    DEFINE_ROWS_MR(rows_q4_k, q4_k_tile, no_tile_rows, 1)

#endif
