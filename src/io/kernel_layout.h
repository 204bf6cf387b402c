/* Model files in the kernels' layout: `qtts quantize` on an x86 CPU with the
 * interleaved Q8_0/Q4_K kernels stores the LM's layer matrices interleaved
 * (tensor/interleave.h), so a load maps them and runs them where they lie,
 * with no conversion, repacking or second copy.
 *
 * In the GGUF such a matrix NAME is the tensor "NAME.x16_q4_k" (or
 * ".x16_q8_0") of type i32 and shape [rows/16][bytes of 16 rows / 4]: its
 * bytes, which any GGUF reader can skip or copy. The metadata names the
 * layout and its version (QTTS_GGUF_KEY_KERNEL_LAYOUT*); a reader on a CPU
 * without those kernels, with another version, or not asked to keep them
 * gets the plain GGML rows back (the exact bytes the interleaving read). */
#ifndef QTTS_IO_KERNEL_LAYOUT_H
#define QTTS_IO_KERNEL_LAYOUT_H

#include "core/err.h"
#include "io/store.h"

#define QTTS_GGUF_KEY_KERNEL_LAYOUT "qtts.kernel_layout"
#define QTTS_GGUF_KEY_KERNEL_LAYOUT_VERSION "qtts.kernel_layout_version"
/* Bumped whenever the interleaved form changes: a file of another version loads through its plain rows. */
enum { QTTS_KERNEL_LAYOUT_VERSION = 1 };

/* The layout this CPU's kernels run ("x86-x16"), or NULL where none. */
const char *qtts_kernel_layout_here(void);

/* Whether NAME (a matrix of that type and shape) is stored in the kernels'
 * layout by `qtts quantize`: the LM's per-layer projections, which only the
 * LM loader reads, when they interleave. */
int qtts_kernel_layout_stores(const char *name, qtts_dtype type, int64_t rows, int64_t cols);

/* For the writer: adds the quantized matrix m to st under NAME's stored
 * name, interleaved into memory the store then owns (m keeps none). */
int qtts_kernel_layout_add(qtts_store *st, const char *name, qtts_mat *m, qtts_err *err);

/* For the readers: 1 when t is a matrix stored in the kernels' layout (its
 * base name and type then in base/type), 0 otherwise. */
int qtts_kernel_layout_parse(const qtts_tensor *t, char *base, size_t n, qtts_dtype *type);
/* Adds such a tensor t to st under its base name: as it lies (a view the
 * kernels run) when keep is set, else its GGML rows (owned by st). A shape
 * that does not fit fails. */
int qtts_kernel_layout_load(qtts_store *st, const qtts_tensor *t, int keep, qtts_err *err);

#endif
