/* Batched generation: a request's codes are identical whether it runs alone
 * or beside others of different lengths joining at different frames
 * (continuous batching), greedy and sampled; same seed -> same codes,
 * different seeds -> different codes; EOS, max_frames, cancellation and the
 * frame callback inside a batch. Uses the tiny CustomVoice model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model/generate.h"
#include "support/npy.h"

enum { NREQ = 5 };
static const char *cases[NREQ] = {"cv_en", "cv_zh_dialect", "cv_instruct_auto", "cv_stream_dialect_auto", "cv_eos"};
static const char *speakers[NREQ] = {"Ryan", "Eric", "Vivian", "Dylan", "Aiden"};
static const char *langs[NREQ] = {"English", "Chinese", NULL, NULL, "English"};
static const int streaming[NREQ] = {0, 0, 0, 1, 0};

typedef struct {
    npy_array ids, instr;
    qtts_prompt_spec spec;
} req_in;

typedef struct {
    int64_t frames;
    int bad_order;
} cb_state;

static void on_frame(void *user, qtts_gen_request *r, int64_t frame, const int32_t *codes, int64_t n) {
    cb_state *s = user;
    if (frame != s->frames || n != 16 || frame != qtts_gen_request_n_frames(r) - 1 ||
        memcmp(codes, qtts_gen_request_codes(r) + frame * 16, 16 * sizeof(int32_t)))
        s->bad_order++;
    s->frames++;
}

static qtts_gen_request *make(qtts_talker_model *m, qtts_pool *pool, req_in *in, int sample, uint64_t seed, int64_t maxf) {
    qtts_err err = {0};
    qtts_gen_params p;
    if (sample) qtts_gen_params_from_config(&p, &m->gen);
    else qtts_gen_params_greedy(&p, &m->gen, maxf);
    p.max_frames = maxf;
    p.seed = seed;
    qtts_gen_request *r = qtts_gen_request_new(m, pool, &in->spec, &p, &err);
    TEST_CHECK(r != NULL, "request: %s", err.msg);
    return r;
}

/* Runs each request alone, then all in one batch with staggered joins; compares. */
static void equivalence(qtts_talker_model *m, qtts_pool *pool_alone, qtts_pool *pool, req_in *in, int sample,
                        const int64_t *maxf, const char *what) {
    qtts_err err = {0};
    int32_t *alone[NREQ];
    int64_t nf[NREQ];
    for (int i = 0; i < NREQ; i++) {
        qtts_gen_request *r = make(m, pool_alone, &in[i], sample, 100 + i, maxf[i]);
        TEST_CHECK(r && qtts_generate(m, pool_alone, r, &err) == 0, "alone %d: %s", i, err.msg);
        nf[i] = r ? qtts_gen_request_n_frames(r) : 0;
        alone[i] = malloc(sizeof(int32_t) * (size_t)(nf[i] * 16 + 1));
        if (r) memcpy(alone[i], qtts_gen_request_codes(r), sizeof(int32_t) * (size_t)(nf[i] * 16));
        qtts_gen_request_free(r);
    }
    qtts_batch *b = qtts_batch_new(m, &err);
    qtts_gen_request *r[NREQ];
    cb_state cs[NREQ];
    memset(cs, 0, sizeof cs);
    const int join_at[NREQ] = {0, 0, 2, 4, 1};
    for (int i = 0; i < NREQ; i++) {
        r[i] = make(m, pool, &in[i], sample, 100 + i, maxf[i]);
        qtts_gen_request_set_callback(r[i], on_frame, &cs[i]);
    }
    int max_batch = 0;
    for (int step = 0; step < 100; step++) {
        for (int i = 0; i < NREQ; i++)
            if (join_at[i] == step) TEST_CHECK(qtts_batch_add(b, r[i], &err) == 0, "add: %s", err.msg);
        if (qtts_batch_size(b) > max_batch) max_batch = qtts_batch_size(b);
        int left = qtts_batch_step(b, pool, &err);
        TEST_CHECK(left >= 0, "step: %s", err.msg);
        for (int i = 0; i < NREQ; i++)
            if (join_at[i] <= step) TEST_CHECK(cs[i].frames == qtts_gen_request_n_frames(r[i]), "callback lags");
        if (left <= 0 && step >= 4) break;
    }
    TEST_CHECK(max_batch >= 4, "%s: batch reached %d requests", what, max_batch);
    for (int i = 0; i < NREQ; i++) {
        char msg[128];
        snprintf(msg, sizeof msg, "%s: %s batched == alone", what, cases[i]);
        TEST_CHECK(qtts_gen_request_n_frames(r[i]) == nf[i], "%s: %lld frames vs %lld", msg,
                   (long long)qtts_gen_request_n_frames(r[i]), (long long)nf[i]);
        if (qtts_gen_request_n_frames(r[i]) == nf[i]) TEST_EQUAL_I32(qtts_gen_request_codes(r[i]), alone[i], (size_t)(nf[i] * 16), msg);
        TEST_CHECK(cs[i].bad_order == 0 && cs[i].frames == nf[i], "%s: callback order", msg);
        qtts_gen_request_free(r[i]);
        free(alone[i]);
    }
    qtts_batch_free(b);
}

int main(void) {
    qtts_err err = {0};
    /* one thread for most runs (fast on a loaded machine); the greedy batched
     * run uses two, so it also checks that the thread count changes nothing */
    qtts_pool *pool = qtts_pool_create(1, &err), *pool2 = qtts_pool_create(2, &err);
    char dir[1024];
    qtts_talker_model *m = qtts_talker_model_load(golden_path(dir, sizeof dir, "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"), NULL, &err);
    TEST_CHECK(pool && pool2 && m, "setup: %s", err.msg);
    if (!pool || !pool2 || !m) return test_finish("test_talker_batch");
    req_in in[NREQ];
    memset(in, 0, sizeof in);
    for (int i = 0; i < NREQ; i++) {
        char nm[128];
        snprintf(nm, sizeof nm, "cv/tk_%s_input_ids", cases[i]);
        TEST_CHECK(npy_load_fixture(nm, &in[i].ids) == 0, "%s", nm);
        if (i == 2) {
            snprintf(nm, sizeof nm, "cv/tk_%s_instruct_ids", cases[i]);
            TEST_CHECK(npy_load_fixture(nm, &in[i].instr) == 0, "%s", nm);
        }
        in[i].spec = (qtts_prompt_spec){.mode = QTTS_MODE_CUSTOM_VOICE, .text_ids = in[i].ids.i,
                                        .n_text_ids = in[i].ids.numel, .instruct_ids = in[i].instr.i,
                                        .n_instruct_ids = in[i].instr.numel, .speaker = speakers[i],
                                        .language = langs[i], .non_streaming = !streaming[i]};
    }
    /* greedy: the EOS case stops at 9 frames; the others run to their limits */
    const int64_t maxf[NREQ] = {7, 12, 5, 10, 19};
    equivalence(m, pool, pool2, in, 0, maxf, "greedy (alone 1 thread, batched 2)");
    const int64_t maxf_s[NREQ] = {9, 6, 11, 8, 7};
    equivalence(m, pool, pool, in, 1, maxf_s, "sampled");

    /* seeds: same -> same, different -> different */
    qtts_gen_request *a = make(m, pool, &in[0], 1, 7, 10), *b = make(m, pool, &in[0], 1, 7, 10), *c = make(m, pool, &in[0], 1, 8, 10);
    if (a && b && c) {
        qtts_generate(m, pool, a, &err);
        qtts_generate(m, pool, b, &err);
        qtts_generate(m, pool, c, &err);
        TEST_CHECK(qtts_gen_request_n_frames(a) == 10 && qtts_gen_request_n_frames(b) == 10, "sampled frames");
        TEST_EQUAL_I32(qtts_gen_request_codes(a), qtts_gen_request_codes(b), 160, "same seed -> identical codes");
        int differ = qtts_gen_request_n_frames(c) != 10 || memcmp(qtts_gen_request_codes(a), qtts_gen_request_codes(c), 160 * 4);
        TEST_CHECK(differ, "different seeds give different codes");
    }
    qtts_gen_request_free(a);
    qtts_gen_request_free(b);
    qtts_gen_request_free(c);

    /* EOS in greedy mode and stop reasons */
    qtts_gen_request *e = make(m, pool, &in[4], 0, 0, 19);
    if (e) {
        qtts_generate(m, pool, e, &err);
        TEST_CHECK(qtts_gen_request_n_frames(e) == 9 && qtts_gen_request_stop_reason(e) == QTTS_STOP_EOS, "eos: %lld frames",
                   (long long)qtts_gen_request_n_frames(e));
        int eos_in_codes = 0;
        for (int64_t i = 0; i < qtts_gen_request_n_frames(e) * 16; i++) eos_in_codes |= qtts_gen_request_codes(e)[i] >= 2048;
        TEST_CHECK(!eos_in_codes, "every code is an audio id (EOS never becomes a frame)");
    }
    qtts_gen_request_free(e);
    qtts_gen_request *z = make(m, pool, &in[0], 0, 0, 0);
    if (z) {
        TEST_CHECK(qtts_generate(m, pool, z, &err) == 0 && qtts_gen_request_n_frames(z) == 0 &&
                       qtts_gen_request_stop_reason(z) == QTTS_STOP_MAX_FRAMES, "max_frames 0 -> no frames");
    }
    qtts_gen_request_free(z);

    /* cancellation leaves the neighbour untouched */
    {
        qtts_gen_request *x = make(m, pool, &in[1], 0, 0, 8), *y = make(m, pool, &in[2], 0, 0, 8), *ref = make(m, pool, &in[1], 0, 0, 8);
        qtts_batch *bt = qtts_batch_new(m, &err);
        if (x && y && ref && bt) {
            qtts_generate(m, pool, ref, &err);
            qtts_batch_add(bt, x, &err);
            qtts_batch_add(bt, y, &err);
            qtts_batch_step(bt, pool, &err);
            qtts_batch_step(bt, pool, &err);
            qtts_batch_remove(bt, y);
            TEST_CHECK(qtts_gen_request_stop_reason(y) == QTTS_STOP_CANCELLED && qtts_gen_request_n_frames(y) == 2, "cancelled");
            TEST_CHECK(qtts_batch_add(bt, y, &err) == -1, "finished request cannot rejoin");
            qtts_gen_request *w = make(m, pool, &in[3], 0, 0, 50);
            qtts_batch_add(bt, w, &err);
            qtts_gen_request_free(w); /* freeing a request that is still in a batch takes it out first */
            TEST_CHECK(qtts_batch_size(bt) == 1, "freed request left the batch");
            while (qtts_batch_step(bt, pool, &err) > 0) {}
            TEST_EQUAL_I32(qtts_gen_request_codes(x), qtts_gen_request_codes(ref), 8 * 16, "neighbour of a cancelled request");
        }
        qtts_batch_free(bt);
        qtts_gen_request_free(x);
        qtts_gen_request_free(y);
        qtts_gen_request_free(ref);
    }
    for (int i = 0; i < NREQ; i++) {
        npy_free(&in[i].ids);
        npy_free(&in[i].instr);
    }
    qtts_talker_model_free(m);
    qtts_pool_free(pool);
    qtts_pool_free(pool2);
    return test_finish("test_talker_batch");
}
