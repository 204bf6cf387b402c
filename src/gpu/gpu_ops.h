/* Device buffers, weight matrices, recorded command sequences and the
 * kernels (Vulkan builds only). A sequence is recorded once and may be
 * submitted any number of times: values that change between submissions
 * (positions, sampled ids) are read from device buffers when the kernels
 * run, never baked in at record time. Offsets and strides are in elements
 * (floats or ints). Every kernel has a scalar CPU twin the tests compare
 * it against (tests/test_gpu_kernels.c). */
#ifndef QTTS_GPU_GPU_OPS_H
#define QTTS_GPU_GPU_OPS_H

#include <stdint.h>

#include "core/err.h"
#include "gpu/gpu.h"
#include "tensor/tensor.h"

typedef struct qtts_gpu_buf qtts_gpu_buf;
typedef struct qtts_gpu_mat qtts_gpu_mat;
typedef struct qtts_gpu_seq qtts_gpu_seq;

/* A buffer of `bytes` (<= the device's storage-buffer range), host-visible
 * and zeroed; qtts_gpu_buf_data maps it for the host (valid until free). */
qtts_gpu_buf *qtts_gpu_buf_new(qtts_gpu *g, size_t bytes, qtts_err *err);
void *qtts_gpu_buf_data(qtts_gpu_buf *b);
size_t qtts_gpu_buf_size(const qtts_gpu_buf *b);
void qtts_gpu_buf_free(qtts_gpu *g, qtts_gpu_buf *b);

/* Uploads a weight matrix (f32, bf16, Q8_0 or Q4_K) as row-major GGML
 * blocks, split into whole-row chunks where it is larger than the device's
 * storage-buffer range. Q8_0/Q4_K matrices the loader interleaved for the x86
 * CPU kernels (m->interleave) are put back into GGML rows as they are copied. */
qtts_gpu_mat *qtts_gpu_mat_upload(qtts_gpu *g, const qtts_mat *m, qtts_err *err);
void qtts_gpu_mat_free(qtts_gpu *g, qtts_gpu_mat *m);
int qtts_gpu_mat_chunks(const qtts_gpu_mat *m);

/* The largest buffer the backend makes: the device's storage-buffer range,
 * or less for tests that force weight splits (0 restores the device's). */
void qtts_gpu_set_buffer_limit(qtts_gpu *g, size_t bytes);

/* The most device memory the buffers may take together: the size of the
 * memory heap they come from, or less (0 restores the heap's size). An
 * allocation past it fails with QTTS_ERR_NO_MEMORY before the driver is
 * asked (a driver may accept more than its heap and then fail or page). */
void qtts_gpu_set_memory_limit(qtts_gpu *g, size_t bytes);
size_t qtts_gpu_memory_limit(const qtts_gpu *g);
size_t qtts_gpu_memory_used(const qtts_gpu *g);
/* The most the buffers took at once since the device was opened. Any thread
 * may read it (the engine's statistics) while the owner allocates. */
size_t qtts_gpu_memory_peak(const qtts_gpu *g);

/* 1 once a submission reported a lost device or did not finish within the
 * timeout: later submissions and new sequences fail at once with that reason;
 * the device can only be closed (and another opened). */
int qtts_gpu_lost(const qtts_gpu *g);
/* Test hook: the next submission on g fails as a lost device would, without
 * reaching the driver. */
void qtts_gpu_test_lose_next_submit(qtts_gpu *g);

qtts_gpu_seq *qtts_gpu_seq_new(qtts_gpu *g, qtts_err *err);
/* Ends the recording; then the sequence may be submitted. */
int qtts_gpu_seq_end(qtts_gpu_seq *s, qtts_err *err);
/* Submits and waits (a fence, with a timeout: a lost device is an error, not a hang). */
int qtts_gpu_seq_run(qtts_gpu_seq *s, qtts_err *err);
/* Submits s and then `then` (may be NULL) as one submission and waits for both: then's kernels wait for s's writes. */
int qtts_gpu_seq_run_then(qtts_gpu_seq *s, qtts_gpu_seq *then, qtts_err *err);
void qtts_gpu_seq_free(qtts_gpu_seq *s);

/* Kernels, recorded into s; each returns 0 or -1 with the reason in err
 * (a shape the kernel cannot take, a buffer too small). Every kernel waits
 * for the writes of the ones recorded before it. */

/* y[t*y_stride + y_off + r] = W[r] . x[t*x_stride + x_off ..] for t < n, r < rows. */
int qtts_gpu_gemv(qtts_gpu_seq *s, const qtts_gpu_mat *w, qtts_gpu_buf *x, int64_t x_off, int64_t x_stride,
                  qtts_gpu_buf *y, int64_t y_off, int64_t y_stride, int64_t n, qtts_err *err);
/* rows x dim, packed; w may be NULL (= 1). */
int qtts_gpu_rmsnorm(qtts_gpu_seq *s, qtts_gpu_buf *x, int64_t x_off, qtts_gpu_buf *w, qtts_gpu_buf *y, int64_t y_off,
                     int64_t rows, int64_t dim, float eps, qtts_err *err);
/* NeoX rotation of n_tokens rows in place; token t at position pos[pos_index] + t;
 * table: qtts_rope_angles of every position, rows of head_dim (cos then sin). */
int qtts_gpu_rope(qtts_gpu_seq *s, qtts_gpu_buf *x, int64_t x_off, int64_t stride, int64_t n_tokens, int64_t n_heads,
                  int64_t head_dim, qtts_gpu_buf *table, qtts_gpu_buf *pos, int64_t pos_index, qtts_err *err);
/* cache row pos[pos_index] + t = src row t (width floats), t < n_tokens, in an f32 cache. */
int qtts_gpu_kv_store(qtts_gpu_seq *s, qtts_gpu_buf *src, int64_t src_off, int64_t src_stride, int64_t n_tokens,
                      int64_t width, qtts_gpu_buf *cache, int64_t cache_stride, qtts_gpu_buf *pos, int64_t pos_index,
                      qtts_err *err);
/* The same into an f32 (f16 = 0) or f16 cache (f16 = 1: values rounded as
 * the CPU's f16 KV cache rounds them, two to a 32-bit word; width and
 * cache_stride even). cache_stride counts values, not words. */
int qtts_gpu_kv_store_as(qtts_gpu_seq *s, qtts_gpu_buf *src, int64_t src_off, int64_t src_stride, int64_t n_tokens,
                         int64_t width, qtts_gpu_buf *cache, int64_t cache_stride, qtts_gpu_buf *pos,
                         int64_t pos_index, int f16, qtts_err *err);

typedef struct {
    qtts_gpu_buf *q, *k, *v, *out, *pos; /* k, v: caches, kv_stride values per position */
    int64_t q_off, q_stride, kv_stride, out_off, out_stride;
    int64_t n_q, n_heads, n_kv_heads, head_dim, window, pos_index;
    float scale;
    int kv_f16; /* 0: f32 caches; 1: f16 ones (qtts_gpu_kv_store_as) */
} qtts_gpu_attn_args;
/* The semantics of qtts_attention, with q_first = pos[pos_index]. head_dim <= 512. */
int qtts_gpu_attention(qtts_gpu_seq *s, const qtts_gpu_attn_args *a, qtts_err *err);

/* out[r][i] = silu(f[gate_off + r*in_stride + i]) * f[up_off + r*in_stride + i], i < n, r < rows. */
int qtts_gpu_silu_mul(qtts_gpu_seq *s, qtts_gpu_buf *f, int64_t gate_off, int64_t up_off, int64_t in_stride,
                      qtts_gpu_buf *out, int64_t out_off, int64_t out_stride, int64_t n, int64_t rows, qtts_err *err);
/* out[out_off + d] (+)= table[(row_base + ids[id_index]) * dim + d]; ids outside 0..rows-1 add zero. */
int qtts_gpu_embed_add(qtts_gpu_seq *s, qtts_gpu_buf *table, int64_t row_base, int64_t rows, int64_t dim,
                       qtts_gpu_buf *ids, int64_t id_index, qtts_gpu_buf *out, int64_t out_off, int accumulate,
                       qtts_err *err);
/* out[out_off + f*n + j] = ring[(at[at_index] * ring_rows + ((at[at_index + 1] + f) & (ring_rows - 1))) * n + j]
 * for f < frames, j < n: `frames` consecutive rows, from row `first` on, of slot `slot`'s ring (ring_rows
 * rows of n ids per slot, a power of two; slot and first are read from `at` when the kernel runs, so the
 * host moves them between submissions). A row outside the ring reads 0. */
int qtts_gpu_ring_gather(qtts_gpu_seq *s, qtts_gpu_buf *ring, int64_t ring_rows, int64_t n, qtts_gpu_buf *at,
                         int64_t at_index, int64_t frames, qtts_gpu_buf *out, int64_t out_off, qtts_err *err);
/* ids[out_index] = argmax of z[z_off .. z_off + n) (the first on ties, as qtts_argmax). */
int qtts_gpu_argmax(qtts_gpu_seq *s, qtts_gpu_buf *z, int64_t z_off, int64_t n, qtts_gpu_buf *ids, int64_t out_index,
                    qtts_err *err);

/* y[y_off + r*y_stride + i] (+)= x[x_off + r*x_stride + i], i < n, r < rows
 * (x_stride 0 broadcasts one row, e.g. a bias; accumulate 0 copies). */
int qtts_gpu_add_rows(qtts_gpu_seq *s, qtts_gpu_buf *x, int64_t x_off, int64_t x_stride, qtts_gpu_buf *y, int64_t y_off,
                      int64_t y_stride, int64_t n, int64_t rows, int accumulate, qtts_err *err);

#endif
