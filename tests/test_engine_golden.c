/* End to end through the public API (include/qtts.h): text in, audio out, for
 * every talker case of the golden fixtures (greedy), including cloning from
 * the stored reference waveform. Waveform tolerance 1e-4 max abs. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "support/golden_cases.h"
#include "support/npy.h"

int main(void) {
    char path[1024], err[512];
    const char *loaded = NULL;
    qtts_engine *e = NULL;
    for (size_t i = 0; i < golden_case_count; i++) {
        const golden_case *c = &golden_cases[i];
        if (!loaded || strcmp(loaded, c->model)) {
            qtts_engine_free(e);
            e = golden_engine(golden_path(path, sizeof path, c->model), err, sizeof err);
            TEST_CHECK(e != NULL, "engine for %s: %s", c->model, err);
            if (!e) return test_finish("test_engine_golden");
            loaded = c->model;
        }
        npy_array want = {0};
        if (npy_load_fixture(c->fixture, &want)) {
            TEST_CHECK(0, "missing fixture %s", c->fixture);
            continue;
        }
        pcm_buf got = {0};
        int rc = golden_case_run(e, c, &got, err, sizeof err);
        TEST_CHECK(rc == 0, "%s: synthesize: %s", c->fixture, err);
        if (rc == 0) {
            TEST_CHECK(got.n == (size_t)want.numel, "%s: %zu samples, want %lld", c->fixture, got.n,
                       (long long)want.numel);
            if (got.n == (size_t)want.numel) TEST_NEAR(got.d, want.f, got.n, 1e-4, c->fixture);
        }
        free(got.d);
        npy_free(&want);
    }
    qtts_engine_free(e);
    return test_finish("test_engine_golden");
}
