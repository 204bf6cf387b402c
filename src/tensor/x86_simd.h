/* The x86 intrinsics, for the kernels built with ISA flags (*_avx2.c,
 * *_avxvnni.c, *_avx512.c). A test build configured with -DQTTS_EMULATE_AVX512=ON
 * compiles the AVX-512 kernels against SIMDe's portable versions of the same
 * intrinsics (QTTS_SIMDE_AVX512), so their twin tests run, slowly, on a CPU
 * without AVX-512; every other build uses the compiler's own. */
#ifndef QTTS_TENSOR_X86_SIMD_H
#define QTTS_TENSOR_X86_SIMD_H

#ifdef QTTS_SIMDE_AVX512
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <math.h>
#include <simde/x86/avx512.h>
#include <stdint.h>
#include <string.h>

/* Stand-ins for the intrinsics the kernels use that SIMDe 0.7 (Debian 12)
 * lacks or gets wrong, lane by lane with the hardware's results. */

/* name(a): vin -> vout, lane i of n: out[i] = expr of x = in[i] */
#define QTTS_EMU_LANEWISE(name, vin, tin, vout, tout, n, expr)                                                  \
    static inline vout name(vin a) {                                                                            \
        tin in_[n];                                                                                             \
        tout out_[n];                                                                                           \
        vout r;                                                                                                 \
        memcpy(in_, &a, sizeof in_);                                                                            \
        for (int i = 0; i < (n); i++) {                                                                         \
            const tin x = in_[i];                                                                               \
            out_[i] = (expr);                                                                                   \
        }                                                                                                       \
        memcpy(&r, out_, sizeof out_);                                                                          \
        return r;                                                                                               \
    }

/* vcvtps2dq / vcvttps2dq: out of range (and NaN) -> INT32_MIN */
static inline int32_t qtts_emu_f2i(float v) {
    return v >= -2147483648.0f && v < 2147483648.0f ? (int32_t)v : INT32_MIN;
}
/* vcvtneps2bf16: round to nearest even, denormal inputs as zeros, NaNs quiet */
static inline uint16_t qtts_emu_bf16(uint32_t u) {
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40);
    if (!(u & 0x7F800000u)) return (uint16_t)((u >> 16) & 0x8000);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1)) >> 16);
}

QTTS_EMU_LANEWISE(qtts_emu_cvtph_ps, simde__m256i, uint16_t, simde__m512, float, 16, _cvtsh_ss(x))
QTTS_EMU_LANEWISE(qtts_emu_cvtps_ph, simde__m512, float, simde__m256i, uint16_t, 16, _cvtss_sh(x, 0)) /* nearest even */
QTTS_EMU_LANEWISE(qtts_emu_cvtps_epi32, simde__m512, float, simde__m512i, int32_t, 16, qtts_emu_f2i(nearbyintf(x)))
QTTS_EMU_LANEWISE(qtts_emu_cvttps_epi32, simde__m512, float, simde__m512i, int32_t, 16, qtts_emu_f2i(truncf(x)))
QTTS_EMU_LANEWISE(qtts_emu_cvtepi32_ps, simde__m512i, int32_t, simde__m512, float, 16, (float)x)
QTTS_EMU_LANEWISE(qtts_emu_cvtepu16_epi32, simde__m256i, uint16_t, simde__m512i, int32_t, 16, x)
QTTS_EMU_LANEWISE(qtts_emu_cvtepu8_epi16, simde__m256i, uint8_t, simde__m512i, int16_t, 32, x)
QTTS_EMU_LANEWISE(qtts_emu_cvtepu8_epi32, simde__m128i, uint8_t, simde__m512i, int32_t, 16, x)
QTTS_EMU_LANEWISE(qtts_emu_cvtepi32_epi8, simde__m512i, uint32_t, simde__m128i, int8_t, 16, (int8_t)(uint8_t)x)
QTTS_EMU_LANEWISE(qtts_emu_cvtneps_pbh, simde__m512, uint32_t, simde__m256i, uint16_t, 16, qtts_emu_bf16(x))
#define _mm512_cvtph_ps(a) qtts_emu_cvtph_ps(a)
#define _mm512_cvtps_ph(a, rounding) qtts_emu_cvtps_ph(a)
#define _mm512_cvtps_epi32(a) qtts_emu_cvtps_epi32(a)
#define _mm512_cvttps_epi32(a) qtts_emu_cvttps_epi32(a)
#define _mm512_cvtepi32_ps(a) qtts_emu_cvtepi32_ps(a)
#define _mm512_cvtepu16_epi32(a) qtts_emu_cvtepu16_epi32(a)
#define _mm512_cvtepu8_epi16(a) qtts_emu_cvtepu8_epi16(a)
#define _mm512_cvtepu8_epi32(a) qtts_emu_cvtepu8_epi32(a)
#define _mm512_cvtepi32_epi8(a) qtts_emu_cvtepi32_epi8(a)
#define _mm512_cvtneps_pbh(a) qtts_emu_cvtneps_pbh(a)

/* Masked loads and stores: lanes of `size` bytes whose bit in k is set;
 * the others are zero (loads) or left alone (stores), their memory never
 * touched. */
static inline void qtts_emu_mask_load(void *dst, const void *p, uint64_t k, int lanes, size_t size) {
    memset(dst, 0, (size_t)lanes * size);
    for (int i = 0; i < lanes; i++)
        if ((k >> i) & 1) memcpy((char *)dst + (size_t)i * size, (const char *)p + (size_t)i * size, size);
}
static inline void qtts_emu_mask_store(void *p, const void *src, uint64_t k, int lanes, size_t size) {
    for (int i = 0; i < lanes; i++)
        if ((k >> i) & 1) memcpy((char *)p + (size_t)i * size, (const char *)src + (size_t)i * size, size);
}
/* name(k, p) / name(p, k, a): the typed forms, `lanes` lanes of `size` bytes */
#define QTTS_EMU_MASKZ_LOAD(name, vec, kt, lanes, size)                                                         \
    static inline vec name(kt k, const void *p) {                                                               \
        vec r;                                                                                                  \
        qtts_emu_mask_load(&r, p, k, lanes, size);                                                              \
        return r;                                                                                               \
    }
#define QTTS_EMU_MASK_STORE(name, vec, kt, lanes, size)                                                         \
    static inline void name(void *p, kt k, vec a) { qtts_emu_mask_store(p, &a, k, lanes, size); }
QTTS_EMU_MASKZ_LOAD(qtts_emu_maskz_loadu_ps, simde__m512, uint16_t, 16, 4)
QTTS_EMU_MASKZ_LOAD(qtts_emu_maskz_loadu_epi32, simde__m512i, uint16_t, 16, 4)
QTTS_EMU_MASKZ_LOAD(qtts_emu_maskz_loadu_epi16_512, simde__m512i, uint32_t, 32, 2)
QTTS_EMU_MASKZ_LOAD(qtts_emu_maskz_loadu_epi16_256, simde__m256i, uint16_t, 16, 2)
QTTS_EMU_MASK_STORE(qtts_emu_mask_storeu_ps, simde__m512, uint16_t, 16, 4)
QTTS_EMU_MASK_STORE(qtts_emu_mask_storeu_epi32, simde__m512i, uint16_t, 16, 4)
QTTS_EMU_MASK_STORE(qtts_emu_mask_storeu_epi16_256, simde__m256i, uint16_t, 16, 2)
#define _mm512_maskz_loadu_ps(k, p) qtts_emu_maskz_loadu_ps((uint16_t)(k), (p))
#define _mm512_maskz_loadu_epi32(k, p) qtts_emu_maskz_loadu_epi32((uint16_t)(k), (p))
#define _mm512_maskz_loadu_epi16(k, p) qtts_emu_maskz_loadu_epi16_512((uint32_t)(k), (p))
#define _mm256_maskz_loadu_epi16(k, p) qtts_emu_maskz_loadu_epi16_256((uint16_t)(k), (p))
#define _mm512_mask_storeu_ps(p, k, a) qtts_emu_mask_storeu_ps((p), (uint16_t)(k), (a))
#define _mm512_mask_storeu_epi32(p, k, a) qtts_emu_mask_storeu_epi32((p), (uint16_t)(k), (a))
#define _mm256_mask_storeu_epi16(p, k, a) qtts_emu_mask_storeu_epi16_256((p), (uint16_t)(k), (a))

/* Reductions, in GCC's order: the two 256-bit halves, then 128-bit halves, then pairs */
static inline float qtts_emu_max(float a, float b) { return a > b ? a : b; } /* maxps(a, b) */
static inline float qtts_emu_reduce_add_ps(simde__m512 a) {
    float f[16], s8[8], s4[4];
    memcpy(f, &a, sizeof f);
    for (int i = 0; i < 8; i++) s8[i] = f[8 + i] + f[i];
    for (int i = 0; i < 4; i++) s4[i] = s8[4 + i] + s8[i];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}
static inline float qtts_emu_reduce_max_ps(simde__m512 a) {
    float f[16], s8[8], s4[4];
    memcpy(f, &a, sizeof f);
    for (int i = 0; i < 8; i++) s8[i] = qtts_emu_max(f[8 + i], f[i]);
    for (int i = 0; i < 4; i++) s4[i] = qtts_emu_max(s8[4 + i], s8[i]);
    return qtts_emu_max(qtts_emu_max(s4[0], s4[2]), qtts_emu_max(s4[1], s4[3]));
}
static inline int qtts_emu_reduce_add_epi32(simde__m512i a) { /* wrapping, like vpaddd */
    uint32_t v[16], s = 0;
    memcpy(v, &a, sizeof v);
    for (int i = 0; i < 16; i++) s += v[i];
    return (int)s;
}
#define _mm512_reduce_add_ps(a) qtts_emu_reduce_add_ps(a)
#define _mm512_reduce_max_ps(a) qtts_emu_reduce_max_ps(a)
#define _mm512_reduce_add_epi32(a) qtts_emu_reduce_add_epi32(a)

/* The rest: each its own shape */
static inline simde__m512i qtts_emu_srai_epi32(simde__m512i a, int n) {
    int32_t v[16];
    simde__m512i r;
    memcpy(v, &a, sizeof v);
    for (int i = 0; i < 16; i++) /* arithmetic shifts (GCC's >> on a negative int) */
        v[i] = n > 31 ? (v[i] < 0 ? -1 : 0) : (int32_t)(v[i] >> n);
    memcpy(&r, v, sizeof r);
    return r;
}
static inline simde__m256i qtts_emu_mask_sub_epi8(simde__m256i src, uint32_t k, simde__m256i a, simde__m256i b) {
    uint8_t s[32], x[32], y[32];
    simde__m256i r;
    memcpy(s, &src, 32);
    memcpy(x, &a, 32);
    memcpy(y, &b, 32);
    for (int i = 0; i < 32; i++)
        if ((k >> i) & 1) s[i] = (uint8_t)(x[i] - y[i]);
    memcpy(&r, s, 32);
    return r;
}
static inline simde__m512 qtts_emu_zextps256_ps512(simde__m256 a) {
    float f[16] = {0};
    simde__m512 r;
    memcpy(f, &a, 32);
    memcpy(&r, f, sizeof r);
    return r;
}
static inline simde__m256 qtts_emu_extractf32x8_ps(simde__m512 a, int hi) {
    simde__m256 r;
    memcpy(&r, (const char *)&a + (hi ? 32 : 0), sizeof r);
    return r;
}
/* SIMDe 0.7.4's rounds some values to the wrong integer (floor(-1.25) -> -1.5);
 * only scale 0 (imm bits 7:4) is used here */
static inline simde__m512 qtts_emu_roundscale_ps(simde__m512 a, int imm) {
    float f[16];
    simde__m512 r;
    memcpy(f, &a, sizeof f);
    for (int i = 0; i < 16; i++) {
        switch (imm & 4 ? 0 : imm & 3) {
        case 0: f[i] = nearbyintf(f[i]); break; /* the default MXCSR mode: nearest even */
        case 1: f[i] = floorf(f[i]); break;
        case 2: f[i] = ceilf(f[i]); break;
        default: f[i] = truncf(f[i]); break;
        }
    }
    memcpy(&r, f, sizeof r);
    return r;
}
#define _mm512_srai_epi32(a, n) qtts_emu_srai_epi32((a), (n))
#define _mm256_mask_sub_epi8(src, k, a, b) qtts_emu_mask_sub_epi8((src), (uint32_t)(k), (a), (b))
#define _mm512_zextps256_ps512(a) qtts_emu_zextps256_ps512(a)
#define _mm512_extractf32x8_ps(a, hi) qtts_emu_extractf32x8_ps((a), (hi))
#undef _mm512_roundscale_ps
#define _mm512_roundscale_ps(a, imm) qtts_emu_roundscale_ps((a), (imm))
#else
#include <immintrin.h>
#endif

#endif
