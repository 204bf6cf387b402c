/* The thread invariant of `qtts serve`, observed from outside through /proc:
 * after warm-up the server's thread count never changes, and the CPU time of
 * model compute accrues on the engine's threads (engine + pool workers, whose
 * ids /metrics publishes), not on HTTP threads. Phases: 30 buffered wav
 * requests each on a new connection, 10 WAV voice registrations, 8
 * concurrent streaming requests, then a bounded load run (96 requests at
 * concurrency 16; QTTS_SERVER_LOAD_N=300 for a longer one) with 0 errors and no RSS growth after warm-up. Prints the
 * effective cores (CPU time / wall time) of each phase. */
#include <ctype.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "harness.h"
#include "support/test_util.h"
#include "server/b64.h"
#include "support/npy.h"
#include "test_server_http.h"

#define BASE_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define MAX_TIDS 256

typedef struct {
    int tid;
    long long ticks; /* utime + stime */
} tick_row;

typedef struct {
    tick_row rows[MAX_TIDS];
    int n;
} tick_snap;

static int list_tids(pid_t pid, int *out, int max) {
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
    DIR *d = opendir(p);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (isdigit((unsigned char)e->d_name[0]) && n < max) out[n++] = atoi(e->d_name);
    closedir(d);
    return n;
}

static long long thread_ticks(pid_t pid, int tid) {
    char p[96], buf[1024];
    snprintf(p, sizeof p, "/proc/%d/task/%d/stat", (int)pid, tid);
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *s = strrchr(buf, ')'); /* comm may contain spaces */
    if (!s) return -1;
    /* fields after ')': 3 state ... 14 utime 15 stime */
    long long ut = 0, st = 0;
    int field = 2;
    for (const char *q = s + 1; *q; q++) {
        if (*q == ' ') {
            field++;
            if (field == 14) ut = atoll(q + 1);
            if (field == 15) {
                st = atoll(q + 1);
                break;
            }
        }
    }
    return ut + st;
}

static void snap(pid_t pid, tick_snap *s) {
    int tids[MAX_TIDS];
    int n = list_tids(pid, tids, MAX_TIDS);
    s->n = 0;
    for (int i = 0; i < n; i++) {
        long long t = thread_ticks(pid, tids[i]);
        if (t >= 0) s->rows[s->n++] = (tick_row){tids[i], t};
    }
}

static long long ticks_of(const tick_snap *s, int tid) {
    for (int i = 0; i < s->n; i++)
        if (s->rows[i].tid == tid) return s->rows[i].ticks;
    return 0;
}

static long rss_kb(pid_t pid) {
    char p[64], line[256];
    snprintf(p, sizeof p, "/proc/%d/status", (int)pid);
    FILE *f = fopen(p, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = atol(line + 6);
    if (f) fclose(f);
    return kb;
}

/* Background sampler of the thread count. */
typedef struct {
    pid_t pid;
    atomic_int stop;
    atomic_int min, max, samples;
} sampler;

static void *sample_loop(void *p) {
    sampler *s = p;
    int tids[MAX_TIDS];
    while (!atomic_load(&s->stop)) {
        int n = list_tids(s->pid, tids, MAX_TIDS);
        if (n > 0) {
            if (n < atomic_load(&s->min)) atomic_store(&s->min, n);
            if (n > atomic_load(&s->max)) atomic_store(&s->max, n);
            atomic_fetch_add(&s->samples, 1);
        }
        struct timespec ts = {0, 5 * 1000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

typedef struct {
    int engine_tids[MAX_TIDS];
    int n_engine;
} engine_ids;

static int is_engine(const engine_ids *e, int tid) {
    for (int i = 0; i < e->n_engine; i++)
        if (e->engine_tids[i] == tid) return 1;
    return 0;
}

typedef struct {
    const char *name;
    double wall;
    long long engine_ticks, other_ticks, worst_other;
    int worst_other_tid;
} phase_stats;

static void phase_end(pid_t pid, const engine_ids *ids, const tick_snap *before, double t0, phase_stats *ps) {
    tick_snap after;
    snap(pid, &after);
    ps->wall = th_now() - t0;
    ps->engine_ticks = ps->other_ticks = ps->worst_other = 0;
    for (int i = 0; i < after.n; i++) {
        long long d = after.rows[i].ticks - ticks_of(before, after.rows[i].tid);
        if (is_engine(ids, after.rows[i].tid)) {
            ps->engine_ticks += d;
        } else {
            ps->other_ticks += d;
            if (d > ps->worst_other) {
                ps->worst_other = d;
                ps->worst_other_tid = after.rows[i].tid;
            }
        }
    }
    double hz = (double)sysconf(_SC_CLK_TCK);
    printf("phase %-22s wall %6.2f s  engine threads %6.2f s CPU  other threads %5.2f s CPU (max one thread %.2f s)"
           "  effective cores %.2f\n",
           ps->name, ps->wall, ps->engine_ticks / hz, ps->other_ticks / hz, ps->worst_other / hz,
           (ps->engine_ticks + ps->other_ticks) / hz / (ps->wall > 0 ? ps->wall : 1));
}

typedef struct {
    int port;
    const char *body;
    int n;           /* requests to send */
    int stream;      /* count complete chunked bodies */
    atomic_int *next; /* shared work counter (load run) or NULL */
    int total;
    int errors;
    int done;
    char first_error[256];
} worker_job;

static void *worker(void *p) {
    worker_job *j = p;
    for (;;) {
        if (j->next) {
            if (atomic_fetch_add(j->next, 1) >= j->total) break;
        } else if (j->done >= j->n) {
            break;
        }
        th_resp r;
        int rc = th_post_json(j->port, "/v1/audio/speech", NULL, j->body, &r, 120);
        const unsigned char *d;
        int rate;
        int ok = rc == 0 && r.status == 200 && r.complete && th_wav_samples(r.body, r.body_len, &d, &rate) > 0 &&
                 (!j->stream || r.chunked);
        if (!ok) {
            if (!j->errors)
                snprintf(j->first_error, sizeof j->first_error, "status %d: %.200s", r.status,
                         r.body ? (const char *)r.body : "(no body)");
            j->errors++;
        }
        j->done++;
        th_resp_free(&r);
    }
    return NULL;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    if (stat(BASE_MODEL "/config.json", &st) != 0) {
        TEST_CHECK(0, "tiny base model missing under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_server_threads");
    }
    char vdir[] = "/tmp/qtts_voicesXXXXXX";
    if (!mkdtemp(vdir)) return 1;
    th_server srv;
    const char *args[] = {"-m", BASE_MODEL, "--threads", "2", "--voices-dir", vdir, "--max-batch", "16", "--max-queue", "64", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "server starts");
        th_stop(&srv, 10);
        rm_rf(vdir);
        return test_finish("test_server_threads");
    }
    pid_t pid = srv.pid;
    int port = srv.port;

    /* Engine thread ids from /metrics. */
    engine_ids ids = {.n_engine = 0};
    th_resp r;
    th_get(port, "/metrics", NULL, &r);
    for (const char *p = r.body ? (const char *)r.body : ""; (p = strstr(p, "qtts_engine_thread{tid=\""));) {
        p += strlen("qtts_engine_thread{tid=\"");
        if (ids.n_engine < MAX_TIDS) ids.engine_tids[ids.n_engine++] = atoi(p);
    }
    th_resp_free(&r);
    TEST_CHECK(ids.n_engine == 2, "--threads 2: engine thread + 1 pool worker published, got %d", ids.n_engine);

    /* Warm-up: one registration, one buffered and one streamed request. */
    npy_array a;
    size_t wav_n = 0;
    unsigned char *wav = NULL;
    if (npy_load_fixture("input_wave_1p5s", &a) == 0) {
        wav = th_make_wav(a.f, (size_t)a.numel, 24000, &wav_n);
        npy_free(&a);
    }
    char *wb = malloc(srv_b64_encoded_len(wav_n) + 1);
    srv_b64_encode(wav, wav_n, wb);
    char *reg = malloc(strlen(wb) + 256);
    sprintf(reg, "{\"name\":\"warm\",\"ref_text\":\"Hello there, this is my voice.\",\"wav_b64\":\"%s\"}", wb);
    th_post_json(port, "/v1/audio/voices", NULL, reg, &r, 120);
    TEST_CHECK(r.status == 201, "warm-up registration: %d", r.status);
    th_resp_free(&r);
    /* Short requests (x-vector cloning, 4 frames): the tiny model is cheap but
     * CI machines are small; the shape of the work is what matters here. */
    const char *buffered = "{\"input\":\"Hello world.\",\"voice\":\"warm\",\"response_format\":\"wav\","
                           "\"x_vector_only\":true,\"temperature\":0,\"max_new_tokens\":4}";
    const char *streamed = "{\"input\":\"Hello world.\",\"voice\":\"warm\",\"response_format\":\"wav\","
                           "\"x_vector_only\":true,\"stream_format\":\"audio\",\"seed\":3,\"max_new_tokens\":4}";
    th_post_json(port, "/v1/audio/speech", NULL, buffered, &r, 120);
    TEST_CHECK(r.status == 200, "warm-up speech: %d", r.status);
    th_resp_free(&r);
    th_post_json(port, "/v1/audio/speech", NULL, streamed, &r, 120);
    th_resp_free(&r);

    int tids[MAX_TIDS];
    int base_count = list_tids(pid, tids, MAX_TIDS);
    printf("threads after warm-up: %d (engine+pool %d; the rest are HTTP threads and the main thread)\n", base_count,
           ids.n_engine);
    sampler smp = {.pid = pid};
    atomic_init(&smp.stop, 0);
    atomic_init(&smp.min, 1 << 30);
    atomic_init(&smp.max, 0);
    atomic_init(&smp.samples, 0);
    pthread_t sth;
    pthread_create(&sth, NULL, sample_loop, &smp);

    phase_stats ps[4];
    tick_snap before;
    double t0;

    /* Phase 1: 30 buffered requests, each on a new connection, 3 at a time. */
    snap(pid, &before);
    t0 = th_now();
    {
        atomic_int next1;
        atomic_init(&next1, 0);
        worker_job j1[3];
        pthread_t th1[3];
        int errors = 0;
        for (int i = 0; i < 3; i++) {
            j1[i] = (worker_job){.port = port, .body = buffered, .next = &next1, .total = 30};
            pthread_create(&th1[i], NULL, worker, &j1[i]);
        }
        for (int i = 0; i < 3; i++) {
            pthread_join(th1[i], NULL);
            errors += j1[i].errors;
            if (j1[i].errors) fprintf(stderr, "buffered worker %d: %s\n", i, j1[i].first_error);
        }
        TEST_CHECK(errors == 0, "buffered phase: %d errors", errors);
    }
    ps[0].name = "30 buffered wav";
    phase_end(pid, &ids, &before, t0, &ps[0]);

    /* Phase 2: 10 WAV voice registrations. */
    snap(pid, &before);
    t0 = th_now();
    int reg_errors = 0;
    for (int i = 0; i < 10; i++) {
        sprintf(reg, "{\"name\":\"v%d\",\"ref_text\":\"Hello there, this is my voice.\",\"wav_b64\":\"%s\"}", i, wb);
        th_post_json(port, "/v1/audio/voices", NULL, reg, &r, 120);
        reg_errors += r.status != 201;
        th_resp_free(&r);
    }
    ps[1].name = "10 WAV registrations";
    phase_end(pid, &ids, &before, t0, &ps[1]);
    TEST_CHECK(reg_errors == 0, "registration phase: %d errors", reg_errors);

    /* Phase 3: 8 concurrent streaming requests. */
    snap(pid, &before);
    t0 = th_now();
    worker_job j3[8];
    pthread_t th3[8];
    for (int i = 0; i < 8; i++) {
        j3[i] = (worker_job){.port = port, .body = streamed, .n = 1, .stream = 1};
        pthread_create(&th3[i], NULL, worker, &j3[i]);
    }
    int stream_errors = 0;
    for (int i = 0; i < 8; i++) {
        pthread_join(th3[i], NULL);
        stream_errors += j3[i].errors;
        if (j3[i].errors) fprintf(stderr, "stream %d: %s\n", i, j3[i].first_error);
    }
    ps[2].name = "8 concurrent streams";
    phase_end(pid, &ids, &before, t0, &ps[2]);
    TEST_CHECK(stream_errors == 0, "streaming phase: %d errors", stream_errors);

    /* Phase 4: load run at concurrency 16 (QTTS_SERVER_LOAD_N requests,
     * default 96: sized for a 2-core CI box); RSS after the first third is
     * the warm level. */
    enum { LOAD_C = 16 };
    const char *load_env = getenv("QTTS_SERVER_LOAD_N");
    const int LOAD_N = load_env && atoi(load_env) > 0 ? atoi(load_env) : 96;
    snap(pid, &before);
    t0 = th_now();
    atomic_int next;
    atomic_init(&next, 0);
    worker_job j4[LOAD_C];
    pthread_t th4[LOAD_C];
    for (int i = 0; i < LOAD_C; i++) {
        j4[i] = (worker_job){.port = port, .body = i % 2 ? streamed : buffered, .next = &next, .total = LOAD_N,
                             .stream = i % 2};
        pthread_create(&th4[i], NULL, worker, &j4[i]);
    }
    long rss_warm = -1, rss_peak = 0;
    while (atomic_load(&next) < LOAD_N + LOAD_C) {
        int done = 0;
        for (int i = 0; i < LOAD_C; i++) done += j4[i].done;
        long rss = rss_kb(pid);
        if (rss_warm < 0 && done >= LOAD_N / 3) rss_warm = rss;
        if (rss_warm >= 0 && rss > rss_peak) rss_peak = rss;
        if (done >= LOAD_N) break;
        struct timespec ts = {0, 50 * 1000000};
        nanosleep(&ts, NULL);
    }
    int load_errors = 0, load_done = 0;
    for (int i = 0; i < LOAD_C; i++) {
        pthread_join(th4[i], NULL);
        load_errors += j4[i].errors;
        load_done += j4[i].done;
        if (j4[i].errors) fprintf(stderr, "load worker %d: %d errors, first: %s\n", i, j4[i].errors, j4[i].first_error);
    }
    long rss_end = rss_kb(pid);
    char load_name[64];
    snprintf(load_name, sizeof load_name, "load %d x%d", LOAD_N, LOAD_C);
    ps[3].name = load_name;
    phase_end(pid, &ids, &before, t0, &ps[3]);
    printf("load: %d requests, %d errors, %.1f req/s; RSS warm %ld kB, peak after warm-up %ld kB, end %ld kB\n",
           load_done, load_errors, load_done / ps[3].wall, rss_warm, rss_peak, rss_end);
    TEST_CHECK(load_done == LOAD_N && load_errors == 0, "load run: %d of %d done, %d errors", load_done, LOAD_N,
               load_errors);
#ifdef __SANITIZE_ADDRESS__
    printf("SKIP RSS growth check: AddressSanitizer's quarantine holds freed memory by design\n");
#else
    TEST_CHECK(rss_warm > 0 && rss_end <= rss_warm + rss_warm / 10 + 8192,
               "RSS does not grow after warm-up: warm %ld kB, end %ld kB", rss_warm, rss_end);
#endif

    atomic_store(&smp.stop, 1);
    pthread_join(sth, NULL);
    int after_count = list_tids(pid, tids, MAX_TIDS);
    printf("thread count: after warm-up %d, during phases min %d max %d (%d samples), at the end %d\n", base_count,
           atomic_load(&smp.min), atomic_load(&smp.max), atomic_load(&smp.samples), after_count);
    TEST_CHECK(atomic_load(&smp.min) == base_count && atomic_load(&smp.max) == base_count && after_count == base_count,
               "the thread count never changes after warm-up");
    /* Model compute lands on the engine threads. HTTP threads do parsing,
     * base64, WAV packing and socket I/O: allow them a quarter of the engine
     * threads' time, plus 0.1 s of slack for scheduler tick granularity. */
    double hz = (double)sysconf(_SC_CLK_TCK);
    for (int i = 0; i < 4; i++)
        TEST_CHECK(ps[i].other_ticks <= ps[i].engine_ticks / 4 + (long long)(0.1 * hz),
                   "phase '%s': non-engine threads used %.2f s CPU vs engine threads %.2f s", ps[i].name,
                   ps[i].other_ticks / hz, ps[i].engine_ticks / hz);
    TEST_CHECK(th_stop(&srv, 60) == 0, "SIGTERM exit status 0");
    free(reg);
    free(wb);
    free(wav);
    rm_rf(vdir);
    return test_finish("test_server_threads");
}
