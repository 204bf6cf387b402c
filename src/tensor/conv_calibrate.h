/* Whether this CPU's bf16 convolutions are faster than its f32 ones,
 * measured (not assumed from a cpuid flag): some CPUs with AVX-512 BF16 run
 * vdpbf16ps at half the f32 FMA rate, so bf16 can be the slower path. */
#ifndef QTTS_TENSOR_CONV_CALIBRATE_H
#define QTTS_TENSOR_CONV_CALIBRATE_H

typedef struct qtts_conv_calibration {
    int bf16_available; /* qtts_conv_bf16_supported() */
    int bf16_faster;    /* bf16 took at most 1/1.1 of the f32 time (0 when unavailable) */
    double f32_gflops, bf16_gflops; /* one thread, a decoder-sized conv; 0 when not measured */
    double ms;                      /* what the measurement took */
} qtts_conv_calibration;

/* Measured once per process (a few ms, one thread, on the first call;
 * thread-safe) and constant after. */
const qtts_conv_calibration *qtts_conv_calibrate(void);

#endif
