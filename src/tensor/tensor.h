/* Tensor storage types and the weight-matrix view the kernels consume.
 * Type ids follow GGML/GGUF numbering so GGUF files are interchangeable. */
#ifndef QTTS_TENSOR_TENSOR_H
#define QTTS_TENSOR_TENSOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/err.h"

typedef enum qtts_dtype {
    QTTS_F32 = 0,
    QTTS_F16 = 1,
    QTTS_Q8_0 = 8,
    QTTS_Q4_K = 12,
    QTTS_BF16 = 30,
    /* Storage only: what other converters write. They are read (dequantized
     * by qtts_dequantize_row) but no kernel runs them: a loader converts
     * such matrices to a type above (qtts_dtype_runs). */
    QTTS_Q4_0 = 2,
    QTTS_Q4_1 = 3,
    QTTS_Q5_0 = 6,
    QTTS_Q5_1 = 7,
    QTTS_Q2_K = 10,
    QTTS_Q3_K = 11,
    QTTS_Q5_K = 13,
    QTTS_Q6_K = 14,
    QTTS_I32 = 26, /* integer data (voice-pack codes); converts to f32 exactly below 2^24 */
    QTTS_DTYPE_INVALID = -1,
} qtts_dtype;

enum { QTTS_MAX_DIMS = 4 };

/* Elements per block and bytes per block (1 and the element size for plain types). */
int64_t qtts_dtype_block_elems(qtts_dtype t);
size_t qtts_dtype_block_bytes(qtts_dtype t);
/* Bytes of a row of n elements; 0 if n is not a multiple of the block size. */
size_t qtts_dtype_row_bytes(qtts_dtype t, int64_t n);
const char *qtts_dtype_name(qtts_dtype t);
/* "f32", "f16", "bf16", "q8_0", "q4_k": the types the kernels run (storage-only names are not accepted). */
qtts_dtype qtts_dtype_from_name(const char *name);
/* 1 for the types the kernels run (F32, F16, BF16, Q8_0, Q4_K), 0 for storage-only ones. */
int qtts_dtype_runs(qtts_dtype t);
/* 1 for every type a file may hold (runnable or storage-only). */
int qtts_dtype_known(qtts_dtype t);

/* A named tensor inside a checkpoint. Shapes are PyTorch order (outermost first). */
typedef struct qtts_tensor {
    const char *name;
    qtts_dtype type;
    int ndim;
    int64_t shape[QTTS_MAX_DIMS];
    const void *data;
    size_t nbytes;
    int viewed; /* a zero-copy view of it is in use (qtts_store_release_pages keeps its pages) */
    int mapped; /* data lies in a read-only file mapping of its store (pages can be dropped and re-read) */
    int interleave; /* 16: a Q8_0/Q4_K matrix in the kernels' interleaved form (tensor/interleave.h), which
                       only the matrix loader reads (qtts_mat_from_tensor_*); 0: GGML rows */
} qtts_tensor;

int64_t qtts_tensor_numel(const qtts_tensor *t);

/* A weight matrix y = W x: rows = outputs, cols = inputs, rows stored one
 * after another (row_bytes apart). Kernels may repack it at load time. */
typedef struct qtts_mat {
    qtts_dtype type;
    int64_t rows, cols;
    size_t row_bytes;
    const void *data;
    void *owned;    /* non-NULL if this view owns its storage */
    int interleave; /* 0: row-major; 16: Q8_0/Q4_K rows interleaved in groups
                       of 16 for the x86 kernels (tensor/interleave.h) */
    int prefetch;   /* Q8_0/Q4_K: the AVX2 kernels prefetch the weights ahead
                       of use (set at load where measured faster) */
    int lockstep;   /* interleaved, AVX2, one token: the two 16-row groups a
                       thread reads side by side alternate line by line rather
                       than super-block by super-block (set at load where
                       measured faster; the same results either way) */
} qtts_mat;

void qtts_mat_free(qtts_mat *m);

static inline float qtts_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Round-to-nearest-even, NaN kept quiet: the conversion torch uses. */
static inline uint16_t qtts_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float qtts_f16_to_f32(uint16_t h);
uint16_t qtts_f32_to_f16(float f);

#endif
