/* Speech-tokenizer decoder against the official PyTorch fixtures (tiny
 * checkpoint), plus streaming/chunking/batching invariances.
 * Golden tolerance: max abs error <= 1e-4 on every waveform, and on every
 * stage <= 1e-4 or 1e-5 of the stage's largest |value|, whichever is larger:
 * f32 rounding grows with the values, and each residual block of the tiny
 * random decoder doubles what reaches it (decoder3..5 reach |14.5|, where
 * the AVX2 build already stood at 0.94e-4 with the old bound).
 * Streaming vs. one forward: <= 1e-5. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "harness.h"
#include "model/codec_decoder.h"
#include "tensor/conv.h"
#include "tensor/conv_calibrate.h"
#include "model/codec_random.h"
#include "support/npy.h"

#define GOLD_TOL 1e-4
#define GOLD_REL_TOL 1e-5
#define STREAM_TOL 1e-5

typedef struct {
    const char *stage;
    int transposed; /* fixture stored [T][C] */
    npy_array want;
    float *got; /* [C][Tn] */
    int64_t C, Tn, filled;
} stage_rec;

static stage_rec g_stages[] = {
    {.stage = "rvq_out"}, {.stage = "pre_conv_out"}, {.stage = "pre_transformer_out", .transposed = 1},
    {.stage = "upsample0_transconv_out"}, {.stage = "upsample0_convnext_out"}, {.stage = "upsample1_transconv_out"},
    {.stage = "upsample1_convnext_out"}, {.stage = "decoder0_out"}, {.stage = "decoder1_out"},
    {.stage = "decoder2_out"}, {.stage = "decoder3_out"}, {.stage = "decoder4_out"}, {.stage = "decoder5_out"},
    {.stage = "decoder6_out"},
};
enum { N_STAGES = sizeof g_stages / sizeof g_stages[0] };

static void on_stage(void *ctx, const char *stage, const float *data, int64_t C, int64_t n, int64_t cs, int64_t ts) {
    (void)ctx;
    for (int i = 0; i < N_STAGES; i++) {
        stage_rec *r = &g_stages[i];
        if (strcmp(r->stage, stage)) continue;
        if (!r->got) return;
        if (C != r->C || r->filled + n > r->Tn) {
            TEST_CHECK(0, "stage %s: got %lld channels x %lld more samples, fixture is %lld x %lld (filled %lld)",
                       stage, (long long)C, (long long)n, (long long)r->C, (long long)r->Tn, (long long)r->filled);
            r->got = NULL;
            return;
        }
        for (int64_t c = 0; c < C; c++)
            for (int64_t t = 0; t < n; t++) r->got[c * r->Tn + r->filled + t] = data[c * cs + t * ts];
        r->filled += n;
        return;
    }
    TEST_CHECK(0, "unexpected stage name %s", stage);
}

static unsigned g_seed = 12345;
static int rnd(int n) {
    g_seed = g_seed * 1103515245u + 12345u;
    return (int)((g_seed >> 16) % (unsigned)n);
}

/* Feeds T frames in the chunk sizes produced by next_chunk. */
static int feed_chunks(qtts_codec_decoder *dec, qtts_pool *pool, const int32_t *codes, int64_t T, const int *pattern,
                       int npat, float *out) {
    qtts_err err = {0};
    qtts_codec_stream *s = qtts_codec_stream_new(dec, &err);
    if (!s) return -1;
    int64_t nq = qtts_codec_decoder_num_quantizers(dec), fs = qtts_codec_decoder_frame_samples(dec);
    int64_t done = 0;
    int rc = 0;
    for (int i = 0; done < T; i++) {
        int64_t n = npat > 0 ? pattern[i % npat] : 1 + rnd(9);
        if (n > T - done) n = T - done;
        if (qtts_codec_decode_feed(dec, pool, s, codes + done * nq, n, out + done * fs, &err)) {
            TEST_CHECK(0, "feed: %s", err.msg);
            rc = -1;
            break;
        }
        done += n;
    }
    TEST_CHECK(rc || qtts_codec_stream_frames(s) == T, "stream frame count %lld != %lld",
               (long long)qtts_codec_stream_frames(s), (long long)T);
    qtts_codec_stream_free(s);
    return rc;
}

/* A different geometry through the random store: 3 blocks with rates 3,2,5,
 * one upsampling ratio, GQA, 8 codebooks of 300, a 5-frame window (so the
 * KV window is trimmed many times). No reference exists at this size: it
 * checks generality, streaming exactness and the chunking logic. */
static void other_sizes(qtts_pool *pool) {
    qtts_err err = {0};
    qtts_codec_config cfg;
    qtts_codec_config_real(&cfg);
    cfg.dec.codebook_size = 300;
    cfg.dec.num_quantizers = 8;
    cfg.dec.codebook_dim = 16;
    cfg.dec.latent_dim = 24;
    cfg.dec.hidden = 16;
    cfg.dec.heads = 2;
    cfg.dec.kv_heads = 1;
    cfg.dec.head_dim = 8;
    cfg.dec.intermediate = 32;
    cfg.dec.layers = 2;
    cfg.dec.decoder_dim = 32;
    cfg.dec.sliding_window = 5;
    cfg.dec.n_upsample_rates = 3;
    cfg.dec.upsample_rates[0] = 3;
    cfg.dec.upsample_rates[1] = 2;
    cfg.dec.upsample_rates[2] = 5;
    cfg.dec.n_upsampling_ratios = 1;
    cfg.dec.upsampling_ratios[0] = 2;
    cfg.frame_samples = 60;
    qtts_store *st = qtts_codec_random_store(&cfg, 3, &err);
    TEST_CHECK(st != NULL, "random store: %s", err.msg);
    qtts_codec_decoder *dec = st ? qtts_codec_decoder_load(st, &cfg, &err) : NULL;
    TEST_CHECK(dec != NULL, "load other sizes: %s", err.msg);
    if (!dec) {
        qtts_store_free(st);
        return;
    }
    int64_t T = 23, nq = 8, fs = 60;
    TEST_CHECK(qtts_codec_decoder_frame_samples(dec) == fs, "frame samples %lld",
               (long long)qtts_codec_decoder_frame_samples(dec));
    int32_t *codes = malloc(sizeof(int32_t) * (size_t)(T * nq));
    for (int64_t i = 0; i < T * nq; i++) codes[i] = rnd(300);
    float *ref = malloc(sizeof(float) * (size_t)(T * fs)), *w = malloc(sizeof(float) * (size_t)(T * fs));
    qtts_codec_decoder_set_max_chunk(dec, 64);
    feed_chunks(dec, pool, codes, T, (const int[]){(int)T}, 1, ref);
    int finite = 1;
    double rms = 0;
    for (int64_t i = 0; i < T * fs; i++) {
        finite &= isfinite(ref[i]) && fabsf(ref[i]) <= 1.0f;
        rms += (double)ref[i] * ref[i];
    }
    TEST_CHECK(finite && rms > 0, "other sizes: output not finite / silent (rms %g)", rms);
    qtts_codec_decoder_set_max_chunk(dec, 3);
    for (int c = 1; c <= 5; c++) {
        feed_chunks(dec, pool, codes, T, &c, 1, w);
        TEST_NEAR(w, ref, (size_t)(T * fs), STREAM_TOL, "other sizes: chunked feed vs one forward");
    }
    feed_chunks(dec, pool, codes, T, NULL, 0, w);
    TEST_NEAR(w, ref, (size_t)(T * fs), STREAM_TOL, "other sizes: random feed vs one forward");
    { /* prepared on the pool: the same decoder, bit for bit */
        qtts_codec_decoder *dp = qtts_codec_decoder_load_pool(st, &cfg, pool, QTTS_DECODER_F32, &err);
        TEST_CHECK(dp != NULL, "load on the pool: %s", err.msg);
        if (dp) {
            qtts_codec_decoder_set_max_chunk(dp, 64);
            feed_chunks(dp, pool, codes, T, (const int[]){(int)T}, 1, w);
            TEST_CHECK(!memcmp(w, ref, sizeof(float) * (size_t)(T * fs)),
                       "other sizes: the decoder prepared on the pool decodes differently");
            qtts_codec_decoder_free(dp);
        }
    }
    qtts_codec_decoder_set_cache_budget(dec, 300);
    feed_chunks(dec, pool, codes, T, NULL, 0, w);
    TEST_NEAR(w, ref, (size_t)(T * fs), STREAM_TOL, "other sizes: tail in pieces vs one forward");
    /* the operation timers (bench_decoder's table): every operation counted while set, none after */
    {
        qtts_decoder_op_times ops;
        memset(&ops, 0, sizeof ops);
        qtts_codec_decoder_set_op_times(dec, &ops);
        const double t0 = qtts_now_ms();
        feed_chunks(dec, pool, codes, T, NULL, 0, w);
        const double wall = qtts_now_ms() - t0;
        qtts_codec_decoder_set_op_times(dec, NULL);
        double sum = 0;
        int all = 1;
        for (int op = 0; op < QTTS_DECODER_OP_COUNT; op++) {
            all &= ops.ms[op] > 0 && strcmp(qtts_decoder_op_name((qtts_decoder_op)op), "?") != 0;
            sum += ops.ms[op];
        }
        TEST_CHECK(all && sum <= wall, "operation times: each > 0 and %.3f ms in all within the %.3f ms wall", sum,
                   wall);
        const qtts_decoder_op_times before = ops;
        feed_chunks(dec, pool, codes, T, NULL, 0, w);
        TEST_CHECK(!memcmp(&before, &ops, sizeof ops), "operation times still counted after the table was unset");
    }
    /* official chunking with a context reaching back to frame 0 re-decodes everything: exact */
    TEST_CHECK(qtts_codec_decode_offline(dec, pool, codes, T, 4, 1000, w, &err) == 0, "offline: %s", err.msg);
    TEST_NEAR(w, ref, (size_t)(T * fs), STREAM_TOL, "other sizes: chunk 4 + full context vs one forward");
    /* short context: differs (the window is 5 frames, the convs reach further back) */
    TEST_CHECK(qtts_codec_decode_offline(dec, pool, codes, T, 4, 1, w, &err) == 0, "offline: %s", err.msg);
    double dmax = 0;
    for (int64_t i = 0; i < T * fs; i++) dmax = fmax(dmax, fabs(w[i] - ref[i]));
    TEST_CHECK(dmax > 1e-6 && dmax < 2, "other sizes: chunk 4 / context 1 vs one forward differ by %g", dmax);
    /* samples of the first chunk are identical in any mode */
    TEST_NEAR(w, ref, (size_t)(4 * fs), STREAM_TOL, "other sizes: first chunk");
    qtts_codec_decoder_free(dec);

    /* a config asking for more layers than the weights have: one clear error */
    cfg.dec.layers = 3;
    err.msg[0] = 0;
    dec = qtts_codec_decoder_load(st, &cfg, &err);
    TEST_CHECK(!dec && strstr(err.msg, "missing tensor") && strstr(err.msg, "pre_transformer.layers.2"),
               "missing layer: '%s'", err.msg);
    qtts_codec_decoder_free(dec);
    cfg.dec.layers = 2;
    cfg.frame_samples = 1920;
    dec = qtts_codec_decoder_load(st, &cfg, &err);
    TEST_CHECK(!dec && strstr(err.msg, "upsample"), "inconsistent frame samples: '%s'", err.msg);
    qtts_codec_decoder_free(dec);
    free(codes);
    free(ref);
    free(w);
    qtts_store_free(st);
}

/* bf16 decoder convs vs the f32 reference waveform (see the bf16 section). */
#define BF16_MIN_SNR_DB 30.0
/* Winograd F(4, 7) residual convs, f32 arithmetic: each conv adds a few
 * times the direct conv's rounding (~100 dB on its own), 12 of them in a row. */
#define WINOGRAD_MIN_SNR_DB 80.0
/* The same with f16 time-major weights: each weight rounded to 11 bits (53 dB on the golden decoders). */
#define WINOGRAD_F16_MIN_SNR_DB 45.0
/* Winograd with every 1-tap product in int16 (14-bit weights and inputs: 43.5 dB on the golden decoders). */
#define WINOGRAD_I16_MIN_SNR_DB 40.0

/* QTTS_DECODER_PRECISION_NAMES (help texts, messages) lists exactly the table: each name after "auto"
 * parses and names itself back, and every precision's name is listed. */
static void check_precision_names(void) {
    char list[] = QTTS_DECODER_PRECISION_NAMES;
    int n = 0;
    for (char *tok = strtok(list, ", "); tok; tok = strtok(NULL, ", ")) {
        if (!n++) {
            TEST_CHECK(!strcmp(tok, "auto"), "the list starts with auto: %s", tok);
            continue;
        }
        qtts_decoder_precision p;
        TEST_CHECK(!qtts_decoder_precision_parse(tok, &p) && !strcmp(qtts_decoder_precision_name(p), tok),
                   "precision name %s round-trips", tok);
    }
    const qtts_decoder_precision all[] = {QTTS_DECODER_F32, QTTS_DECODER_BF16, QTTS_DECODER_WINOGRAD,
                                          QTTS_DECODER_WINOGRAD_F16, QTTS_DECODER_WINOGRAD_I16};
    TEST_CHECK(n == 1 + (int)(sizeof all / sizeof all[0]), "%d names listed", n);
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        TEST_CHECK(strstr(QTTS_DECODER_PRECISION_NAMES, qtts_decoder_precision_name(all[i])) != NULL, "%s listed",
                   qtts_decoder_precision_name(all[i]));
}

int main(void) {
    check_precision_names();
    qtts_err err = {0};
    qtts_pool *pool = qtts_pool_create(2, &err);
    TEST_CHECK(pool != NULL, "pool: %s", err.msg);
    char dir[4096];
    golden_path(dir, sizeof dir, "Qwen3-TTS-12Hz-0.6B-Base-tiny");
    qtts_codec_decoder *dec = qtts_codec_decoder_open(dir, &err);
    TEST_CHECK(dec != NULL, "open %s: %s", dir, err.msg);
    if (!pool || !dec) return test_finish("test_codec_decoder");
    {
        /* the tokenizer folder itself opens too; a wrong path names itself */
        char tdir[4200];
        snprintf(tdir, sizeof tdir, "%s/speech_tokenizer", dir);
        qtts_codec_decoder *d2 = qtts_codec_decoder_open(tdir, &err);
        TEST_CHECK(d2 != NULL, "open tokenizer folder: %s", err.msg);
        /* dropped weights (a decoder on the device): the sizes answer, streams are refused */
        const double macs = d2 ? qtts_codec_decoder_macs_per_frame(d2) : 0;
        if (d2) qtts_codec_decoder_drop_weights(d2);
        TEST_CHECK(d2 && qtts_codec_decoder_frame_samples(d2) == 1920 && qtts_codec_decoder_num_quantizers(d2) == 16 &&
                       macs > 0 && qtts_codec_decoder_macs_per_frame(d2) == macs,
                   "sizes after the weights were dropped");
        TEST_CHECK(d2 && !qtts_codec_stream_new(d2, &err) && strstr(err.msg, "dropped"),
                   "a stream of a decoder without weights: '%s'", err.msg);
        TEST_CHECK(d2 && qtts_codec_decoder_set_precision(d2, QTTS_DECODER_BF16, &err) && strstr(err.msg, "dropped"),
                   "a precision change without weights: '%s'", err.msg);
        qtts_codec_decoder_free(d2);
        TEST_CHECK(!qtts_codec_decoder_open("/nonexistent/model", &err) && strstr(err.msg, "/nonexistent/model"),
                   "bad path: '%s'", err.msg);
    }
    int64_t nq = qtts_codec_decoder_num_quantizers(dec), fs = qtts_codec_decoder_frame_samples(dec);
    TEST_CHECK(fs == 1920 && nq == 16, "frame samples %lld, quantizers %lld", (long long)fs, (long long)nq);

    /* ---- T20: every stage and the waveform vs. the reference forward ---- */
    int64_t T20 = 0, T310 = 0, n = 0;
    int32_t *c20 = npy_fixture_codes("dec_codes_T20", &T20, nq);
    int32_t *c310 = npy_fixture_codes("dec_codes_T310", &T310, nq);
    if (!c20 || !c310) return test_finish("test_codec_decoder");
    float *w20 = malloc(sizeof(float) * (size_t)(T20 * fs));
    {
        for (int i = 0; i < N_STAGES; i++) {
            stage_rec *r = &g_stages[i];
            char name[128];
            snprintf(name, sizeof name, "dec_T20_%s", r->stage);
            if (npy_load_fixture(name, &r->want) || r->want.ndim != 2) {
                TEST_CHECK(0, "fixture %s missing or not 2-D", name);
                continue;
            }
            r->C = r->want.shape[r->transposed ? 1 : 0];
            r->Tn = r->want.shape[r->transposed ? 0 : 1];
            r->got = calloc((size_t)(r->C * r->Tn), sizeof(float));
        }
        qtts_codec_stream *s = qtts_codec_stream_new(dec, &err);
        TEST_CHECK(s != NULL, "stream: %s", err.msg);
        qtts_codec_stream_set_debug(s, on_stage, NULL);
        /* one feed of 20 frames (internally split into steps of 8: the stages arrive in pieces) */
        int rc = qtts_codec_decode_feed(dec, pool, s, c20, T20, w20, &err);
        TEST_CHECK(rc == 0, "decode T20: %s", err.msg);
        qtts_codec_stream_free(s);
        for (int i = 0; i < N_STAGES; i++) {
            stage_rec *r = &g_stages[i];
            if (!r->got) continue;
            TEST_CHECK(r->filled == r->Tn, "stage %s: %lld of %lld samples seen", r->stage, (long long)r->filled,
                       (long long)r->Tn);
            float *want = r->want.f;
            float *tw = NULL;
            if (r->transposed) {
                tw = malloc(sizeof(float) * (size_t)(r->C * r->Tn));
                for (int64_t t = 0; t < r->Tn; t++)
                    for (int64_t c = 0; c < r->C; c++) tw[c * r->Tn + t] = want[t * r->C + c];
                want = tw;
            }
            char what[96];
            snprintf(what, sizeof what, "T20 stage %s", r->stage);
            double peak = 0;
            for (int64_t i = 0; i < r->C * r->Tn; i++) peak = fabs(want[i]) > peak ? fabs(want[i]) : peak;
            const double tol = GOLD_TOL > GOLD_REL_TOL * peak ? GOLD_TOL : GOLD_REL_TOL * peak;
            double e = TEST_NEAR(r->got, want, (size_t)(r->C * r->Tn), tol, what);
            printf("  %-28s [%lld x %lld] max abs err %.3g\n", r->stage, (long long)r->C, (long long)r->Tn, e);
            free(tw);
            free(r->got);
            npy_free(&r->want);
        }
        float *want = npy_fixture_f32("dec_T20_wav", &n);
        if (want) {
            TEST_CHECK(n == T20 * fs, "dec_T20_wav has %lld samples", (long long)n);
            printf("  %-28s max abs err %.3g\n", "T20 wav", TEST_NEAR(w20, want, (size_t)n, GOLD_TOL, "T20 wav"));
            free(want);
        }
    }

    /* ---- official chunking, chunk 8 / context 4 ---- */
    {
        float *w = malloc(sizeof(float) * (size_t)(T20 * fs));
        int rc = qtts_codec_decode_offline(dec, pool, c20, T20, 8, 4, w, &err);
        TEST_CHECK(rc == 0, "chunked c8 l4: %s", err.msg);
        float *want = npy_fixture_f32("dec_T20_chunked_c8_l4_wav", &n);
        if (want && rc == 0)
            printf("  %-28s max abs err %.3g\n", "T20 chunked c8/l4",
                   TEST_NEAR(w, want, (size_t)n, GOLD_TOL, "T20 chunked c8 l4"));
        /* it must differ from the single forward (context 4 < receptive field) */
        double dmax = 0;
        for (int64_t i = 0; i < T20 * fs; i++) dmax = fmax(dmax, fabs(w[i] - w20[i]));
        TEST_CHECK(dmax > 1e-4, "chunked decode equals the single forward (max diff %.3g): chunking not applied", dmax);
        free(want);
        free(w);
    }

    /* ---- T310: official 300/25 and the exact streaming single forward ---- */
    {
        float *w = malloc(sizeof(float) * (size_t)(T310 * fs));
        int rc = qtts_codec_decode_offline(dec, pool, c310, T310, QTTS_CODEC_OFFICIAL_CHUNK,
                                           QTTS_CODEC_OFFICIAL_CONTEXT, w, &err);
        TEST_CHECK(rc == 0, "T310 official: %s", err.msg);
        float *want = npy_fixture_f32("dec_T310_wav", &n);
        if (want && rc == 0)
            printf("  %-28s max abs err %.3g\n", "T310 official 300/25",
                   TEST_NEAR(w, want, (size_t)n, GOLD_TOL, "T310 official chunking"));
        free(want);
        static const int uneven[] = {1, 2, 3, 7, 5, 11, 4, 9, 6, 13, 8, 1, 30};
        rc = feed_chunks(dec, pool, c310, T310, uneven, (int)(sizeof uneven / sizeof uneven[0]), w);
        want = npy_fixture_f32("dec_T310_single_forward_wav", &n);
        if (want && rc == 0)
            printf("  %-28s max abs err %.3g\n", "T310 streaming (uneven)",
                   TEST_NEAR(w, want, (size_t)n, GOLD_TOL, "T310 streaming vs single forward"));
        free(want);
        free(w);
    }

    /* ---- batch item 1: codes[:13] (the reference pads with -1, clamps to 0, cuts) ---- */
    {
        int64_t T13 = 13;
        float *w = malloc(sizeof(float) * (size_t)(T20 * fs));
        float *want = npy_fixture_f32("dec_batch_item1_T13_wav", &n);
        int rc = qtts_codec_decode_offline(dec, pool, c20, T13, QTTS_CODEC_OFFICIAL_CHUNK, QTTS_CODEC_OFFICIAL_CONTEXT,
                                           w, &err);
        TEST_CHECK(rc == 0, "T13: %s", err.msg);
        if (want && rc == 0) {
            TEST_CHECK(n == T13 * fs, "batch item fixture has %lld samples", (long long)n);
            printf("  %-28s max abs err %.3g\n", "batch item1 T13",
                   TEST_NEAR(w, want, (size_t)n, GOLD_TOL, "batch item 1 (13 frames)"));
        }
        /* the padded form: 20 frames with -1 after frame 13 */
        int32_t *pad = malloc(sizeof(int32_t) * (size_t)(T20 * nq));
        memcpy(pad, c20, sizeof(int32_t) * (size_t)(T20 * nq));
        for (int64_t i = T13 * nq; i < T20 * nq; i++) pad[i] = -1;
        rc = qtts_codec_decode_offline(dec, pool, pad, T20, QTTS_CODEC_OFFICIAL_CHUNK, QTTS_CODEC_OFFICIAL_CONTEXT, w,
                                       &err);
        TEST_CHECK(rc == 0, "padded: %s", err.msg);
        if (want && rc == 0) TEST_NEAR(w, want, (size_t)n, GOLD_TOL, "batch item 1, -1 padded to 20 frames");
        free(pad);
        free(want);
        free(w);
    }

    /* ---- chunk invariance vs. one forward (one step over all frames) ---- */
    {
        float *ref = malloc(sizeof(float) * (size_t)(T20 * fs)), *w = malloc(sizeof(float) * (size_t)(T20 * fs));
        qtts_codec_decoder_set_max_chunk(dec, 64);
        int rc = feed_chunks(dec, pool, c20, T20, (const int[]){(int)T20}, 1, ref);
        TEST_CHECK(rc == 0, "one-step forward failed");
        double worst = 0;
        for (int c = 1; c <= 8; c++) {
            feed_chunks(dec, pool, c20, T20, &c, 1, w);
            char what[64];
            snprintf(what, sizeof what, "chunks of %d vs one forward", c);
            worst = fmax(worst, TEST_NEAR(w, ref, (size_t)(T20 * fs), STREAM_TOL, what));
        }
        for (int trial = 0; trial < 4; trial++) {
            qtts_codec_decoder_set_max_chunk(dec, 1 + rnd(10));
            feed_chunks(dec, pool, c20, T20, NULL, 0, w);
            worst = fmax(worst, TEST_NEAR(w, ref, (size_t)(T20 * fs), STREAM_TOL, "random splits vs one forward"));
        }
        /* the high-rate tail run on small pieces (tiny cache budgets force the splitting at every block) */
        static const int64_t budgets[] = {1, 700, 5000, 40000};
        for (int b = 0; b < 4; b++) {
            qtts_codec_decoder_set_cache_budget(dec, budgets[b]);
            feed_chunks(dec, pool, c20, T20, (const int[]){3, 8, 1}, 3, w);
            worst = fmax(worst, TEST_NEAR(w, ref, (size_t)(T20 * fs), STREAM_TOL, "tail in pieces vs one forward"));
        }
        qtts_codec_decoder_set_cache_budget(dec, 1 << 19);
        printf("  %-28s max abs err %.3g\n", "chunk invariance", worst);
        qtts_codec_decoder_set_max_chunk(dec, 8);

        /* ---- batched steps == separate streams ---- */
        enum { NS = 3 };
        const int32_t *src[NS] = {c20, c310, c310 + 100 * nq};
        float *sep[NS], *bat[NS];
        qtts_codec_stream *st[NS];
        for (int i = 0; i < NS; i++) {
            sep[i] = malloc(sizeof(float) * (size_t)(T20 * fs));
            bat[i] = malloc(sizeof(float) * (size_t)(T20 * fs));
            feed_chunks(dec, pool, src[i], T20, (const int[]){(int)T20}, 1, sep[i]);
            st[i] = qtts_codec_stream_new(dec, &err);
        }
        int64_t done[NS] = {0};
        for (int round = 0; round < 100; round++) {
            const int32_t *cp[NS];
            int64_t nf[NS];
            float *op[NS];
            int left = 0;
            for (int i = 0; i < NS; i++) {
                /* first 12 frames each (36: past max_chunk and the frames one internal step takes, so
                 * the streams are split over steps), then 0..3 frames, streams at different positions */
                nf[i] = round == 0 ? 12 : rnd(4);
                if (nf[i] > T20 - done[i]) nf[i] = T20 - done[i];
                cp[i] = src[i] + done[i] * nq;
                op[i] = bat[i] + done[i] * fs;
                left += done[i] < T20;
            }
            if (!left) break;
            rc = qtts_codec_decode_step_batch(dec, pool, st, cp, nf, NS, op, &err);
            TEST_CHECK(rc == 0, "batch step: %s", err.msg);
            for (int i = 0; i < NS; i++) done[i] += nf[i];
        }
        worst = 0;
        for (int i = 0; i < NS; i++) {
            TEST_CHECK(done[i] == T20, "stream %d only got %lld frames", i, (long long)done[i]);
            worst = fmax(worst, TEST_NEAR(bat[i], sep[i], (size_t)(T20 * fs), STREAM_TOL, "batched vs separate"));
            free(sep[i]);
            free(bat[i]);
            qtts_codec_stream_free(st[i]);
        }
        printf("  %-28s max abs err %.3g\n", "batched vs separate", worst);
        free(ref);
        free(w);
    }

    /* ---- bad input: clear errors, no state change ---- */
    {
        int32_t bad[16];
        memcpy(bad, c20, sizeof bad);
        bad[5] = 2048;
        float *w = malloc(sizeof(float) * (size_t)fs);
        qtts_codec_stream *s = qtts_codec_stream_new(dec, &err);
        err.msg[0] = 0;
        TEST_CHECK(qtts_codec_decode_feed(dec, pool, s, bad, 1, w, &err) == -1 && strstr(err.msg, "out of range"),
                   "code 2048 accepted (msg '%s')", err.msg);
        TEST_CHECK(qtts_codec_stream_frames(s) == 0, "failed feed advanced the stream");
        TEST_CHECK(qtts_codec_decode_offline(dec, pool, c20, 0, 0, 0, w, &err) == -1, "0 frames accepted");
        qtts_codec_stream_free(s);
        free(w);
    }

    /* ---- bf16 high-rate convs and the Winograd form: fidelity against the official f32 output ---- */
    for (int pi = 0; pi < 4; pi++) {
        const qtts_decoder_precision prec = pi == 3   ? QTTS_DECODER_WINOGRAD_I16
                                            : pi == 2 ? QTTS_DECODER_WINOGRAD_F16
                                            : pi      ? QTTS_DECODER_WINOGRAD
                                                      : QTTS_DECODER_BF16;
        const char *pname = qtts_decoder_precision_name(prec);
        const double floor_db = pi == 3   ? WINOGRAD_I16_MIN_SNR_DB
                                : pi == 2 ? WINOGRAD_F16_MIN_SNR_DB
                                : pi      ? WINOGRAD_MIN_SNR_DB
                                          : BF16_MIN_SNR_DB;
        qtts_codec_decoder *db = qtts_codec_decoder_open(dir, &err);
        TEST_CHECK(db != NULL, "open for %s: %s", pname, err.msg);
        int rc = db ? qtts_codec_decoder_set_precision(db, prec, &err) : -1;
        if (db && rc == 0) {
            TEST_CHECK(qtts_codec_decoder_precision(db) == prec, "precision not reported as %s", pname);
            const char *names[2] = {"dec_T20_wav", "dec_T310_single_forward_wav"};
            const int64_t Ts[2] = {T20, T310};
            const int32_t *cs[2] = {c20, c310};
            for (int i = 0; i < 2; i++) {
                int64_t n = 0;
                float *want = npy_fixture_f32(names[i], &n), *w = malloc(sizeof(float) * (size_t)(Ts[i] * fs));
                static const int uneven[] = {1, 2, 3, 7, 5, 11, 4, 9, 6, 13, 8, 1, 30};
                if (!want || !w || feed_chunks(db, pool, cs[i], Ts[i], uneven, 13, w)) {
                    TEST_CHECK(0, "%s decode of %s failed: %s", pname, names[i], err.msg);
                } else {
                    double sig = 0, noise = 0, worst = 0;
                    for (int64_t k = 0; k < n; k++) {
                        double e = (double)w[k] - want[k];
                        sig += (double)want[k] * want[k];
                        noise += e * e;
                        worst = fmax(worst, fabs(e));
                    }
                    double snr = 10 * log10(sig / (noise + 1e-30));
                    printf("  %-12s %-19s SNR %.1f dB against the f32 reference, max abs err %.3g\n", pname,
                           i ? "T310 streaming" : "T20", snr, worst);
                    /* bf16: 8-bit mantissas give ~50 dB per rounding; the decoder's depth costs some */
                    TEST_CHECK(snr >= floor_db, "%s %s: SNR %.1f dB < %.0f dB", pname, names[i], snr, floor_db);
                }
                free(want);
                free(w);
            }
            /* loaded in that precision on the pool's threads (as the engine loads: bf16's layers packed in it
               directly): the same bits as converted afterwards on one thread */
            {
                qtts_codec_decoder *dp = qtts_codec_decoder_open_pool(dir, pool, prec, &err);
                float *a = malloc(sizeof(float) * (size_t)(T20 * fs)), *b = malloc(sizeof(float) * (size_t)(T20 * fs));
                static const int chunks[] = {3, 5, 12};
                int ok = dp && a && b && qtts_codec_decoder_precision(dp) == prec &&
                         !feed_chunks(db, pool, c20, T20, chunks, 3, a) && !feed_chunks(dp, pool, c20, T20, chunks, 3, b);
                TEST_CHECK(ok && !memcmp(a, b, sizeof(float) * (size_t)(T20 * fs)),
                           "%s loaded on the pool differs from one thread's conversion (%s)", pname,
                           ok ? "outputs differ" : err.msg);
                qtts_codec_decoder_free(dp);
                free(a);
                free(b);
            }
            /* the engine's path: streams decoded together in batched steps (per-row and per-sample scales
             * make each stream's integers its own), T20 beside a second stream, 1-5 frames per step */
            {
                int64_t n = 0;
                float *want = npy_fixture_f32("dec_T20_wav", &n), *w = malloc(sizeof(float) * (size_t)(T20 * fs));
                float *w2 = malloc(sizeof(float) * (size_t)(T20 * fs));
                qtts_codec_stream *bs[2] = {qtts_codec_stream_new(db, &err), qtts_codec_stream_new(db, &err)};
                int64_t done = 0;
                int ok = want && w && w2 && bs[0] && bs[1];
                for (int step = 0; ok && done < T20; step++) {
                    int64_t nf[2] = {1 + step % 5, 1 + step % 5};
                    if (nf[0] > T20 - done) nf[0] = nf[1] = T20 - done;
                    const int32_t *cp[2] = {c20 + done * nq, c310 + done * nq};
                    float *op[2] = {w + done * fs, w2 + done * fs};
                    ok = qtts_codec_decode_step_batch(db, pool, bs, cp, nf, 2, op, &err) == 0;
                    done += nf[0];
                }
                double sig = 0, noise = 0;
                for (int64_t k = 0; ok && k < n; k++) {
                    const double e = (double)w[k] - want[k];
                    sig += (double)want[k] * want[k];
                    noise += e * e;
                }
                const double snr = 10 * log10(sig / (noise + 1e-30));
                TEST_CHECK(ok && snr >= floor_db, "%s batched T20: SNR %.1f dB < %.0f dB (%s)", pname, snr, floor_db,
                           err.msg);
                printf("  %-12s %-19s SNR %.1f dB against the f32 reference\n", pname, "T20 batched", snr);
                qtts_codec_stream_free(bs[0]);
                qtts_codec_stream_free(bs[1]);
                free(want);
                free(w);
                free(w2);
            }
        } else if (db) {
            TEST_CHECK((!pi && !qtts_conv_bf16_supported() && strstr(err.msg, "BF16")) ||
                           (pi == 3 && !qtts_conv_i16_supported() && strstr(err.msg, "AVX2")),
                       "%s refused: %s", pname, err.msg);
            printf("  %s decoder not available on this CPU: %s\n", pname, err.msg);
        }
        /* one-way: the other arithmetic cannot be had back */
        if (db && rc == 0)
            TEST_CHECK(qtts_codec_decoder_set_precision(db, QTTS_DECODER_F32, &err) == -1 && strstr(err.msg, pname),
                       "%s -> f32 refused clearly: %s", pname, err.msg);
        qtts_codec_decoder_free(db);
    }

    /* auto = bf16 only for quantized LM weights and only where bf16 convolutions were measured faster */
    {
        qtts_conv_calibration measured;
        qtts_conv_measure(&measured);
        const qtts_conv_calibration *cal = &measured;
        qtts_decoder_precision pq = QTTS_DECODER_F32, pb = QTTS_DECODER_BF16;
        TEST_CHECK(qtts_decoder_precision_choose("auto", QTTS_Q8_0, cal, &pq, &err) == 0 &&
                       qtts_decoder_precision_choose(NULL, QTTS_BF16, cal, &pb, &err) == 0,
                   "auto precision: %s", err.msg);
        const qtts_conv_path best = qtts_conv_calibration_best(cal);
        const qtts_decoder_precision expect = best == QTTS_CONV_PATH_BF16           ? QTTS_DECODER_BF16
                                              : best == QTTS_CONV_PATH_WINOGRAD_I16 ? QTTS_DECODER_WINOGRAD_I16
                                              : best == QTTS_CONV_PATH_WINOGRAD     ? QTTS_DECODER_WINOGRAD
                                                                                    : QTTS_DECODER_F32;
        TEST_CHECK(pq == expect && pb == QTTS_DECODER_F32,
                   "auto precision follows the measurement (q8_0: %s, bf16 weights: %s)",
                   qtts_decoder_precision_name(pq), qtts_decoder_precision_name(pb));
        TEST_CHECK(!cal->bf16_faster || (cal->bf16_available && cal->bf16_gflops >= 1.1 * cal->f32_gflops * 0.999),
                   "bf16 chosen only when measured faster (%.1f vs %.1f GFLOP/s)", cal->bf16_gflops, cal->f32_gflops);
        TEST_CHECK(!cal->winograd_faster || cal->winograd_gflops >= 1.1 * cal->f32_gflops * 0.999,
                   "Winograd chosen only when measured faster (%.1f vs %.1f GFLOP/s)", cal->winograd_gflops,
                   cal->f32_gflops);
        TEST_CHECK(!cal->i16_faster || (cal->i16_available && cal->winograd_faster &&
                                        cal->i16_gflops >= 1.1 * cal->winograd_gflops * 0.999),
                   "int16 chosen only when measured faster than Winograd (%.1f vs %.1f GFLOP/s)", cal->i16_gflops,
                   cal->winograd_gflops);
        printf("  decoder precision auto (q8_0/q4_k weights): %s; bf16 convs %s, int16 %s, f32 %.1f / Winograd %.1f / "
               "bf16 %.1f / Winograd int16 %.1f GFLOP/s measured in %.1f ms\n", qtts_decoder_precision_name(pq),
               cal->bf16_available ? "available" : "not available", cal->i16_available ? "available" : "not available",
               cal->f32_gflops, cal->winograd_gflops, cal->bf16_gflops, cal->i16_gflops, cal->ms);
    }

    free(w20);
    free(c20);
    free(c310);
    qtts_codec_decoder_free(dec);
    other_sizes(pool);
    qtts_pool_free(pool);
    return test_finish("test_codec_decoder");
}
