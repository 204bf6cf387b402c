/* Reader for the NumPy .npy v1/v2 files of the golden fixtures (<f4, <i4, <i8). */
#ifndef QTTS_TEST_NPY_H
#define QTTS_TEST_NPY_H

#include <stdint.h>

typedef struct {
    int ndim;
    int64_t shape[8];
    int64_t numel;
    char kind; /* 'f' or 'i' */
    float *f;   /* kind 'f' */
    int32_t *i; /* kind 'i' (i8 files are narrowed) */
} npy_array;

/* Returns 0 on success; on failure prints the reason and returns -1. */
int npy_load(const char *path, npy_array *out);
/* Loads QTTS_GOLDEN_DIR/fixtures/<name>.npy */
int npy_load_fixture(const char *name, npy_array *out);
void npy_free(npy_array *a);
/* A fixture's floats (their count in *n), or its int codes [T][nq] (T in
 * *T); NULL and a failed check when it cannot be read or has another shape. */
float *npy_fixture_f32(const char *name, int64_t *n);
int32_t *npy_fixture_codes(const char *name, int64_t *T, int64_t nq);

#endif
