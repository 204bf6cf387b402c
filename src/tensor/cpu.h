/* Run-time CPU feature detection and the choice of kernel family (ISA).
 * Kernels in *_avx2.c / *_avx512.c / *_neon_dotprod.c / *_neon_bf16.c are
 * compiled with those ISA flags and must only be called when qtts_cpu_isa()
 * (or an explicitly chosen, supported ISA) says so; *_neon.c needs only the
 * AArch64 baseline. QTTS_ISA=scalar|avx2|avx512 (x86-64) or
 * scalar|neon|dotprod|neon-bf16 (AArch64) in the environment caps the choice
 * (for tests and benchmarks); it can never select an unsupported ISA. */
#ifndef QTTS_TENSOR_CPU_H
#define QTTS_TENSOR_CPU_H

#include <stdbool.h>

typedef struct qtts_cpu_features {
    bool avx2, fma, f16c;                          /* with OS support for YMM state */
    bool avx512f, avx512bw, avx512vl, avx512dq;    /* with OS support for ZMM/opmask state */
    bool avx512vnni, avx512bf16;
    bool avxvnni; /* VEX vpdpwssd/vpdpbusd on 256-bit vectors, AVX-512 or not */
    /* AArch64, from getauxval(AT_HWCAP/AT_HWCAP2) on Linux, sysctl on macOS */
    bool neon;    /* Advanced SIMD (every ARMv8-A core) */
    bool dotprod; /* SDOT/UDOT (FEAT_DotProd, optional from Armv8.2-A) */
    bool bf16;    /* BFDOT/BFMMLA (FEAT_BF16, optional from Armv8.2-A, required from Armv8.6-A) */
    bool i8mm;    /* SMMLA/UMMLA (FEAT_I8MM; detected and reported, no kernel uses it yet) */
    bool fp16;    /* half-precision arithmetic (FEAT_FP16; reported only) */
} qtts_cpu_features;

typedef enum qtts_isa {
    QTTS_ISA_SCALAR = 0,
    QTTS_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C */
    QTTS_ISA_AVX512 = 2, /* AVX-512 F/BW/VL/DQ + VNNI (BF16 optional, see linear.h) */
    QTTS_ISA_NEON = 3,        /* AArch64 Advanced SIMD */
    QTTS_ISA_NEON_DOTPROD = 4, /* + SDOT/UDOT */
    QTTS_ISA_NEON_BF16 = 5,   /* + SDOT/UDOT + BFDOT (bf16 convolutions) */
    QTTS_ISA_COUNT
} qtts_isa;

/* The next ISA below `isa` in its family (avx512 -> avx2 -> scalar,
 * neon-bf16 -> dotprod -> neon -> scalar); scalar stays scalar. */
qtts_isa qtts_isa_lower(qtts_isa isa);

/* Best ISA the features allow, capped by `cap` (a QTTS_ISA value such as
 * "avx2"; NULL or "" = no cap; unknown names, and names of another family,
 * are ignored). Pure; exported for tests (the library uses qtts_cpu_isa). */
qtts_isa qtts_isa_select(const qtts_cpu_features *f, const char *cap);

/* 1 if the features allow running kernels of `isa`. */
int qtts_isa_supported(const qtts_cpu_features *f, qtts_isa isa);

/* `isa`, or the first ISA below it in its family that this CPU supports
 * (scalar at the bottom): what a kernel asked for `isa` may run. */
qtts_isa qtts_isa_usable(qtts_isa isa);

/* Detection (cpuid/xgetbv on x86-64, hwcaps or sysctl on AArch64; all false
 * elsewhere) + QTTS_ISA, computed once per process (pthread_once) and
 * constant after. */
qtts_isa qtts_cpu_isa(void);
const qtts_cpu_features *qtts_cpu_features_get(void);

const char *qtts_isa_name(qtts_isa isa);

/* "avx2 fma f16c avx512f ..." or "neon dotprod bf16 ...": the detected
 * features (not capped by QTTS_ISA), for `qtts info` and test logs. */
void qtts_cpu_features_describe(const qtts_cpu_features *f, char *buf, unsigned long n);

#endif
