/* The speech-tokenizer decoder on the device (gpu/gpu_decoder.h) against the
 * reference waveforms of the golden fixtures and against itself:
 *  - dec_codes_T20 -> dec_T20_wav, dec_codes_T310 fed frame by frame ->
 *    dec_T310_single_forward_wav, codes[:13] -> dec_batch_item1_T13_wav (also
 *    -1 padded to 20 frames, as the reference pads a batch): max abs error
 *    <= 1e-4, the CPU decoder's own golden tolerance (test_codec_decoder): both
 *    run f32 throughout and differ from the reference only by summation order;
 *  - the CPU decoder on the same codes: <= 1e-4 too (the measured difference is printed);
 *  - streaming: T310 fed one frame per step equals feeds of 8 frames within
 *    1e-5 (the CPU decoder's streaming bound; every kernel's row or sample is
 *    computed the same way whatever the step size, so 0 is expected);
 *  - batched: three streams decoded together in uneven steps give exactly
 *    (bit for bit) what each gives alone;
 *  - a code past the codebook is refused with a message and changes nothing;
 *  - codes read from a code ring (qtts_gpu_decoder_step_from, as the device
 *    LM leaves them) give the samples of the same codes from the host, bit for
 *    bit, in steps past 8 frames, across the ring's wrap and beside a stream
 *    fed from the host, two of them staged after a sequence that writes the
 *    ring in the same submission (as in a device frame's); too many frames or
 *    a slot past the ring are refused.
 * Runs on any Vulkan device (CI: lavapipe with QTTS_VULKAN_VALIDATE=1, where a
 * validation error fails it); skipped (77) without one unless QTTS_REQUIRE_VULKAN=1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/gpu_decoder.h"
#include "gpu/gpu_ops.h"
#include "harness.h"
#include "model/codec_decoder.h"
#include "support/gpu_device.h"
#include "support/npy.h"

#define GOLD_TOL 1e-4
#define STREAM_TOL 1e-5

static float *xmalloc(size_t n) {
    float *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* Feeds T frames to a fresh stream in pieces of `step` frames; 0 or -1. */
static int decode(qtts_gpu_decoder *d, const int32_t *codes, int64_t T, int64_t step, float *out) {
    qtts_err err = {0};
    const int64_t nq = qtts_gpu_decoder_num_quantizers(d), fs = qtts_gpu_decoder_frame_samples(d);
    qtts_gpu_dec_stream *s = qtts_gpu_dec_stream_new(d, &err);
    TEST_CHECK(s != NULL, "stream: %s", err.msg);
    if (!s) return -1;
    int rc = 0;
    for (int64_t f = 0; !rc && f < T; f += step) {
        const int32_t *c = codes + f * nq;
        int64_t n = T - f < step ? T - f : step;
        float *o = out + f * fs;
        rc = qtts_gpu_decoder_step(d, &s, &c, &n, 1, &o, &err);
        TEST_CHECK(rc == 0, "step at frame %lld: %s", (long long)f, err.msg);
    }
    TEST_CHECK(rc || qtts_gpu_dec_stream_frames(s) == T, "stream counted %lld frames", (long long)qtts_gpu_dec_stream_frames(s));
    qtts_gpu_dec_stream_free(s);
    return rc;
}

static double maxdiff(const float *a, const float *b, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]);
        if (!(e <= m)) m = e; /* NaN counts as the worst */
    }
    return m;
}

int main(void) {
    int code = 0;
    qtts_gpu *g = test_gpu_open(&code);
    if (!g) return code;
    qtts_err err = {0};
    char dir[4096];
    golden_path(dir, sizeof dir, "Qwen3-TTS-12Hz-0.6B-Base-tiny");
    qtts_codec_decoder *cpu = qtts_codec_decoder_open(dir, &err);
    TEST_CHECK(cpu != NULL, "open %s: %s", dir, err.msg);
    if (!cpu) return test_finish("test_gpu_decoder");
    qtts_gpu_decoder *d = qtts_gpu_decoder_new(g, qtts_codec_decoder_owned_store(cpu), qtts_codec_decoder_config(cpu),
                                               &err);
    TEST_CHECK(d != NULL, "device decoder: %s", err.msg);
    if (!d) return test_finish("test_gpu_decoder");
    const int64_t nq = qtts_gpu_decoder_num_quantizers(d), fs = qtts_gpu_decoder_frame_samples(d);
    TEST_CHECK(nq == 16 && fs == 1920, "quantizers %lld, frame samples %lld", (long long)nq, (long long)fs);
    int64_t T20 = 0, T310 = 0, n = 0;
    int32_t *c20 = npy_fixture_codes("dec_codes_T20", &T20, nq);
    int32_t *c310 = npy_fixture_codes("dec_codes_T310", &T310, nq);
    if (!c20 || !c310) return test_finish("test_gpu_decoder");

    /* T20 in one call (submissions of 8, 8, 4 frames) vs the reference and the CPU decoder */
    {
        float *w = xmalloc(sizeof(float) * (size_t)(T20 * fs)), *c = xmalloc(sizeof(float) * (size_t)(T20 * fs));
        float *want = npy_fixture_f32("dec_T20_wav", &n);
        if (decode(d, c20, T20, T20, w) == 0 && want) {
            TEST_CHECK(n == T20 * fs, "dec_T20_wav has %lld samples", (long long)n);
            printf("  %-34s max abs err %.3g\n", "T20 vs reference", TEST_NEAR(w, want, (size_t)n, GOLD_TOL, "T20"));
            TEST_CHECK(qtts_codec_decode_offline(cpu, NULL, c20, T20, 0, 0, c, &err) == 0, "CPU: %s", err.msg);
            double e = maxdiff(w, c, T20 * fs);
            TEST_CHECK(e <= GOLD_TOL, "T20: device vs CPU decoder differ by %g", e);
            printf("  %-34s max abs diff %.3g\n", "T20 vs the CPU decoder", e);
        }
        free(want);
        free(c);
        free(w);
    }

    /* T310 one frame per step vs the reference's single forward, and vs steps of 8 */
    {
        float *w1 = xmalloc(sizeof(float) * (size_t)(T310 * fs)), *w8 = xmalloc(sizeof(float) * (size_t)(T310 * fs));
        float *want = npy_fixture_f32("dec_T310_single_forward_wav", &n);
        int rc = decode(d, c310, T310, 1, w1) || decode(d, c310, T310, 8, w8);
        if (!rc && want) {
            TEST_CHECK(n == T310 * fs, "dec_T310_single_forward_wav has %lld samples", (long long)n);
            printf("  %-34s max abs err %.3g\n", "T310 frame by frame vs reference",
                   TEST_NEAR(w1, want, (size_t)n, GOLD_TOL, "T310 streamed frame by frame"));
            double e = maxdiff(w1, w8, T310 * fs);
            TEST_CHECK(e <= STREAM_TOL, "T310: frame by frame vs steps of 8 differ by %g", e);
            printf("  %-34s max abs diff %.3g\n", "T310 frame by frame vs steps of 8", e);
        }
        free(want);
        free(w1);
        free(w8);
    }

    /* batch item 1: codes[:13], and the -1 padded 20 frames (negative codes read entry 0) */
    {
        const int64_t T13 = 13;
        float *w = xmalloc(sizeof(float) * (size_t)(T20 * fs));
        float *want = npy_fixture_f32("dec_batch_item1_T13_wav", &n);
        if (want && decode(d, c20, T13, 5, w) == 0) {
            TEST_CHECK(n == T13 * fs, "batch item fixture has %lld samples", (long long)n);
            printf("  %-34s max abs err %.3g\n", "batch item1 T13 vs reference",
                   TEST_NEAR(w, want, (size_t)n, GOLD_TOL, "batch item 1 (13 frames)"));
        }
        int32_t *pad = malloc(sizeof(int32_t) * (size_t)(T20 * nq));
        TEST_CHECK(pad != NULL, "out of memory");
        if (pad) {
            memcpy(pad, c20, sizeof(int32_t) * (size_t)(T20 * nq));
            for (int64_t i = T13 * nq; i < T20 * nq; i++) pad[i] = -1;
            if (want && decode(d, pad, T20, T20, w) == 0)
                TEST_NEAR(w, want, (size_t)n, GOLD_TOL, "batch item 1, -1 padded to 20 frames");
        }
        free(pad);
        free(want);
        free(w);
    }

    /* three streams together in uneven steps == each alone, bit for bit */
    {
        enum { NS = 3 };
        const int32_t *src[NS] = {c20, c310, c310 + 100 * nq};
        const int64_t T = 20;
        float *alone[NS], *both[NS];
        qtts_gpu_dec_stream *S[NS];
        for (int i = 0; i < NS; i++) {
            alone[i] = xmalloc(sizeof(float) * (size_t)(T * fs));
            both[i] = xmalloc(sizeof(float) * (size_t)(T * fs));
            decode(d, src[i], T, 3 + i, alone[i]);
            S[i] = qtts_gpu_dec_stream_new(d, &err);
            TEST_CHECK(S[i] != NULL, "stream: %s", err.msg);
        }
        /* per batched step, stream i takes its own frame count (0 included: it sits that step out) */
        static const int64_t steps[][NS] = {{1, 2, 0}, {3, 1, 5}, {0, 9, 2}, {8, 1, 1}, {2, 7, 12}, {6, 0, 0}};
        int64_t done[NS] = {0};
        int ok = S[0] && S[1] && S[2];
        for (size_t r = 0; ok && r < sizeof steps / sizeof *steps; r++) {
            const int32_t *c[NS];
            float *o[NS];
            int64_t nf[NS];
            for (int i = 0; i < NS; i++) {
                nf[i] = steps[r][i] < T - done[i] ? steps[r][i] : T - done[i];
                c[i] = src[i] + done[i] * nq;
                o[i] = both[i] + done[i] * fs;
                done[i] += nf[i];
            }
            ok = qtts_gpu_decoder_step(d, S, c, nf, NS, o, &err) == 0;
            TEST_CHECK(ok, "batched step %zu: %s", r, err.msg);
        }
        for (int i = 0; ok && i < NS; i++) {
            TEST_CHECK(done[i] == T, "stream %d: %lld frames fed", i, (long long)done[i]);
            double e = maxdiff(both[i], alone[i], T * fs);
            TEST_CHECK(e == 0, "stream %d: batched differs from alone by %g", i, e);
        }
        printf("  %-34s identical: %s\n", "3 streams batched vs alone", ok ? "checked" : "not run");
        /* the same stream twice, and a code past the codebook: refused, nothing decoded */
        if (ok) {
            qtts_gpu_dec_stream *twice[2] = {S[0], S[0]};
            const int32_t *c2[2] = {c20, c20};
            int64_t n2[2] = {1, 1};
            float *o2[2] = {both[0], both[1]};
            TEST_CHECK(qtts_gpu_decoder_step(d, twice, c2, n2, 2, o2, &err) == -1 && strstr(err.msg, "twice"),
                       "the same stream twice: '%s'", err.msg);
            int32_t bad[16];
            memcpy(bad, c20, sizeof bad);
            bad[5] = 2048;
            const int32_t *cb = bad;
            int64_t one = 1;
            TEST_CHECK(qtts_gpu_decoder_step(d, S, &cb, &one, 1, o2, &err) == -1 && strstr(err.msg, "out of range"),
                       "code 2048: '%s'", err.msg);
            TEST_CHECK(qtts_gpu_dec_stream_frames(S[0]) == T, "a refused step counted frames");
            /* reset: the stream decodes from frame 0 again */
            qtts_gpu_dec_stream_reset(S[0]);
            int64_t nT = T;
            float *o = both[0];
            TEST_CHECK(qtts_gpu_decoder_step(d, S, &src[0], &nT, 1, &o, &err) == 0, "after reset: %s", err.msg);
            TEST_CHECK(maxdiff(both[0], alone[0], T * fs) == 0, "a reset stream decodes differently");
        }
        for (int i = 0; i < NS; i++) {
            qtts_gpu_dec_stream_free(S[i]);
            free(alone[i]);
            free(both[i]);
        }
    }

    /* codes read from a code ring (as the device LM leaves them) == the same codes from the host, bit for bit:
       steps past MAXF frames, across the ring's wrap, beside a stream whose codes come from the host */
    {
        enum { R = 16, SLOTS = 3, T = 40 };
        qtts_gpu_buf *ring = qtts_gpu_buf_new(g, sizeof(int32_t) * (size_t)(SLOTS * R * nq), &err);
        TEST_CHECK(ring != NULL, "ring: %s", err.msg);
        TEST_CHECK(qtts_gpu_decoder_use_ring(d, ring, R, nq + 1, &err) == -1 && strstr(err.msg, "code ring"),
                   "a ring of 17 codes a row: '%s'", err.msg);
        TEST_CHECK(qtts_gpu_decoder_use_ring(d, ring, R, nq, &err) == 0, "use_ring: %s", err.msg);
        float *want = xmalloc(sizeof(float) * (size_t)(T * fs)), *got = xmalloc(sizeof(float) * (size_t)(T * fs));
        float *host = xmalloc(sizeof(float) * (size_t)(T * fs)), *host_want = xmalloc(sizeof(float) * (size_t)(T * fs));
        decode(d, c310 + 7 * nq, T, T, want);
        decode(d, c20, 20, 20, host_want);
        qtts_gpu_dec_stream *S[2] = {qtts_gpu_dec_stream_new(d, &err), qtts_gpu_dec_stream_new(d, &err)};
        int ok = ring && S[0] && S[1];
        static const int64_t steps[] = {1, 5, 12, 3, 15, 4};
        int64_t done = 0, hdone = 0;
        int32_t *rw = ring ? qtts_gpu_buf_data(ring) : NULL;
        /* the frames' codes as a 64-row ring of one slot, which the "LM" of a fused submission copies from */
        qtts_gpu_buf *src = qtts_gpu_buf_new(g, sizeof(int32_t) * (size_t)(64 * nq), &err),
                     *src_at = qtts_gpu_buf_new(g, 2 * sizeof(uint32_t), &err);
        ok = ok && src && src_at;
        if (ok) memcpy(qtts_gpu_buf_data(src), c310 + 7 * nq, sizeof(int32_t) * (size_t)(T * nq));
        int fused = 0;
        for (size_t r = 0; ok && r < sizeof steps / sizeof *steps; r++) {
            const int64_t hn = hdone + 3 <= 20 ? 3 : 20 - hdone;
            const int32_t *c[2] = {NULL, c20 + hdone * nq};
            const qtts_gpu_ring_at at[2] = {{2, done}, {-1, 0}};
            int64_t nf[2] = {steps[r], hn};
            float *o[2] = {got + done * fs, host + hdone * fs};
            if (steps[r] == 5 || steps[r] == 3) {
                /* as in a device frame's submission: a first sequence writes the ring rows (no wrap here) and
                   the staged decoder step after it in the same submission reads them */
                uint32_t *sa = qtts_gpu_buf_data(src_at);
                sa[0] = 0, sa[1] = (uint32_t)done;
                qtts_gpu_seq *lm = qtts_gpu_seq_new(g, &err);
                ok = lm && qtts_gpu_ring_gather(lm, src, 64, nq, src_at, 0, steps[r], ring,
                                                ((int64_t)2 * R + (done & (R - 1))) * nq, &err) == 0;
                qtts_gpu_seq *dec = ok ? qtts_gpu_decoder_stage(d, S, c, at, nf, 2, &err) : NULL;
                ok = dec && qtts_gpu_seq_run_then(lm, dec, &err) == 0;
                if (ok) qtts_gpu_decoder_collect(d, S, nf, 2, o);
                qtts_gpu_seq_free(lm);
                fused++;
            } else {
                /* the LM's writes: frame k of slot 2 (frame 7 + k of T310) in row k & (R - 1) */
                for (int64_t k = done; k < done + steps[r]; k++)
                    memcpy(rw + ((int64_t)2 * R + (k & (R - 1))) * nq, c310 + (7 + k) * nq,
                           sizeof(int32_t) * (size_t)nq);
                ok = qtts_gpu_decoder_step_from(d, S, c, at, nf, 2, o, &err) == 0;
            }
            TEST_CHECK(ok, "ring step %zu: %s", r, err.msg);
            done += steps[r];
            hdone += hn;
        }
        if (ok) {
            TEST_CHECK(done == T && maxdiff(got, want, T * fs) == 0, "codes from the ring differ from the host's by %g",
                       maxdiff(got, want, T * fs));
            TEST_CHECK(maxdiff(host, host_want, hdone * fs) == 0, "the host stream beside the ring one differs by %g",
                       maxdiff(host, host_want, hdone * fs));
            /* the ring holds R - 1 frames a slot; slot 3 is past it */
            const int32_t *none[1] = {NULL};
            qtts_gpu_ring_at past[1] = {{2, 0}};
            int64_t nR = R;
            float *o = got;
            TEST_CHECK(qtts_gpu_decoder_step_from(d, S, none, past, &nR, 1, &o, &err) == -1 && strstr(err.msg, "ring"),
                       "16 frames of a 16-row ring: '%s'", err.msg);
            past[0].slot = SLOTS;
            nR = 1;
            TEST_CHECK(qtts_gpu_decoder_step_from(d, S, none, past, &nR, 1, &o, &err) == -1 && strstr(err.msg, "slot"),
                       "slot 3 of 3: '%s'", err.msg);
            TEST_CHECK(qtts_gpu_dec_stream_frames(S[0]) == T, "a refused step counted frames");
            nR = 9;
            past[0].slot = 2;
            TEST_CHECK(!qtts_gpu_decoder_stage(d, S, none, past, &nR, 1, &err) && strstr(err.msg, "9 frames"),
                       "a staged step of 9 frames: '%s'", err.msg);
            TEST_CHECK(fused == 2, "%d fused steps", fused);
        }
        printf("  %-34s identical: %s\n", "codes from a code ring vs host", ok ? "checked" : "not run");
        qtts_gpu_decoder_use_ring(d, NULL, 0, 0, &err);
        qtts_gpu_dec_stream_free(S[0]);
        qtts_gpu_dec_stream_free(S[1]);
        qtts_gpu_buf_free(g, ring);
        qtts_gpu_buf_free(g, src);
        qtts_gpu_buf_free(g, src_at);
        free(want), free(got), free(host), free(host_want);
    }

    TEST_CHECK(qtts_gpu_validation_errors(g) == 0, "%d validation errors", qtts_gpu_validation_errors(g));
    free(c20);
    free(c310);
    qtts_gpu_decoder_free(d);
    qtts_codec_decoder_free(cpu);
    qtts_gpu_close(g);
    return test_finish("test_gpu_decoder");
}
