/* The ISA-independent half of the per-ISA dense-layer files (linear_avx2.c,
 * linear_avx512.c, linear_neon.c, linear_neon_dotprod.c): the row-tiling
 * driver that turns a file's tiles into row kernels. Plain C; each including
 * file supplies the tiles. */
#ifndef QTTS_TENSOR_LINEAR_ROWS_H
#define QTTS_TENSOR_LINEAR_ROWS_H

#include <stdint.h>

#include "tensor/linear_impl.h"

#define INLINE static inline __attribute__((always_inline))

/* Row r of a row-major weight matrix. */
INLINE const void *w_row(const qtts_mat *w, int64_t r) { return (const char *)w->data + (size_t)r * w->row_bytes; }

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

/* The same for the interleaved-layout tiles fn(grp, a, t0, nt, acc) of a
 * 16-row group (x86 files). */
#define X16_NT_SWITCH(fn)                                                                                  \
    switch (nt) {                                                                                          \
    case 1: fn(grp, a, t0, 1, acc); break;                                                                 \
    case 2: fn(grp, a, t0, 2, acc); break;                                                                 \
    case 3: fn(grp, a, t0, 3, acc); break;                                                                 \
    default: fn(grp, a, t0, 4, acc); break;                                                                \
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

/* The row kernels every SIMD family has: rows_f32, rows_f16, rows_bf16 (from
 * dense_tile / dense_tile_rows), rows_q8_0 and rows_q4_k (from q8_0_tile and
 * q4_k_tile, one row at a time), all defined by the including file. */
#define DEFINE_STANDARD_ROWS()                                                                             \
    DEFINE_DENSE_ROWS(rows_f32, QTTS_F32)                                                                  \
    DEFINE_DENSE_ROWS(rows_f16, QTTS_F16)                                                                  \
    DEFINE_DENSE_ROWS(rows_bf16, QTTS_BF16)                                                                \
    DEFINE_ROWS_MR(rows_q8_0, q8_0_tile, no_tile_rows, 1)                                                  \
    DEFINE_ROWS_MR(rows_q4_k, q4_k_tile, no_tile_rows, 1)

#endif
