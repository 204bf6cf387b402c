/* `qtts bench --device vulkan` on the tiny golden CustomVoice model (a smoke
 * test: timings are not asserted): 1 stream then 8, every request on the
 * device, the frame and sample counts of the run, and the device figures
 * present: the device's name, its memory peak, time to first audio and the
 * host CPU time per frame of the talker and code predictor; the CLI report
 * and its JSON name them too. Skipped (exit 77) where no Vulkan device
 * exists unless QTTS_REQUIRE_VULKAN=1. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench/bench.h"
#include "gpu/gpu.h"
#include "harness.h"
#include "support/gpu_device.h"
#include "support/test_util.h"

static double num(const cJSON *j, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

int main(void) {
    int code;
    qtts_gpu *probe = test_gpu_open(&code);
    if (!probe) return code;
    qtts_gpu_close(probe);
    char dir[1024];
    golden_path(dir, sizeof dir, "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny");
    enum { F = 4, B = 8 };
    qtts_bench_options o;
    qtts_bench_options_default(&o);
    o.model_path = dir;
    o.wtype = QTTS_DTYPE_INVALID;
    o.frames = F;
    o.batch = B;
    o.threads = 2;
    o.probe = 0;
    o.device = "vulkan";
    qtts_bench_result r;
    qtts_err err = {0};
    int rc = qtts_bench_run(&o, &r, &err);
    TEST_CHECK(rc == 0, "bench --device vulkan: %s", err.msg);
    if (rc == 0) {
        TEST_CHECK(!strncmp(r.device, "vulkan: ", 8), "device %s", r.device);
        TEST_CHECK(r.device_requests == 1 + B, "%llu requests on the device, want %d",
                   (unsigned long long)r.device_requests, 1 + B);
        TEST_CHECK(r.frames_out == F && r.batch_frames_out == B * F, "%lld frames (1 stream), %lld (%d)",
                   (long long)r.frames_out, (long long)r.batch_frames_out, B);
        TEST_CHECK(r.device_memory_mb > 0 && r.ttfa_ms > 0 && r.lm_host_cpu_ms > 0 && r.lm_host_cpu_ms_b > 0 &&
                       r.aggregate_xrt > 0,
                   "figures: device memory %.1f MB, first audio %.1f ms, host CPU per frame %.3f / %.3f ms, %.2fx",
                   r.device_memory_mb, r.ttfa_ms, r.lm_host_cpu_ms, r.lm_host_cpu_ms_b, r.aggregate_xrt);
        TEST_CHECK(r.cp.calls == F - 1, "code-predictor frames timed: %lld", (long long)r.cp.calls);
        printf("  lavapipe (no timing asserted): first audio %.1f ms, host CPU per frame %.3f ms (1 stream), %.3f ms "
               "(%d streams), device memory peak %.1f MB\n",
               r.ttfa_ms, r.lm_host_cpu_ms, r.lm_host_cpu_ms_b, B, r.device_memory_mb);
    }
    static char out[1 << 16];
    char args[1400];
    snprintf(args, sizeof args, "-m %s --frames 3 --batch 2 --threads 1 --no-probe --device vulkan", dir);
    rc = test_run_bench(args, out, sizeof out);
    TEST_CHECK(rc == 0 && strstr(out, "device: vulkan: ") && strstr(out, "device memory peak") &&
                   strstr(out, "host CPU per frame"),
               "qtts bench --device vulkan report (exit %d): %.600s", rc, out);
    snprintf(args, sizeof args, "-m %s --frames 3 --batch 2 --threads 1 --no-probe --device vulkan --json", dir);
    rc = test_run_bench(args, out, sizeof out);
    cJSON *j = rc == 0 ? cJSON_Parse(out) : NULL;
    const cJSON *dev = j ? cJSON_GetObjectItemCaseSensitive(j, "device") : NULL;
    TEST_CHECK(j && cJSON_IsString(dev) && !strncmp(dev->valuestring, "vulkan: ", 8) &&
                   num(j, "device_requests") == 3 && num(j, "device_memory_mb") > 0 && num(j, "lm_host_cpu_ms") > 0 &&
                   num(j, "lm_host_cpu_ms_batch") > 0,
               "qtts bench --device vulkan --json (exit %d): %.300s", rc, out);
    cJSON_Delete(j);
    return test_finish("test_gpu_bench");
}
