/* Voices through include/qtts.h on the tiny Base model of the golden
 * fixtures: .spk/.rvq files written and read back (the same voice, the same
 * audio), the registered-voices directory (add, list, load, remove, the
 * statuses of each failure), request strings that are not UTF-8, and the
 * public struct sizes bindings allocate. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "qtts.h"
#include "support/golden_cases.h"
#include "support/npy.h"
#include "support/test_util.h"

static const char *REF_TEXT = "The quick brown fox.";

/* Greedy audio of v (max 8 frames). */
static int speak(qtts_engine *e, const qtts_voice *v, pcm_buf *out) {
    qtts_request r;
    qtts_request_default(&r);
    r.text = "Hello world, this is a test.";
    r.voice = v;
    r.greedy = 1;
    r.max_frames = 8;
    qtts_error err = {0};
    memset(out, 0, sizeof *out);
    qtts_status st = qtts_synthesize(e, &r, pcm_collect, out, NULL, &err);
    TEST_CHECK(st == QTTS_OK, "synthesize: %s", err.message);
    return st;
}

static void check_same_voice(const qtts_voice *a, const qtts_voice *b, const char *what) {
    size_t na = 0, nb = 0, fa = 0, fb = 0;
    const float *xa = qtts_voice_xvector(a, &na), *xb = qtts_voice_xvector(b, &nb);
    TEST_CHECK(na == nb && na > 0 && !memcmp(xa, xb, na * sizeof *xa), "%s: x-vectors differ", what);
    const int32_t *ca = qtts_voice_codes(a, &fa), *cb = qtts_voice_codes(b, &fb);
    TEST_CHECK(fa == fb && (!fa || !memcmp(ca, cb, fa * 16 * sizeof *ca)), "%s: codes differ (%zu vs %zu frames)", what,
               fa, fb);
    const char *ta = qtts_voice_ref_text(a), *tb = qtts_voice_ref_text(b);
    TEST_CHECK((!ta && !tb) || (ta && tb && !strcmp(ta, tb)), "%s: transcripts differ", what);
}

static void check_voice_files(qtts_engine *e, const qtts_voice *v, const char *dir) {
    char spk[512], rvq[512], bad[512];
    qtts_error err = {0};
    snprintf(spk, sizeof spk, "%s/v.spk", dir);
    snprintf(rvq, sizeof rvq, "%s/v.rvq", dir);
    TEST_CHECK(qtts_voice_save(v, spk, rvq, &err) == QTTS_OK, "save: %s", err.message);
    size_t nf = 0;
    qtts_voice_codes(v, &nf);
    unsigned char *b = NULL;
    size_t n = 0;
    TEST_CHECK(read_bytes(rvq, &b, &n) == 0 && n == 22 * nf, ".rvq is 22 bytes per frame: %zu for %zu frames", n, nf);
    free(b);
    qtts_voice *back = qtts_voice_from_files(e, spk, rvq, REF_TEXT, &err);
    TEST_CHECK(back != NULL, "from files: %s", err.message);
    if (back) {
        check_same_voice(v, back, ".spk/.rvq round trip");
        pcm_buf p1, p2;
        if (!speak(e, v, &p1) && !speak(e, back, &p2)) {
            TEST_CHECK(p1.n == p2.n && p1.n > 0, "audio lengths %zu vs %zu", p1.n, p2.n);
            if (p1.n == p2.n) TEST_NEAR(p2.d, p1.d, p1.n, 0.0, "the voice read back speaks the same");
            free(p2.d);
        }
        free(p1.d);
        qtts_voice_release(back);
    }
    /* x-vector only: no .rvq */
    qtts_voice *xv = qtts_voice_from_files(e, spk, NULL, NULL, &err);
    TEST_CHECK(xv != NULL, "from .spk alone: %s", err.message);
    if (xv) {
        size_t f = 1;
        TEST_CHECK(qtts_voice_codes(xv, &f) == NULL && f == 0, "no codes without a .rvq");
        snprintf(bad, sizeof bad, "%s/x.rvq", dir);
        TEST_CHECK(qtts_voice_save(xv, spk, bad, &err) == QTTS_ERR_INVALID, "saving codes it has not: %s", err.message);
        qtts_voice_release(xv);
    }
    /* failures: missing, wrong size, corrupt */
    snprintf(bad, sizeof bad, "%s/missing.spk", dir);
    TEST_CHECK(!qtts_voice_from_files(e, bad, NULL, NULL, &err) && err.status == QTTS_ERR_NOT_FOUND, "missing .spk: %s",
               qtts_status_name(err.status));
    TEST_CHECK(!qtts_voice_from_files(e, spk, bad, NULL, &err) && err.status == QTTS_ERR_NOT_FOUND, "missing .rvq: %s",
               qtts_status_name(err.status));
    snprintf(bad, sizeof bad, "%s/short.spk", dir);
    write_text_file(bad, "abc");
    TEST_CHECK(!qtts_voice_from_files(e, bad, NULL, NULL, &err) && err.status == QTTS_ERR_INVALID,
               "3-byte .spk: %s (%s)", qtts_status_name(err.status), err.message);
    write_text_file(bad, "abcdefgh"); /* 2 floats, not the model's hidden size */
    TEST_CHECK(!qtts_voice_from_files(e, bad, NULL, NULL, &err) && err.status == QTTS_ERR_INVALID,
               "2-value .spk: %s (%s)", qtts_status_name(err.status), err.message);
    snprintf(bad, sizeof bad, "%s/odd.rvq", dir);
    write_text_file(bad, "0123456789"); /* not a multiple of 22 bytes */
    TEST_CHECK(!qtts_voice_from_files(e, spk, bad, NULL, &err) && err.status == QTTS_ERR_INVALID,
               "10-byte .rvq: %s (%s)", qtts_status_name(err.status), err.message);
    snprintf(bad, sizeof bad, "%s/no/such/dir/v.spk", dir);
    TEST_CHECK(qtts_voice_save(v, bad, NULL, &err) == QTTS_ERR_INTERNAL && err.message[0],
               "save into a missing folder: %s", qtts_status_name(err.status));
}

static void check_registry(qtts_engine *e, const qtts_voice *v, const char *tmp) {
    char dir[512], path[600];
    qtts_error err = {0};
    qtts_voice_entry *list = NULL;
    size_t n = 9;
    snprintf(dir, sizeof dir, "%s/voices", tmp);
    TEST_CHECK(qtts_voices_list(dir, &list, &n, &err) == QTTS_ERR_NOT_FOUND && n == 0, "missing dir: %s",
               qtts_status_name(err.status));
    TEST_CHECK(qtts_voices_add(e, dir, "alice", v, &err) == QTTS_ERR_NOT_FOUND, "add into a missing dir: %s",
               qtts_status_name(err.status));
    mkdir(dir, 0755);
    TEST_CHECK(qtts_voices_list(dir, &list, &n, &err) == QTTS_OK && n == 0, "empty dir lists %zu voices", n);
    qtts_voices_list_free(list, n);
    TEST_CHECK(qtts_voices_add(e, dir, "alice", v, &err) == QTTS_OK, "add: %s", err.message);
    TEST_CHECK(qtts_voices_add(e, dir, "alice", v, &err) == QTTS_ERR_EXISTS, "add twice: %s",
               qtts_status_name(err.status));
    const char *bad_names[] = {"", "../x", ".hidden", "a/b", "x..y", NULL};
    for (int i = 0; i < 6; i++)
        TEST_CHECK(qtts_voices_add(e, dir, bad_names[i], v, &err) == QTTS_ERR_INVALID, "name '%s': %s",
                   bad_names[i] ? bad_names[i] : "NULL", qtts_status_name(err.status));
    /* a corrupt voice sits beside it */
    snprintf(path, sizeof path, "%s/bob.spk", dir);
    write_text_file(path, "xyz");
    TEST_CHECK(qtts_voices_list(dir, &list, &n, &err) == QTTS_OK && n == 2, "list: %zu voices (%s)", n, err.message);
    if (n == 2) {
        size_t frames = 0;
        qtts_voice_codes(v, &frames);
        TEST_CHECK(!strcmp(list[0].name, "alice") && !strcmp(list[1].name, "bob"), "sorted by name: %s, %s",
                   list[0].name, list[1].name);
        TEST_CHECK(list[0].xvec_len == (size_t)qtts_engine_info(e)->hidden_size && list[0].has_codes &&
                       list[0].n_frames == frames && list[0].in_context && list[0].ref_text &&
                       !strcmp(list[0].ref_text, REF_TEXT) && !list[0].error,
                   "alice's entry");
        TEST_CHECK(list[1].error && strstr(list[1].error, "bob.spk"), "bob's entry names the corrupt file: %s",
                   list[1].error ? list[1].error : "(none)");
    }
    qtts_voices_list_free(list, n);
    qtts_voice *back = qtts_voices_load(e, dir, "alice", &err);
    TEST_CHECK(back != NULL, "load: %s", err.message);
    if (back) check_same_voice(v, back, "registered voice");
    qtts_voice_release(back);
    TEST_CHECK(!qtts_voices_load(e, dir, "bob", &err) && err.status == QTTS_ERR_INVALID && strstr(err.message, "bob"),
               "corrupt voice: %s (%s)", qtts_status_name(err.status), err.message);
    TEST_CHECK(!qtts_voices_load(e, dir, "carol", &err) && err.status == QTTS_ERR_NOT_FOUND, "unknown voice: %s",
               qtts_status_name(err.status));
    TEST_CHECK(!qtts_voices_load(e, dir, "../alice", &err) && err.status == QTTS_ERR_INVALID, "a path as a name: %s",
               qtts_status_name(err.status));
    TEST_CHECK(qtts_voices_remove(dir, "alice", &err) == QTTS_OK, "remove: %s", err.message);
    TEST_CHECK(qtts_voices_remove(dir, "alice", &err) == QTTS_ERR_NOT_FOUND, "remove twice: %s",
               qtts_status_name(err.status));
    TEST_CHECK(!qtts_voices_load(e, dir, "alice", &err) && err.status == QTTS_ERR_NOT_FOUND, "load after remove");
    snprintf(path, sizeof path, "%s/alice.rvq", dir);
    TEST_CHECK(access(path, F_OK) != 0, "remove leaves no parts behind");
}

static void check_utf8(qtts_engine *e, const qtts_voice *v) {
    struct {
        const char *text, *language;
    } bad[] = {{"caf\xc3", NULL}, {"ok \xff text", NULL}, {"\xed\xa0\x80 surrogate", NULL}, {"fine", "engl\xe9sh"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        qtts_request r;
        qtts_request_default(&r);
        r.text = bad[i].text;
        r.language = bad[i].language;
        r.voice = v;
        qtts_error err = {0};
        qtts_stream *s = qtts_submit(e, &r, &err);
        TEST_CHECK(!s && err.status == QTTS_ERR_INVALID && strstr(err.message, "UTF-8"), "case %zu: %s (%s)", i,
                   qtts_status_name(err.status), err.message);
        qtts_stream_free(s);
    }
    /* incremental text: a first piece may end inside a character */
    qtts_request r;
    qtts_request_default(&r);
    r.text = "caf\xc3";
    r.text_incomplete = 1;
    r.voice = v;
    r.greedy = 1;
    r.max_frames = 3;
    qtts_error err = {0};
    qtts_stream *s = qtts_submit(e, &r, &err);
    TEST_CHECK(s != NULL, "incremental first piece ending mid-character: %s", err.message);
    if (s) {
        TEST_CHECK(qtts_stream_append_text(s, "\xa9 ok.", 5, 1, &err) == QTTS_OK, "append: %s", err.message);
        float buf[4096];
        long k;
        while ((k = qtts_stream_read(s, buf, 4096, -1)) > 0) continue;
        TEST_CHECK(k == 0, "the completed text is spoken: %s", qtts_stream_error(s));
        qtts_stream_free(s);
    }
}

/* Samples given in memory are checked like a file's: finite, at most 60 s. */
static void check_sample_checks(qtts_engine *e) {
    size_t n = 61 * 24000;
    float *x = calloc(n, sizeof *x);
    if (!x) return;
    qtts_error err = {0};
    x[100] = NAN;
    TEST_CHECK(!qtts_voice_from_samples(e, x, 24000, 24000, NULL, &err) && err.status == QTTS_ERR_INVALID &&
                   strstr(err.message, "finite"),
               "NaN reference samples: %s (%s)", qtts_status_name(err.status), err.message);
    x[100] = 0;
    TEST_CHECK(!qtts_voice_from_samples(e, x, n, 24000, NULL, &err) && err.status == QTTS_ERR_INVALID &&
                   strstr(err.message, "too long"),
               "61 s of reference samples: %s (%s)", qtts_status_name(err.status), err.message);
    free(x);
}

static void check_sizes(void) {
    TEST_CHECK(qtts_struct_size("qtts_request") == sizeof(qtts_request), "qtts_request size");
    TEST_CHECK(qtts_struct_size("qtts_engine_params") == sizeof(qtts_engine_params), "params size");
    TEST_CHECK(qtts_struct_size("qtts_result") == sizeof(qtts_result), "result size");
    TEST_CHECK(qtts_struct_size("qtts_model_info") == sizeof(qtts_model_info), "info size");
    TEST_CHECK(qtts_struct_size("qtts_engine_stats") == sizeof(qtts_engine_stats), "stats size");
    TEST_CHECK(qtts_struct_size("qtts_error") == sizeof(qtts_error), "error size");
    TEST_CHECK(qtts_struct_size("qtts_audio_data") == sizeof(qtts_audio_data), "audio data size");
    TEST_CHECK(qtts_struct_size("qtts_voice_entry") == sizeof(qtts_voice_entry), "voice entry size");
    TEST_CHECK(qtts_struct_size("qtts_voice") == 0 && qtts_struct_size(NULL) == 0, "unknown names are 0");
    TEST_CHECK(!strcmp(qtts_status_name(QTTS_ERR_NOT_FOUND), "not_found") &&
                   !strcmp(qtts_status_name(QTTS_ERR_EXISTS), "exists"),
               "status names");
}

int main(void) {
    check_sizes();
    char path[1024], msg[512];
    qtts_engine *e = golden_engine(golden_path(path, sizeof path, "Qwen3-TTS-12Hz-0.6B-Base-tiny"), msg, sizeof msg);
    TEST_CHECK(e != NULL, "engine: %s", msg);
    if (!e) return test_finish("test_voice_api");
    qtts_error err = {0};
    npy_array ref;
    TEST_CHECK(npy_load_fixture("tk_icl_en_short_ref_ref_wav", &ref) == 0, "reference fixture");
    qtts_voice *v = qtts_voice_from_samples(e, ref.f, (size_t)ref.numel, 24000, REF_TEXT, &err);
    TEST_CHECK(v != NULL, "voice: %s", err.message);
    char tmp[] = "/tmp/qtts_voice_api.XXXXXX";
    TEST_CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    if (v) {
        check_voice_files(e, v, tmp);
        check_registry(e, v, tmp);
        check_utf8(e, v);
        check_sample_checks(e);
    }
    rm_rf(tmp);
    qtts_voice_release(v);
    npy_free(&ref);
    qtts_engine_free(e);
    return test_finish("test_voice_api");
}
