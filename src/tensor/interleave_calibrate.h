/* Whether the AVX-512 interleaved-row layout (tensor/interleave.h) beats the
 * GGML row layout for a weight type on this CPU, measured (not assumed):
 * on some CPUs the interleaved Q8_0 kernel is faster in cache but slower
 * when the weights stream from DRAM, which is how batch-1 decoding reads
 * them. */
#ifndef QTTS_TENSOR_INTERLEAVE_CALIBRATE_H
#define QTTS_TENSOR_INTERLEAVE_CALIBRATE_H

#include "tensor/tensor.h"

typedef struct qtts_interleave_calibration {
    int measured;             /* 0: not an AVX-512 CPU, or out of memory (then interleave is not used) */
    int faster;               /* the interleaved layout read at least 1.03x the GB/s of the row layout */
    double row_gbs, x16_gbs;  /* n = 1 on `threads` threads, over a buffer larger than the last-level cache */
    int threads;              /* the online CPUs, at most 16 (a temporary pool, joined before returning) */
    double buffer_mb, ms;     /* the buffer measured and what the measurement took */
} qtts_interleave_calibration;

/* For QTTS_Q8_0 or QTTS_Q4_K: measured once per process per type on the
 * first call (64-96 MB, twice the last-level cache where that fits; about
 * 0.2-0.3 s; thread-safe), constant after. */
const qtts_interleave_calibration *qtts_interleave_calibrate(qtts_dtype type);

#endif
