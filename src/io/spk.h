/* .spk files: a speaker x-vector as raw little-endian float32, no header.
 * The length must equal the talker hidden size of the model that uses it. */
#ifndef QTTS_IO_SPK_H
#define QTTS_IO_SPK_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

int qtts_spk_write(const char *path, const float *xvec, int64_t dim, qtts_err *err);
/* The file image of an x-vector (malloc'd, *size bytes). */
unsigned char *qtts_spk_to_bytes(const float *xvec, int64_t dim, size_t *size, qtts_err *err);

/* Reads a .spk file of exactly `dim` floats (dim > 0), or of any length when
 * dim <= 0 (*out_dim receives it; may be NULL). Values must be finite.
 * Returns a malloc'd vector or NULL. */
float *qtts_spk_read(const char *path, int64_t dim, int64_t *out_dim, qtts_err *err);

/* Same checks on an in-memory image (e.g. an HTTP upload); label names it in errors. */
float *qtts_spk_from_bytes(const void *data, size_t size, int64_t dim, const char *label, int64_t *out_dim,
                           qtts_err *err);

#endif
