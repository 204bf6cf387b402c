/* A tensor store: the named tensors of a checkpoint, whatever file format they
 * came from (safetensors, sharded safetensors, GGUF) or built in memory (the
 * random-weight benchmark). Model loaders only see this interface. */
#ifndef QTTS_IO_STORE_H
#define QTTS_IO_STORE_H

#include "core/err.h"
#include "core/threadpool.h"
#include "tensor/interleave.h"
#include "tensor/tensor.h"

typedef struct qtts_store qtts_store;

qtts_store *qtts_store_new(qtts_err *err);
void qtts_store_free(qtts_store *st);

/* Opens <path> as: a .safetensors file, a .gguf file, or a folder containing
 * model.safetensors or model.safetensors.index.json. */
qtts_store *qtts_store_open(const char *path, qtts_err *err);
qtts_store *qtts_store_open_safetensors(const char *file, qtts_err *err);
qtts_store *qtts_store_open_safetensors_index(const char *index_json, qtts_err *err);
/* Parses a safetensors image in memory (tensors point into buf, which must
 * outlive the store). label names it in errors. Used by the loader and fuzzer. */
int qtts_store_parse_safetensors(qtts_store *st, const char *label, const unsigned char *buf, size_t size,
                                 qtts_err *err);

/* Adds a tensor. The store copies the name; `data` is borrowed unless
 * take_ownership is set (then it is free()d with the store). */
int qtts_store_add(qtts_store *st, const char *name, qtts_dtype type, int ndim, const int64_t *shape,
                   const void *data, int take_ownership, qtts_err *err);
/* Adds a rows x cols Q8_0/Q4_K matrix whose data (borrowed) is in the
 * kernels' interleaved form (qtts_x16_bytes(type, rows, cols) bytes). */
int qtts_store_add_x16(qtts_store *st, const char *name, qtts_dtype type, int64_t rows, int64_t cols,
                       const void *data, qtts_err *err);
/* Keeps a mapping alive as long as the store (munmap()ed with it). fd is
 * the mapped file's descriptor (the mapping starts at its offset 0), which
 * the store then owns and closes with it (the caller keeps it where this
 * fails); -1 for a file mapping without one; QTTS_ANONYMOUS_MAPPING for
 * anonymous memory. Tensors in a file mapping are `mapped`: their pages may
 * be dropped from the RSS and re-read from the file. An anonymous mapping's
 * never are (dropping them would zero its contents). */
enum { QTTS_ANONYMOUS_MAPPING = -2 };
int qtts_store_keep_mapping(qtts_store *st, void *addr, size_t len, int fd, qtts_err *err);
/* Copies n bytes at p into dst. Where p lies in one of the store's (or an
 * adopted store's) file mappings with a descriptor, they are read from the
 * file (pread): the page cache copies them in the kernel, where reading
 * through the mapping takes a page fault per 4-64 KiB (0.6B's 324 MB of LM
 * matrices: 70-120 ms instead of 250-1500 ms on a 2-vCPU Zen 5 VM). */
void qtts_store_read(const qtts_store *st, const void *p, size_t n, void *dst);
/* Tells st about from's mappings, which some of st's tensors lie in (from
 * must outlive st; st never unmaps them), so that their pages can be
 * released as a mapped tensor's are: converted copies then do not keep the
 * originals resident. */
int qtts_store_borrow_mappings(qtts_store *st, const qtts_store *from, qtts_err *err);

/* For the file readers: the bytes [begin, end) of one tensor's data. */
typedef struct qtts_span {
    uint64_t begin, end;
    const char *name;
} qtts_span;
/* Sorts spans[0..n) by begin and fails with "<label>: tensors 'a' and 'b'
 * overlap in the file" if any two overlap. */
int qtts_spans_check_disjoint(qtts_span *spans, size_t n, const char *label, qtts_err *err);

/* Drops the resident pages of the store's mapped tensors that no zero-copy
 * view uses (qtts_mat_from_tensor marks those): they are read-only and
 * clean, so touching one again re-reads it from the page cache or disk.
 * Called once the models are loaded, so weights that were converted or
 * packed into other memory stop counting toward the process's RSS, while
 * weights used in place are not faulted in a second time. */
void qtts_store_release_pages(qtts_store *st);
/* Every mapped tensor's pages, views included, for a caller that copied the
 * views it runs (qtts_mat_own_mapped); lookups release their tables again. */
void qtts_store_release_all_pages(qtts_store *st);
/* Where a load copies the weights it runs out of the file mappings: one
 * block for them all, 2 MiB-aligned, its huge pages mapped in one call. On a
 * 2-vCPU VM, 300 MB read into 100 separate buffers took 0.97 s and the first
 * pass over them 0.45 s more; into one such block 0.05 s and 0.01 s. A
 * first pass with base NULL only adds up size (qtts_weight_arena_alloc). */
typedef struct {
    char *base; /* freed with free() by whoever keeps the weights */
    size_t size, used;
} qtts_weight_arena;
int qtts_weight_arena_alloc(qtts_weight_arena *a, qtts_err *err);
/* m, where it is a view into one of st's file mappings, read into the next
 * bytes of a (qtts_store_read; m stays a view, now of a's block), or where a
 * has no block yet, its bytes added to a->size; any other m is left as it is. */
void qtts_mat_own_mapped(qtts_mat *m, const qtts_store *st, qtts_weight_arena *a);
/* After a lookup into a mapped lookup table (an embedding row): drops the
 * table's pages from the RSS again. A read fault on a file mapping maps more
 * than the row (the kernel's fault-around, 64 KiB, or a whole large folio;
 * MADV_RANDOM turns neither off), so every row ever read would otherwise
 * stay resident: the code predictor's embeddings after a few dozen frames,
 * and over a server's life most of the text embedding. Its price is a
 * system call and the next read's fault, a few microseconds, about 17
 * lookups per frame. No-op for in-memory tensors and views in use. */
void qtts_tensor_release_lookup(const qtts_tensor *t);

/* st takes other over: other is freed with st (after st's own tensors), so
 * tensors of st may borrow from other's mappings. */
int qtts_store_adopt(qtts_store *st, qtts_store *other, qtts_err *err);

const qtts_tensor *qtts_store_find(const qtts_store *st, const char *name);
int qtts_store_count(const qtts_store *st);
const qtts_tensor *qtts_store_at(const qtts_store *st, int i);
/* Where the tensors came from, for error messages. */
const char *qtts_store_source(const qtts_store *st);
void qtts_store_set_source(qtts_store *st, const char *source);

/* Looks up a tensor and checks its shape (ndim entries of shape; -1 = any).
 * Fails with "<source>: tensor 'x' ..." when missing or mis-shaped. */
const qtts_tensor *qtts_store_get(const qtts_store *st, const char *name, int ndim, const int64_t *shape,
                                  qtts_err *err);
/* Convenience for 1-, 2- and 3-D lookups by dimensions. */
const qtts_tensor *qtts_store_get1(const qtts_store *st, const char *name, int64_t d0, qtts_err *err);
const qtts_tensor *qtts_store_get2(const qtts_store *st, const char *name, int64_t d0, int64_t d1, qtts_err *err);
const qtts_tensor *qtts_store_get3(const qtts_store *st, const char *name, int64_t d0, int64_t d1, int64_t d2,
                                   qtts_err *err);

/* A malloc'd f32 copy of any tensor (dequantized if needed). */
float *qtts_tensor_to_f32(const qtts_tensor *t, qtts_err *err);
/* The same, for a tensor of st: an f32 one in a file mapping is read from
 * the file (qtts_store_read). */
float *qtts_store_tensor_to_f32(const qtts_store *st, const qtts_tensor *t, qtts_err *err);
/* A tensor of st as f32 into dst (numel floats), read as qtts_store_tensor_to_f32 does. */
int qtts_store_tensor_f32_into(const qtts_store *st, const qtts_tensor *t, float *dst, qtts_err *err);
/* Ends a one-time read of t's values (a conversion or packing of them):
 * frees copy and lets a mapped original leave the RSS. */
void qtts_tensor_f32_done(const qtts_tensor *t, float *copy);
/* Converts n elements of src (type t) to f32 into dst. n must be a multiple of the block size. */
int qtts_convert_to_f32(qtts_dtype t, const void *src, float *dst, int64_t n, qtts_err *err);

/* The storage type a row of `cols` elements gets when `want` is asked for:
 * block-quantized types need whole blocks per row, so Q4_K falls back to
 * Q8_0 and then, like Q8_0, to `fallback` (as llama.cpp does for odd rows). */
qtts_dtype qtts_dtype_fit(qtts_dtype want, int64_t cols, qtts_dtype fallback);

/* A weight matrix from a tensor of 2 or more dims (trailing dims are folded
 * into cols); the type is qtts_dtype_fit(want, cols, tensor type). If want == the tensor's type (or QTTS_DTYPE_INVALID) it is a
 * zero-copy view; otherwise the data is converted into owned storage. */
/* qtts_mat_from_tensor, then the kernels' load-time layout
 * (qtts_mat_interleave), and a zero-copy result marks the tensor as viewed
 * (so qtts_store_release_pages keeps its pages). What model code uses for
 * weights that only qtts_linear reads. */
int qtts_mat_from_tensor_kernel(qtts_mat *m, const qtts_tensor *t, qtts_dtype want, qtts_err *err);
int qtts_mat_from_tensor(qtts_mat *m, const qtts_tensor *t, qtts_dtype want, qtts_err *err);

/* What a model load does with its weight matrices, decided by the engine
 * loader and passed down to every qtts_mat_from_tensor_plan. */
typedef struct qtts_weight_plan {
    qtts_dtype type;                  /* storage type; QTTS_DTYPE_INVALID: as stored (zero-copy) */
    qtts_pool *pool;                  /* converts rows on its threads (its owner calls); NULL: this thread */
    const qtts_weight_layout *layout; /* Q8_0/Q4_K layout and kernel flags; NULL: GGML rows */
    const qtts_store *store;          /* reads a mapped tensor it converts from the file (qtts_store_read) */
    void (*layer_done)(void *user);   /* after each transformer layer's matrices (a progress count); NULL: none */
    void *layer_user;
} qtts_weight_plan;

/* An interleaved m (a view of a tensor stored in the kernels' form) back to
 * GGML rows where layout does not interleave its type on this CPU, so the
 * kernels run it exactly as a matrix converted at load; no-op otherwise. */
int qtts_mat_fit_layout(qtts_mat *m, const qtts_weight_layout *layout, qtts_pool *pool, qtts_err *err);
/* qtts_mat_from_tensor_kernel as plan says (NULL plan: as stored, rows). */
int qtts_mat_from_tensor_plan(qtts_mat *m, const qtts_tensor *t, const qtts_weight_plan *plan, qtts_err *err);
/* What qtts_mat_from_tensor_plan does once m is final, for a caller that
 * converted and laid out m itself: m a view of t's array marks t as viewed
 * (its pages stay), else a mapped t's pages leave the RSS. */
void qtts_tensor_mat_done(const qtts_tensor *t, const qtts_mat *m);
/* qtts_mat_from_tensor, converting on pool (NULL: this thread). */
int qtts_mat_from_tensor_pool(qtts_mat *m, const qtts_tensor *t, qtts_dtype want, qtts_pool *pool, qtts_err *err);
/* Row `row` of a 2-D tensor as f32 (any storage type); a mapped table's
 * pages are released after the read (qtts_tensor_release_lookup). */
int qtts_tensor_row_f32(const qtts_tensor *t, int64_t row, float *out, qtts_err *err);
/* Rows rows[0..n) into out (n rows of shape[1] floats), released once. */
int qtts_tensor_rows_f32(const qtts_tensor *t, const int32_t *rows, int64_t n, float *out, qtts_err *err);

#endif
