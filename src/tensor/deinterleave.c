/* The interleaved Q8_0/Q4_K form (interleave.c) back to GGML rows: what a
 * model file stored in the kernels' layout gives where that layout is not
 * used (another CPU, another layout version, a layout measured slower, a
 * conversion to another type). The exact inverse: the same bytes the
 * interleaving read. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/interleave.h"
#include "tensor/quant.h"

size_t qtts_x16_bytes(qtts_dtype type, int64_t rows, int64_t cols) {
    if ((type != QTTS_Q8_0 && type != QTTS_Q4_K) || rows <= 0 || rows % QTTS_INTERLEAVE || cols <= 0 ||
        cols % qtts_dtype_block_elems(type))
        return 0;
    const size_t nb = (size_t)(cols / qtts_dtype_block_elems(type));
    return nb * (type == QTTS_Q8_0 ? QTTS_Q8_0_X16_BLOCK : QTTS_Q4_K_X16_SUPER) * (size_t)(rows / QTTS_INTERLEAVE);
}

static void unpack_group_q8_0(const uint8_t *src, int64_t nb, char *dst, size_t dst_row) {
    const uint8_t *qs = src;
    const uint8_t *d = src + (size_t)nb * 512;
    for (int lane = 0; lane < QTTS_INTERLEAVE; lane++) {
        qtts_block_q8_0 *blk = (qtts_block_q8_0 *)(void *)(dst + (size_t)lane * dst_row);
        for (int64_t b = 0; b < nb; b++) {
            memcpy(&blk[b].d, d + ((size_t)b * 16 + (size_t)lane) * 2, 2);
            for (int g = 0; g < 8; g++) {
                uint32_t v;
                memcpy(&v, qs + (size_t)b * 512 + (size_t)g * 64 + (size_t)lane * 4, 4);
                v ^= 0x80808080u;
                memcpy(blk[b].qs + 4 * g, &v, 4);
            }
        }
    }
}

static void unpack_group_q4_k(const uint8_t *src, int64_t nb, char *dst, size_t dst_row) {
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *s = src + (size_t)b * QTTS_Q4_K_X16_SUPER;
        const uint8_t *sc = s + 64, *mn = s + 192, *qs = s + 320;
        for (int lane = 0; lane < QTTS_INTERLEAVE; lane++) {
            qtts_block_q4_k *blk = (qtts_block_q4_k *)(void *)(dst + (size_t)lane * dst_row) + b;
            memcpy(&blk->d, s + (size_t)lane * 2, 2);
            memcpy(&blk->dmin, s + 32 + (size_t)lane * 2, 2);
            uint8_t scj[8], mj[8];
            for (int j = 0; j < 8; j++) {
                scj[j] = sc[j * 16 + lane];
                mj[j] = mn[(j / 2) * 32 + lane * 2 + (j % 2)];
            }
            /* qtts_q4_k_scale_min's packing of eight 6-bit scales and mins into 12 bytes, inverted */
            for (int i = 0; i < 4; i++) {
                blk->scales[i] = (uint8_t)((scj[i] & 63) | ((scj[i + 4] >> 4) << 6));
                blk->scales[i + 4] = (uint8_t)((mj[i] & 63) | ((mj[i + 4] >> 4) << 6));
                blk->scales[i + 8] = (uint8_t)((scj[i + 4] & 0xF) | ((mj[i + 4] & 0xF) << 4));
            }
            for (int p = 0; p < 4; p++)
                for (int g = 0; g < 8; g++) memcpy(blk->qs + 32 * p + 4 * g, qs + p * 512 + g * 64 + lane * 4, 4);
        }
    }
}

typedef struct {
    qtts_dtype type;
    const uint8_t *src;
    char *dst;
    int64_t nb;
    size_t group_bytes, dst_row;
} unpack_job;

static void unpack_groups(void *ctx, int64_t begin, int64_t end, int tid) {
    const unpack_job *j = ctx;
    (void)tid;
    for (int64_t g = begin; g < end; g++) {
        const uint8_t *src = j->src + (size_t)g * j->group_bytes;
        char *dst = j->dst + (size_t)g * j->dst_row * QTTS_INTERLEAVE;
        if (j->type == QTTS_Q8_0) unpack_group_q8_0(src, j->nb, dst, j->dst_row);
        else unpack_group_q4_k(src, j->nb, dst, j->dst_row);
    }
}

void qtts_x16_to_rows(qtts_dtype type, const void *src, int64_t rows, int64_t cols, void *dst, qtts_pool *pool) {
    const size_t bytes = qtts_x16_bytes(type, rows, cols);
    if (!bytes) return;
    unpack_job j = {.type = type, .src = src, .dst = dst, .nb = cols / qtts_dtype_block_elems(type),
                    .group_bytes = bytes / (size_t)(rows / QTTS_INTERLEAVE),
                    .dst_row = qtts_dtype_row_bytes(type, cols)};
    qtts_parallel_for_work(pool, rows / QTTS_INTERLEAVE, 4, (double)bytes, unpack_groups, &j);
}

int qtts_mat_deinterleave_pool(qtts_mat *m, qtts_pool *pool, qtts_err *err) {
    if (!m->interleave) return 0;
    const size_t bytes = qtts_dtype_row_bytes(m->type, m->cols) * (size_t)m->rows, alloc = (bytes + 63) / 64 * 64;
    if (!qtts_x16_bytes(m->type, m->rows, m->cols))
        return qtts_fail(err, "cannot de-interleave a %s matrix of %lld rows", qtts_dtype_name(m->type),
                         (long long)m->rows);
    char *buf = aligned_alloc(64, alloc ? alloc : 64); /* whole-vector loads, as a converted matrix's */
    if (!buf) return qtts_fail(err, "out of memory de-interleaving a %zu-byte matrix", bytes);
    qtts_advise_huge(buf, alloc);
    qtts_x16_to_rows(m->type, m->data, m->rows, m->cols, buf, pool);
    free(m->owned);
    m->owned = buf;
    m->data = buf;
    m->row_bytes = qtts_dtype_row_bytes(m->type, m->cols);
    m->interleave = 0;
    m->lockstep = 0;
    return 0;
}
