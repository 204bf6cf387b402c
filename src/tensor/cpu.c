#include "tensor/cpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long read_xcr0(void) {
    unsigned eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return ((unsigned long long)edx << 32) | eax;
}

static qtts_cpu_features cpu_detect(void) {
    qtts_cpu_features f;
    memset(&f, 0, sizeof f);
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    int fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    if (!osxsave || !avx) return f;
    unsigned long long xcr0 = read_xcr0();
    int ymm_ok = (xcr0 & 0x6) == 0x6;    /* SSE + AVX state saved by the OS */
    int zmm_ok = (xcr0 & 0xe6) == 0xe6;  /* + opmask, ZMM_Hi256, Hi16_ZMM */
    if (!ymm_ok) return f;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf < 7) return f;
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = (b >> 5) & 1;
    f.fma = fma;
    f.f16c = f16c;
    if (zmm_ok) {
        f.avx512f = (b >> 16) & 1;
        f.avx512dq = (b >> 17) & 1;
        f.avx512bw = (b >> 30) & 1;
        f.avx512vl = (b >> 31) & 1;
        f.avx512vnni = (c >> 11) & 1;
        unsigned a1, b1, c1, d1;
        __cpuid_count(7, 1, a1, b1, c1, d1);
        (void)b1, (void)c1, (void)d1;
        f.avx512bf16 = (a1 >> 5) & 1;
    }
    return f;
}
#else
static qtts_cpu_features cpu_detect(void) {
    qtts_cpu_features f;
    memset(&f, 0, sizeof f);
    return f;
}
#endif

int qtts_isa_supported(const qtts_cpu_features *f, qtts_isa isa) {
    switch (isa) {
    case QTTS_ISA_SCALAR: return 1;
    case QTTS_ISA_AVX2: return f->avx2 && f->fma && f->f16c;
    case QTTS_ISA_AVX512:
        return qtts_isa_supported(f, QTTS_ISA_AVX2) && f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq &&
               f->avx512vnni;
    }
    return 0;
}

qtts_isa qtts_isa_select(const qtts_cpu_features *f, const char *cap) {
    qtts_isa best = QTTS_ISA_SCALAR;
    if (qtts_isa_supported(f, QTTS_ISA_AVX2)) best = QTTS_ISA_AVX2;
    if (qtts_isa_supported(f, QTTS_ISA_AVX512)) best = QTTS_ISA_AVX512;
    if (cap && *cap) {
        qtts_isa limit = best;
        if (!strcasecmp(cap, "scalar")) limit = QTTS_ISA_SCALAR;
        else if (!strcasecmp(cap, "avx2")) limit = QTTS_ISA_AVX2;
        else if (!strcasecmp(cap, "avx512")) limit = QTTS_ISA_AVX512;
        if (limit < best) best = limit;
    }
    return best;
}

const char *qtts_isa_name(qtts_isa isa) {
    switch (isa) {
    case QTTS_ISA_SCALAR: return "scalar";
    case QTTS_ISA_AVX2: return "avx2";
    case QTTS_ISA_AVX512: return "avx512";
    }
    return "?";
}

/* Written once under pthread_once, read-only afterwards. */
static pthread_once_t g_cpu_once = PTHREAD_ONCE_INIT;
static qtts_cpu_features g_cpu_features;
static qtts_isa g_cpu_isa;

static void cpu_init(void) {
    g_cpu_features = cpu_detect();
    g_cpu_isa = qtts_isa_select(&g_cpu_features, getenv("QTTS_ISA"));
}

qtts_isa qtts_cpu_isa(void) {
    pthread_once(&g_cpu_once, cpu_init);
    return g_cpu_isa;
}

const qtts_cpu_features *qtts_cpu_features_get(void) {
    pthread_once(&g_cpu_once, cpu_init);
    return &g_cpu_features;
}
