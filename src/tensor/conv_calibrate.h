/* Which decoder convolution path is fastest on this CPU, measured (not
 * assumed from a cpuid flag): some CPUs with AVX-512 BF16 run vdpbf16ps at
 * half the f32 FMA rate, so bf16 can be the slower path, and the Winograd
 * form trades multiplies for transform passes and memory traffic whose cost
 * differs between cores. */
#ifndef QTTS_TENSOR_CONV_CALIBRATE_H
#define QTTS_TENSOR_CONV_CALIBRATE_H

typedef struct qtts_conv_calibration {
    int bf16_available;  /* qtts_conv_bf16_supported() */
    int winograd_faster; /* the Winograd form took at most 1/1.1 of the direct f32 time */
    int bf16_faster;     /* bf16 took at most 1/1.1 of the faster f32 path's time (0 when unavailable) */
    int i16_available;   /* qtts_conv_i16_supported() */
    int i16_faster;      /* Winograd with int16 products took at most 1/1.1 of the f32 Winograd time */
    /* one thread, a decoder residual unit (a dilated 7-tap conv and a 1x1
     * conv), in direct-conv FLOPs per second (so the Winograd figure is the
     * rate it delivers, not what it computes); 0 when not measured */
    double f32_gflops, winograd_gflops, bf16_gflops, i16_gflops;
    double ms; /* what the measurement took */
} qtts_conv_calibration;

/* The decoder path `auto` takes with quantized LM weights: the fastest of
 * those measured faster than their f32 form (f32 if none). */
typedef enum { QTTS_CONV_PATH_F32, QTTS_CONV_PATH_WINOGRAD, QTTS_CONV_PATH_WINOGRAD_I16, QTTS_CONV_PATH_BF16 } qtts_conv_path;
qtts_conv_path qtts_conv_calibration_best(const qtts_conv_calibration *c);

/* Measures on the calling thread (~30 ms). The engine loader calls it once
 * (or reads its per-CPU cache) and passes the result to
 * qtts_decoder_precision_choose. */
void qtts_conv_measure(qtts_conv_calibration *c);

#endif
