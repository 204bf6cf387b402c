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

#endif
