/* Faults at the device layer: no Vulkan driver at all (one clear line, in a
 * child process whose loader sees no driver), allocations past the device's
 * memory (a lowered limit and a matrix larger than the real heap: refused
 * with QTTS_ERR_NO_MEMORY before the driver is asked, nothing left
 * allocated, the device still computes), and a lost device (the test hook:
 * the submission fails with the reason, every later one fails at once, the
 * device closes without waiting, a device opened again computes).
 * The device parts are skipped (exit 77) without a device unless
 * QTTS_REQUIRE_VULKAN=1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/gpu.h"
#include "gpu/gpu_ops.h"
#include "support/gpu_device.h"
#include "harness.h"

/* Opens "vulkan" in a child whose loader finds no driver; the message comes back through a pipe. */
static void test_no_driver(void) {
    int fd[2];
    if (pipe(fd)) {
        TEST_CHECK(0, "pipe");
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        setenv("VK_ICD_FILENAMES", "/nonexistent", 1);
        setenv("VK_DRIVER_FILES", "/nonexistent", 1); /* the newer loaders' name for it */
        unsetenv("VK_ADD_DRIVER_FILES");
        qtts_err e = {0}, le = {0};
        qtts_gpu *g = qtts_gpu_open("vulkan", &e);
        int listed = qtts_gpu_list_devices(stdout, &le);
        char out[1100];
        int n = snprintf(out, sizeof out, "%d %d %d\n%s\n%s", g != NULL, e.status, listed, e.msg, le.msg);
        qtts_gpu_close(g);
        ssize_t w = write(fd[1], out, (size_t)(n < (int)sizeof out ? n : (int)sizeof out - 1));
        _exit(w > 0 ? 0 : 1);
    }
    close(fd[1]);
    char buf[1200] = {0};
    size_t got = 0;
    ssize_t r;
    while (got < sizeof buf - 1 && (r = read(fd[0], buf + got, sizeof buf - 1 - got)) > 0) got += (size_t)r;
    close(fd[0]);
    int status = 0;
    TEST_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
               "the no-driver child exits cleanly");
    int opened = -1, st = -1, listed = 0;
    char *open_msg = strchr(buf, '\n'), *list_msg = NULL;
    if (sscanf(buf, "%d %d %d", &opened, &st, &listed) != 3 || !open_msg) {
        TEST_CHECK(0, "the child's report: '%s'", buf);
        return;
    }
    *open_msg++ = 0;
    if ((list_msg = strchr(open_msg, '\n'))) *list_msg++ = 0;
    printf("  no driver: open: %s\n  no driver: list: %s\n", open_msg, list_msg ? list_msg : "");
    TEST_CHECK(opened == 0 && st == QTTS_ERR_INVALID, "no driver: open fails as invalid (%d, status %d)", opened, st);
    TEST_CHECK(strstr(open_msg, "vulkan") && strstr(open_msg, "Vulkan"), "no driver: the line says why: %s", open_msg);
    TEST_CHECK(listed == -1 && list_msg && strstr(list_msg, "Vulkan") && !strchr(list_msg, '\n'),
               "no driver: listing fails with one line: %s", list_msg ? list_msg : "");
}

static const int32_t *argmax_ids(qtts_gpu_buf *ids) { return qtts_gpu_buf_data(ids); }

/* A small sequence (argmax of a known row) to show the device still computes. */
typedef struct {
    qtts_gpu_buf *z, *ids;
    qtts_gpu_seq *s;
} probe;

static int probe_make(qtts_gpu *g, probe *p) {
    qtts_err err = {0};
    enum { N = 301 };
    memset(p, 0, sizeof *p);
    if (!(p->z = qtts_gpu_buf_new(g, N * 4, &err)) || !(p->ids = qtts_gpu_buf_new(g, 4, &err)) ||
        !(p->s = qtts_gpu_seq_new(g, &err)) || qtts_gpu_argmax(p->s, p->z, 0, N, p->ids, 0, &err)) {
        TEST_CHECK(0, "probe: %s", err.msg);
        return -1;
    }
    float *z = qtts_gpu_buf_data(p->z);
    for (int i = 0; i < N; i++) z[i] = (float)((i * 37) % N) / N;
    z[233] = 2.0f;
    return 0;
}

static int probe_run(probe *p, qtts_err *err) {
    ((int32_t *)qtts_gpu_buf_data(p->ids))[0] = -1;
    if (qtts_gpu_seq_run(p->s, err)) return -1;
    return argmax_ids(p->ids)[0] == 233 ? 0 : qtts_fail(err, "probe: argmax %d, want 233", argmax_ids(p->ids)[0]);
}

static void probe_free(qtts_gpu *g, probe *p) {
    qtts_gpu_seq_free(p->s);
    qtts_gpu_buf_free(g, p->z);
    qtts_gpu_buf_free(g, p->ids);
}

static void test_memory(qtts_gpu *g) {
    qtts_err err = {0};
    const size_t heap = qtts_gpu_memory_limit(g), used0 = qtts_gpu_memory_used(g), MiB = 1 << 20;
    printf("  memory: %.0f MiB heap, %zu bytes in use\n", (double)heap / MiB, used0);
    TEST_CHECK(heap > 0, "the heap has a size");

    /* a lowered limit: the buffer past it is refused, the ones within fit, freeing gives room back */
    qtts_gpu_set_memory_limit(g, used0 + MiB);
    qtts_gpu_buf *a = qtts_gpu_buf_new(g, 2 * MiB, &err);
    TEST_CHECK(!a && err.status == QTTS_ERR_NO_MEMORY && strstr(err.msg, "out of memory"),
               "2 MiB past a 1 MiB limit refused: %s", err.msg);
    TEST_CHECK(qtts_gpu_memory_used(g) == used0, "nothing left allocated (%zu)", qtts_gpu_memory_used(g));
    a = qtts_gpu_buf_new(g, MiB / 2, &err);
    qtts_gpu_buf *b = qtts_gpu_buf_new(g, MiB / 4, &err);
    TEST_CHECK(a && b, "1/2 and 1/4 MiB within the limit: %s", err.msg);
    err = (qtts_err){0};
    qtts_gpu_buf *c = qtts_gpu_buf_new(g, MiB / 2, &err);
    TEST_CHECK(!c && err.status == QTTS_ERR_NO_MEMORY, "another 1/2 MiB refused: %s", err.msg);
    qtts_gpu_buf_free(g, a);
    c = qtts_gpu_buf_new(g, MiB / 2, &err);
    TEST_CHECK(c != NULL, "room again after a free: %s", err.msg);
    qtts_gpu_buf_free(g, b);
    qtts_gpu_buf_free(g, c);
    TEST_CHECK(qtts_gpu_memory_used(g) == used0, "every buffer given back (%zu)", qtts_gpu_memory_used(g));

    /* a matrix past the limit is refused whole, before any chunk is made */
    static float w[64 * 4100];
    qtts_mat m = {.type = QTTS_F32, .rows = 4100, .cols = 64, .row_bytes = 64 * 4, .data = w};
    err = (qtts_err){0};
    qtts_gpu_mat *over = qtts_gpu_mat_upload(g, &m, &err);
    TEST_CHECK(!over && err.status == QTTS_ERR_NO_MEMORY, "a matrix over the 1 MiB limit refused: %s", err.msg);
    TEST_CHECK(qtts_gpu_memory_used(g) == used0, "no chunk of it allocated (%zu)", qtts_gpu_memory_used(g));
    qtts_gpu_mat_free(g, over);
    qtts_gpu_set_memory_limit(g, 0);
    TEST_CHECK(qtts_gpu_memory_limit(g) == heap, "the heap's size restored");

    /* larger than the device's whole heap: refused from the shape alone (the
     * rows past the first are never read) */
    m.rows = (int64_t)(heap / m.row_bytes) * 3 / 2;
    err = (qtts_err){0};
    qtts_gpu_mat *big = qtts_gpu_mat_upload(g, &m, &err);
    TEST_CHECK(!big && err.msg[0] && (err.status == QTTS_ERR_NO_MEMORY || err.status == QTTS_ERR_INVALID),
               "a matrix larger than the heap refused: %s", err.msg);
    printf("  memory: %s\n", err.msg);
    qtts_gpu_mat_free(g, big);
    TEST_CHECK(qtts_gpu_memory_used(g) == used0, "nothing left allocated (%zu)", qtts_gpu_memory_used(g));

    probe p;
    if (probe_make(g, &p) == 0) TEST_CHECK(probe_run(&p, &err) == 0, "the device computes afterwards: %s", err.msg);
    probe_free(g, &p);
}

/* Returns the device to close (lost) after checking what the lost state refuses. */
static void test_lost(qtts_gpu *g) {
    qtts_err err = {0};
    probe p;
    if (probe_make(g, &p)) {
        probe_free(g, &p);
        return;
    }
    TEST_CHECK(probe_run(&p, &err) == 0, "before: %s", err.msg);
    TEST_CHECK(!qtts_gpu_lost(g), "not lost before");
    qtts_gpu_test_lose_next_submit(g);
    err = (qtts_err){0};
    TEST_CHECK(qtts_gpu_seq_run(p.s, &err) == -1 && strstr(err.msg, "device lost"), "the submission fails: %s",
               err.msg);
    printf("  lost: %s\n", err.msg);
    TEST_CHECK(qtts_gpu_lost(g), "the device is marked lost");
    err = (qtts_err){0};
    TEST_CHECK(qtts_gpu_seq_run(p.s, &err) == -1 && strstr(err.msg, "lost earlier"), "later submissions fail: %s",
               err.msg);
    err = (qtts_err){0};
    qtts_gpu_seq *s2 = qtts_gpu_seq_new(g, &err);
    TEST_CHECK(!s2 && strstr(err.msg, "lost earlier"), "no new sequence on a lost device: %s", err.msg);
    probe_free(g, &p);
}

int main(void) {
    test_no_driver(); /* before any Vulkan call in this process: the child starts clean */
    int skip;
    qtts_gpu *g = test_gpu_open(&skip);
    if (!g) return skip == 77 && g_test_counts.failed ? test_finish("test_gpu_faults") : skip;
    test_memory(g);
    test_lost(g);
    TEST_CHECK(qtts_gpu_validation_errors(g) == 0, "%d validation errors", qtts_gpu_validation_errors(g));
    qtts_gpu_close(g); /* a lost device closes without waiting for it */

    /* the next device opened computes */
    qtts_err err = {0};
    g = qtts_gpu_open("vulkan", &err);
    TEST_CHECK(g != NULL, "opened again: %s", err.msg);
    if (g) {
        probe p;
        if (probe_make(g, &p) == 0) TEST_CHECK(probe_run(&p, &err) == 0, "the new device computes: %s", err.msg);
        probe_free(g, &p);
        TEST_CHECK(qtts_gpu_validation_errors(g) == 0, "%d validation errors", qtts_gpu_validation_errors(g));
        qtts_gpu_close(g);
    }
    return test_finish("test_gpu_faults");
}
