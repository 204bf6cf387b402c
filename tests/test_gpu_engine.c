/* The engine with qtts_engine_params.device, through the public API:
 * - no Vulkan driver (VK_ICD_FILENAMES naming a file that does not exist):
 *   "vulkan" fails engine creation with one clear line (QTTS_ERR_INVALID),
 *   "auto" serves on the CPU (info.device "cpu") with the reference audio;
 *   an unknown name is refused before any load;
 * - with a device: every golden talker case, greedy, on the device
 *   (requests_on_device counts each; every frame is decoded from the codes
 *   the device LM left on the device, frames_decoded_from_device_codes,
 *   the first at least in the frame's own submission)
 *   gives the reference waveform (1e-4, as
 *   test_engine_golden) and the CPU engine's samples within 1e-4: the same
 *   codes through the device decoder (gpu/gpu_decoder.h), which differs from
 *   the CPU decoder only by summation order (test_gpu_decoder: ~2e-6; one
 *   code that differs moves the waveform by far more);
 * - the same cases sampled (the model's settings, a fixed seed) on the
 *   device give the CPU engine's samples, as many and within 1e-4: the device
 *   sampler draws as the CPU's (gpu/gpu_sample.h).
 * Skipped (exit 77) where no Vulkan device exists, after the no-device part,
 * unless QTTS_REQUIRE_VULKAN=1. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "harness.h"
#include "support/golden_cases.h"
#include "support/npy.h"

/* Device vs CPU engine: the decoders' float order (see above). */
#define DEVICE_TOL 1e-4

static double max_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d; /* NaN counts as the worst */
    }
    return m;
}

static qtts_engine *engine(const char *model, const char *device, qtts_error *e) {
    char path[1024];
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = golden_path(path, sizeof path, model);
    p.n_threads = 2;
    p.device = device;
    memset(e, 0, sizeof *e);
    return qtts_engine_create(&p, e);
}

/* Runs case c on e and checks it against its fixture; returns the samples (caller frees) or NULL. */
static float *run_case(qtts_engine *e, const golden_case *c, size_t *n, const char *what) {
    char err[512];
    npy_array want = {0};
    pcm_buf got = {0};
    int rc = golden_case_run(e, c, &got, err, sizeof err);
    TEST_CHECK(rc == 0, "%s %s: %s", what, c->fixture, err);
    if (!npy_load_fixture(c->fixture, &want) && rc == 0) {
        TEST_CHECK(got.n == (size_t)want.numel, "%s %s: %zu samples, want %lld", what, c->fixture, got.n,
                   (long long)want.numel);
        if (got.n == (size_t)want.numel) TEST_NEAR(got.d, want.f, got.n, 1e-4, c->fixture);
    }
    npy_free(&want);
    *n = got.n;
    return got.d;
}

static void no_device(void) {
    qtts_error e;
    const golden_case *c = &golden_cases[0];
    setenv("VK_ICD_FILENAMES", "/nonexistent/qtts-no-such-icd.json", 1);
    qtts_engine *eng = engine(c->model, "vulkan", &e);
    TEST_CHECK(eng == NULL, "device vulkan without a driver: the engine must not be made");
    TEST_CHECK(e.status == QTTS_ERR_INVALID && strstr(e.message, "Vulkan") && !strchr(e.message, '\n'),
               "device vulkan without a driver: one clear line, got status %d '%s'", (int)e.status, e.message);
    printf("  ok   --device vulkan, no driver: %s\n", e.message);
    qtts_engine_free(eng);
    eng = engine(c->model, "auto", &e);
    TEST_CHECK(eng != NULL, "device auto without a driver: %s", e.message);
    if (eng) {
        TEST_CHECK(!strcmp(qtts_engine_info(eng)->device, "cpu"), "auto fell back, device %s",
                   qtts_engine_info(eng)->device);
        size_t n;
        free(run_case(eng, c, &n, "auto on the CPU"));
        qtts_engine_stats st;
        qtts_engine_get_stats(eng, &st);
        TEST_CHECK(st.requests_done == 1 && st.requests_on_device == 0, "auto on the CPU: %llu done, %llu on device",
                   (unsigned long long)st.requests_done, (unsigned long long)st.requests_on_device);
        qtts_engine_free(eng);
    }
    unsetenv("VK_ICD_FILENAMES");
    eng = engine(c->model, "gpu0", &e);
    TEST_CHECK(eng == NULL && e.status == QTTS_ERR_INVALID && strstr(e.message, "cpu|vulkan|vulkan:N|auto"),
               "unknown device name: status %d '%s'", (int)e.status, e.message);
    qtts_engine_free(eng);
}

/* Every request ran on the device, every frame it made reached the decoder through the device's code ring
 * (each request's pending frames stay well under its 64 rows), none through the host, and each request's
 * first frame at least was decoded in the submission that made it (its decode is due at once). */
static void check_device_stats(qtts_engine *dev, const char *model, uint64_t want_on_device) {
    qtts_engine_stats st;
    qtts_engine_get_stats(dev, &st);
    TEST_CHECK(st.requests_on_device == want_on_device, "%s: %llu requests on the device, want %llu", model,
               (unsigned long long)st.requests_on_device, (unsigned long long)want_on_device);
    TEST_CHECK(st.frames_total > 0 && st.frames_decoded_from_device_codes == st.frames_total,
               "%s: %llu of %llu frames decoded from the device's codes", model,
               (unsigned long long)st.frames_decoded_from_device_codes, (unsigned long long)st.frames_total);
    TEST_CHECK(st.decoder_steps_in_frame_submissions >= want_on_device,
               "%s: %llu decoder steps in a frame's submission, want one a request at least (its first frame)", model,
               (unsigned long long)st.decoder_steps_in_frame_submissions);
    printf("  %s: %llu of %llu frames decoded from the codes on the device, %llu decoder steps in a frame's "
           "submission\n",
           model, (unsigned long long)st.frames_decoded_from_device_codes, (unsigned long long)st.frames_total,
           (unsigned long long)st.decoder_steps_in_frame_submissions);
}

int main(void) {
    no_device();
    qtts_err gerr = {0};
    qtts_gpu *probe = qtts_gpu_open("vulkan", &gerr);
    if (!probe) {
        const char *req = getenv("QTTS_REQUIRE_VULKAN");
        fprintf(stderr, "%s: %s\n", req && !strcmp(req, "1") ? "FAIL" : "SKIP", gerr.msg);
        if (req && !strcmp(req, "1")) return 1;
        return test_finish("test_gpu_engine") ? 1 : 77;
    }
    qtts_gpu_close(probe);
    const char *loaded = NULL;
    qtts_engine *dev = NULL, *cpu = NULL;
    qtts_error e;
    uint64_t want_on_device = 0;
    for (size_t i = 0; i < golden_case_count; i++) {
        const golden_case *c = &golden_cases[i];
        if (!loaded || strcmp(loaded, c->model)) {
            if (dev) check_device_stats(dev, loaded, want_on_device);
            qtts_engine_free(dev);
            qtts_engine_free(cpu);
            dev = engine(c->model, "vulkan", &e);
            TEST_CHECK(dev != NULL, "engine on vulkan for %s: %s", c->model, e.message);
            cpu = engine(c->model, "cpu", &e);
            TEST_CHECK(cpu != NULL, "engine on the CPU for %s: %s", c->model, e.message);
            if (!dev || !cpu) break;
            TEST_CHECK(!strncmp(qtts_engine_info(dev)->device, "vulkan: ", 8), "device reported: %s",
                       qtts_engine_info(dev)->device);
            printf("%s on %s\n", c->model, qtts_engine_info(dev)->device);
            /* the device decodes from its own upload: the CPU decoder's packed weights were dropped */
            const char *rep = qtts_engine_info(dev)->load_report;
            TEST_CHECK(rep && strstr(rep, "decoder 0 MB") && !strcmp(qtts_engine_info(dev)->decoder_precision, "f32"),
                       "load report on the device: %s (decoder precision %s)", rep ? rep : "(none)",
                       qtts_engine_info(dev)->decoder_precision);
            loaded = c->model;
            want_on_device = 0;
        }
        size_t nd = 0, nc = 0;
        float *a = run_case(dev, c, &nd, "vulkan");
        float *b = run_case(cpu, c, &nc, "cpu");
        want_on_device++;
        double diff = a && b && nd == nc ? max_diff(a, b, nd) : -1;
        TEST_CHECK(diff >= 0 && diff <= DEVICE_TOL, "%s: the device's audio is not the CPU's (%zu vs %zu samples, max "
                   "diff %g)", c->fixture, nd, nc, diff);
        if (diff >= 0 && diff <= DEVICE_TOL)
            printf("  ok   %-48s the CPU engine's within %.2g (%zu samples)\n", c->fixture, diff, nd);
        free(a);
        free(b);
        /* sampled, seeded: on the device too, the CPU engine's samples */
        const uint64_t seed = 1000 + i;
        char err[512];
        pcm_buf sa = {0}, sb = {0};
        int ra = golden_case_run_sampled(dev, c, seed, &sa, err, sizeof err);
        TEST_CHECK(ra == 0, "vulkan sampled %s: %s", c->fixture, err);
        int rb = golden_case_run_sampled(cpu, c, seed, &sb, err, sizeof err);
        TEST_CHECK(rb == 0, "cpu sampled %s: %s", c->fixture, err);
        want_on_device++;
        double sd = ra == 0 && rb == 0 && sa.n == sb.n && sa.n > 0 ? max_diff(sa.d, sb.d, sa.n) : -1;
        int same = sd >= 0 && sd <= DEVICE_TOL;
        TEST_CHECK(same, "%s sampled (seed %llu): the device's audio (%zu samples) is not the CPU's (%zu), max diff %g",
                   c->fixture, (unsigned long long)seed, sa.n, sb.n, sd);
        if (same)
            printf("  ok   %-48s sampled, seed %llu: the CPU engine's within %.2g (%zu samples)\n", c->fixture,
                   (unsigned long long)seed, sd, sa.n);
        free(sa.d);
        free(sb.d);
    }
    if (dev) check_device_stats(dev, loaded, want_on_device);
    qtts_engine_free(dev);
    qtts_engine_free(cpu);
    return test_finish("test_gpu_engine");
}
