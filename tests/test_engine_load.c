/* What an engine load does with its CPU and its kernel measurements:
 * - the calibrations run on the engine's own threads: the process never has
 *   more threads than before + the engine's (--threads) + this test's
 *   sampler, also while loading (a load used to start a temporary pool of
 *   every CPU to measure the weight layouts);
 * - their results are cached per CPU under the cache dir: a second start
 *   measures nothing; a cache from another CPU model or kernel version is
 *   not used; a corrupt one is ignored with one warning and rewritten;
 * - a .gguf written by `qtts quantize` loads to the same engine as the
 *   folder loaded with the same --quant: bit-identical audio, twice. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "harness.h"
#include "io/model_pack.h"
#include "qtts.h"
#include "support/test_util.h"

typedef struct {
    atomic_int stop;
    int max_threads;
} sampler;

static void *sample_threads(void *p) {
    sampler *s = p;
    const struct timespec ms = {0, 500000};
    while (!atomic_load(&s->stop)) {
        int n = count_threads();
        if (n > s->max_threads) s->max_threads = n;
        nanosleep(&ms, NULL);
    }
    return NULL;
}

/* An engine for model at `threads` with the decoder precision prec, its
 * load's thread peak in *peak (sampled every 0.5 ms) and the warnings it
 * printed (stderr) appended to log. The audio compared bit for bit comes from
 * engines with the decoder in f32 (AUDIO): its bits do not depend on how frames
 * are grouped into decoder steps, a timing choice (engine/decode_policy.h),
 * where "auto" may pick a Winograd form that tiles time per step. */
#define AUDIO "f32"
static qtts_engine *create(const char *model, const char *quant, const char *prec, int threads, int *peak,
                           const char *log) {
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = model;
    p.n_threads = threads;
    p.weight_type = quant;
    p.max_batch = 2;
    p.decoder_precision = prec;
    sampler s = {.max_threads = 0};
    atomic_init(&s.stop, 0);
    pthread_t th;
    fflush(stderr);
    FILE *saved = NULL;
    int fd = dup(2);
    if (fd >= 0) saved = freopen(log, "a", stderr);
    int sampling = pthread_create(&th, NULL, sample_threads, &s) == 0;
    qtts_error err = {0};
    qtts_engine *e = qtts_engine_create(&p, &err);
    if (sampling) {
        atomic_store(&s.stop, 1);
        pthread_join(th, NULL);
    }
    fflush(stderr);
    if (fd >= 0) {
        dup2(fd, 2);
        close(fd);
    }
    (void)saved;
    TEST_CHECK(e != NULL, "engine for %s (%s): %s", model, quant ? quant : "as stored", err.message);
    if (peak) *peak = s.max_threads;
    return e;
}

static int count_in_file(const char *path, const char *needle) {
    unsigned char *buf = NULL;
    size_t n = 0;
    if (read_bytes(path, &buf, &n)) return -1;
    int c = 0;
    for (size_t i = 0; i + strlen(needle) <= n; i++)
        if (!memcmp(buf + i, needle, strlen(needle))) c++;
    free(buf);
    return c;
}

/* Replaces the cache file's line starting with `key ` by `key value`. */
static int edit_cache(const char *path, const char *key, const char *value) {
    unsigned char *buf = NULL;
    size_t n = 0;
    if (read_bytes(path, &buf, &n)) return -1;
    char *out = malloc(n + 512);
    size_t o = 0;
    int found = 0;
    for (size_t i = 0; out && i < n;) {
        size_t e = i;
        while (e < n && buf[e] != '\n') e++;
        if (e - i > strlen(key) && !memcmp(buf + i, key, strlen(key)) && buf[i + strlen(key)] == ' ') {
            o += (size_t)sprintf(out + o, "%s %s\n", key, value);
            found = 1;
        } else {
            memcpy(out + o, buf + i, e - i);
            o += e - i;
            out[o++] = '\n';
        }
        i = e + 1;
    }
    free(buf);
    if (!out) return -1;
    out[o] = 0;
    int rc = found ? write_text_file(path, out) : -1;
    free(out);
    return rc;
}

/* Greedy audio of a short request (8 frames). */
static int synth(qtts_engine *e, pcm_buf *out) {
    qtts_request r;
    qtts_request_default(&r);
    r.text = "Hello world, this is a test.";
    r.speaker = "ryan";
    r.max_frames = 8;
    r.greedy = 1;
    r.has_seed = 1;
    r.seed = 7;
    qtts_error err = {0};
    memset(out, 0, sizeof *out);
    int rc = qtts_synthesize(e, &r, pcm_collect, out, NULL, &err);
    TEST_CHECK(rc == 0, "synthesize: %s", err.message);
    return rc;
}

static int same_pcm(const pcm_buf *a, const pcm_buf *b) {
    return a->n == b->n && a->n > 0 && !memcmp(a->d, b->d, a->n * sizeof(float));
}

/* What the load_progress callback saw. */
typedef struct {
    int calls, lm_calls, lm_rising, ready_last, decoder;
    double last_lm;
    char last[32];
} progress_log;

static void on_progress(void *user, const char *step, double done) {
    progress_log *pl = user;
    pl->calls++;
    pl->ready_last = !strcmp(step, "ready") && done == 1.0;
    if (pl->calls > 1 && !strcmp(pl->last, "ready")) pl->ready_last = -1000; /* anything after "ready" fails */
    if (!strcmp(step, "LM weights")) {
        if (pl->lm_calls++ && !(done > pl->last_lm)) pl->lm_rising = 0;
        pl->last_lm = done;
    }
    pl->decoder += !strcmp(step, "speech decoder");
    snprintf(pl->last, sizeof pl->last, "%s", step);
}

int main(void) {
    char home[] = "/tmp/qtts-test-load-XXXXXX", model[1024], cache[1200], log[1200], gguf[1200];
    if (!mkdtemp(home)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("QTTS_HOME", home, 1); /* the engine loader's cache dir */
    unsetenv("QTTS_INTERLEAVE");
    unsetenv("QTTS_PREFETCH");
    unsetenv("QTTS_LOCKSTEP");
    golden_path(model, sizeof model, "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny");
    snprintf(log, sizeof log, "%s/stderr.txt", home);
    const int threads = 1; /* fewer than the CPUs: a temporary pool of every CPU would show */
    snprintf(cache, sizeof cache, "%s/calibration-t%d.txt", home, threads);

    /* first start: measures (q8_0: the weight layout where the CPU has interleaved kernels, and the decoder
       convolutions "auto" chooses by), on the engine's threads */
    const int before = count_threads();
    int peak = 0;
    qtts_engine *e = create(model, "q8_0", "auto", threads, &peak, log);
    if (!e) return test_finish("test_engine_load");
    const qtts_model_info *mi = qtts_engine_info(e);
    TEST_CHECK(mi->kernels_measured >= 1, "a first start measures the kernels (%d)", mi->kernels_measured);
    /* before + the engine thread (the pool's owner; threads - 1 workers) + the sampler */
    TEST_CHECK(peak <= before + threads + 1, "threads during the load: %d, at most %d", peak, before + threads + 1);
    TEST_CHECK(mi->load_report && strstr(mi->load_report, "calibration"), "a load report: %s",
               mi->load_report ? mi->load_report : "(none)");
    printf("first start: %s\n", mi->load_report ? mi->load_report : "");
    TEST_CHECK(access(cache, R_OK) == 0, "the calibration cache is written: %s", cache);
    qtts_engine_free(e);
    pcm_buf folder = {0};
    e = create(model, "q8_0", AUDIO, threads, NULL, log);
    if (e) {
        synth(e, &folder);
        qtts_engine_free(e);
    }

    /* second start: the cache answers, nothing is timed, and the decisions read give the same audio */
    e = create(model, "q8_0", "auto", threads, &peak, log);
    if (e) {
        TEST_CHECK(qtts_engine_info(e)->kernels_measured == 0, "a second start measures nothing (%d)",
                   qtts_engine_info(e)->kernels_measured);
        qtts_engine_free(e);
    }
    e = create(model, "q8_0", AUDIO, threads, NULL, log);
    if (e) {
        pcm_buf again = {0};
        synth(e, &again);
        TEST_CHECK(same_pcm(&folder, &again), "the cached decisions give the same audio");
        free(again.d);
        qtts_engine_free(e);
    }

    /* the load's progress: the LM weights counted layer by layer up to all of them, the decoder, "ready" last */
    {
        qtts_engine_params p;
        qtts_engine_params_default(&p);
        p.model_path = model;
        p.n_threads = threads;
        p.weight_type = "q8_0";
        progress_log pl = {.lm_rising = 1};
        p.load_progress = on_progress;
        p.load_progress_user = &pl;
        qtts_error err = {0};
        e = qtts_engine_create(&p, &err);
        TEST_CHECK(e != NULL, "engine with a progress callback: %s", err.message);
        TEST_CHECK(pl.lm_calls >= 3 && pl.lm_rising && pl.last_lm == 1.0 && pl.decoder == 1 && pl.ready_last == 1,
                   "load progress: %d LM calls (rising %d, last %g), decoder %d, ready last %d", pl.lm_calls,
                   pl.lm_rising, pl.last_lm, pl.decoder, pl.ready_last);
        qtts_engine_free(e);
    }

    /* another kernel version, another CPU model: not used, measured again (and rewritten) */
    static const char *const keys[2][2] = {{"kernels", "999"}, {"cpu", "GenuineIntel/6/85/Some Other CPU"}};
    for (int i = 0; i < 2; i++) {
        TEST_CHECK(edit_cache(cache, keys[i][0], keys[i][1]) == 0, "cache file edited (%s)", keys[i][0]);
        e = create(model, "q8_0", "auto", threads, NULL, log);
        if (e) {
            TEST_CHECK(qtts_engine_info(e)->kernels_measured >= 1, "a cache with another %s is not used", keys[i][0]);
            qtts_engine_free(e);
        }
        e = create(model, "q8_0", "auto", threads, NULL, log);
        if (e) {
            TEST_CHECK(qtts_engine_info(e)->kernels_measured == 0, "... and it was rewritten (%s)", keys[i][0]);
            qtts_engine_free(e);
        }
    }
    TEST_CHECK(count_in_file(log, "calibration cache") == 0, "no warning for a valid cache of another key");

    /* a corrupt file: one warning, measured again */
    TEST_CHECK(write_text_file(cache, "qtts-calibration 1\ncpu x\nq8_0 1 1 zz\n\x01\x02garbage") == 0, "corrupted");
    e = create(model, "q8_0", "auto", threads, NULL, log);
    if (e) {
        TEST_CHECK(qtts_engine_info(e)->kernels_measured >= 1, "a corrupt cache is not used");
        qtts_engine_free(e);
    }
    TEST_CHECK(count_in_file(log, "warning: ignoring the calibration cache") == 1, "exactly one warning (%d)",
               count_in_file(log, "warning: ignoring the calibration cache"));

    /* a quantized .gguf: the same engine as the folder with the same --quant, on the same cached decisions
       (those above were measured again: a kernel choice that is close may go the other way, with another
       summation order) */
    free(folder.d);
    folder = (pcm_buf){0};
    e = create(model, "q8_0", AUDIO, threads, NULL, log);
    if (e) {
        TEST_CHECK(qtts_engine_info(e)->kernels_measured == 0, "the folder uses the cache");
        synth(e, &folder);
        qtts_engine_free(e);
    }
    snprintf(gguf, sizeof gguf, "%s/model-q8_0.gguf", home);
    qtts_err perr = {0};
    TEST_CHECK(qtts_model_pack(model, gguf, QTTS_Q8_0, 1, NULL, NULL, NULL, &perr) == 0, "qtts quantize: %s", perr.msg);
    for (int i = 0; i < 2; i++) {
        e = create(gguf, NULL, AUDIO, threads, NULL, log);
        if (!e) break;
        TEST_CHECK(qtts_engine_info(e)->kernels_measured == 0, "the .gguf uses the same cache");
        pcm_buf g = {0};
        synth(e, &g);
        TEST_CHECK(same_pcm(&folder, &g), "load %d of the .gguf: audio bit-identical to the folder's with q8_0 "
                   "(%zu vs %zu samples)", i + 1, g.n, folder.n);
        free(g.d);
        qtts_engine_free(e);
    }
    free(folder.d);
    rm_rf(home);
    return test_finish("test_engine_load");
}
