/* Quantized talkers on the device, through the public API, every golden
 * talker case greedy, with weight_type q8_0 and q4_k:
 * - interleaved weights: with the loader made to interleave Q8_0/Q4_K
 *   matrices for the x86 CPU kernels (QTTS_INTERLEAVE=1, where those kernels
 *   exist) the engine on "vulkan" uploads them (put back into GGML rows) and
 *   gives exactly the samples of a "vulkan" engine loaded without
 *   interleaving (QTTS_INTERLEAVE=0): the same device products, codes and
 *   decoder;
 * - against the CPU (ctest test_gpu_quant_scalar: QTTS_ISA=scalar): the
 *   device computes the CPU's scalar kernels (weights dequantized, float
 *   dots), so "vulkan" and "cpu" engines give the same codes and samples
 *   within the two decoders' summation-order difference (1e-4), with the KV
 *   cache in f32 and in the engine's choice for quantized weights (f16). The x86 and NEON Q8_0/Q4_K kernels quantize x to 8 bits as well,
 *   so the CPU engine's tokens on those differ from the scalar ones (and the
 *   device's) where a logit margin is below that error: the count of
 *   identical cases is printed, not asserted.
 * The golden models are tiny (hidden 32, MLP 96 or 48): no row holds a Q4_K
 * super-block (256), so "q4_k" stores them as Q8_0, the loader's fallback;
 * the Q4_K upload of interleaved rows is checked by test_gpu_kernels.
 * Skipped (exit 77) where no Vulkan device exists unless QTTS_REQUIRE_VULKAN=1. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "harness.h"
#include "support/golden_cases.h"
#include "support/gpu_device.h"
#include "tensor/cpu.h"
#include "tensor/interleave.h"

static qtts_engine *engine(const char *model, const char *device, const char *wtype, const char *kv, qtts_error *e) {
    char path[1024];
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = golden_path(path, sizeof path, model);
    p.n_threads = 2;
    p.device = device;
    p.weight_type = wtype;
    p.kv_cache = kv;
    memset(e, 0, sizeof *e);
    return qtts_engine_create(&p, e);
}

/* Device against CPU: the LM's codes are the same, but the device decoder
 * sums in another order than the CPU's (test_gpu_engine's bound). */
#define DECODER_TOL 1e-4

static const char *const models[] = {"Qwen3-TTS-12Hz-0.6B-Base-tiny", "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny",
                                     "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"};
enum { N_MODELS = sizeof models / sizeof *models };

/* Every golden case of model on a and b; with `must`, their samples must be
 * the same, within tol (0: bit for bit; else only counted). Returns the cases
 * that were. */
static int compare(qtts_engine *a, qtts_engine *b, const char *model, const char *what, int must, double tol) {
    int same_cases = 0;
    for (size_t i = 0; a && b && i < golden_case_count; i++) {
        const golden_case *c = &golden_cases[i];
        if (strcmp(c->model, model)) continue;
        char err[512];
        pcm_buf x = {0}, y = {0};
        int ra = golden_case_run(a, c, &x, err, sizeof err);
        TEST_CHECK(ra == 0, "%s %s: %s", what, c->fixture, err);
        int rb = golden_case_run(b, c, &y, err, sizeof err);
        TEST_CHECK(rb == 0, "%s %s: %s", what, c->fixture, err);
        double worst = 0;
        int same = ra == 0 && rb == 0 && x.n == y.n && x.n > 0;
        for (size_t k = 0; same && k < x.n; k++) worst = fmax(worst, fabs((double)x.d[k] - (double)y.d[k]));
        same = same && worst <= tol;
        same_cases += same;
        if (must)
            TEST_CHECK(same, "%s %s: %zu samples, not the %zu expected ones (max difference %.3g, bound %.3g)",
                       c->fixture, what, x.n, y.n, worst, tol);
        if (same) printf("  ok   %-44s %s: %zu samples, max difference %.3g\n", c->fixture, what, x.n, worst);
        else if (!must) printf("  --   %-44s %s: differs (%zu and %zu samples)\n", c->fixture, what, x.n, y.n);
        free(x.d);
        free(y.d);
    }
    return same_cases;
}

static int cases_of(const char *model) {
    int n = 0;
    for (size_t i = 0; i < golden_case_count; i++) n += !strcmp(golden_cases[i].model, model);
    return n;
}

static void on_device(qtts_engine *dev, const char *model, const char *wtype, int want) {
    if (!dev) return;
    TEST_CHECK(!strncmp(qtts_engine_info(dev)->device, "vulkan: ", 8), "%s %s: on %s", model, wtype,
               qtts_engine_info(dev)->device);
    qtts_engine_stats st;
    qtts_engine_get_stats(dev, &st);
    TEST_CHECK(st.requests_on_device == (uint64_t)want, "%s %s: %llu requests on the device, want %d", model, wtype,
               (unsigned long long)st.requests_on_device, want);
}

/* x86/NEON: interleaved against row-major uploads on the device; the CPU's
 * own kernels counted. */
static void interleaved(const char *wtype) {
    int same_cpu = 0, total = 0;
    for (int m = 0; m < N_MODELS; m++) {
        qtts_error e;
        setenv("QTTS_INTERLEAVE", "1", 1);
        qtts_engine *x16 = engine(models[m], "vulkan", wtype, "auto", &e);
        TEST_CHECK(x16 != NULL, "%s %s interleaved on vulkan: %s", models[m], wtype, e.message);
        setenv("QTTS_INTERLEAVE", "0", 1);
        qtts_engine *rows = engine(models[m], "vulkan", wtype, "auto", &e);
        TEST_CHECK(rows != NULL, "%s %s on vulkan: %s", models[m], wtype, e.message);
        char what[64];
        snprintf(what, sizeof what, "%s interleaved vs rows", wtype);
        compare(x16, rows, models[m], what, 1, 0);
        on_device(x16, models[m], wtype, cases_of(models[m]));
        qtts_engine_free(rows);
        unsetenv("QTTS_INTERLEAVE");
        total += cases_of(models[m]);
        if (strcmp(wtype, "q8_0")) { /* the tiny models' q4_k is q8_0 (above): counted once */
            qtts_engine_free(x16);
            continue;
        }
        qtts_engine *cpu = engine(models[m], "cpu", wtype, "auto", &e);
        TEST_CHECK(cpu != NULL, "%s %s on the CPU: %s", models[m], wtype, e.message);
        snprintf(what, sizeof what, "%s vulkan vs %s CPU kernels", wtype, qtts_isa_name(qtts_cpu_isa()));
        same_cpu += compare(x16, cpu, models[m], what, 0, DECODER_TOL);
        qtts_engine_free(x16);
        qtts_engine_free(cpu);
    }
    if (!strcmp(wtype, "q8_0"))
        printf("%s: %d of %d cases the same as on the %s CPU kernels (they quantize x to 8 bits; not asserted)\n",
               wtype, same_cpu, total, qtts_isa_name(qtts_cpu_isa()));
}

/* Scalar CPU kernels: the device's results exactly. */
static void against_cpu(const char *wtype, const char *kv) {
    for (int m = 0; m < N_MODELS; m++) {
        qtts_error e;
        qtts_engine *dev = engine(models[m], "vulkan", wtype, kv, &e);
        TEST_CHECK(dev != NULL, "%s %s kv %s on vulkan: %s", models[m], wtype, kv, e.message);
        qtts_engine *cpu = engine(models[m], "cpu", wtype, kv, &e);
        TEST_CHECK(cpu != NULL, "%s %s kv %s on the CPU: %s", models[m], wtype, kv, e.message);
        if (dev && cpu)
            TEST_CHECK(!strcmp(qtts_engine_info(dev)->kv_cache, qtts_engine_info(cpu)->kv_cache),
                       "KV caches %s and %s", qtts_engine_info(dev)->kv_cache, qtts_engine_info(cpu)->kv_cache);
        char what[64];
        snprintf(what, sizeof what, "%s kv %s vulkan vs cpu", wtype, dev ? qtts_engine_info(dev)->kv_cache : kv);
        compare(dev, cpu, models[m], what, 1, DECODER_TOL);
        on_device(dev, models[m], wtype, cases_of(models[m]));
        qtts_engine_free(dev);
        qtts_engine_free(cpu);
    }
}

int main(void) {
    int code;
    qtts_gpu *probe = test_gpu_open(&code);
    if (!probe) return code;
    qtts_gpu_close(probe);
    const char *wtypes[] = {"q8_0", "q4_k"};
    if (qtts_cpu_isa() == QTTS_ISA_SCALAR) {
        printf("scalar CPU kernels: the device against the CPU\n");
        for (int w = 0; w < 2; w++) {
            against_cpu(wtypes[w], "f32");
            against_cpu(wtypes[w], "auto"); /* f16 with quantized weights */
        }
    } else if (qtts_interleave_kernels()) {
        printf("%s CPU kernels: interleaved weights on the device\n", qtts_isa_name(qtts_cpu_isa()));
        for (int w = 0; w < 2; w++) interleaved(wtypes[w]);
    } else {
        printf("SKIP: %s kernels neither interleave nor are the scalar ones\n", qtts_isa_name(qtts_cpu_isa()));
        return test_finish("test_gpu_quant") ? 1 : 77;
    }
    return test_finish("test_gpu_quant");
}
