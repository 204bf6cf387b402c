/* The kernels' host side: shape and bounds checks, push constants, grids. */
#include <stdint.h>

#include "gpu/vk_internal.h"

enum { MAX_GROUPS_X = 65535 }; /* every device's minimum maxComputeWorkGroupCount[0] */

/* 1 if elements [off, off + count) of 4-byte elements lie inside b and fit 32-bit indices. */
static int fits(const qtts_gpu_buf *b, int64_t off, int64_t count) {
    return b && off >= 0 && count >= 0 && (uint64_t)(off + count) <= b->size / 4 && off + count <= UINT32_MAX;
}

static int out_of_bounds(qtts_err *err, const char *kernel, const char *what) {
    return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU %s: %s lies outside its buffer", kernel, what);
}

static int small(int64_t v) { return v >= 0 && v <= UINT32_MAX; }

/* rows spread over x (at most MAX_GROUPS_X) and y */
static void row_grid(int64_t rows, uint32_t *gx, uint32_t *gy) {
    *gx = (uint32_t)(rows < MAX_GROUPS_X ? rows : MAX_GROUPS_X);
    *gy = (uint32_t)((rows + MAX_GROUPS_X - 1) / MAX_GROUPS_X);
}

int qtts_gpu_gemv(qtts_gpu_seq *s, const qtts_gpu_mat *w, qtts_gpu_buf *x, int64_t x_off, int64_t x_stride,
                  qtts_gpu_buf *y, int64_t y_off, int64_t y_stride, int64_t n, qtts_err *err) {
    int64_t row0, rows, cols;
    qtts_dtype type;
    size_t row_bytes;
    if (n <= 0) return 0;
    int last = qtts_gpu_mat_chunks(w) - 1;
    int64_t lrow0, lrows;
    qtts_vk_mat_chunk(w, last, &lrow0, &lrows, &type, &cols, &row_bytes);
    const int64_t all_rows = lrow0 + lrows;
    if (!fits(x, x_off, (n - 1) * x_stride + cols)) return out_of_bounds(err, "gemv", "x");
    if (!fits(y, y_off, (n - 1) * y_stride + all_rows)) return out_of_bounds(err, "gemv", "y");
    if (n > 65535) return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU gemv: %lld tokens in one call", (long long)n);
    qtts_gpu_shader shader = type == QTTS_F32    ? QTTS_SHADER_gemv_f32
                             : type == QTTS_BF16 ? QTTS_SHADER_gemv_bf16
                             : type == QTTS_Q8_0 ? QTTS_SHADER_gemv_q8_0
                                                 : QTTS_SHADER_gemv_q4_k;
    for (int c = 0; c <= last; c++) {
        qtts_gpu_buf *chunk = qtts_vk_mat_chunk(w, c, &row0, &rows, &type, &cols, &row_bytes);
        struct {
            uint32_t rows, cols, row_bytes, row0, x_off, x_stride, y_off, y_stride;
        } pc = {(uint32_t)rows,  (uint32_t)cols,     (uint32_t)row_bytes, (uint32_t)row0,
                (uint32_t)x_off, (uint32_t)x_stride, (uint32_t)y_off,     (uint32_t)y_stride};
        qtts_gpu_buf *b[] = {chunk, x, y};
        uint32_t gx, gy;
        row_grid(rows, &gx, &gy);
        if (qtts_vk_dispatch(s, shader, b, &pc, sizeof pc, gx, gy, (uint32_t)n, err)) return -1;
    }
    return 0;
}

int qtts_gpu_rmsnorm(qtts_gpu_seq *s, qtts_gpu_buf *x, int64_t x_off, qtts_gpu_buf *w, qtts_gpu_buf *y, int64_t y_off,
                     int64_t rows, int64_t dim, float eps, qtts_err *err) {
    if (rows <= 0) return 0;
    if (dim <= 0 || !fits(x, x_off, rows * dim)) return out_of_bounds(err, "rmsnorm", "x");
    if (!fits(y, y_off, rows * dim)) return out_of_bounds(err, "rmsnorm", "y");
    if (w && !fits(w, 0, dim)) return out_of_bounds(err, "rmsnorm", "the weight");
    if (rows > MAX_GROUPS_X) return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU rmsnorm: %lld rows", (long long)rows);
    struct {
        uint32_t dim, x_off, y_off, has_w;
        float eps;
    } pc = {(uint32_t)dim, (uint32_t)x_off, (uint32_t)y_off, w != NULL, eps};
    qtts_gpu_buf *b[] = {x, w ? w : x, y};
    return qtts_vk_dispatch(s, QTTS_SHADER_rmsnorm, b, &pc, sizeof pc, (uint32_t)rows, 1, 1, err);
}

int qtts_gpu_rope(qtts_gpu_seq *s, qtts_gpu_buf *x, int64_t x_off, int64_t stride, int64_t n_tokens, int64_t n_heads,
                  int64_t head_dim, qtts_gpu_buf *table, qtts_gpu_buf *pos, int64_t pos_index, qtts_err *err) {
    if (n_tokens <= 0) return 0;
    if (head_dim <= 0 || head_dim % 2 || n_heads <= 0 || !small(stride) || n_tokens > 65535)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU rope: bad shape");
    if (!fits(x, x_off, (n_tokens - 1) * stride + n_heads * head_dim)) return out_of_bounds(err, "rope", "x");
    if (!fits(pos, pos_index, 1)) return out_of_bounds(err, "rope", "the position");
    if (!fits(table, 0, head_dim)) return out_of_bounds(err, "rope", "the angle table");
    /* the table's rows bound the position the kernel may read: checked by the
     * caller that advances pos (the kernel cannot fail) */
    struct {
        uint32_t n_heads, head_dim, x_off, stride, pos_index;
    } pc = {(uint32_t)n_heads, (uint32_t)head_dim, (uint32_t)x_off, (uint32_t)stride, (uint32_t)pos_index};
    qtts_gpu_buf *b[] = {x, table, pos};
    uint32_t gx = (uint32_t)((n_heads * head_dim / 2 + 63) / 64);
    return qtts_vk_dispatch(s, QTTS_SHADER_rope, b, &pc, sizeof pc, gx, (uint32_t)n_tokens, 1, err);
}

int qtts_gpu_kv_store_as(qtts_gpu_seq *s, qtts_gpu_buf *src, int64_t src_off, int64_t src_stride, int64_t n_tokens,
                         int64_t width, qtts_gpu_buf *cache, int64_t cache_stride, qtts_gpu_buf *pos,
                         int64_t pos_index, int f16, qtts_err *err) {
    if (n_tokens <= 0) return 0;
    if (width <= 0 || !small(src_stride) || !small(cache_stride) || width > cache_stride || n_tokens > 65535 ||
        (f16 && (width % 2 || cache_stride % 2)))
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU kv_store: bad shape");
    if (!fits(src, src_off, (n_tokens - 1) * src_stride + width)) return out_of_bounds(err, "kv_store", "the source");
    if (!fits(pos, pos_index, 1)) return out_of_bounds(err, "kv_store", "the position");
    struct {
        uint32_t width, src_off, src_stride, cache_stride, pos_index, f16;
    } pc = {(uint32_t)width,        (uint32_t)src_off,   (uint32_t)src_stride,
            (uint32_t)cache_stride, (uint32_t)pos_index, (uint32_t)(f16 != 0)};
    qtts_gpu_buf *b[] = {src, cache, pos};
    const int64_t threads = f16 ? width / 2 : width; /* f16: one word (two values) each */
    return qtts_vk_dispatch(s, QTTS_SHADER_kv_store, b, &pc, sizeof pc, (uint32_t)((threads + 63) / 64),
                            (uint32_t)n_tokens, 1, err);
}

int qtts_gpu_kv_store(qtts_gpu_seq *s, qtts_gpu_buf *src, int64_t src_off, int64_t src_stride, int64_t n_tokens,
                      int64_t width, qtts_gpu_buf *cache, int64_t cache_stride, qtts_gpu_buf *pos, int64_t pos_index,
                      qtts_err *err) {
    return qtts_gpu_kv_store_as(s, src, src_off, src_stride, n_tokens, width, cache, cache_stride, pos, pos_index, 0,
                                err);
}

int qtts_gpu_attention(qtts_gpu_seq *s, const qtts_gpu_attn_args *a, qtts_err *err) {
    if (a->n_q <= 0) return 0;
    if (a->head_dim <= 0 || a->head_dim > 512 || a->n_kv_heads <= 0 || a->n_heads % a->n_kv_heads || a->n_q > 65535 ||
        a->n_heads > MAX_GROUPS_X || a->window < 0 || !small(a->kv_stride))
        return qtts_fail_as(err, QTTS_ERR_INVALID,
                            "GPU attention: bad shape (head_dim <= 512, heads a multiple of KV heads)");
    if (!fits(a->q, a->q_off, (a->n_q - 1) * a->q_stride + a->n_heads * a->head_dim))
        return out_of_bounds(err, "attention", "q");
    if (!fits(a->out, a->out_off, (a->n_q - 1) * a->out_stride + a->n_heads * a->head_dim))
        return out_of_bounds(err, "attention", "out");
    /* f16 caches: two values a word */
    const int64_t kv_words = a->kv_f16 ? (a->n_kv_heads * a->head_dim + 1) / 2 : a->n_kv_heads * a->head_dim;
    if (!fits(a->k, 0, kv_words) || !fits(a->v, 0, kv_words)) return out_of_bounds(err, "attention", "the KV cache");
    if (!fits(a->pos, a->pos_index, 1)) return out_of_bounds(err, "attention", "the position");
    struct {
        uint32_t q_off, q_stride, kv_stride, out_off, out_stride;
        uint32_t n_heads, n_kv_heads, head_dim, window, pos_index;
        float scale;
        uint32_t f16;
    } pc = {(uint32_t)a->q_off,
            (uint32_t)a->q_stride,
            (uint32_t)a->kv_stride,
            (uint32_t)a->out_off,
            (uint32_t)a->out_stride,
            (uint32_t)a->n_heads,
            (uint32_t)a->n_kv_heads,
            (uint32_t)a->head_dim,
            (uint32_t)a->window,
            (uint32_t)a->pos_index,
            a->scale,
            (uint32_t)(a->kv_f16 != 0)};
    qtts_gpu_buf *b[] = {a->q, a->k, a->v, a->out, a->pos};
    return qtts_vk_dispatch(s, QTTS_SHADER_attention, b, &pc, sizeof pc, (uint32_t)a->n_heads, (uint32_t)a->n_q, 1,
                            err);
}

int qtts_gpu_silu_mul(qtts_gpu_seq *s, qtts_gpu_buf *f, int64_t gate_off, int64_t up_off, int64_t in_stride,
                      qtts_gpu_buf *out, int64_t out_off, int64_t out_stride, int64_t n, int64_t rows, qtts_err *err) {
    if (rows <= 0 || n <= 0) return 0;
    if (rows > 65535 || !small(in_stride) || !small(out_stride))
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU silu_mul: bad shape");
    if (!fits(f, gate_off, (rows - 1) * in_stride + n) || !fits(f, up_off, (rows - 1) * in_stride + n))
        return out_of_bounds(err, "silu_mul", "the input");
    if (!fits(out, out_off, (rows - 1) * out_stride + n)) return out_of_bounds(err, "silu_mul", "out");
    struct {
        uint32_t n, gate_off, up_off, in_stride, out_off, out_stride;
    } pc = {(uint32_t)n,         (uint32_t)gate_off, (uint32_t)up_off,
            (uint32_t)in_stride, (uint32_t)out_off,  (uint32_t)out_stride};
    qtts_gpu_buf *b[] = {f, out};
    return qtts_vk_dispatch(s, QTTS_SHADER_silu_mul, b, &pc, sizeof pc, (uint32_t)((n + 63) / 64), (uint32_t)rows, 1,
                            err);
}

int qtts_gpu_embed_add(qtts_gpu_seq *s, qtts_gpu_buf *table, int64_t row_base, int64_t rows, int64_t dim,
                       qtts_gpu_buf *ids, int64_t id_index, qtts_gpu_buf *out, int64_t out_off, int accumulate,
                       qtts_err *err) {
    if (dim <= 0 || rows <= 0) return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU embed_add: bad shape");
    if (!fits(table, row_base * dim, rows * dim)) return out_of_bounds(err, "embed_add", "the table");
    if (!fits(ids, id_index, 1)) return out_of_bounds(err, "embed_add", "the id");
    if (!fits(out, out_off, dim)) return out_of_bounds(err, "embed_add", "out");
    struct {
        uint32_t dim, row_base, rows, id_index, out_off, accumulate;
    } pc = {(uint32_t)dim, (uint32_t)row_base, (uint32_t)rows, (uint32_t)id_index, (uint32_t)out_off, accumulate != 0};
    qtts_gpu_buf *b[] = {table, ids, out};
    return qtts_vk_dispatch(s, QTTS_SHADER_embed_add, b, &pc, sizeof pc, (uint32_t)((dim + 63) / 64), 1, 1, err);
}

int qtts_gpu_ring_gather(qtts_gpu_seq *s, qtts_gpu_buf *ring, int64_t ring_rows, int64_t n, qtts_gpu_buf *at,
                         int64_t at_index, int64_t frames, qtts_gpu_buf *out, int64_t out_off, qtts_err *err) {
    if (frames <= 0) return 0;
    if (n <= 0 || ring_rows <= 0 || (ring_rows & (ring_rows - 1)) || n * frames > (int64_t)64 * 65535)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU ring_gather: bad shape");
    if (!fits(ring, 0, ring_rows * n)) return out_of_bounds(err, "ring_gather", "the ring");
    if (!fits(at, at_index, 2)) return out_of_bounds(err, "ring_gather", "the slot and row");
    if (!fits(out, out_off, frames * n)) return out_of_bounds(err, "ring_gather", "out");
    const size_t ring_len = qtts_gpu_buf_size(ring) / sizeof(int32_t);
    struct {
        uint32_t n, frames, ring_rows, at_index, out_off, ring_len;
    } pc = {(uint32_t)n,       (uint32_t)frames, (uint32_t)ring_rows, (uint32_t)at_index, (uint32_t)out_off,
            ring_len > UINT32_MAX ? UINT32_MAX : (uint32_t)ring_len};
    qtts_gpu_buf *b[] = {ring, at, out};
    return qtts_vk_dispatch(s, QTTS_SHADER_ring_gather, b, &pc, sizeof pc, (uint32_t)((n * frames + 63) / 64), 1, 1,
                            err);
}

int qtts_gpu_argmax(qtts_gpu_seq *s, qtts_gpu_buf *z, int64_t z_off, int64_t n, qtts_gpu_buf *ids, int64_t out_index,
                    qtts_err *err) {
    if (n <= 0) return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU argmax: no logits");
    if (!fits(z, z_off, n)) return out_of_bounds(err, "argmax", "z");
    if (!fits(ids, out_index, 1)) return out_of_bounds(err, "argmax", "the output id");
    struct {
        uint32_t n, z_off, out_index;
    } pc = {(uint32_t)n, (uint32_t)z_off, (uint32_t)out_index};
    qtts_gpu_buf *b[] = {z, ids};
    return qtts_vk_dispatch(s, QTTS_SHADER_argmax, b, &pc, sizeof pc, 1, 1, 1, err);
}

int qtts_gpu_add_rows(qtts_gpu_seq *s, qtts_gpu_buf *x, int64_t x_off, int64_t x_stride, qtts_gpu_buf *y, int64_t y_off,
                      int64_t y_stride, int64_t n, int64_t rows, int accumulate, qtts_err *err) {
    if (n <= 0 || rows <= 0) return 0;
    if (rows > 65535 || !small(x_stride) || !small(y_stride))
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU add_rows: bad shape");
    if (!fits(x, x_off, (rows - 1) * x_stride + n)) return out_of_bounds(err, "add_rows", "x");
    if (!fits(y, y_off, (rows - 1) * y_stride + n)) return out_of_bounds(err, "add_rows", "y");
    struct {
        uint32_t n, x_off, x_stride, y_off, y_stride, accumulate;
    } pc = {(uint32_t)n,     (uint32_t)x_off,    (uint32_t)x_stride,
            (uint32_t)y_off, (uint32_t)y_stride, accumulate != 0};
    qtts_gpu_buf *b[] = {x, y};
    return qtts_vk_dispatch(s, QTTS_SHADER_add_rows, b, &pc, sizeof pc, (uint32_t)((n + 63) / 64), (uint32_t)rows, 1,
                            err);
}

