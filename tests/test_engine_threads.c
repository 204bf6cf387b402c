/* The thread invariant through the public API: many caller threads submit
 * synthesis requests and voice extractions; the process's thread count stays
 * the same, and the model compute runs on the engine's threads (the callers'
 * CPU time stays near zero). Also: a greedy request gives the same audio alone
 * and beside three others of different lengths (continuous batching). */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "qtts.h"
#include "support/npy.h"
#include "support/test_util.h"

/* CPU seconds of one thread of this process (utime + stime). */
static double thread_cpu(int tid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    unsigned long ut = 0, st = 0;
    /* fields after ')': state(3) ... utime(14) stime(15) */
    int field = 2;
    /* strtok_r: the caller threads read their own times at once, and strtok's one hidden cursor, shared by
     * them, made this parse other threads' fields (a caller once "used" 94 CPU s in a 1 s run) */
    char *save = NULL;
    for (char *tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        field++;
        if (field == 14) ut = strtoul(tok, NULL, 10);
        if (field == 15) {
            st = strtoul(tok, NULL, 10);
            break;
        }
    }
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

typedef struct {
    qtts_engine *e;
    qtts_voice *voice;
    const npy_array *ref;
    int jobs;
    int failures;
    double cpu;
} caller_arg;

static int discard(void *u, const float *s, size_t n) {
    (void)u;
    (void)s;
    (void)n;
    return 0;
}

static void *caller(void *p) {
    caller_arg *a = p;
    qtts_error err = {0};
    for (int i = 0; i < a->jobs; i++) {
        qtts_voice *v = qtts_voice_retain(a->voice);
        if (a->ref) { /* a WAV-style registration: voice extraction is engine work too */
            qtts_voice_release(v);
            v = qtts_voice_from_samples(a->e, a->ref->f, (size_t)a->ref->numel, 24000, NULL, &err);
            if (!v) a->failures++;
        }
        qtts_request r;
        qtts_request_default(&r);
        r.text = "Hello world, this is a test.";
        r.voice = v;
        r.x_vector_only = 1;
        r.max_frames = 4 + i % 3;
        r.has_seed = 1;
        r.seed = (uint64_t)i;
        if (qtts_synthesize(a->e, &r, discard, NULL, NULL, &err)) a->failures++;
        qtts_voice_release(v);
    }
    a->cpu = thread_cpu((int)syscall(SYS_gettid));
    return NULL;
}

typedef struct {
    qtts_engine *e;
    qtts_request r;
    pcm_buf out;
    int rc;
} synth_arg;

static void *synth_thread(void *p) {
    synth_arg *a = p;
    qtts_error err = {0};
    a->rc = qtts_synthesize(a->e, &a->r, pcm_collect, &a->out, NULL, &err);
    return NULL;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(void) {
    char path[1024];
    qtts_error err = {0};
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = golden_path(path, sizeof path, "Qwen3-TTS-12Hz-0.6B-Base-tiny");
    p.n_threads = 2;
    p.max_batch = 4;
    const char *ov = getenv("QTTS_TEST_OVERLAP"); /* a ctest variant overlaps wherever possible */
    if (ov && !strcmp(ov, "1")) p.overlap = QTTS_OVERLAP_ALWAYS;
    int before = count_threads();
    qtts_engine *e = qtts_engine_create(&p, &err);
    TEST_CHECK(e != NULL, "engine: %s", err.message);
    if (!e) return test_finish("test_engine_threads");
    int after_create = count_threads();
    TEST_CHECK(after_create == before + 2, "engine thread + 1 worker expected: %d -> %d", before, after_create);
    int engine_tids[8];
    int n_engine = qtts_engine_thread_ids(e, engine_tids, 8);
    TEST_CHECK(n_engine == 2, "engine reports %d threads", n_engine);

    npy_array ref;
    TEST_CHECK(npy_load_fixture("tk_xvec_en_ref_wav", &ref) == 0, "reference fixture");
    qtts_voice *shared = qtts_voice_from_samples(e, ref.f, (size_t)ref.numel, 24000, NULL, &err);
    TEST_CHECK(shared != NULL, "voice: %s", err.message);
    enum { CALLERS = 20 };
    pthread_t th[CALLERS];
    caller_arg args[CALLERS];
    double engine_cpu0 = 0;
    for (int i = 0; i < n_engine; i++) engine_cpu0 += thread_cpu(engine_tids[i]);
    double t0 = now_s();
    for (int i = 0; i < CALLERS; i++) {
        args[i] = (caller_arg){e, shared, i % 2 ? &ref : NULL, 3, 0, 0};
        pthread_create(&th[i], NULL, caller, &args[i]);
    }
    int max_seen = 0;
    for (int i = 0; i < CALLERS; i++) pthread_join(th[i], NULL);
    double wall = now_s() - t0;
    double engine_cpu = -engine_cpu0, caller_cpu = 0;
    for (int i = 0; i < n_engine; i++) engine_cpu += thread_cpu(engine_tids[i]);
    int failures = 0;
    for (int i = 0; i < CALLERS; i++) {
        failures += args[i].failures;
        caller_cpu += args[i].cpu;
    }
    (void)max_seen;
    TEST_CHECK(failures == 0, "%d of %d jobs failed", failures, CALLERS * 3);
    int after_jobs = count_threads();
    TEST_CHECK(after_jobs == after_create, "thread count changed: %d -> %d after %d callers", after_create, after_jobs,
               CALLERS);
    printf("  %d callers x 3 requests (+30 voice extractions): wall %.2f s, engine threads %.2f CPU s (%.2f effective "
           "cores), callers %.3f CPU s in total\n",
           CALLERS, wall, engine_cpu, engine_cpu / wall, caller_cpu);
    /* Callers only copy audio and wait; with model compute on their threads
     * they would hold a large share of the CPU time. */
    TEST_CHECK(caller_cpu < 0.1 * engine_cpu + 0.05, "callers used %.3f CPU s vs engine %.3f: compute leaked",
               caller_cpu, engine_cpu);

    /* batching: the same greedy request alone and beside 3 others */
    qtts_voice *v = qtts_voice_from_samples(e, ref.f, (size_t)ref.numel, 24000, NULL, &err);
    TEST_CHECK(v != NULL, "voice: %s", err.message);
    synth_arg alone = {.e = e};
    qtts_request_default(&alone.r);
    alone.r.text = "Hello world, this is a test.";
    alone.r.voice = v;
    alone.r.greedy = 1;
    alone.r.max_frames = 10;
    synth_thread(&alone);
    synth_arg group[4];
    const char *texts[4] = {"Hello world, this is a test.", "A much longer sentence to keep the batch busy for a while.",
                            "Short.", "Another one of medium length."};
    int frames[4] = {10, 14, 3, 7};
    pthread_t gt[4];
    for (int i = 0; i < 4; i++) {
        memset(&group[i], 0, sizeof group[i]);
        group[i].e = e;
        qtts_request_default(&group[i].r);
        group[i].r.text = texts[i];
        group[i].r.voice = v;
        group[i].r.greedy = i != 1; /* one sampled neighbour too */
        group[i].r.has_seed = 1;
        group[i].r.seed = 99;
        group[i].r.max_frames = frames[i];
        pthread_create(&gt[i], NULL, synth_thread, &group[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(gt[i], NULL);
    TEST_CHECK(alone.rc == 0 && group[0].rc == 0, "batched synthesis failed");
    TEST_CHECK(alone.out.n == group[0].out.n && alone.out.n > 0, "alone %zu samples, batched %zu", alone.out.n,
               group[0].out.n);
    if (alone.out.n == group[0].out.n)
        TEST_NEAR(group[0].out.d, alone.out.d, alone.out.n, 0.0, "greedy audio alone == beside 3 others");
    for (int i = 0; i < 4; i++) free(group[i].out.d);
    free(alone.out.d);
    qtts_voice_release(v);
    qtts_voice_release(shared);
    npy_free(&ref);

    TEST_CHECK(count_threads() == after_create, "thread count after batching: %d", count_threads());
    qtts_engine_free(e);
    TEST_CHECK(count_threads() == before, "threads left after engine free: %d (before %d)", count_threads(), before);
    return test_finish("test_engine_threads");
}
