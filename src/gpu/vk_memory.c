/* Device buffers and weight matrices split into whole-row chunks. */
#include <stdlib.h>
#include <string.h>

#include "gpu/vk_internal.h"
#include "tensor/interleave.h"

/* device memory the buffers may still take */
static uint64_t mem_left(const qtts_gpu *g) { return g->mem_used < g->mem_limit ? g->mem_limit - g->mem_used : 0; }

qtts_gpu_buf *qtts_gpu_buf_new(qtts_gpu *g, size_t bytes, qtts_err *err) {
    if (bytes == 0) bytes = 4;
    if (bytes > g->buffer_limit) {
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY,
                     "a %zu-byte GPU buffer exceeds the device's %zu-byte storage-buffer range", bytes,
                     g->buffer_limit);
        return NULL;
    }
    qtts_gpu_buf *b = qtts_calloc(1, sizeof *b, err);
    if (!b) return NULL;
    b->size = bytes;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = bytes,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                             .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VkResult r = vkCreateBuffer(g->dev, &bi, NULL, &b->buf);
    if (r != VK_SUCCESS) goto fail;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g->dev, b->buf, &req);
    if (!(req.memoryTypeBits & (1u << g->host_mem_type))) {
        r = VK_ERROR_FEATURE_NOT_PRESENT;
        goto fail;
    }
    if (req.size > mem_left(g)) {
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY,
                     "GPU out of memory: a %zu-byte buffer does not fit in the %.1f MiB left of the device's %.1f MiB",
                     bytes, (double)mem_left(g) / 1048576.0, (double)g->mem_limit / 1048576.0);
        qtts_gpu_buf_free(g, b);
        return NULL;
    }
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = g->host_mem_type};
    if ((r = vkAllocateMemory(g->dev, &ai, NULL, &b->mem)) != VK_SUCCESS) goto fail;
    b->alloc = req.size;
    g->mem_used += req.size;
    if (g->mem_used > atomic_load_explicit(&g->mem_peak, memory_order_relaxed))
        atomic_store_explicit(&g->mem_peak, g->mem_used, memory_order_relaxed);
    if ((r = vkBindBufferMemory(g->dev, b->buf, b->mem, 0)) != VK_SUCCESS) goto fail;
    if ((r = vkMapMemory(g->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map)) != VK_SUCCESS) goto fail;
    memset(b->map, 0, bytes);
    return b;
fail:
    qtts_fail_as(err,
                 r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY ? QTTS_ERR_NO_MEMORY
                                                                                        : QTTS_ERR_INTERNAL,
                 "GPU buffer of %zu bytes: %s", bytes, qtts_vk_result_name(r));
    qtts_gpu_buf_free(g, b);
    return NULL;
}

void *qtts_gpu_buf_data(qtts_gpu_buf *b) { return b->map; }
size_t qtts_gpu_buf_size(const qtts_gpu_buf *b) { return b->size; }

void qtts_gpu_buf_free(qtts_gpu *g, qtts_gpu_buf *b) {
    if (!b) return;
    if (b->map) vkUnmapMemory(g->dev, b->mem);
    if (b->buf) vkDestroyBuffer(g->dev, b->buf, NULL);
    if (b->mem) vkFreeMemory(g->dev, b->mem, NULL);
    g->mem_used -= b->alloc;
    free(b);
}

struct qtts_gpu_mat {
    qtts_dtype type;
    int64_t rows, cols, rows_per_chunk;
    size_t row_bytes;
    int n_chunks;
    qtts_gpu_buf **chunk;
};

qtts_gpu_mat *qtts_gpu_mat_upload(qtts_gpu *g, const qtts_mat *m, qtts_err *err) {
    if (m->type != QTTS_F32 && m->type != QTTS_BF16 && m->type != QTTS_Q8_0 && m->type != QTTS_Q4_K) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "GPU: weight type %s has no GPU kernel", qtts_dtype_name(m->type));
        return NULL;
    }
    /* the device reads GGML rows: an interleaved matrix (the x86 CPU kernels'
     * layout) is put back into them row by row as it is copied */
    const size_t row_bytes = qtts_dtype_row_bytes(m->type, m->cols);
    if (m->interleave && (m->interleave != QTTS_INTERLEAVE || (m->type != QTTS_Q8_0 && m->type != QTTS_Q4_K) ||
                          m->rows % QTTS_INTERLEAVE)) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "GPU: a %s matrix interleaved by %d rows has no GPU layout",
                     qtts_dtype_name(m->type), m->interleave);
        return NULL;
    }
    if (m->rows <= 0 || m->cols <= 0 || (!m->interleave && m->row_bytes != row_bytes) ||
        (double)m->rows * (double)row_bytes > 4294967295.0 * 64) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "GPU: a %lldx%lld %s matrix is not a shape the kernels take",
                     (long long)m->rows, (long long)m->cols, qtts_dtype_name(m->type));
        return NULL;
    }
    /* whole rows per chunk, within the range and 32-bit word offsets */
    size_t limit = g->buffer_limit < 0xFFFFFFF0u ? g->buffer_limit : 0xFFFFFFF0u;
    int64_t per = (int64_t)(limit / row_bytes);
    if (per < 1) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "GPU: one %zu-byte row exceeds the device's storage-buffer range",
                     row_bytes);
        return NULL;
    }
    if (per > m->rows) per = m->rows;
    /* refused whole, before any chunk is made */
    if ((double)m->rows * (double)row_bytes > (double)mem_left(g)) {
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY,
                     "GPU out of memory: a %lldx%lld %s matrix (%.1f MiB) does not fit in the %.1f MiB left of the "
                     "device's %.1f MiB",
                     (long long)m->rows, (long long)m->cols, qtts_dtype_name(m->type),
                     (double)m->rows * (double)row_bytes / 1048576.0, (double)mem_left(g) / 1048576.0,
                     (double)g->mem_limit / 1048576.0);
        return NULL;
    }
    qtts_gpu_mat *w = qtts_calloc(1, sizeof *w, err);
    if (!w) return NULL;
    *w = (qtts_gpu_mat){m->type, m->rows, m->cols, per, row_bytes, (int)((m->rows + per - 1) / per), NULL};
    w->chunk = qtts_calloc((size_t)w->n_chunks, sizeof *w->chunk, err);
    if (!w->chunk) goto fail;
    for (int c = 0; c < w->n_chunks; c++) {
        int64_t r0 = c * per, nr = m->rows - r0 < per ? m->rows - r0 : per;
        /* rounded up to whole words: the shaders read 32-bit words */
        size_t bytes = ((size_t)nr * row_bytes + 3) & ~(size_t)3;
        w->chunk[c] = qtts_gpu_buf_new(g, bytes, err);
        if (!w->chunk[c]) goto fail;
        if (!m->interleave)
            memcpy(w->chunk[c]->map, (const char *)m->data + (size_t)r0 * row_bytes, (size_t)nr * row_bytes);
        else
            for (int64_t r = 0; r < nr; r++) qtts_mat_row_ggml(m, r0 + r, (char *)w->chunk[c]->map + (size_t)r * row_bytes);
    }
    return w;
fail:
    qtts_fail_prefix(err, "uploading a %lldx%lld %s matrix", (long long)m->rows, (long long)m->cols,
                     qtts_dtype_name(m->type));
    qtts_gpu_mat_free(g, w);
    return NULL;
}

void qtts_gpu_mat_free(qtts_gpu *g, qtts_gpu_mat *m) {
    if (!m) return;
    for (int c = 0; m->chunk && c < m->n_chunks; c++) qtts_gpu_buf_free(g, m->chunk[c]);
    free(m->chunk);
    free(m);
}

int qtts_gpu_mat_chunks(const qtts_gpu_mat *m) { return m->n_chunks; }

/* For vk_ops.c: chunk c's buffer, first row and row count. */
qtts_gpu_buf *qtts_vk_mat_chunk(const qtts_gpu_mat *m, int c, int64_t *row0, int64_t *rows, qtts_dtype *type,
                                int64_t *cols, size_t *row_bytes) {
    *row0 = c * m->rows_per_chunk;
    *rows = m->rows - *row0 < m->rows_per_chunk ? m->rows - *row0 : m->rows_per_chunk;
    *type = m->type;
    *cols = m->cols;
    *row_bytes = m->row_bytes;
    return m->chunk[c];
}
