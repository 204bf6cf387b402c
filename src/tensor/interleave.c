#include "tensor/interleave.h"

#include <stdlib.h>
#include <string.h>

#include "tensor/cpu.h"
#include "tensor/quant.h"

int qtts_interleave_kernels(void) { return qtts_cpu_isa() == QTTS_ISA_AVX512 || qtts_cpu_isa() == QTTS_ISA_AVX2; }

/* Q8_0/Q4_K, rows % 16 == 0, row-major, an x86 kernel family selected,
 * and the loader's choice for the type says so. */
static int can_interleave(const qtts_mat *m, const qtts_interleave_choice *c) {
    if (m->interleave || m->rows <= 0 || m->rows % QTTS_INTERLEAVE) return 0;
    if (m->type != QTTS_Q8_0 && m->type != QTTS_Q4_K) return 0;
    return qtts_interleave_kernels() && c->interleave;
}

static void pack_group_q8_0(const char *src, size_t src_row, int64_t nb, uint8_t *dst) {
    uint8_t *qs = dst;
    uint16_t *d = (uint16_t *)(dst + (size_t)nb * 512);
    for (int lane = 0; lane < QTTS_INTERLEAVE; lane++) {
        const qtts_block_q8_0 *blk = (const qtts_block_q8_0 *)(src + (size_t)lane * src_row);
        for (int64_t b = 0; b < nb; b++) {
            d[b * 16 + lane] = blk[b].d;
            for (int g = 0; g < 8; g++) { /* 4 values, sign bit flipped, to the lane's 4 bytes of the group */
                uint32_t v;
                memcpy(&v, blk[b].qs + 4 * g, 4);
                v ^= 0x80808080u;
                memcpy(qs + (size_t)b * 512 + (size_t)g * 64 + (size_t)lane * 4, &v, 4);
            }
        }
    }
}

static void pack_group_q4_k(const char *src, size_t src_row, int64_t nb, uint8_t *dst) {
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *s = dst + (size_t)b * QTTS_Q4_K_X16_SUPER;
        uint16_t *d = (uint16_t *)s, *dmin = (uint16_t *)(s + 32);
        uint8_t *sc = s + 64, *mn = s + 192, *qs = s + 320;
        for (int lane = 0; lane < QTTS_INTERLEAVE; lane++) {
            const qtts_block_q4_k *blk = (const qtts_block_q4_k *)(src + (size_t)lane * src_row) + b;
            d[lane] = blk->d;
            dmin[lane] = blk->dmin;
            for (int j = 0; j < 8; j++) {
                uint8_t scj, mj;
                qtts_q4_k_scale_min(j, blk->scales, &scj, &mj);
                sc[j * 16 + lane] = scj;
                mn[(j / 2) * 32 + lane * 2 + (j % 2)] = mj;
            }
            /* GGML keeps sub-blocks 2p and 2p+1 as the low and high nibbles of
             * qs[32p + i], which is the interleaved byte as it stands: 4 bytes
             * at a time to the lane's 4 bytes of each group */
            for (int p = 0; p < 4; p++)
                for (int g = 0; g < 8; g++) memcpy(qs + p * 512 + g * 64 + lane * 4, blk->qs + 32 * p + 4 * g, 4);
        }
    }
}

/* Groups [begin, end) of a repacking. */
typedef struct {
    const qtts_mat *m;
    uint8_t *buf;
    int64_t nb;
    size_t row_bytes;
} repack_job;

static void repack_groups(void *ctx, int64_t begin, int64_t end, int tid) {
    const repack_job *j = ctx;
    (void)tid;
    for (int64_t g = begin; g < end; g++) {
        const char *src = (const char *)j->m->data + (size_t)g * j->m->row_bytes * QTTS_INTERLEAVE;
        uint8_t *dst = j->buf + (size_t)g * j->row_bytes * QTTS_INTERLEAVE;
        if (j->m->type == QTTS_Q8_0) pack_group_q8_0(src, j->m->row_bytes, j->nb, dst);
        else pack_group_q4_k(src, j->m->row_bytes, j->nb, dst);
    }
}

int qtts_mat_interleave_force(qtts_mat *m, qtts_err *err) { return qtts_mat_interleave_force_pool(m, NULL, err); }

/* Bytes per row of m interleaved. */
static size_t x16_row_bytes(const qtts_mat *m) {
    const int64_t nb = m->cols / qtts_dtype_block_elems(m->type);
    return (size_t)nb * (m->type == QTTS_Q8_0 ? QTTS_Q8_0_X16_BLOCK : QTTS_Q4_K_X16_SUPER) / 16;
}

/* m's rows interleaved into dst (x16_row_bytes(m) * rows bytes); m then reads them there. */
static void repack_into(qtts_mat *m, uint8_t *dst, qtts_pool *pool) {
    const size_t row_bytes = x16_row_bytes(m);
    repack_job j = {.m = m, .buf = dst, .nb = m->cols / qtts_dtype_block_elems(m->type), .row_bytes = row_bytes};
    /* a memory shuffle: as much work per byte as a matrix-vector product reading it */
    qtts_parallel_for_work(pool, m->rows / QTTS_INTERLEAVE, 4, (double)(row_bytes * (size_t)m->rows), repack_groups,
                           &j);
    m->row_bytes = row_bytes;
    free(m->owned);
    m->owned = NULL;
    m->data = dst;
    m->interleave = QTTS_INTERLEAVE;
}

int qtts_mat_interleave_force_pool(qtts_mat *m, qtts_pool *pool, qtts_err *err) {
    if ((m->type != QTTS_Q8_0 && m->type != QTTS_Q4_K) || m->interleave || m->rows % QTTS_INTERLEAVE)
        return qtts_fail(err, "cannot interleave a %s matrix of %lld rows", qtts_dtype_name(m->type),
                         (long long)m->rows);
    const size_t bytes = x16_row_bytes(m) * (size_t)m->rows, alloc = (bytes + 63) / 64 * 64;
    uint8_t *buf = aligned_alloc(64, alloc ? alloc : 64);
    if (!buf) return qtts_fail(err, "out of memory repacking a %zu-byte matrix", bytes);
    qtts_advise_huge(buf, alloc);
    repack_into(m, buf, pool);
    m->owned = buf;
    return 0;
}

/* The kernel flags qtts_mat_interleave_pool gives m. */
static void set_flags(qtts_mat *m, const qtts_interleave_choice *c) {
    /* only the AVX2 kernels of both layouts prefetch; lockstep is for interleaved ones */
    const int avx2 = qtts_cpu_isa() == QTTS_ISA_AVX2 && (m->type == QTTS_Q8_0 || m->type == QTTS_Q4_K);
    m->prefetch = avx2 && c->prefetch;
    m->lockstep = avx2 && m->interleave && c->lockstep;
}

int qtts_mats_interleave_stacked(qtts_mat *out, qtts_mat **parts, int n, const qtts_weight_layout *layout,
                                 qtts_pool *pool, qtts_err *err) {
    memset(out, 0, sizeof *out);
    if (n < 1) return 0;
    const qtts_interleave_choice *c = qtts_weight_layout_for(layout, parts[0]->type);
    size_t bytes = 0;
    int64_t rows = 0;
    for (int i = 0; i < n; i++) {
        if (!can_interleave(parts[i], c) || parts[i]->type != parts[0]->type || parts[i]->cols != parts[0]->cols)
            return 0;
        bytes += x16_row_bytes(parts[i]) * (size_t)parts[i]->rows;
        rows += parts[i]->rows;
    }
    const size_t alloc = (bytes + 63) / 64 * 64;
    uint8_t *buf = aligned_alloc(64, alloc ? alloc : 64);
    if (!buf) return qtts_fail(err, "out of memory repacking %lld weight rows", (long long)rows);
    qtts_advise_huge(buf, alloc);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        repack_into(parts[i], buf + off, pool);
        set_flags(parts[i], c);
        off += parts[i]->row_bytes * (size_t)parts[i]->rows;
    }
    *out = (qtts_mat){.type = parts[0]->type, .rows = rows, .cols = parts[0]->cols, .row_bytes = parts[0]->row_bytes,
                      .data = buf, .owned = buf, .interleave = QTTS_INTERLEAVE, .prefetch = parts[0]->prefetch,
                      .lockstep = parts[0]->lockstep};
    return 0;
}

const qtts_interleave_choice *qtts_weight_layout_for(const qtts_weight_layout *layout, qtts_dtype type) {
    static const qtts_interleave_choice rows = {0, 0, 0};
    if (!layout) return &rows;
    return type == QTTS_Q8_0 ? &layout->q8_0 : type == QTTS_Q4_K ? &layout->q4_k : &rows;
}

int qtts_mat_interleave(qtts_mat *m, const qtts_weight_layout *layout, qtts_err *err) {
    return qtts_mat_interleave_pool(m, layout, NULL, err);
}

int qtts_mat_interleave_pool(qtts_mat *m, const qtts_weight_layout *layout, qtts_pool *pool, qtts_err *err) {
    const qtts_interleave_choice *c = qtts_weight_layout_for(layout, m->type);
    if (can_interleave(m, c) && qtts_mat_interleave_force_pool(m, pool, err)) return -1;
    set_flags(m, c);
    return 0;
}

void qtts_mat_row_f32(const qtts_mat *m, int64_t r, float *out) {
    if (!m->interleave) {
        qtts_dequantize_row(m->type, (const char *)m->data + (size_t)r * m->row_bytes, out, m->cols);
        return;
    }
    const int64_t nb = m->cols / qtts_dtype_block_elems(m->type);
    const uint8_t *grp = (const uint8_t *)m->data + (size_t)(r / QTTS_INTERLEAVE) * m->row_bytes * QTTS_INTERLEAVE;
    const int lane = (int)(r % QTTS_INTERLEAVE);
    if (m->type == QTTS_Q8_0) {
        const uint16_t *d = (const uint16_t *)(grp + (size_t)nb * 512);
        for (int64_t b = 0; b < nb; b++) {
            float s = qtts_f16_to_f32(d[b * 16 + lane]);
            for (int i = 0; i < 32; i++) {
                uint8_t u = grp[(size_t)b * 512 + (size_t)(i / 4) * 64 + (size_t)lane * 4 + (size_t)(i % 4)];
                out[b * 32 + i] = s * (float)(int8_t)(u ^ 0x80u);
            }
        }
        return;
    }
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *s = grp + (size_t)b * QTTS_Q4_K_X16_SUPER;
        const float d = qtts_f16_to_f32(((const uint16_t *)s)[lane]);
        const float dmin = qtts_f16_to_f32(((const uint16_t *)(s + 32))[lane]);
        for (int j = 0; j < 8; j++) {
            const float scale = d * (float)s[64 + j * 16 + lane];
            const float min = dmin * (float)s[192 + (j / 2) * 32 + lane * 2 + j % 2];
            for (int i = 0; i < 32; i++) {
                uint8_t byte = s[320 + (j / 2) * 512 + (i / 4) * 64 + lane * 4 + i % 4];
                int q = j % 2 ? byte >> 4 : byte & 0xF;
                out[b * 256 + j * 32 + i] = scale * (float)q - min;
            }
        }
    }
}

/* The inverse of qtts_q4_k_scale_min over all 8 sub-blocks: GGML's 12-byte
 * packing of 8 6-bit scales and 8 6-bit mins (every bit used, so exact). */
static void q4_k_pack_scales(const uint8_t sc[8], const uint8_t mn[8], uint8_t q[12]) {
    for (int j = 0; j < 4; j++) {
        q[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        q[j + 4] = (uint8_t)((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
        q[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
    }
}

void qtts_mat_row_ggml(const qtts_mat *m, int64_t r, void *out) {
    if (!m->interleave) {
        memcpy(out, (const char *)m->data + (size_t)r * m->row_bytes, qtts_dtype_row_bytes(m->type, m->cols));
        return;
    }
    const int64_t nb = m->cols / qtts_dtype_block_elems(m->type);
    const uint8_t *grp = (const uint8_t *)m->data + (size_t)(r / QTTS_INTERLEAVE) * m->row_bytes * QTTS_INTERLEAVE;
    const int lane = (int)(r % QTTS_INTERLEAVE);
    if (m->type == QTTS_Q8_0) {
        qtts_block_q8_0 *blk = out;
        const uint16_t *d = (const uint16_t *)(grp + (size_t)nb * 512);
        for (int64_t b = 0; b < nb; b++) {
            blk[b].d = d[b * 16 + lane];
            for (int g = 0; g < 8; g++) {
                uint32_t v;
                memcpy(&v, grp + (size_t)b * 512 + (size_t)g * 64 + (size_t)lane * 4, 4);
                v ^= 0x80808080u;
                memcpy(blk[b].qs + 4 * g, &v, 4);
            }
        }
        return;
    }
    qtts_block_q4_k *blk = out;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *s = grp + (size_t)b * QTTS_Q4_K_X16_SUPER;
        uint8_t sc[8], mn[8];
        memcpy(&blk[b].d, s + 2 * lane, 2);
        memcpy(&blk[b].dmin, s + 32 + 2 * lane, 2);
        for (int j = 0; j < 8; j++) {
            sc[j] = s[64 + j * 16 + lane];
            mn[j] = s[192 + (j / 2) * 32 + lane * 2 + j % 2];
        }
        q4_k_pack_scales(sc, mn, blk[b].scales);
        for (int p = 0; p < 4; p++)
            for (int g = 0; g < 8; g++) memcpy(blk[b].qs + 32 * p + 4 * g, s + 320 + p * 512 + g * 64 + lane * 4, 4);
    }
}
