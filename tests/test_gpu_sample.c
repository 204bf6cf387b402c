/* On-device sampling against the CPU sampler itself (model/sampler.c is the
 * scalar twin): the Philox words of each draw bit for bit, then the picked
 * ids and processed logits for greedy and sampled rows, talker (repetition
 * penalty, EOS mask, suppressed ids) and code predictor, on vocabularies that
 * are not multiples of the workgroup, with ties at the top-k value, filtered
 * (-inf) logits, several seeds, temperatures, top-k, top-p and penalties in
 * one batched dispatch. The device may pick another id only where float
 * order decides (a draw within 1e-5 of a CDF boundary or of the top-p cut,
 * logits within 1e-5 of the top-k value): such a difference is counted and
 * allowed, any other fails. Then one recorded frame sequence (talker draw,
 * 15 code draws, each id summed into an embedding by embed_add) submitted 40
 * times against the CPU's frame loop, and again from the same seed: the same
 * ids. Skipped (exit 77) without a device unless QTTS_REQUIRE_VULKAN=1. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/gpu_ops.h"
#include "gpu/gpu_sample.h"
#include "support/gpu_device.h"
#include "harness.h"
#include "model/sampler.h"

enum { MAX_N = 3072 };
static const double BOUNDARY = 1e-5; /* where float order may decide (relative) */

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float frand(void) { /* [-1, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}

static qtts_gpu_buf *buf(qtts_gpu *g, int64_t n) {
    qtts_err err = {0};
    qtts_gpu_buf *b = qtts_gpu_buf_new(g, (size_t)n * 4, &err);
    if (!b) {
        fprintf(stderr, "FAIL: %s\n", err.msg);
        exit(1);
    }
    return b;
}

static int run(qtts_gpu_seq *s) {
    qtts_err err = {0};
    int rc = qtts_gpu_seq_run(s, &err);
    TEST_CHECK(rc == 0, "submission: %s", err.msg);
    return rc;
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* How near a draw is to a place where float order decides, from the CPU's own
 * steps on the processed logits zp: the relative gap to the top-k value (or
 * the top-2 gap when greedy), the distance of a top-p running sum to the cut,
 * the distance of u to a CDF boundary. */
static double boundary_margin(const float *zp, int64_t n, const qtts_sample_cfg *c, double u) {
    static float work[MAX_N], scratch[2 * MAX_N];
    static double d[MAX_N];
    double m = 1.0;
    if (!c->do_sample) {
        int32_t best = qtts_argmax(zp, n);
        for (int64_t i = 0; i < n; i++)
            if (zp[i] != zp[best] && isfinite(zp[best]))
                m = fmin(m, fabs((double)zp[best] - zp[i]) / fmax(fabs(zp[best]), 1e-30));
        return m;
    }
    qtts_sample_cfg no_p = *c;
    no_p.top_p = 1.0f;
    memcpy(work, zp, (size_t)n * 4);
    qtts_sample_warp(work, n, &no_p, scratch); /* temperature and top-k */
    if (c->top_k > 0 && c->top_k < n) {
        float kth = INFINITY;
        for (int64_t i = 0; i < n; i++)
            if (work[i] != -INFINITY) kth = fminf(kth, work[i]);
        for (int64_t i = 0; i < n; i++) {
            float t = c->temperature != 1.0f ? zp[i] / c->temperature : zp[i];
            if (t != kth && isfinite(kth)) m = fmin(m, fabs((double)t - kth) / fmax(fabs(kth), 1e-30));
        }
    }
    if (c->top_p < 1.0f) {
        int64_t k = 0;
        double mx = -INFINITY, sum = 0, cum = 0;
        for (int64_t i = 0; i < n; i++)
            if (work[i] != -INFINITY) d[k++] = work[i];
        qsort(d, (size_t)k, sizeof *d, cmp_double);
        if (k) mx = d[k - 1];
        for (int64_t i = 0; i < k; i++) sum += exp(d[i] - mx);
        for (int64_t i = 0; i < k; i++) {
            cum += exp(d[i] - mx) / sum;
            m = fmin(m, fabs(cum - (1.0 - (double)c->top_p)));
        }
    }
    memcpy(work, zp, (size_t)n * 4);
    qtts_sample_warp(work, n, c, scratch);
    double mx = -INFINITY, total = 0, cum = 0;
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, work[i]);
    if (mx == -INFINITY) return m;
    for (int64_t i = 0; i < n; i++) total += work[i] == -INFINITY ? 0 : exp((double)work[i] - mx);
    m = fmin(m, u);
    for (int64_t i = 0; i < n; i++) {
        if (work[i] == -INFINITY) continue;
        cum += exp((double)work[i] - mx);
        m = fmin(m, fabs(cum / total - u));
    }
    return m;
}

typedef struct {
    int compared, boundary, z_checked;
} tally;

/* One draw's CPU twin: processes (talker) and picks as the engine does; z
 * becomes the CPU's processed logits. */
static int32_t cpu_draw(float *z, int64_t n, int talker, const qtts_gpu_sample_settings *st, uint32_t step,
                        uint32_t sub, const int32_t *hist, int64_t n_hist, float *zp_out, double *u_out) {
    static float scratch[2 * MAX_N];
    const qtts_sample_cfg *c = talker ? &st->talker : &st->cp;
    if (talker)
        qtts_talker_process_logits(z, n, hist, n_hist, st->repetition_penalty, step, st->min_new_tokens, st->eos);
    memcpy(zp_out, z, (size_t)n * 4);
    double u = c->do_sample ? qtts_philox_uniform(st->seed, st->stream, step, sub) : 0.0;
    *u_out = u;
    return qtts_sample_pick(z, n, c, u, scratch);
}

/* Compares one row: the id, and the logits the kernel left against the CPU's. */
static void compare_row(const char *what, int32_t got, int32_t want, const float *zg, const float *zc, const float *zp,
                        int64_t n, const qtts_sample_cfg *c, double u, tally *t) {
    t->compared++;
    double m = boundary_margin(zp, n, c, u);
    if (got != want) {
        TEST_CHECK(m < BOUNDARY, "%s: device %d, CPU %d, %.3g from any boundary", what, got, want, m);
        if (m < BOUNDARY) t->boundary++;
        return;
    }
    if (m < BOUNDARY) return; /* the filtered set may differ at a boundary even with the same id */
    /* 3e-7 relative: an ulp of the penalty or temperature division, which a GPU
     * need not round correctly (bit-identical on lavapipe) */
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; i++) {
        int same = (zg[i] == -INFINITY) == (zc[i] == -INFINITY) &&
                   (zc[i] == -INFINITY || fabs((double)zg[i] - zc[i]) <= 3e-7 * fabs(zc[i]));
        if (!same) bad = i;
    }
    TEST_CHECK(bad < 0, "%s: logit %lld is %g on the device, %g on the CPU", what, (long long)bad,
               bad < 0 ? 0 : zg[bad], bad < 0 ? 0 : zc[bad]);
    t->z_checked++;
}

/* The Philox words of each draw, bit for bit, with 64-bit seeds and streams. */
static void test_philox(qtts_gpu *g) {
    qtts_err err = {0};
    enum { N = 37, SLOTS = 4 };
    const uint64_t seeds[SLOTS] = {0, 1, 0xFFFFFFFFFFFFFFFFull, 0x123456789ABCDEFull};
    const uint64_t streams[SLOTS] = {0, 0x100000000ull, 7, 0xDEADBEEFCAFEull};
    const uint32_t steps[SLOTS] = {0, 1, 0xFFFFFFFEu, 1234567};
    qtts_gpu_sampler *smp = qtts_gpu_sampler_new(g, SLOTS, N, &err);
    TEST_CHECK(smp != NULL, "sampler: %s", err.msg);
    if (!smp) return;
    qtts_gpu_buf *z = buf(g, SLOTS * N), *ids = buf(g, SLOTS);
    for (int s = 0; s < SLOTS; s++) {
        qtts_gpu_sample_settings st = {{1, 1.0f, 0, 1.0f}, {1, 1.0f, 0, 1.0f}, 1.0f, 0, -1, seeds[s], streams[s]};
        TEST_CHECK(qtts_gpu_sampler_start(smp, s, &st, steps[s], NULL, 0, &err) == 0, "start: %s", err.msg);
    }
    qtts_gpu_seq *q = qtts_gpu_seq_new(g, &err);
    qtts_gpu_sample_args a = {
        .talker = 0, .z = z, .z_stride = N, .n = N, .rows = SLOTS, .sub = 11, .advance = 1, .ids = ids, .id_stride = 1};
    TEST_CHECK(q && qtts_gpu_sample(q, smp, &a, &err) == 0, "sample: %s", err.msg);
    if (q && run(q) == 0)
        for (int s = 0; s < SLOTS; s++) {
            uint32_t got[2], want[4];
            uint32_t ctr[4] = {11, steps[s], (uint32_t)streams[s], (uint32_t)(streams[s] >> 32)};
            uint32_t key[2] = {(uint32_t)seeds[s], (uint32_t)(seeds[s] >> 32)};
            qtts_philox4x32_10(ctr, key, want);
            qtts_gpu_sampler_last_draw(smp, s, got);
            TEST_CHECK(got[0] == want[0] && got[1] == want[1], "philox slot %d: %08x %08x, want %08x %08x", s, got[0],
                       got[1], want[0], want[1]);
            TEST_CHECK(qtts_gpu_sampler_step(smp, s) == steps[s] + 1, "slot %d's step advanced", s);
        }
    qtts_gpu_seq_free(q);
    qtts_gpu_buf_free(g, z), qtts_gpu_buf_free(g, ids);
    qtts_gpu_sampler_free(g, smp);
}

typedef struct {
    int talker;
    int64_t n;
    qtts_sample_cfg c;
    float penalty;
    float scale; /* logits in [-scale, scale) */
} sample_case;

/* One batched dispatch per case: ROWS slots with different seeds and histories. */
static void test_against_cpu(qtts_gpu *g, const sample_case *k, tally *t) {
    enum { ROWS = 6, STRIDE_PAD = 3, HIST = 40 };
    qtts_err err = {0};
    const int64_t n = k->n, stride = n + STRIDE_PAD, eos = k->talker ? n - 1000 : -1;
    char what[160];
    snprintf(what, sizeof what, "%s n=%lld sample=%d T=%.2f top_k=%lld top_p=%.2f penalty=%.2f",
             k->talker ? "talker" : "code predictor", (long long)n, k->c.do_sample, k->c.temperature,
             (long long)k->c.top_k, k->c.top_p, k->penalty);
    static float z[ROWS][MAX_N], zc[MAX_N], zp[MAX_N];
    int32_t hist[ROWS][HIST];
    uint32_t step[ROWS];
    qtts_gpu_sampler *smp = qtts_gpu_sampler_new(g, ROWS + 1, n, &err);
    TEST_CHECK(smp != NULL, "%s: sampler: %s", what, err.msg);
    if (!smp) return;
    qtts_gpu_buf *bz = buf(g, 2 + ROWS * stride), *ids = buf(g, 1 + 2 * ROWS);
    qtts_gpu_sample_settings st[ROWS];
    for (int r = 0; r < ROWS; r++) {
        for (int64_t i = 0; i < n; i++) z[r][i] = frand() * k->scale;
        if (r == 1 && n > 8) /* ties at the top: the k-th value repeated */
            for (int64_t i = 0; i < n; i += n / 7) z[r][i] = 0.75f * k->scale;
        if (r == 2)
            for (int64_t i = 0; i < n; i += 3) z[r][i] = -INFINITY;
        if (r == 3 && n > 1) z[r][n / 2] = 1.5f * k->scale; /* one clear favourite */
        st[r] = (qtts_gpu_sample_settings){k->c, k->c, k->penalty, 2, eos, 1000 + 77 * (uint64_t)r, (uint64_t)r * 3};
        step[r] = r == 0 ? 0 : r == 1 ? 1 : 17 + (uint32_t)r; /* steps 0 and 1: EOS masked */
        /* distinct ids, as the engine keeps them (the CPU penalizes an id once per entry) */
        for (int h = 0; h < HIST; h++) hist[r][h] = (int32_t)(((int64_t)h * 7919 + r * 131) % n);
        hist[r][0] = k->talker ? (int32_t)eos : 0;
        for (int h = 1; h < HIST; h++)
            if (hist[r][h] == hist[r][0] || n < HIST) hist[r][h] = -1; /* ignored by both */
        TEST_CHECK(qtts_gpu_sampler_start(smp, r + 1, &st[r], step[r], hist[r], HIST, &err) == 0, "%s: start: %s", what,
                   err.msg);
        memcpy((float *)qtts_gpu_buf_data(bz) + 2 + r * stride, z[r], (size_t)n * 4);
    }
    qtts_gpu_seq *q = qtts_gpu_seq_new(g, &err);
    qtts_gpu_sample_args a = {.talker = k->talker,
                              .z = bz,
                              .z_off = 2,
                              .z_stride = stride,
                              .n = n,
                              .rows = ROWS,
                              .slot0 = 1,
                              .sub = k->talker ? 0 : 5,
                              .advance = k->talker,
                              .ids = ids,
                              .id_off = 1,
                              .id_stride = 2};
    TEST_CHECK(q && qtts_gpu_sample(q, smp, &a, &err) == 0, "%s: sample: %s", what, err.msg);
    if (q && run(q) == 0)
        for (int r = 0; r < ROWS; r++) {
            double u;
            memcpy(zc, z[r], (size_t)n * 4);
            int32_t want = cpu_draw(zc, n, k->talker, &st[r], step[r], a.sub, hist[r], HIST, zp, &u);
            int32_t got = ((int32_t *)qtts_gpu_buf_data(ids))[1 + 2 * r];
            char rw[200];
            snprintf(rw, sizeof rw, "%s row %d", what, r);
            compare_row(rw, got, want, (float *)qtts_gpu_buf_data(bz) + 2 + r * stride, zc, zp, n,
                        k->talker ? &st[r].talker : &st[r].cp, u, t);
            TEST_CHECK(qtts_gpu_sampler_step(smp, r + 1) == step[r] + (k->talker ? 1u : 0u), "%s: step", rw);
        }
    qtts_gpu_seq_free(q);
    qtts_gpu_buf_free(g, bz), qtts_gpu_buf_free(g, ids);
    qtts_gpu_sampler_free(g, smp);
}

/* One recorded frame: restore the logits (embed_add copies a row), the
 * talker draw, then 15 code draws, each id summed into an embedding. */
enum { GROUPS = 16, TV = 3072, CV = 2048, DIM = 24, FRAMES = 40 };
typedef struct {
    qtts_gpu_buf *tables, *logits, *row_ids, *ids, *emb, *sum;
} frame_bufs;

static qtts_gpu_seq *record_frame(qtts_gpu *g, qtts_gpu_sampler *smp, int slot, frame_bufs *f) {
    qtts_err err = {0};
    qtts_gpu_seq *q = qtts_gpu_seq_new(g, &err);
    int rc = q ? 0 : -1;
    for (int grp = 0; grp < GROUPS && !rc; grp++) {
        int64_t n = grp ? CV : TV;
        qtts_gpu_sample_args a = {.talker = grp == 0,
                                  .z = f->logits,
                                  .z_stride = n,
                                  .n = n,
                                  .rows = 1,
                                  .slot0 = slot,
                                  .sub = (uint32_t)grp,
                                  .advance = grp == GROUPS - 1,
                                  .ids = f->ids,
                                  .id_off = grp,
                                  .id_stride = 1};
        rc = qtts_gpu_embed_add(q, f->tables, 0, GROUPS, TV, f->row_ids, grp, f->logits, 0, 0, &err) ||
             qtts_gpu_sample(q, smp, &a, &err) ||
             qtts_gpu_embed_add(q, f->emb, (int64_t)grp * TV, TV, DIM, f->ids, grp, f->sum, 0, grp > 0, &err);
    }
    TEST_CHECK(rc == 0, "recording a frame: %s", err.msg);
    if (rc) {
        qtts_gpu_seq_free(q);
        return NULL;
    }
    return q;
}

static void test_frames(qtts_gpu *g, tally *t) {
    qtts_err err = {0};
    static float tables[GROUPS][TV], emb[GROUPS * TV * DIM], zc[TV], zp[TV];
    for (int grp = 0; grp < GROUPS; grp++)
        for (int i = 0; i < TV; i++) tables[grp][i] = frand() * (grp ? 2.0f : 1.2f);
    for (size_t i = 0; i < sizeof emb / sizeof *emb; i++) emb[i] = frand();
    frame_bufs f = {buf(g, GROUPS * TV),       buf(g, TV), buf(g, GROUPS), buf(g, GROUPS),
                    buf(g, GROUPS * TV * DIM), buf(g, DIM)};
    memcpy(qtts_gpu_buf_data(f.tables), tables, sizeof tables);
    memcpy(qtts_gpu_buf_data(f.emb), emb, sizeof emb);
    for (int grp = 0; grp < GROUPS; grp++) ((int32_t *)qtts_gpu_buf_data(f.row_ids))[grp] = grp;
    /* the official settings (temperature 0.9, top-k 50, penalty 1.05), a stronger penalty on codebook 0 */
    qtts_gpu_sample_settings st = {{1, 0.9f, 50, 1.0f}, {1, 0.9f, 50, 0.95f}, 1.3f, 2, 2150, 42, 9};
    /* a sequence for each of two slots: the second pass moves its stream to
     * slot 1 half way (a batch compacted), which must not change a draw */
    qtts_gpu_sampler *smp = qtts_gpu_sampler_new(g, 2, TV, &err);
    qtts_gpu_seq *q0 = smp ? record_frame(g, smp, 0, &f) : NULL, *q1 = smp ? record_frame(g, smp, 1, &f) : NULL;
    TEST_CHECK(q0 && q1, "frame sequences: %s", err.msg);
    int32_t first[FRAMES][GROUPS];
    for (int pass = 0; pass < 3 && q0 && q1; pass++) {
        if (pass == 2) st.seed = 43;
        TEST_CHECK(qtts_gpu_sampler_start(smp, 0, &st, 0, NULL, 0, &err) == 0, "start: %s", err.msg);
        int32_t hist[TV];
        int64_t n_hist = 0;
        int differ = 0, slot = 0;
        for (int fr = 0; fr < FRAMES; fr++) {
            if (pass == 1 && fr == FRAMES / 2) {
                qtts_gpu_sample_settings other = st;
                other.seed = 7; /* what the copy must overwrite */
                TEST_CHECK(qtts_gpu_sampler_start(smp, 1, &other, 3, first[0], 5, &err) == 0 &&
                               qtts_gpu_sampler_copy(smp, 1, 0, &err) == 0,
                           "moving the stream: %s", err.msg);
                slot = 1;
            }
            if (run(slot ? q1 : q0)) break;
            const int32_t *ids = qtts_gpu_buf_data(f.ids);
            float want_sum[DIM] = {0};
            for (int grp = 0; grp < GROUPS; grp++) {
                int64_t n = grp ? CV : TV;
                double u;
                memcpy(zc, tables[grp], (size_t)n * 4);
                int32_t want = cpu_draw(zc, n, grp == 0, &st, (uint32_t)fr, (uint32_t)grp, hist, n_hist, zp, &u);
                if (pass < 2) {
                    char what[96];
                    snprintf(what, sizeof what, "frame %d code %d", fr, grp);
                    /* the logits the kernel left are those of the frame's last draw only */
                    if (ids[grp] != want)
                        compare_row(what, ids[grp], want, zc, zc, zp, n, grp ? &st.cp : &st.talker, u, t);
                    else t->compared++;
                }
                int32_t id = ids[grp]; /* the CPU follows the device's history, as the engine would */
                if (grp == 0) {
                    int seen = 0;
                    for (int64_t h = 0; h < n_hist; h++) seen |= hist[h] == id;
                    if (!seen && id >= 0 && id < TV) hist[n_hist++] = id;
                }
                for (int d = 0; d < DIM; d++) want_sum[d] += emb[((size_t)grp * TV + (size_t)id) * DIM + d];
            }
            /* embed_add sums in the same order: exact */
            TEST_CHECK(!memcmp(qtts_gpu_buf_data(f.sum), want_sum, sizeof want_sum), "frame %d: the embedding sum", fr);
            TEST_CHECK(qtts_gpu_sampler_step(smp, slot) == (uint32_t)fr + 1, "frame %d: step %u", fr,
                       qtts_gpu_sampler_step(smp, slot));
            if (pass == 0) memcpy(first[fr], ids, sizeof first[fr]);
            else differ += memcmp(first[fr], ids, sizeof first[fr]) != 0;
        }
        if (pass == 1)
            TEST_CHECK(differ == 0, "the same seed again, moved to another slot half way: %d of %d frames differ",
                       differ, FRAMES);
        if (pass == 2) TEST_CHECK(differ > FRAMES / 2, "another seed: only %d of %d frames differ", differ, FRAMES);
        if (pass == 0)
            printf("  frames: %d codes over %d resubmissions, %d distinct codebook-0 ids\n", FRAMES * GROUPS, FRAMES,
                   (int)n_hist);
    }
    qtts_gpu_seq_free(q0);
    qtts_gpu_seq_free(q1);
    qtts_gpu_sampler_free(g, smp);
    qtts_gpu_buf *all[] = {f.tables, f.logits, f.row_ids, f.ids, f.emb, f.sum};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) qtts_gpu_buf_free(g, all[i]);
}

static void test_refusals(qtts_gpu *g) {
    qtts_err err = {0};
    qtts_gpu_sampler *smp = qtts_gpu_sampler_new(g, 2, 100, &err);
    TEST_CHECK(!qtts_gpu_sampler_new(g, 0, 100, &err) && err.status == QTTS_ERR_INVALID, "0 slots: %s", err.msg);
    if (!smp) return;
    qtts_gpu_sample_settings st = {{1, 0.0f, 0, 1.0f}, {0, 1, 0, 1}, 1.0f, 0, -1, 1, 1};
    TEST_CHECK(qtts_gpu_sampler_start(smp, 0, &st, 0, NULL, 0, &err) == -1 && err.status == QTTS_ERR_INVALID,
               "temperature 0 refused: %s", err.msg);
    st.talker.temperature = 1;
    st.repetition_penalty = 0;
    TEST_CHECK(qtts_gpu_sampler_start(smp, 0, &st, 0, NULL, 0, &err) == -1, "penalty 0 refused: %s", err.msg);
    st.repetition_penalty = 1;
    TEST_CHECK(qtts_gpu_sampler_start(smp, 2, &st, 0, NULL, 0, &err) == -1, "slot 2 of 2 refused: %s", err.msg);
    qtts_gpu_buf *z = buf(g, 150), *ids = buf(g, 2);
    qtts_gpu_seq *q = qtts_gpu_seq_new(g, &err);
    qtts_gpu_sample_args a = {.talker = 1, .z = z, .z_stride = 101, .n = 101, .rows = 1, .ids = ids, .id_stride = 1};
    TEST_CHECK(qtts_gpu_sample(q, smp, &a, &err) == -1, "more talker logits than the history: %s", err.msg);
    a.n = 100, a.z_stride = 100, a.rows = 2;
    TEST_CHECK(qtts_gpu_sample(q, smp, &a, &err) == -1 && strstr(err.msg, "outside"), "short logits: %s", err.msg);
    a.z_stride = 50, a.rows = 3;
    TEST_CHECK(qtts_gpu_sample(q, smp, &a, &err) == -1 && strstr(err.msg, "slots"), "3 rows, 2 slots: %s", err.msg);
    a.rows = 2, a.id_off = 1;
    TEST_CHECK(qtts_gpu_sample(q, smp, &a, &err) == -1 && strstr(err.msg, "ids"), "short ids: %s", err.msg);
    qtts_gpu_seq_free(q);
    qtts_gpu_buf_free(g, z), qtts_gpu_buf_free(g, ids);
    qtts_gpu_sampler_free(g, smp);
}

int main(void) {
    int skip;
    qtts_gpu *g = test_gpu_open(&skip);
    if (!g) return skip;
    test_philox(g);
    test_refusals(g);
    const qtts_sample_cfg greedy = {0, 1, 0, 1};
    const sample_case cases[] = {
        {1, 3072, greedy, 1.05f, 4},
        {1, 3001, greedy, 1.3f, 4},
        {0, 2047, greedy, 1.0f, 4},
        {0, 1, {1, 0.9f, 50, 1.0f}, 1.0f, 2},
        {1, 3072, {1, 0.9f, 50, 1.0f}, 1.05f, 4}, /* the official settings */
        {1, 1537, {1, 0.7f, 0, 0.9f}, 1.3f, 6},
        {1, 3001, {1, 1.0f, 3001, 0.5f}, 0.8f, 3},
        {0, 2048, {1, 0.9f, 50, 1.0f}, 1.0f, 4},
        {0, 2047, {1, 1.0f, 0, 1.0f}, 1.0f, 3}, /* plain softmax over the whole vocabulary */
        {0, 2047, {1, 1.7f, 1, 1.0f}, 1.0f, 4}, /* top-k 1 */
        {0, 333, {1, 0.3f, 7, 1.0f}, 1.0f, 4},
        {0, 257, {1, 1.0f, 0, 0.95f}, 1.0f, 5},
        {0, 7, {1, 2.5f, 5, 0.8f}, 1.0f, 1},
        {0, 1000, {1, 0.5f, 256, 0.3f}, 1.0f, 8},
        {0, 2049, {1, 1.3f, 2048, 0.99f}, 1.0f, 2},
    };
    tally t = {0};
    for (int pass = 0; pass < 3; pass++) /* three sets of logits each */
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) test_against_cpu(g, &cases[i], &t);
    printf("  rows: %d draws compared with the CPU, %d differ at a float-order boundary, %d with every logit checked\n",
           t.compared, t.boundary, t.z_checked);
    TEST_CHECK(t.boundary * 50 <= t.compared, "%d of %d draws at a boundary", t.boundary, t.compared);
    tally tf = {0};
    test_frames(g, &tf);
    printf("  frames: %d draws compared with the CPU, %d differ at a float-order boundary\n", tf.compared, tf.boundary);
    TEST_CHECK(tf.boundary * 50 <= tf.compared, "%d of %d frame draws at a boundary", tf.boundary, tf.compared);
    TEST_CHECK(qtts_gpu_validation_errors(g) == 0, "%d validation errors", qtts_gpu_validation_errors(g));
    qtts_gpu_close(g);
    return test_finish("test_gpu_sample");
}
