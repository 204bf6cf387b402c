/* Run-time CPU feature detection and the choice of kernel family (ISA).
 * Kernels in *_avx2.c / *_avx512.c are compiled with those ISA flags and must
 * only be called when qtts_cpu_isa() (or an explicitly chosen, supported ISA)
 * says so. QTTS_ISA=scalar|avx2|avx512 in the environment caps the choice
 * (for tests and benchmarks); it can never select an unsupported ISA. */
#ifndef QTTS_TENSOR_CPU_H
#define QTTS_TENSOR_CPU_H

#include <stdbool.h>

typedef struct qtts_cpu_features {
    bool avx2, fma, f16c;                          /* with OS support for YMM state */
    bool avx512f, avx512bw, avx512vl, avx512dq;    /* with OS support for ZMM/opmask state */
    bool avx512vnni, avx512bf16;
} qtts_cpu_features;

typedef enum qtts_isa {
    QTTS_ISA_SCALAR = 0,
    QTTS_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C */
    QTTS_ISA_AVX512 = 2, /* AVX-512 F/BW/VL/DQ + VNNI (BF16 optional, see linear.h) */
} qtts_isa;

/* Best ISA the features allow, capped by `cap` (a QTTS_ISA value such as
 * "avx2"; NULL or "" = no cap; unknown names are ignored). Pure; exported
 * for tests (the library uses qtts_cpu_isa). */
qtts_isa qtts_isa_select(const qtts_cpu_features *f, const char *cap);

/* 1 if the features allow running kernels of `isa`. */
int qtts_isa_supported(const qtts_cpu_features *f, qtts_isa isa);

/* Detection (cpuid/xgetbv; all false on non-x86) + QTTS_ISA, computed once
 * per process (pthread_once) and constant after. */
qtts_isa qtts_cpu_isa(void);
const qtts_cpu_features *qtts_cpu_features_get(void);

const char *qtts_isa_name(qtts_isa isa);

#endif
