/* ISA-specific loops of the machine probe (probe_avx2.c, probe_avx512.c,
 * probe_neon.c, probe_neon_bf16.c);
 * call only after a cpuid check (tensor/cpu.h). */
#ifndef QTTS_BENCH_PROBE_KERNELS_H
#define QTTS_BENCH_PROBE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* Sum of the first n floats (n a multiple of 64; a tail under 64 may be skipped), streamed with vector loads. */
float qtts_probe_read_avx2(const float *p, size_t n);
float qtts_probe_read_avx512(const float *p, size_t n);
float qtts_probe_read_neon(const float *p, size_t n);
/* iters rounds of QTTS_PROBE_CHAINS_<ISA> independent vector FMAs; returns a
 * value depending on every chain (so none is optimised away). */
float qtts_probe_fma_avx2(int64_t iters);
float qtts_probe_fma_avx512(int64_t iters);
float qtts_probe_fma_neon(int64_t iters);
/* The same with vdpbf16ps (AVX-512 BF16): 32 products per instruction. */
float qtts_probe_bf16dot_avx512(int64_t iters);
/* BFDOT (Arm FEAT_BF16): 8 products per instruction. */
float qtts_probe_bf16dot_neon(int64_t iters);

/* Independent FMA chains per round: enough to cover the FMA latency on every
 * FMA pipe (4-cycle latency x 2 pipes on current x86 cores, with margin),
 * and few enough to stay in registers (16 ymm / 32 zmm, 2 held constants). */
/* NEON: 4-cycle FMA latency x up to 4 pipes on the widest cores needs 16
 * chains; 32 vector registers hold them. */
enum { QTTS_PROBE_CHAINS_AVX2 = 12, QTTS_PROBE_CHAINS_AVX512 = 16, QTTS_PROBE_CHAINS_NEON = 16 };

#endif
