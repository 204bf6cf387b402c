/* Minimal test harness: each test file is one executable.
 *   TEST_CHECK(cond, fmt, ...)   records a failure with file:line and a message
 *   TEST_NEAR(got, want, n, tol, what)  max-abs comparison that prints the worst index
 *   return test_finish("name");   prints "<name>: N passed, N failed" and the exit code
 */
#ifndef QTTS_TEST_HARNESS_H
#define QTTS_TEST_HARNESS_H

#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int passed;
    int failed;
} test_counts;

extern test_counts g_test_counts; /* test-binary state only, never in the library */

#define TEST_CHECK(cond, ...)                                                   \
    do {                                                                        \
        if (cond) {                                                             \
            g_test_counts.passed++;                                             \
        } else {                                                                \
            g_test_counts.failed++;                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
        }                                                                       \
    } while (0)

/* Max-abs comparison of two float arrays; returns the max abs error and
 * records pass/fail against tol. Prints the worst element on failure. */
double test_near_impl(const char *file, int line, const float *got, const float *want,
                      size_t n, double tol, const char *what);
#define TEST_NEAR(got, want, n, tol, what) test_near_impl(__FILE__, __LINE__, got, want, n, tol, what)

/* Equality of two int arrays; prints the first mismatch. */
int test_equal_i32_impl(const char *file, int line, const int32_t *got, const int32_t *want,
                        size_t n, const char *what);
#define TEST_EQUAL_I32(got, want, n, what) test_equal_i32_impl(__FILE__, __LINE__, got, want, n, what)

int test_finish(const char *name);

/* Path of a golden file: QTTS_GOLDEN_DIR "/" rel. Returns a static-free
 * buffer owned by the caller (buf, size). */
const char *golden_path(char *buf, size_t size, const char *rel);

#endif
