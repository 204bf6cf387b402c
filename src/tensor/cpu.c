#include "tensor/cpu.h"

#include <pthread.h>
#include <stdio.h>
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
    int ymm_ok = (xcr0 & 0x6) == 0x6; /* SSE + AVX state saved by the OS */
    int zmm_ok = (xcr0 & 0xe6) == 0xe6; /* + opmask, ZMM_Hi256, Hi16_ZMM */
    if (!ymm_ok) return f;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf < 7) return f;
    __cpuid_count(7, 0, a, b, c, d);
    const unsigned max_sub7 = a;
    unsigned a71 = 0; /* leaf 7 subleaf 1: AVX-VNNI (bit 4), AVX512_BF16 (bit 5) */
    if (max_sub7 >= 1) {
        unsigned b1, c1, d1;
        __cpuid_count(7, 1, a71, b1, c1, d1);
        (void)b1, (void)c1, (void)d1;
    }
    f.avx2 = (b >> 5) & 1;
    f.fma = fma;
    f.f16c = f16c;
    f.avxvnni = f.avx2 && ((a71 >> 4) & 1);
    if (zmm_ok) {
        f.avx512f = (b >> 16) & 1;
        f.avx512dq = (b >> 17) & 1;
        f.avx512bw = (b >> 30) & 1;
        f.avx512vl = (b >> 31) & 1;
        f.avx512vnni = (c >> 11) & 1;
        f.avx512bf16 = (a71 >> 5) & 1;
    }
#ifdef QTTS_EMULATE_AVX512
    /* a test build whose AVX-512 kernels run on SIMDe (CMake QTTS_EMULATE_AVX512) */
    if (f.avx2 && f.fma && f.f16c)
        f.avx512f = f.avx512dq = f.avx512bw = f.avx512vl = f.avx512vnni = f.avx512bf16 = f.avxvnni = true;
#endif
    return f;
}
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>

/* Bit numbers from the kernel's arch/arm64/include/uapi/asm/hwcap.h (spelled
 * out so older libc headers build). */
enum {
    ARM_HWCAP_ASIMD = 1 << 1,
    ARM_HWCAP_ASIMDHP = 1 << 10,
    ARM_HWCAP_ASIMDDP = 1 << 20,
    ARM_HWCAP2_I8MM = 1 << 13,
    ARM_HWCAP2_BF16 = 1 << 14,
};

static qtts_cpu_features cpu_detect(void) {
    qtts_cpu_features f;
    memset(&f, 0, sizeof f);
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    f.neon = (hw & ARM_HWCAP_ASIMD) != 0;
    f.fp16 = f.neon && (hw & ARM_HWCAP_ASIMDHP);
    f.dotprod = f.neon && (hw & ARM_HWCAP_ASIMDDP);
    f.i8mm = f.neon && (hw2 & ARM_HWCAP2_I8MM);
    f.bf16 = f.neon && (hw2 & ARM_HWCAP2_BF16);
    return f;
}
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>

static bool sysctl_flag(const char *name) {
    int v = 0;
    size_t len = sizeof v;
    return sysctlbyname(name, &v, &len, NULL, 0) == 0 && v != 0;
}

static qtts_cpu_features cpu_detect(void) {
    qtts_cpu_features f;
    memset(&f, 0, sizeof f);
    f.neon = true; /* every Apple arm64 core */
    f.fp16 = sysctl_flag("hw.optional.arm.FEAT_FP16");
    f.dotprod = sysctl_flag("hw.optional.arm.FEAT_DotProd");
    f.i8mm = sysctl_flag("hw.optional.arm.FEAT_I8MM");
    f.bf16 = sysctl_flag("hw.optional.arm.FEAT_BF16");
    return f;
}
#elif defined(__aarch64__)
/* Other AArch64 systems: what the compiler was told the target has. */
static qtts_cpu_features cpu_detect(void) {
    qtts_cpu_features f;
    memset(&f, 0, sizeof f);
    f.neon = true;
#if defined(__ARM_FEATURE_DOTPROD)
    f.dotprod = true;
#endif
#if defined(__ARM_FEATURE_BF16_VECTOR_ARITHMETIC)
    f.bf16 = true;
#endif
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
    case QTTS_ISA_NEON: return f->neon;
    case QTTS_ISA_NEON_DOTPROD: return f->neon && f->dotprod;
    case QTTS_ISA_NEON_BF16: return f->neon && f->dotprod && f->bf16;
    case QTTS_ISA_COUNT: break;
    }
    return 0;
}

qtts_isa qtts_isa_usable(qtts_isa isa) {
    const qtts_cpu_features *f = qtts_cpu_features_get();
    while (isa != QTTS_ISA_SCALAR && !qtts_isa_supported(f, isa)) isa = qtts_isa_lower(isa);
    return isa;
}

qtts_isa qtts_isa_lower(qtts_isa isa) {
    switch (isa) {
    case QTTS_ISA_AVX512: return QTTS_ISA_AVX2;
    case QTTS_ISA_NEON_BF16: return QTTS_ISA_NEON_DOTPROD;
    case QTTS_ISA_NEON_DOTPROD: return QTTS_ISA_NEON;
    default: return QTTS_ISA_SCALAR;
    }
}

static const struct {
    qtts_isa isa;
    const char *name;
} isa_names[] = {
    {QTTS_ISA_SCALAR, "scalar"},        {QTTS_ISA_AVX2, "avx2"},
    {QTTS_ISA_AVX512, "avx512"},        {QTTS_ISA_NEON, "neon"},
    {QTTS_ISA_NEON_DOTPROD, "dotprod"}, {QTTS_ISA_NEON_BF16, "neon-bf16"},
};

qtts_isa qtts_isa_select(const qtts_cpu_features *f, const char *cap) {
    /* the top of each family the CPU has; x86 and AArch64 never both */
    qtts_isa best = QTTS_ISA_SCALAR;
    const qtts_isa tops[2] = {QTTS_ISA_AVX512, QTTS_ISA_NEON_BF16};
    for (int i = 0; i < 2 && best == QTTS_ISA_SCALAR; i++)
        for (qtts_isa isa = tops[i]; isa != QTTS_ISA_SCALAR; isa = qtts_isa_lower(isa))
            if (qtts_isa_supported(f, isa)) {
                best = isa;
                break;
            }
    if (cap && *cap) {
        int known = 0;
        qtts_isa limit = QTTS_ISA_SCALAR;
        for (size_t i = 0; i < sizeof isa_names / sizeof isa_names[0]; i++)
            if (!strcasecmp(cap, isa_names[i].name) ||
                (isa_names[i].isa == QTTS_ISA_NEON_BF16 && !strcasecmp(cap, "neon_bf16"))) {
                limit = isa_names[i].isa;
                known = 1;
            }
        /* lower best until it reaches the cap; a cap outside best's family is ignored */
        if (known) {
            qtts_isa isa = best;
            while (isa != limit && isa != QTTS_ISA_SCALAR) isa = qtts_isa_lower(isa);
            if (isa == limit) best = limit;
        }
    }
    return best;
}

const char *qtts_isa_name(qtts_isa isa) {
    for (size_t i = 0; i < sizeof isa_names / sizeof isa_names[0]; i++)
        if (isa_names[i].isa == isa) return isa_names[i].name;
    return "?";
}

void qtts_cpu_features_describe(const qtts_cpu_features *f, char *buf, unsigned long n) {
    const struct {
        bool on;
        const char *name;
    } list[] = {{f->avx2, "avx2"},
                {f->fma, "fma"},
                {f->f16c, "f16c"},
                {f->avx512f, "avx512f"},
                {f->avx512bw, "avx512bw"},
                {f->avx512vl, "avx512vl"},
                {f->avx512dq, "avx512dq"},
                {f->avx512vnni, "avx512vnni"},
                {f->avx512bf16, "avx512bf16"},
                {f->avxvnni, "avxvnni"},
                {f->neon, "neon"},
                {f->dotprod, "dotprod"},
                {f->bf16, "bf16"},
                {f->i8mm, "i8mm"},
                {f->fp16, "fp16"}};
    size_t used = 0;
    if (n) buf[0] = 0;
    for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) {
        if (!list[i].on || used >= n) continue;
        int w = snprintf(buf + used, n - used, "%s%s", used ? " " : "", list[i].name);
        if (w < 0) break;
        used += (size_t)w;
    }
    if (n && !buf[0]) snprintf(buf, n, "(no SIMD features)");
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
