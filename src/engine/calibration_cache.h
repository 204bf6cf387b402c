/* The kernel measurements a load needs (tensor/interleave_calibrate.h,
 * tensor/conv_calibrate.h), kept per CPU in a small text file under the
 * cache dir so that a start after the first times no kernels. A file is
 * used only when it was measured on the same CPU model, with the same ISA
 * family selected, the same kernels (QTTS_CALIBRATION_KERNELS) and the same
 * number of threads; anything else in it is measured again and the file
 * rewritten. */
#ifndef QTTS_ENGINE_CALIBRATION_CACHE_H
#define QTTS_ENGINE_CALIBRATION_CACHE_H

#include <stddef.h>

#include "core/err.h"
#include "tensor/conv_calibrate.h"
#include "tensor/interleave_calibrate.h"

/* Bumped whenever a measured kernel or a measurement changes: cached results
 * of other versions are not used. */
#define QTTS_CALIBRATION_KERNELS 1

typedef struct {
    char cpu[400]; /* vendor, family, model, model name */
    char isa[16];  /* the kernel family selected (tensor/cpu.h) */
    int kernels;   /* QTTS_CALIBRATION_KERNELS */
    int threads;   /* the pool's */
} qtts_calibration_key;

typedef struct {
    int have_q8_0, have_q4_k, have_conv;
    qtts_interleave_calibration q8_0, q4_k;
    qtts_conv_calibration conv;
} qtts_calibration_set;

/* This machine's key for a pool of `threads`. */
void qtts_calibration_key_here(qtts_calibration_key *k, int threads);

/* <cache dir>/calibration-t<threads>.txt (io/hub.h's cache dir). */
int qtts_calibration_cache_path(char *buf, size_t size, int threads, qtts_err *err);

/* Reads path into *s (emptied first). 0: read (what it holds is in s;
 * another key's file counts as empty); 1: no file; -1: unreadable or
 * malformed (why says how; s is empty). */
int qtts_calibration_cache_read(const char *path, const qtts_calibration_key *k, qtts_calibration_set *s, char *why,
                                size_t why_size);

/* Writes s under k, atomically (a temporary file renamed over path); makes
 * the cache dir if needed. */
int qtts_calibration_cache_write(const char *path, const qtts_calibration_key *k, const qtts_calibration_set *s,
                                 qtts_err *err);

#endif
