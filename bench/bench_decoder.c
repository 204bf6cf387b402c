/* Speech-tokenizer decoder speed at the REAL dimensions with random weights
 * (same loading path as a checkpoint): streaming ms per 80 ms frame, GFLOP/s,
 * per-stage times, the channel-major tail's time by operation, and the
 * machine's measured f32 FMA peak for comparison.
 *
 *   bench_decoder [--frames N] [--chunk C] [--threads 1,2] [--streams S] [--check] [--bf16 | --winograd | --winograd-f16 | --winograd-i16]
 *
 * --check first verifies at the real size that streaming in 1-frame steps and
 * in pieces equals one forward over 10 frames (max abs difference printed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/probe.h"
#include "core/threadpool.h"
#include "io/store.h"
#include "model/codec_decoder.h"
#include "model/codec_random.h"
#include "tensor/conv.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process (all threads): on a shared machine this
 * shows what the work costs when the threads actually run. */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- per-stage timing through the debug hook ---- */
enum { MAX_ST = 32 };
typedef struct {
    char name[MAX_ST][32];
    double t[MAX_ST];
    int n;
    double last;
} stage_times;

static void on_stage(void *ctx, const char *stage, const float *d, int64_t c, int64_t n, int64_t cs, int64_t ts) {
    (void)d, (void)c, (void)n, (void)cs, (void)ts;
    stage_times *s = ctx;
    double t = now();
    int i = 0;
    while (i < s->n && strcmp(s->name[i], stage)) i++;
    if (i == s->n && s->n < MAX_ST) snprintf(s->name[s->n++], 32, "%s", stage);
    if (i < MAX_ST) s->t[i] += t - s->last;
    s->last = t;
}

/* ---- FMA peak: the machine probe's register-only loop (bench/probe.h) ---- */
typedef struct {
    double wall, cpu; /* GFLOP/s per wall second (all threads) and of one core */
} peak_result;

static peak_result measure_peak(qtts_pool *pool) {
    peak_result r = {qtts_probe_fma_gflops(pool, 1), qtts_probe_fma_gflops(pool, 0)};
    return r;
}

static void parse_list(const char *s, int *out, int *n) {
    *n = 0;
    while (*s && *n < 8) {
        out[(*n)++] = atoi(s);
        const char *c = strchr(s, ',');
        if (!c) break;
        s = c + 1;
    }
}

int main(int argc, char **argv) {
    int frames = 50, chunk = 4, streams = 1, threads[8] = {1, 2}, n_threads = 2, check = 0, bf16 = 0, winograd = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--frames") && i + 1 < argc) frames = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc) chunk = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--streams") && i + 1 < argc) streams = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) parse_list(argv[++i], threads, &n_threads);
        else if (!strcmp(argv[i], "--check")) check = 1;
        else if (!strcmp(argv[i], "--bf16")) bf16 = 1;
        else if (!strcmp(argv[i], "--winograd")) winograd = 1;
        else if (!strcmp(argv[i], "--winograd-f16")) winograd = 2;
        else if (!strcmp(argv[i], "--winograd-i16")) winograd = 3;
        else {
            fprintf(stderr, "usage: bench_decoder [--frames N] [--chunk C] [--threads 1,2] [--streams S] [--check] "
                            "[--bf16 | --winograd | --winograd-f16 | --winograd-i16]\n");
            return 2;
        }
    }
    if (frames < 1 || chunk < 1 || streams < 1 || streams > 64) return 2;
    qtts_err err = {0};
    qtts_codec_config cfg;
    qtts_codec_config_real(&cfg);
    double t0 = now();
    qtts_store *st = qtts_codec_random_store(&cfg, 1, &err);
    qtts_codec_decoder *dec = st ? qtts_codec_decoder_load(st, &cfg, &err) : NULL;
    if (dec && (bf16 || winograd) &&
        qtts_codec_decoder_set_precision(dec,
                                         bf16            ? QTTS_DECODER_BF16
                                         : winograd == 3 ? QTTS_DECODER_WINOGRAD_I16
                                         : winograd == 2 ? QTTS_DECODER_WINOGRAD_F16
                                                         : QTTS_DECODER_WINOGRAD,
                                         &err)) {
        qtts_codec_decoder_free(dec);
        dec = NULL;
    }
    if (!dec) {
        fprintf(stderr, "bench_decoder: %s\n", err.msg);
        return 1;
    }
    double macs = qtts_codec_decoder_macs_per_frame(dec);
    printf("real-size decoder, random weights (built+loaded in %.1f s); %.3f GFLOP per frame; conv ISA %s\n",
           now() - t0, 2 * macs * 1e-9, qtts_conv_isa_name(QTTS_CONV_ISA_AUTO));
    int64_t nq = qtts_codec_decoder_num_quantizers(dec), fs = qtts_codec_decoder_frame_samples(dec);
    int warm = 8;
    int64_t total = warm + frames;
    int32_t *codes = malloc(sizeof(int32_t) * (size_t)(total * nq * streams));
    float *out = malloc(sizeof(float) * (size_t)(total * fs * streams));
    unsigned s = 7;
    for (int64_t i = 0; i < total * nq * streams; i++) {
        s = s * 1664525u + 1013904223u;
        codes[i] = (int32_t)((s >> 8) % 2048);
    }
    if (check) {
        qtts_pool *pool = qtts_pool_create(threads[n_threads - 1], &err);
        int64_t T = 10;
        float *ref = malloc(sizeof(float) * (size_t)(T * fs)), *w = malloc(sizeof(float) * (size_t)(T * fs));
        qtts_codec_decoder_set_max_chunk(dec, T);
        int rc = qtts_codec_decode_offline(dec, pool, codes, T, 0, 0, ref, &err);
        qtts_codec_decoder_set_max_chunk(dec, 1);
        qtts_codec_decoder_set_cache_budget(dec, 4096);
        rc |= qtts_codec_decode_offline(dec, pool, codes, T, 0, 0, w, &err);
        double dmax = 0, amax = 0;
        for (int64_t i = 0; i < T * fs; i++) { /* comparisons, not fmax: GCC 12 for AArch64 crashes vectorising fmax */
            double d = fabs(w[i] - ref[i]), a = fabs(ref[i]);
            if (d > dmax) dmax = d;
            if (a > amax) amax = a;
        }
        printf("check (real size, 10 frames): 1-frame steps + small tail pieces vs one forward: max abs diff %.3g "
               "(signal max %.3g)%s\n", dmax, amax, rc ? " [decode failed]" : "");
        qtts_codec_decoder_set_max_chunk(dec, 8);
        qtts_codec_decoder_set_cache_budget(dec, 1 << 19);
        free(ref);
        free(w);
        qtts_pool_free(pool);
    }
    for (int ti = 0; ti < n_threads; ti++) {
        qtts_pool *pool = qtts_pool_create(threads[ti], &err);
        if (!pool) {
            fprintf(stderr, "bench_decoder: %s\n", err.msg);
            return 1;
        }
        peak_result peak = measure_peak(pool);
        qtts_codec_stream *S[64];
        stage_times times;
        memset(&times, 0, sizeof times);
        qtts_decoder_op_times ops;
        memset(&ops, 0, sizeof ops);
        for (int k = 0; k < streams; k++) S[k] = qtts_codec_stream_new(dec, &err);
        double tstart = 0, cstart = 0;
        int64_t measured = frames; /* from the first step at or after the warm-up frames */
        for (int64_t f = 0; f < total; f += chunk) {
            int64_t n = f + chunk <= total ? chunk : total - f;
            if (f >= warm && tstart == 0) {
                measured = total - f;
                tstart = now();
                cstart = cpu_now();
                memset(&times, 0, sizeof times);
                memset(&ops, 0, sizeof ops);
                qtts_codec_decoder_set_op_times(dec, &ops);
                if (streams == 1) qtts_codec_stream_set_debug(S[0], on_stage, &times);
                times.last = tstart;
            }
            const int32_t *cp[64];
            int64_t nf[64];
            float *op[64];
            for (int k = 0; k < streams; k++) {
                cp[k] = codes + (k * total + f) * nq;
                nf[k] = n;
                op[k] = out + (k * total + f) * fs;
            }
            if (qtts_codec_decode_step_batch(dec, pool, S, cp, nf, streams, op, &err)) {
                fprintf(stderr, "bench_decoder: %s\n", err.msg);
                return 1;
            }
        }
        double dt = now() - tstart, dc = cpu_now() - cstart;
        qtts_codec_decoder_set_op_times(dec, NULL);
        double ms = dt * 1e3 / measured / streams, gf = 2 * macs * measured * streams / dt * 1e-9;
        double cms = dc * 1e3 / measured / streams, cgf = 2 * macs * measured * streams / dc * 1e-9;
        double rms = 0;
        for (int64_t i = (total - measured) * fs; i < total * fs; i++) rms += (double)out[i] * out[i];
        printf("threads %d, %d stream(s), chunk %d: wall %.2f ms per frame (RTF %.3f), %.1f GFLOP/s = %.0f%% of the "
               "FMA peak measured now (%.0f GFLOP/s wall)\n"
               "  cpu time %.2f ms per frame, %.1f GFLOP/s per busy core = %.0f%% of the per-core FMA peak (%.0f GFLOP/s "
               "per cpu second)  [audio rms %.3g]\n",
               threads[ti], streams, chunk, ms, ms / 80.0, gf, peak.wall > 0 ? 100 * gf / peak.wall : 0, peak.wall,
               cms, cgf, peak.cpu > 0 ? 100 * cgf / peak.cpu : 0, peak.cpu, sqrt(rms / (double)(measured * fs)));
        /* with several streams on several threads, each thread runs whole streams' tails: thread-ms */
        printf("  channel-major tail by operation, %s per frame:", streams > 1 && threads[ti] > 1 ? "thread-ms" : "ms");
        for (int op = 0; op < QTTS_DECODER_OP_COUNT; op++)
            printf(" %s %.2f", qtts_decoder_op_name((qtts_decoder_op)op), ops.ms[op] / (double)(measured * streams));
        printf("\n");
        if (streams == 1) {
            printf("  per-stage ms/frame:");
            for (int i = 0; i < times.n; i++) printf(" %s %.2f", times.name[i], times.t[i] * 1e3 / measured);
            printf("\n");
        }
        for (int k = 0; k < streams; k++) qtts_codec_stream_free(S[k]);
        qtts_pool_free(pool);
    }
    free(codes);
    free(out);
    qtts_codec_decoder_free(dec);
    qtts_store_free(st);
    return 0;
}
