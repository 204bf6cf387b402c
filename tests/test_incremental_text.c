/* Incremental text input (request.text_incomplete + qtts_stream_append_text):
 *  - the stable-prefix rule (text/stable_prefix.h): feeding the tokens of the
 *    spans between stable cuts, for random splits of many texts (inside
 *    words and inside multi-byte characters), gives exactly the tokens of
 *    the whole text;
 *  - the engine: codes of an incremental request equal those of the same
 *    text given at once in the streaming layout, greedy and sampled, when
 *    the pieces arrive early, all at once, or late (the talker then waits);
 *    on the golden CustomVoice model, on a copy that never ends (long runs
 *    through all of the text), and for in-context cloning (which waits for
 *    the whole text); with the text front end on (numbers, money, markdown,
 *    links cut anywhere), the same codes as the normalized whole text;
 *  - errors and cancellation; the time from the first piece to the first
 *    audio is printed.
 * With QTTS_TEST_DEVICE=vulkan (ctest test_incremental_text_vulkan) the
 * engines run on that device and every request must have run there (the
 * device's incremental codes equal its whole-text codes); skipped (exit 77)
 * where no Vulkan device exists unless QTTS_REQUIRE_VULKAN=1. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "qtts.h"
#include "support/npy.h"
#include "support/endless_model.h"
#include "support/test_util.h"
#include "text/stable_prefix.h"
#include "text/tokenizer.h"

#define CV_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define BASE_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"

static const char *const k_texts[] = {
    "Hello world, this is a test.",
    "Don't you think it's 3.14, isn't it? I'll say: yes!  Two  spaces.",
    "  Leading spaces and a new\nline, then\ttabs.",
    "你好，世界。今天天气很好！我们走吧、好吗？",
    "日本語のテキスト：これはテストです。",
    "Mixed 混合 text, with café and cafe\xcc\x81 au lait.",
    "Numbers 12345 and 6.78%; symbols (brackets) [x] {y} \"quotes\" -- dashes...",
    "Emoji \xf0\x9f\x98\x80 and <|im_end|> inside, <tts_pad> too.",
    "Straße, naïve, Ångström, Ελληνικά, русский текст.",
    "a",
};
#define N_TEXTS (sizeof k_texts / sizeof k_texts[0])

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Random increasing cut points in (0, len): the piece boundaries. */
static int random_cuts(uint64_t *rng, size_t len, size_t *cuts, int max) {
    int n = 0;
    for (size_t p = 1; p < len && n < max; p++)
        if (rng_next(rng) % 4 == 0) cuts[n++] = p;
    return n;
}

static size_t lead_of(const char *t, size_t n) {
    size_t i = 0;
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) i++;
    return i;
}

static void test_stable_prefix(const qtts_tokenizer *tok) {
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    int cases = 0, bad = 0;
    for (size_t t = 0; t < N_TEXTS; t++) {
        const char *text = k_texts[t];
        size_t len = strlen(text), lead = lead_of(text, len);
        int32_t *want = NULL;
        int n_want = 0;
        qtts_err err = {0};
        TEST_CHECK(!qtts_tok_encode(tok, text + lead, len - lead, &want, &n_want, &err), "encode: %s", err.msg);
        for (int split = 0; split < 200; split++) {
            size_t cuts[256];
            int nc = random_cuts(&rng, len, cuts, 256);
            int32_t got[1024];
            int n_got = 0, started = 0;
            size_t fed = lead;
            for (int c = 0; c <= nc; c++) {
                size_t have = c < nc ? cuts[c] : len; /* text arrived so far */
                size_t cut = have == len ? len : qtts_tok_stable_prefix(text, have);
                if (!started && cut != len) { /* the engine starts at the first cut after the leading space */
                    if (have <= lead) continue;
                    cut = lead + qtts_tok_stable_prefix(text + lead, have - lead);
                    if (cut == lead) continue;
                    started = 1;
                }
                if (cut <= fed) continue;
                int32_t *ids = NULL;
                int n = 0;
                if (qtts_tok_encode(tok, text + fed, cut - fed, &ids, &n, &err) || n_got + n > 1024) {
                    bad++;
                    free(ids);
                    break;
                }
                memcpy(got + n_got, ids, (size_t)n * sizeof *ids);
                n_got += n;
                free(ids);
                fed = cut;
            }
            cases++;
            if (n_got != n_want || memcmp(got, want, (size_t)n_want * sizeof *want)) {
                if (bad++ < 3) fprintf(stderr, "text %zu split %d: %d tokens, want %d\n", t, split, n_got, n_want);
            }
        }
        free(want);
    }
    TEST_CHECK(bad == 0, "stable cuts: tokens of the spans = tokens of the whole text (%d of %d splits differ)", bad,
               cases);
    /* the rule itself */
    TEST_CHECK(qtts_tok_stable_prefix("hello wor", 9) == 5, "cut before the last space");
    TEST_CHECK(qtts_tok_stable_prefix("hello", 5) == 0, "no cut inside the first word");
    TEST_CHECK(qtts_tok_stable_prefix("a  b", 4) == 1, "a space run: cut before its first space only");
    TEST_CHECK(qtts_tok_stable_prefix("你好，世", strlen("你好，世")) == 6, "cut before a full-width comma");
    TEST_CHECK(qtts_tok_stable_prefix("ab \xe4\xbd", 5) == 2, "a piece ending inside a character");
}

/* ---- engine ---- */

typedef struct {
    qtts_stream *st;
    const char *text;
    size_t cuts[64];
    int n_cuts;
    int delay_us; /* between pieces: > 0 makes the talker wait for text */
    int rc;
    int ended_early; /* the utterance ended before all pieces were appended */
} feeder;

static void *feed_pieces(void *p) {
    feeder *f = p;
    size_t len = strlen(f->text), prev = 0;
    for (int c = 0; c <= f->n_cuts; c++) {
        size_t end = c < f->n_cuts ? f->cuts[c] : len;
        if (f->delay_us) usleep((useconds_t)f->delay_us);
        qtts_error err = {0};
        if (qtts_stream_append_text(f->st, f->text + prev, end - prev, c == f->n_cuts, &err) != QTTS_OK) {
            /* the model may end the utterance (EOS) before all text is in, as the whole-text run does */
            if (strstr(err.message, "already finished")) {
                f->ended_early = 1;
                break;
            }
            fprintf(stderr, "append: %s\n", err.message);
            f->rc = -1;
        }
        prev = end;
    }
    return NULL;
}

typedef struct {
    int32_t *codes;
    size_t n_frames;
    qtts_result res;
    double first_audio_ms; /* from the first piece */
    qtts_status status;
    int ended_early;
} run_out;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Whole text (n_cuts < 0) or pieces through a feeder thread. */
static int run(qtts_engine *e, qtts_request *r, const char *text, const size_t *cuts, int n_cuts, int delay_us,
               run_out *o) {
    memset(o, 0, sizeof *o);
    r->keep_codes = 1;
    r->layout = QTTS_LAYOUT_STREAMING;
    feeder f = {0};
    r->text_incomplete = n_cuts >= 0;
    if (r->normalize == QTTS_NORMALIZE_DEFAULT) r->normalize = QTTS_NORMALIZE_OFF; /* the text as written (fill_* may ask for more) */
    r->text = n_cuts >= 0 ? "" : text;
    qtts_error err = {0};
    double t0 = now_ms();
    qtts_stream *st = qtts_submit(e, r, &err);
    if (!st) {
        fprintf(stderr, "submit: %s\n", err.message);
        return -1;
    }
    pthread_t th;
    int threaded = 0;
    if (n_cuts >= 0) {
        f.st = st;
        f.text = text;
        f.n_cuts = n_cuts;
        f.delay_us = delay_us;
        memcpy(f.cuts, cuts, (size_t)n_cuts * sizeof *cuts);
        threaded = pthread_create(&th, NULL, feed_pieces, &f) == 0;
        if (!threaded) feed_pieces(&f);
    }
    float buf[4096];
    long got;
    while ((got = qtts_stream_read(st, buf, 4096, 20000)) > 0)
        if (o->first_audio_ms == 0) o->first_audio_ms = now_ms() - t0;
    if (threaded) pthread_join(th, NULL);
    o->ended_early = f.ended_early;
    o->status = qtts_stream_status(st);
    int rc = got == 0 && f.rc == 0 ? 0 : -1;
    if (!rc) {
        qtts_stream_result(st, &o->res);
        int ncb = 0;
        const int32_t *c = qtts_stream_codes(st, &o->n_frames, &ncb);
        if (c && (o->codes = malloc(o->n_frames * 16 * sizeof *c))) memcpy(o->codes, c, o->n_frames * 16 * sizeof *c);
    } else if (got == QTTS_STREAM_TIMEOUT) {
        fprintf(stderr, "stream timed out\n");
    }
    qtts_stream_free(st);
    return rc;
}

static int same_codes(const run_out *a, const run_out *b) {
    return a->codes && b->codes && a->n_frames == b->n_frames &&
           !memcmp(a->codes, b->codes, a->n_frames * 16 * sizeof(int32_t)) && a->res.finished_by == b->res.finished_by;
}

static const char *test_device(void) { return getenv("QTTS_TEST_DEVICE"); }

static qtts_engine *engine_for(const char *path) {
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = path;
    p.n_threads = 2;
    p.device = test_device();
    qtts_error err = {0};
    qtts_engine *e = qtts_engine_create(&p, &err);
    if (!e) fprintf(stderr, "engine %s: %s\n", path, err.message);
    return e;
}

/* On a device: every request e served ran there. */
static void all_on_device(qtts_engine *e, const char *label) {
    if (!test_device()) return;
    qtts_engine_stats st;
    qtts_engine_get_stats(e, &st);
    TEST_CHECK(st.requests_done > 0 && st.requests_on_device == st.requests_done,
               "%s: %llu of %llu requests on the device", label, (unsigned long long)st.requests_on_device,
               (unsigned long long)st.requests_done);
    printf("%s: %llu of %llu requests on %s\n", label, (unsigned long long)st.requests_on_device,
           (unsigned long long)st.requests_done, qtts_engine_info(e)->device);
}

/* Every text, greedy and sampled: whole vs pieces (early, at once, late). */
static void check_equivalence(qtts_engine *e, const char *label, void (*fill)(qtts_request *),
                              const char *const *texts, int n_texts, double *worst_ttfa) {
    uint64_t rng = 12345;
    int checked = 0, differ = 0;
    for (int t = 0; t < n_texts; t++) {
        for (int greedy = 0; greedy < 2; greedy++) {
            qtts_request r;
            run_out whole, piece;
            qtts_request_default(&r);
            fill(&r);
            r.greedy = greedy;
            r.has_seed = 1;
            r.seed = 1000 + (uint64_t)t;
            if (run(e, &r, texts[t], NULL, -1, 0, &whole)) {
                TEST_CHECK(0, "%s text %d: whole run", label, t);
                continue;
            }
            for (int mode = 0; mode < 3; mode++) { /* 0: random pieces, no delay; 1: one piece; 2: pieces, late */
                size_t cuts[64];
                int nc = mode == 1 ? 0 : random_cuts(&rng, strlen(texts[t]), cuts, mode == 2 ? 6 : 64);
                qtts_request_default(&r);
                fill(&r);
                r.greedy = greedy;
                r.has_seed = 1;
                r.seed = 1000 + (uint64_t)t;
                int ok = run(e, &r, texts[t], cuts, nc, mode == 2 ? 30000 : 0, &piece) == 0;
                checked++;
                if (!ok || !same_codes(&whole, &piece)) {
                    differ++;
                    fprintf(stderr, "%s text %d %s mode %d: %zu vs %zu frames (%s)\n", label, t,
                            greedy ? "greedy" : "sampled", mode, piece.n_frames, whole.n_frames,
                            ok ? "codes differ" : "run failed");
                } else if (mode == 2 && piece.first_audio_ms > *worst_ttfa) {
                    *worst_ttfa = piece.first_audio_ms;
                }
                /* the model may also end (EOS) after the last append was accepted but before the
                 * engine pulled it: then fewer tokens were fed, never more */
                int eos_first = piece.res.finished_by == QTTS_FINISHED_EOS &&
                                piece.res.input_tokens > 0 && piece.res.input_tokens < whole.res.input_tokens;
                TEST_CHECK(!ok || piece.ended_early || eos_first || piece.res.input_tokens == whole.res.input_tokens,
                           "%s text %d: input_tokens %d vs %d (finished by %s)", label, t, piece.res.input_tokens,
                           whole.res.input_tokens, qtts_finish_reason_name(piece.res.finished_by));
                free(piece.codes);
            }
            free(whole.codes);
        }
    }
    TEST_CHECK(differ == 0, "%s: incremental codes equal whole-text codes (%d of %d runs differ)", label, differ,
               checked);
}

static void fill_cv(qtts_request *r) { r->speaker = "vivian"; }
static void fill_cv_normalized(qtts_request *r) {
    r->speaker = "vivian";
    r->normalize = QTTS_NORMALIZE_FULL;
}
/* Texts whose spoken form differs from the written one: numbers, money,
 * markdown and links cut anywhere must be read as the whole text. */
static const char *const k_norm_texts[] = {
    "**Total:** $3.50 for 1,234.5 km on 2026-03-05 at 14:30, see [the docs](https://example.com/x).",
    "# Steps\n- Mix 2.5 kg with 50 %\n- Wait 5-10 min\n\n```\ncode 42\n```\nDone & dusted: 3/4 of it 😀.",
    "我有2个苹果，花了¥5.5元。",
};
static void fill_cv_long(qtts_request *r) {
    r->speaker = "vivian";
    r->no_repetition_guard = 1; /* the endless model repeats codebook 0: let the length guard end it */
}

static void test_errors(qtts_engine *e) {
    qtts_request r;
    qtts_error err = {0};
    qtts_request_default(&r);
    r.speaker = "vivian";
    r.text = "Not incremental.";
    qtts_stream *st = qtts_submit(e, &r, &err);
    TEST_CHECK(st && qtts_stream_append_text(st, "x", 1, 1, &err) == QTTS_ERR_INVALID &&
                   strstr(err.message, "text_incomplete"),
               "append to a whole-text request: %s", err.message);
    qtts_stream_free(st);
    r.text_incomplete = 1;
    r.text = "";
    r.layout = QTTS_LAYOUT_NON_STREAMING;
    st = qtts_submit(e, &r, &err);
    TEST_CHECK(!st && err.status == QTTS_ERR_INVALID && strstr(err.message, "streaming"),
               "non-streaming layout refused: %s", err.message);
    r.layout = QTTS_LAYOUT_DEFAULT;
    qtts_result res;
    TEST_CHECK(qtts_synthesize(e, &r, NULL, NULL, &res, &err) == QTTS_ERR_INVALID, "qtts_synthesize refuses it: %s",
               err.message);
    /* after is_last; invalid UTF-8 at the end; whitespace only */
    st = qtts_submit(e, &r, &err);
    TEST_CHECK(st && qtts_stream_append_text(st, "Hi there.", 9, 1, &err) == QTTS_OK, "append + close");
    TEST_CHECK(st && qtts_stream_append_text(st, "more", 4, 0, &err) == QTTS_ERR_INVALID &&
                   strstr(err.message, "already complete"),
               "append after is_last: %s", err.message);
    float buf[4096];
    while (st && qtts_stream_read(st, buf, 4096, 20000) > 0) {
    }
    qtts_stream_free(st);
    static const struct {
        const char *text, *why;
    } bad[] = {{"caf\xc3", "UTF-8"}, {"  \n ", "whitespace"}};
    for (int i = 0; i < 2; i++) {
        st = qtts_submit(e, &r, &err);
        qtts_stream_append_text(st, bad[i].text, strlen(bad[i].text), 0, &err);
        qtts_stream_append_text(st, "", 0, 1, &err);
        long got;
        while ((got = qtts_stream_read(st, buf, 4096, 20000)) > 0) {
        }
        TEST_CHECK(got == QTTS_STREAM_ERROR && qtts_stream_status(st) == QTTS_ERR_INVALID &&
                       strstr(qtts_stream_error(st), bad[i].why),
                   "bad final text %d fails the stream: %s", i, qtts_stream_error(st));
        qtts_stream_free(st);
    }
    /* over 64 KiB */
    st = qtts_submit(e, &r, &err);
    char *big = malloc(70000);
    memset(big, 'a', 70000);
    TEST_CHECK(st && qtts_stream_append_text(st, big, 70000, 0, &err) == QTTS_ERR_INVALID && strstr(err.message, "64"),
               "text over 64 KiB refused: %s", err.message);
    free(big);
    /* cancelled while waiting for text: ends at once */
    qtts_stream_append_text(st, " Waiting for", 12, 0, &err);
    usleep(50000);
    double t0 = now_ms();
    qtts_stream_cancel(st);
    long got;
    while ((got = qtts_stream_read(st, buf, 4096, 20000)) > 0) {
    }
    TEST_CHECK(got == QTTS_STREAM_ERROR && qtts_stream_status(st) == QTTS_ERR_CANCELLED && now_ms() - t0 < 2000,
               "cancel while waiting for text ends the stream (%.0f ms, status %d)", now_ms() - t0,
               (int)qtts_stream_status(st));
    qtts_stream_free(st);
}

static qtts_voice *g_icl_voice; /* the ICL test's voice (set before check_equivalence runs) */
static void fill_icl(qtts_request *r) { r->voice = g_icl_voice; }

int main(void) {
    struct stat sb;
    if (stat(CV_MODEL "/config.json", &sb) || stat(BASE_MODEL "/config.json", &sb)) {
        TEST_CHECK(0, "tiny golden models present under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_incremental_text");
    }
    qtts_err qe = {0};
    qtts_tokenizer *tok = qtts_tok_load(CV_MODEL, &qe);
    TEST_CHECK(tok != NULL, "tokenizer: %s", qe.msg);
    if (tok) test_stable_prefix(tok);
    qtts_tok_free(tok);

    double worst = 0;
    qtts_engine *e = engine_for(CV_MODEL);
    if (!e && test_device()) {
        const char *req = getenv("QTTS_REQUIRE_VULKAN");
        if (!req || strcmp(req, "1")) return test_finish("test_incremental_text") ? 1 : 77; /* no device */
    }
    TEST_CHECK(e != NULL, "engine for %s", CV_MODEL);
    if (e) {
        /* on a device one text: lavapipe (CI) runs every submission on the CPU, each text 8 runs */
        check_equivalence(e, "CustomVoice", fill_cv, k_texts, test_device() ? 1 : (int)N_TEXTS, &worst);
        if (!test_device()) check_equivalence(e, "CustomVoice normalized", fill_cv_normalized, k_norm_texts, 3, &worst);
        all_on_device(e, "CustomVoice");
        test_errors(e);
        qtts_engine_free(e);
    }
    char tmp[] = "/tmp/qtts_incrXXXXXX", dir[512];
    /* the endless model's long runs stay on the CPU test: on lavapipe one of them takes minutes, and the device's
     * long streams are test_gpu_golden's */
    if (!test_device() && mkdtemp(tmp)) {
        snprintf(dir, sizeof dir, "%s/endless", tmp);
        if (endless_model_write(CV_MODEL, dir) == 0 && (e = engine_for(dir))) {
            check_equivalence(e, "endless model (long runs)", fill_cv_long, k_texts, 4, &worst);
            all_on_device(e, "endless model");
            qtts_engine_free(e);
        } else {
            TEST_CHECK(0, "endless model");
        }
        rm_rf(tmp);
    }
    /* the in-context prompt only changes the prefill: on a device the CustomVoice runs above are the check */
    if (!test_device() && (e = engine_for(BASE_MODEL))) {
        npy_array a;
        if (npy_load_fixture("input_wave_1p5s", &a) == 0) {
            qtts_error err = {0};
            g_icl_voice = qtts_voice_from_samples(e, a.f, (size_t)a.numel, 24000, "Hello, this is the reference.", &err);
            npy_free(&a);
            TEST_CHECK(g_icl_voice != NULL, "ICL voice: %s", err.message);
            if (g_icl_voice) check_equivalence(e, "Base in-context", fill_icl, k_texts, 3, &worst);
            qtts_voice_release(g_icl_voice);
        } else {
            TEST_CHECK(0, "reference fixture");
        }
        qtts_engine_free(e);
    }
    printf("first audio after the first piece, late pieces (30 ms apart): worst %.1f ms\n", worst);
    return test_finish("test_incremental_text");
}
