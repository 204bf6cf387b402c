/* The C API's answer to one request, for the Python tests to compare with:
 *   c_synth MODEL TEXT OUT.f32 [--speaker S] [--language L] [--instruct I] [--ref REF.f32 [--ref-text T]]
 *           [--x-vector-only] [--seed N] [--greedy] [--layout N] [--max-frames N]
 * writes the samples as raw float32 (REF.f32: 24 kHz mono raw float32). Exit 0, or 1 with the error.
 * With --repeat N (python/bench/overhead.py) it runs the request N more times and prints one line per run:
 * wall ms, the calling thread's CPU ms, chunks, samples, ms to the first chunk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qtts.h"

typedef struct {
    float *d;
    size_t n, cap;
    int chunks;
    double t_first;
} buf;

static double now_ms(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int collect(void *user, const float *s, size_t n) {
    buf *b = user;
    if (!b->chunks++) b->t_first = now_ms(CLOCK_MONOTONIC);
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->d = realloc(b->d, b->cap * sizeof *b->d);
        if (!b->d) return 1;
    }
    memcpy(b->d + b->n, s, n * sizeof *s);
    b->n += n;
    return 0;
}

static float *read_f32(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *d = malloc((size_t)size + 4);
    *n = d ? fread(d, 4, (size_t)size / 4, f) : 0;
    fclose(f);
    return d;
}

int main(int argc, char **argv) {
    if (argc < 4) return fprintf(stderr, "usage: c_synth MODEL TEXT OUT.f32 [options]\n"), 2;
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = argv[1];
    p.n_threads = 2;
    qtts_request r;
    qtts_request_default(&r);
    r.text = argv[2];
    const char *ref = NULL, *ref_text = NULL;
    int repeat = 0;
    for (int i = 4; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--greedy")) r.greedy = 1;
        else if (!strcmp(a, "--x-vector-only")) r.x_vector_only = 1;
        else if (!v) return fprintf(stderr, "%s needs a value\n", a), 2;
        else if (++i, !strcmp(a, "--speaker")) r.speaker = v;
        else if (!strcmp(a, "--language")) r.language = v;
        else if (!strcmp(a, "--instruct")) r.instruct = v;
        else if (!strcmp(a, "--ref")) ref = v;
        else if (!strcmp(a, "--ref-text")) ref_text = v;
        else if (!strcmp(a, "--seed")) r.has_seed = 1, r.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--layout")) r.layout = (qtts_text_layout)atoi(v);
        else if (!strcmp(a, "--max-frames")) r.max_frames = atoi(v);
        else if (!strcmp(a, "--repeat")) repeat = atoi(v);
        else return fprintf(stderr, "unknown option %s\n", a), 2;
    }
    qtts_error err = {0};
    qtts_engine *e = qtts_engine_create(&p, &err);
    if (!e) return fprintf(stderr, "engine: %s\n", err.message), 1;
    qtts_voice *voice = NULL;
    if (ref) {
        size_t n = 0;
        float *s = read_f32(ref, &n);
        voice = s ? qtts_voice_from_samples(e, s, n, 24000, ref_text, &err) : NULL;
        free(s);
        if (!voice) return fprintf(stderr, "voice: %s\n", err.message), 1;
        r.voice = voice;
    }
    buf out = {0};
    qtts_status st = qtts_synthesize(e, &r, collect, &out, NULL, &err);
    if (st) return fprintf(stderr, "synthesize: %s\n", err.message), 1;
    FILE *f = fopen(argv[3], "wb");
    if (!f || fwrite(out.d, 4, out.n, f) != out.n || fclose(f)) return fprintf(stderr, "cannot write %s\n", argv[3]), 1;
    for (int i = 0; i < repeat; i++) {
        buf b = {0};
        double t0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_THREAD_CPUTIME_ID);
        if (qtts_synthesize(e, &r, collect, &b, NULL, &err)) return fprintf(stderr, "synthesize: %s\n", err.message), 1;
        double c1 = now_ms(CLOCK_THREAD_CPUTIME_ID), t1 = now_ms(CLOCK_MONOTONIC);
        printf("%.3f %.4f %d %zu %.3f\n", t1 - t0, c1 - c0, b.chunks, b.n, b.t_first - t0);
        free(b.d);
    }
    qtts_voice_release(voice);
    qtts_engine_free(e);
    free(out.d);
    return 0;
}
