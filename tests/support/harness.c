#include "harness.h"

#include <math.h>
#include <stdlib.h>

test_counts g_test_counts;

double test_near_impl(const char *file, int line, const float *got, const float *want,
                      size_t n, double tol, const char *what) {
    double worst = 0.0;
    size_t worst_i = 0;
    int nan_seen = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)want[i]);
        if (isnan(d)) { nan_seen = 1; worst_i = i; worst = INFINITY; break; }
        if (d > worst) { worst = d; worst_i = i; }
    }
    if (!nan_seen && worst <= tol) {
        g_test_counts.passed++;
        printf("  ok   %-48s max|err| %.3g (tol %.2g, n=%zu)\n", what, worst, tol, n);
    } else {
        g_test_counts.failed++;
        fprintf(stderr, "FAIL %s:%d: %s: max|err| %.6g > tol %.2g at [%zu] got %.9g want %.9g (n=%zu)\n",
                file, line, what, worst, tol, worst_i, n ? got[worst_i] : 0.0f,
                n ? want[worst_i] : 0.0f, n);
    }
    return worst;
}

int test_equal_i32_impl(const char *file, int line, const int32_t *got, const int32_t *want,
                        size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        if (got[i] != want[i]) {
            g_test_counts.failed++;
            fprintf(stderr, "FAIL %s:%d: %s: first mismatch at [%zu]: got %d want %d (n=%zu)\n",
                    file, line, what, i, got[i], want[i], n);
            return 0;
        }
    }
    g_test_counts.passed++;
    printf("  ok   %-48s identical (n=%zu)\n", what, n);
    return 1;
}

int test_finish(const char *name) {
    printf("%s: %d passed, %d failed\n", name, g_test_counts.passed, g_test_counts.failed);
    if (g_test_counts.passed + g_test_counts.failed == 0) {
        fprintf(stderr, "%s: ran no checks\n", name);
        return 1;
    }
    return g_test_counts.failed ? 1 : 0;
}

const char *golden_path(char *buf, size_t size, const char *rel) {
    snprintf(buf, size, "%s/%s", QTTS_GOLDEN_DIR, rel);
    return buf;
}
