/* Load-time repacking of Q8_0 / Q4_K weight matrices for the x86 (AVX-512
 * VNNI and AVX2) matrix-vector kernels.
 *
 * Why: with one GGML block per row, every 32 or 256 weights pay a fixed
 * cost (scale decode, scale broadcasts, horizontal bookkeeping) that makes
 * batch-1 matvec instruction-bound, below the memory's rate. Interleaving 16
 * rows puts one row in each 32-bit lane: a single vpdpbusd (AVX-512 VNNI:
 * 16 rows, one register) or vpmaddubsw (AVX2: 8 rows, each half of a group
 * in one register) against a broadcast 4-byte slice of x advances every row
 * by 4 weights, and the per-row scales become plain vectors. On AVX2 the Q4_K
 * kernel also sums a sub-block's 8 quads in int16 before one vpmaddwd
 * applies the scales: about half the instructions of the row kernel. The
 * integer values and scales are the GGML ones, unchanged; only their order
 * differs (the scalar twin in linear.c reads the same bytes through
 * qtts_mat_row_f32).
 *
 * Layout of a group of 16 rows (g = group, lane = row within the group):
 *
 * Q8_0, nb = cols/32 blocks:
 *   qs [nb][8 quads][16 lanes][4]  int8 weight XOR 0x80 (unsigned operand)
 *   d  [nb][16 lanes]              f16
 *   -> 544 bytes per block of 16 rows (34 per row, as GGML)
 * Q4_K, nb = cols/256 super-blocks, each 2368 bytes (148 per row):
 *   d    [16] f16, dmin [16] f16
 *   sc   [8 sub][16 lanes]      u8 (6-bit)
 *   m    [4 pairs][16 lanes][2] u8 (mins of sub 2p and 2p+1, side by side)
 *   qs   [4 pairs][8 quads][16 lanes][4] u8: low nibble = sub 2p, value
 *        4*quad+byte; high nibble = sub 2p+1, same position.
 *
 * row_bytes keeps its meaning on average (group bytes / 16), so a view of
 * rows [r, r+k) with r and k multiples of 16 is data + r*row_bytes, and
 * stacking matrices (model/lm.c) works unchanged. */
#ifndef QTTS_TENSOR_INTERLEAVE_H
#define QTTS_TENSOR_INTERLEAVE_H

#include "core/err.h"
#include "core/threadpool.h"
#include "tensor/tensor.h"

enum { QTTS_INTERLEAVE = 16, QTTS_Q4_K_X16_SUPER = 2368, QTTS_Q8_0_X16_BLOCK = 544 };

/* How matrices of one type (Q8_0 or Q4_K) are stored and read: the engine
 * loader decides it from its measurement (interleave_calibrate.h) or from
 * the QTTS_INTERLEAVE / QTTS_PREFETCH / QTTS_LOCKSTEP overrides it reads
 * once, and passes it down; the kernels never decide. */
typedef struct qtts_interleave_choice {
    int interleave; /* the interleaved layout (where the matrix allows it) */
    int prefetch;   /* AVX2: the kernel prefetches its weights */
    int lockstep;   /* AVX2, interleaved: one token's two groups read line by line in step */
} qtts_interleave_choice;
typedef struct qtts_weight_layout {
    qtts_interleave_choice q8_0, q4_k;
} qtts_weight_layout;

/* layout's choice for type (NULL layout or another type: GGML rows, no flags). */
const qtts_interleave_choice *qtts_weight_layout_for(const qtts_weight_layout *layout, qtts_dtype type);

/* Repacks m in place (new owned storage; the old owned storage is freed, a
 * view's mapping is left alone) when layout says so for m's type and m can
 * be: Q8_0/Q4_K, rows % 16 == 0, row-major, an x86 kernel family (AVX-512
 * or AVX2) selected. Sets m->prefetch and m->lockstep from the choice where
 * the selected kernels have them (AVX2). NULL layout: rows, no flags. */
int qtts_mat_interleave(qtts_mat *m, const qtts_weight_layout *layout, qtts_err *err);
/* The same, repacking on pool's threads (its owner calls; NULL: this thread). */
int qtts_mat_interleave_pool(qtts_mat *m, const qtts_weight_layout *layout, qtts_pool *pool, qtts_err *err);

/* Whether the selected kernel family reads interleaved matrices (AVX-512 or
 * AVX2; elsewhere they would take the scalar path, so they are never made). */
int qtts_interleave_kernels(void);

/* The same repacking, unconditional (for tests): m must be Q8_0/Q4_K,
 * row-major, rows % 16 == 0. */
int qtts_mat_interleave_force(qtts_mat *m, qtts_err *err);
int qtts_mat_interleave_force_pool(qtts_mat *m, qtts_pool *pool, qtts_err *err);
/* Where the layout interleaves every one of parts[0..n) (one type and
 * width), repacks them back to back into one new buffer: the bytes and
 * flags qtts_mat_interleave_pool would give each, stacked (model/lm.c's
 * q|k|v) without a second copy. *out then owns the buffer and each part is
 * a view into it. Otherwise (*out zeroed) nothing changes. -1 on OOM. */
int qtts_mats_interleave_stacked(qtts_mat *out, qtts_mat **parts, int n, const qtts_weight_layout *layout,
                                 qtts_pool *pool, qtts_err *err);

/* Row r of m as f32, whatever its type and layout. */
void qtts_mat_row_f32(const qtts_mat *m, int64_t r, float *out);
/* Bytes of rows x cols of type (Q8_0/Q4_K) in the interleaved form; 0 where
 * such a matrix cannot be interleaved (another type, rows % 16, part blocks). */
size_t qtts_x16_bytes(qtts_dtype type, int64_t rows, int64_t cols);
/* The interleaved form at src back to GGML rows at dst (rows x row bytes),
 * the exact bytes the interleaving read; on pool's threads (NULL: this one). */
void qtts_x16_to_rows(qtts_dtype type, const void *src, int64_t rows, int64_t cols, void *dst, qtts_pool *pool);
/* An interleaved m back to GGML rows in its own memory (no-op for rows). */
int qtts_mat_deinterleave_pool(qtts_mat *m, qtts_pool *pool, qtts_err *err);

/* Row r of m in the GGML block layout (qtts_dtype_row_bytes(m->type,
 * m->cols) bytes to out), whatever its layout: the interleaved one is undone
 * bit for bit (a GPU upload reads the rows one at a time, so no second copy
 * of the matrix is made). */
void qtts_mat_row_ggml(const qtts_mat *m, int64_t r, void *out);

#endif
