/* The x86 intrinsics, for the kernels built with ISA flags (*_avx2.c,
 * *_avx512.c). A test build configured with -DQTTS_EMULATE_AVX512=ON
 * compiles the AVX-512 kernels against SIMDe's portable versions of the same
 * intrinsics (QTTS_SIMDE_AVX512), so their twin tests run, slowly, on a CPU
 * without AVX-512; every other build uses the compiler's own. */
#ifndef QTTS_TENSOR_X86_SIMD_H
#define QTTS_TENSOR_X86_SIMD_H

#ifdef QTTS_SIMDE_AVX512
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <limits.h>
#include <math.h>
#include <simde/x86/avx512.h>
#include <stdint.h>
#include <string.h>

/* The few intrinsics the kernels use that SIMDe 0.7 (Debian 12) lacks, lane
 * by lane with the hardware's results (out-of-range conversions give
 * INT32_MIN; masked loads never touch the masked-off memory). */
static inline simde__m512 qtts_emu_cvtph_ps(simde__m256i a) {
    uint16_t h[16];
    float f[16];
    simde__m512 r;
    memcpy(h, &a, sizeof h);
    for (int i = 0; i < 16; i++) f[i] = _cvtsh_ss(h[i]);
    memcpy(&r, f, sizeof r);
    return r;
}
static inline simde__m512i qtts_emu_cvtps_epi32_rounded(simde__m512 a, int truncate) {
    float f[16];
    int32_t q[16];
    simde__m512i r;
    memcpy(f, &a, sizeof f);
    for (int i = 0; i < 16; i++) {
        const float v = truncate ? truncf(f[i]) : nearbyintf(f[i]);
        q[i] = v >= -2147483648.0f && v < 2147483648.0f ? (int32_t)v : INT32_MIN;
    }
    memcpy(&r, q, sizeof r);
    return r;
}
static inline simde__m512 qtts_emu_maskz_loadu_ps(uint16_t k, const void *p) {
    float f[16];
    simde__m512 r;
    for (int i = 0; i < 16; i++) f[i] = (k >> i) & 1 ? ((const float *)p)[i] : 0.0f;
    memcpy(&r, f, sizeof r);
    return r;
}
static inline simde__m256i qtts_emu_maskz_loadu_epi16(uint16_t k, const void *p) {
    int16_t v[16];
    simde__m256i r;
    for (int i = 0; i < 16; i++) v[i] = (k >> i) & 1 ? ((const int16_t *)p)[i] : 0;
    memcpy(&r, v, sizeof r);
    return r;
}
static inline simde__m512i qtts_emu_cvtepu16_epi32(simde__m256i a) {
    uint16_t h[16];
    int32_t v[16];
    simde__m512i r;
    memcpy(h, &a, sizeof h);
    for (int i = 0; i < 16; i++) v[i] = h[i];
    memcpy(&r, v, sizeof r);
    return r;
}
/* GCC's order: the two 256-bit halves, then 128-bit halves, then pairs */
static inline float qtts_emu_reduce_add_ps(simde__m512 a) {
    float f[16], s8[8], s4[4];
    memcpy(f, &a, sizeof f);
    for (int i = 0; i < 8; i++) s8[i] = f[8 + i] + f[i];
    for (int i = 0; i < 4; i++) s4[i] = s8[4 + i] + s8[i];
    const float x0 = s4[0] + s4[2], x1 = s4[1] + s4[3];
    return x0 + x1;
}
static inline simde__m256i qtts_emu_cvtps_ph(simde__m512 a) { /* round to nearest even */
    float f[16];
    uint16_t h[16];
    simde__m256i r;
    memcpy(f, &a, sizeof f);
    for (int i = 0; i < 16; i++) h[i] = _cvtss_sh(f[i], 0);
    memcpy(&r, h, sizeof r);
    return r;
}
static inline simde__m512i qtts_emu_maskz_loadu_epi16_512(uint32_t k, const void *p) {
    int16_t v[32];
    simde__m512i r;
    for (int i = 0; i < 32; i++) v[i] = (k >> i) & 1 ? ((const int16_t *)p)[i] : 0;
    memcpy(&r, v, sizeof r);
    return r;
}
static inline void qtts_emu_mask_storeu_ps(void *p, uint16_t k, simde__m512 a) {
    float f[16];
    memcpy(f, &a, sizeof f);
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1) ((float *)p)[i] = f[i];
}
static inline void qtts_emu_mask_storeu_epi16_256(void *p, uint16_t k, simde__m256i a) {
    int16_t v[16];
    memcpy(v, &a, sizeof v);
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1) ((int16_t *)p)[i] = v[i];
}
static inline simde__m256 qtts_emu_extractf32x8_ps(simde__m512 a, int hi) {
    simde__m256 r;
    memcpy(&r, (const char *)&a + (hi ? 32 : 0), sizeof r);
    return r;
}
static inline simde__m512i qtts_emu_maskz_loadu_epi32(uint16_t k, const void *p) {
    int32_t v[16];
    simde__m512i r;
    for (int i = 0; i < 16; i++) v[i] = (k >> i) & 1 ? ((const int32_t *)p)[i] : 0;
    memcpy(&r, v, sizeof r);
    return r;
}
static inline simde__m512 qtts_emu_cvtepi32_ps(simde__m512i a) {
    int32_t v[16];
    float f[16];
    simde__m512 r;
    memcpy(v, &a, sizeof v);
    for (int i = 0; i < 16; i++) f[i] = (float)v[i];
    memcpy(&r, f, sizeof r);
    return r;
}
/* vcvtneps2bf16: round to nearest even, denormal inputs as zeros, NaNs quiet */
static inline simde__m256i qtts_emu_cvtneps_pbh(simde__m512 a) {
    uint32_t u[16];
    uint16_t h[16];
    simde__m256i r;
    memcpy(u, &a, sizeof u);
    for (int i = 0; i < 16; i++) {
        if ((u[i] & 0x7FFFFFFFu) > 0x7F800000u) h[i] = (uint16_t)((u[i] >> 16) | 0x40);
        else if (!(u[i] & 0x7F800000u)) h[i] = (uint16_t)((u[i] >> 16) & 0x8000);
        else h[i] = (uint16_t)((u[i] + 0x7FFFu + ((u[i] >> 16) & 1)) >> 16);
    }
    memcpy(&r, h, sizeof r);
    return r;
}
static inline void qtts_emu_mask_storeu_epi32(void *p, uint16_t k, simde__m512i a) {
    int32_t v[16];
    memcpy(v, &a, sizeof v);
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1) ((int32_t *)p)[i] = v[i];
}
static inline simde__m256i qtts_emu_mask_sub_epi8(simde__m256i src, uint32_t k, simde__m256i a, simde__m256i b) {
    int8_t s[32], x[32], y[32];
    simde__m256i r;
    memcpy(s, &src, 32);
    memcpy(x, &a, 32);
    memcpy(y, &b, 32);
    for (int i = 0; i < 32; i++)
        if ((k >> i) & 1) s[i] = (int8_t)(uint8_t)((uint8_t)x[i] - (uint8_t)y[i]);
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
static inline simde__m512i qtts_emu_cvtepu8_epi16(simde__m256i a) {
    uint8_t b[32];
    int16_t v[32];
    simde__m512i r;
    memcpy(b, &a, 32);
    for (int i = 0; i < 32; i++) v[i] = b[i];
    memcpy(&r, v, sizeof r);
    return r;
}
static inline simde__m512i qtts_emu_cvtepu8_epi32(simde__m128i a) {
    uint8_t b[16];
    int32_t v[16];
    simde__m512i r;
    memcpy(b, &a, 16);
    for (int i = 0; i < 16; i++) v[i] = b[i];
    memcpy(&r, v, sizeof r);
    return r;
}
static inline simde__m512i qtts_emu_srai_epi32(simde__m512i a, int n) {
    int32_t v[16];
    simde__m512i r;
    memcpy(v, &a, sizeof v);
    for (int i = 0; i < 16; i++) /* arithmetic shifts (GCC's >> on a negative int) */
        v[i] = n > 31 ? (v[i] < 0 ? -1 : 0) : (int32_t)(v[i] >> n);
    memcpy(&r, v, sizeof r);
    return r;
}
static inline simde__m128i qtts_emu_cvtepi32_epi8(simde__m512i a) { /* truncating */
    int32_t v[16];
    int8_t b[16];
    simde__m128i r;
    memcpy(v, &a, sizeof v);
    for (int i = 0; i < 16; i++) b[i] = (int8_t)(uint8_t)(uint32_t)v[i];
    memcpy(&r, b, 16);
    return r;
}
static inline float qtts_emu_max(float a, float b) { return a > b ? a : b; } /* maxps(a, b) */
static inline float qtts_emu_reduce_max_ps(simde__m512 a) { /* GCC's tree, as for the sum */
    float f[16], s8[8], s4[4];
    memcpy(f, &a, sizeof f);
    for (int i = 0; i < 8; i++) s8[i] = qtts_emu_max(f[8 + i], f[i]);
    for (int i = 0; i < 4; i++) s4[i] = qtts_emu_max(s8[4 + i], s8[i]);
    return qtts_emu_max(qtts_emu_max(s4[0], s4[2]), qtts_emu_max(s4[1], s4[3]));
}
static inline int qtts_emu_reduce_add_epi32(simde__m512i a) { /* wrapping, like vpaddd */
    int32_t v[16];
    uint32_t s = 0;
    memcpy(v, &a, sizeof v);
    for (int i = 0; i < 16; i++) s += (uint32_t)v[i];
    return (int)s;
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
#undef _mm512_roundscale_ps
#define _mm512_roundscale_ps(a, imm) qtts_emu_roundscale_ps((a), (imm))
#define _mm512_reduce_add_epi32(a) qtts_emu_reduce_add_epi32(a)
#define _mm512_cvtepi32_epi8(a) qtts_emu_cvtepi32_epi8(a)
#define _mm512_reduce_max_ps(a) qtts_emu_reduce_max_ps(a)
#define _mm512_cvtepu8_epi16(a) qtts_emu_cvtepu8_epi16(a)
#define _mm512_cvtepu8_epi32(a) qtts_emu_cvtepu8_epi32(a)
#define _mm512_srai_epi32(a, n) qtts_emu_srai_epi32((a), (n))
#define _mm512_cvtneps_pbh(a) qtts_emu_cvtneps_pbh(a)
#define _mm512_mask_storeu_epi32(p, k, a) qtts_emu_mask_storeu_epi32((p), (uint16_t)(k), (a))
#define _mm256_mask_sub_epi8(src, k, a, b) qtts_emu_mask_sub_epi8((src), (uint32_t)(k), (a), (b))
#define _mm512_zextps256_ps512(a) qtts_emu_zextps256_ps512(a)
#define _mm512_maskz_loadu_epi32(k, p) qtts_emu_maskz_loadu_epi32((uint16_t)(k), (p))
#define _mm512_cvtepi32_ps(a) qtts_emu_cvtepi32_ps(a)
#define _mm512_cvtps_ph(a, rounding) qtts_emu_cvtps_ph(a)
#define _mm512_maskz_loadu_epi16(k, p) qtts_emu_maskz_loadu_epi16_512((uint32_t)(k), (p))
#define _mm512_mask_storeu_ps(p, k, a) qtts_emu_mask_storeu_ps((p), (uint16_t)(k), (a))
#define _mm256_mask_storeu_epi16(p, k, a) qtts_emu_mask_storeu_epi16_256((p), (uint16_t)(k), (a))
#define _mm512_extractf32x8_ps(a, hi) qtts_emu_extractf32x8_ps((a), (hi))
#define _mm512_cvtph_ps(a) qtts_emu_cvtph_ps(a)
#define _mm512_cvtps_epi32(a) qtts_emu_cvtps_epi32_rounded((a), 0)
#define _mm512_cvttps_epi32(a) qtts_emu_cvtps_epi32_rounded((a), 1)
#define _mm512_maskz_loadu_ps(k, p) qtts_emu_maskz_loadu_ps((uint16_t)(k), (p))
#define _mm256_maskz_loadu_epi16(k, p) qtts_emu_maskz_loadu_epi16((uint16_t)(k), (p))
#define _mm512_cvtepu16_epi32(a) qtts_emu_cvtepu16_epi32(a)
#define _mm512_reduce_add_ps(a) qtts_emu_reduce_add_ps(a)
#else
#include <immintrin.h>
#endif

/* 1 where the AVX-512 intrinsics are available to this file */
#if defined(__AVX512F__) || defined(QTTS_SIMDE_AVX512)
#define QTTS_HAVE_AVX512_INTRINSICS 1
#else
#define QTTS_HAVE_AVX512_INTRINSICS 0
#endif

#endif
