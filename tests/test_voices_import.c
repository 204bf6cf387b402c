/* `qtts voices import`: other programs' voice files into the registered
 * voices directory. From one voice (a random x-vector of the golden Base
 * model's size, 6 frames of random codes, a transcript) the test writes each
 * format as its program does: a raw f32 .spk with its .rvq beside it
 * (qwentts.cpp), a raw f32 x-vector .bin (gm-C), .qvoice files as gm-C's
 * --save-voice writes them (v3 with codes, transcript and its META/TPAD
 * sections, from a voice the engine cloned from a clip: the import clones
 * that voice's audio bit for bit; v2 without codes), and a CrispASR voice
 * pack GGUF of two voices
 * (architecture qwen3tts.voicepack, voicepack.spk.NAME.embd F32,
 * voicepack.code.NAME.codes I32 [T][16], voicepack.names / ref_texts). Each
 * import gives the same x-vector, codes and transcript, read back by the
 * server's loader; a Base engine clones from the imported .spk and from the
 * pack's voice exactly the audio of qtts_voice_from_parts on the originals.
 * Refused in one line, writing nothing: a GGUF model (not a pack), a name
 * that exists, a NaN in the x-vector, a pack code outside [0, 2048), --rvq
 * beside a pack, --name for a pack of two voices, a .qvoice of version 1,
 * one with a code outside [0, 2048), one cut inside its codes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "io/gguf.h"
#include "io/rvq.h"
#include "io/spk.h"
#include "io/store.h"
#include "qtts.h"
#include "support/npy.h"
#include "support/test_util.h"
#include "voices/voice_files.h"

enum { T = 6, NQ = 16 };
static const char *const REF_TEXT = "The quick brown fox.";

static float rnd(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
}

/* Runs `qtts voices import ARGS` with the voices dir; returns the exit status, err gets stderr. */
static int import(const char *dir, const char *args, char *err, size_t n) {
    char cmd[4096], errf[700];
    snprintf(errf, sizeof errf, "%s.err", dir);
    snprintf(cmd, sizeof cmd, "%s voices import %s --voices-dir %s > /dev/null 2> %s", QTTS_BINARY, args, dir, errf);
    int st = system(cmd);
    unsigned char *text = NULL;
    size_t len = 0;
    err[0] = 0;
    if (read_bytes(errf, &text, &len) == 0 && text) snprintf(err, n, "%.*s", (int)len, (const char *)text);
    free(text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The pack: voices "alice" (xv, codes, REF_TEXT) and "bob" (xv negated, no codes, no text). */
static int write_pack(const char *path, const char *arch, const float *xv, float *neg, int64_t D, int32_t *codes) {
    qtts_err err = {0};
    qtts_store *st = qtts_store_new(&err);
    const int64_t xs[1] = {D}, cs[2] = {T, NQ};
    for (int64_t i = 0; i < D; i++) neg[i] = -xv[i];
    if (!st || qtts_store_add(st, "voicepack.spk.alice.embd", QTTS_F32, 1, xs, xv, 0, &err) ||
        qtts_store_add(st, "voicepack.code.alice.codes", QTTS_I32, 2, cs, codes, 0, &err) ||
        qtts_store_add(st, "voicepack.spk.bob.embd", QTTS_F32, 1, xs, neg, 0, &err)) {
        qtts_store_free(st);
        return -1;
    }
    const char *names[2] = {"alice", "bob"}, *texts[2] = {REF_TEXT, ""};
    const size_t nl[2] = {5, 3}, tl[2] = {strlen(REF_TEXT), 0};
    qtts_gguf_kv kv[3] = {qtts_gguf_kv_str("general.architecture", arch, strlen(arch)),
                          qtts_gguf_kv_arr_str("voicepack.names", 2, names, nl),
                          qtts_gguf_kv_arr_str("voicepack.ref_texts", 2, texts, tl)};
    int rc = qtts_gguf_write(path, st, kv, 3, &err);
    if (rc) fprintf(stderr, "write_pack: %s\n", err.msg);
    qtts_store_free(st);
    return rc;
}

/* A .qvoice as gm-C's main.c --save-voice writes it: "QVCE", version, dim, the x-vector, the transcript,
 * the codes; with extra, version 3's META section and a TPAD section of the source model's embeddings. */
static int write_qvoice(const char *path, uint32_t version, const float *xv, int64_t D, const char *text,
                        const int32_t *codes, uint32_t frames, int extra) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    uint32_t hdr[2] = {version, (uint32_t)D}, len = (uint32_t)strlen(text);
    int ok = fwrite("QVCE", 1, 4, f) == 4 && fwrite(hdr, 4, 2, f) == 2 &&
             fwrite(xv, sizeof(float), (size_t)D, f) == (size_t)D && fwrite(&len, 4, 1, f) == 1 &&
             fwrite(text, 1, len, f) == len && fwrite(&frames, 4, 1, f) == 1 &&
             (!frames || fwrite(codes, sizeof(int32_t), (size_t)frames * NQ, f) == (size_t)frames * NQ);
    if (extra) {
        unsigned char meta[100] = {0}; /* lang id, lang name[16], model size, dim, ref seconds, name[64], flags */
        uint32_t lang = 2050, hidden = (uint32_t)D, tpad = (uint32_t)D, flags = 2 | 4;
        float secs = 3;
        memcpy(meta, &lang, 4), memcpy(meta + 4, "english", 7), memcpy(meta + 20, &hidden, 4);
        memcpy(meta + 24, &hidden, 4), memcpy(meta + 28, &secs, 4), memcpy(meta + 32, "galatea", 7);
        memcpy(meta + 96, &flags, 4);
        ok = ok && fwrite("META", 1, 4, f) == 4 && fwrite(meta, 1, sizeof meta, f) == sizeof meta &&
             fwrite("TPAD", 1, 4, f) == 4 && fwrite(&tpad, 4, 1, f) == 1;
        for (int k = 0; ok && k < 3; k++) ok = fwrite(xv, sizeof(float), (size_t)D, f) == (size_t)D;
    }
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* The registered voice NAME holds exactly xv[D], codes[T] (or none) and text (or none). */
static void check_files(qtts_engine *e, const char *dir, const char *name, const float *xv, int64_t D,
                        const int32_t *codes, const char *text) {
    char err[512] = "";
    qtts_voice *v = srv_voice_files_load(e, dir, name, err, sizeof err);
    TEST_CHECK(v != NULL, "load %s: %s", name, err);
    if (!v) return;
    size_t xl = 0, nf = 0;
    const float *x = qtts_voice_xvector(v, &xl);
    const int32_t *c = qtts_voice_codes(v, &nf);
    const char *t = qtts_voice_ref_text(v);
    TEST_CHECK(xl == (size_t)D && !memcmp(x, xv, (size_t)D * sizeof(float)), "%s: x-vector differs", name);
    TEST_CHECK(codes ? nf == T && c && !memcmp(c, codes, sizeof(int32_t) * T * NQ) : nf == 0, "%s: codes differ (%zu)",
               name, nf);
    TEST_CHECK(text ? t && !strcmp(t, text) : !t || !*t, "%s: transcript '%s'", name, t ? t : "(none)");
    qtts_voice_release(v);
}

static int speak(qtts_engine *e, const qtts_voice *v, pcm_buf *out) {
    qtts_request r;
    qtts_request_default(&r);
    r.text = "Hello there, friend.";
    r.voice = v;
    r.greedy = 1;
    r.max_frames = 6;
    qtts_error err = {0};
    if (qtts_synthesize(e, &r, pcm_collect, out, NULL, &err) != QTTS_OK) {
        fprintf(stderr, "speak: %s\n", err.message);
        return -1;
    }
    return 0;
}

static int same_audio(const pcm_buf *a, const pcm_buf *b) {
    return a->n > 0 && a->n == b->n && !memcmp(a->d, b->d, a->n * sizeof(float));
}

static void check_refused(const char *dir, const char *args, const char *needle, const char *what) {
    char err[2048];
    int rc = import(dir, args, err, sizeof err);
    TEST_CHECK(rc != 0 && strstr(err, needle), "%s: rc %d, '%s'", what, rc, err);
    char *nl = strchr(err, '\n');
    TEST_CHECK(nl && !strchr(nl + 1, '\n'), "%s: not one line: '%s'", what, err);
    if (nl) *nl = 0;
    printf("  %-34s %s\n", what, err);
}

int main(void) {
    char tmp[] = "/tmp/qtts_voices_import_XXXXXX", model[1024], dir[600], p[700], p2[700], args[2048], err[2048];
    if (!mkdtemp(tmp)) return 1;
    golden_path(model, sizeof model, "Qwen3-TTS-12Hz-0.6B-Base-tiny");
    snprintf(dir, sizeof dir, "%s/voices", tmp);
    qtts_engine_params ep;
    qtts_engine_params_default(&ep);
    ep.model_path = model;
    ep.n_threads = 2;
    qtts_error qerr = {0};
    qtts_engine *e = qtts_engine_create(&ep, &qerr);
    TEST_CHECK(e != NULL, "load: %s", qerr.message);
    if (!e) return test_finish("test_voices_import");
    const int64_t D = qtts_engine_info(e)->hidden_size;
    uint64_t seed = 46;
    float *xv = malloc((size_t)D * sizeof *xv), *neg = malloc((size_t)D * sizeof *neg);
    int32_t codes[T * NQ];
    if (!xv || !neg) return 1;
    for (int64_t i = 0; i < D; i++) xv[i] = rnd(&seed);
    for (int i = 0; i < T * NQ; i++) codes[i] = (int32_t)((rnd(&seed) + 1) * 1023.9);
    qtts_err qe = {0};

    /* the reference: the same parts straight into the engine */
    pcm_buf ref = {0}, got = {0};
    qtts_voice *orig = qtts_voice_from_parts(e, xv, (size_t)D, codes, T, REF_TEXT, &qerr);
    TEST_CHECK(orig && speak(e, orig, &ref) == 0, "reference voice: %s", qerr.message);
    qtts_voice_release(orig);

    /* qwentts.cpp: NAME.spk + NAME.rvq beside it */
    snprintf(p, sizeof p, "%s/narrator.spk", tmp);
    snprintf(p2, sizeof p2, "%s/narrator.rvq", tmp);
    TEST_CHECK(!qtts_spk_write(p, xv, D, &qe) && !qtts_rvq_write(p2, codes, NQ, T, &qe), "write: %s", qe.msg);
    snprintf(args, sizeof args, "%s --ref-text '%s'", p, REF_TEXT);
    TEST_CHECK(import(dir, args, err, sizeof err) == 0, "import .spk: %s", err);
    check_files(e, dir, "narrator", xv, D, codes, REF_TEXT);
    char lerr[512] = "";
    qtts_voice *v = srv_voice_files_load(e, dir, "narrator", lerr, sizeof lerr);
    TEST_CHECK(v && speak(e, v, &got) == 0 && same_audio(&ref, &got),
               "the imported .spk/.rvq voice speaks "
               "otherwise (%zu vs %zu samples) %s",
               got.n, ref.n, lerr);
    printf("  .spk + .rvq (qwentts.cpp)         same voice, same audio (%zu samples)\n", got.n);
    qtts_voice_release(v);
    free(got.d), got = (pcm_buf){0};

    /* gm-C: a raw x-vector .bin, and a .qvoice */
    snprintf(p, sizeof p, "%s/mario.bin", tmp);
    TEST_CHECK(!qtts_spk_write(p, xv, D, &qe), "write");
    TEST_CHECK(import(dir, p, err, sizeof err) == 0, "import .bin: %s", err);
    check_files(e, dir, "mario", xv, D, NULL, NULL);
    printf("  x-vector .bin (gm-C)              same x-vector, x-vector-only\n");
    /* gm-C's .qvoice: one written from a voice cloned from a clip clones that voice bit for bit */
    {
        npy_array clip = {0};
        pcm_buf want = {0};
        qtts_voice *cloned = NULL;
        TEST_CHECK(npy_load_fixture("tk_icl_en_short_ref_ref_wav", &clip) == 0, "fixture");
        if (clip.f) cloned = qtts_voice_from_samples(e, clip.f, (size_t)clip.numel, 24000, REF_TEXT, &qerr);
        TEST_CHECK(cloned && speak(e, cloned, &want) == 0, "clone from the clip: %s", qerr.message);
        size_t cxl = 0, cnf = 0;
        const float *cx = cloned ? qtts_voice_xvector(cloned, &cxl) : NULL;
        const int32_t *cc = cloned ? qtts_voice_codes(cloned, &cnf) : NULL;
        TEST_CHECK(cx && cc && cnf > 0 && cxl == (size_t)D, "the cloned voice has no codes");
        snprintf(p, sizeof p, "%s/galatea.qvoice", tmp);
        if (cx && cc && cnf > 0 && write_qvoice(p, 3, cx, D, REF_TEXT, cc, (uint32_t)cnf, 1) == 0) {
            TEST_CHECK(import(dir, p, err, sizeof err) == 0, "import .qvoice: %s", err);
            v = srv_voice_files_load(e, dir, "galatea", lerr, sizeof lerr);
            size_t xl = 0, nf = 0;
            const float *x = v ? qtts_voice_xvector(v, &xl) : NULL;
            const int32_t *c = v ? qtts_voice_codes(v, &nf) : NULL;
            const char *t = v ? qtts_voice_ref_text(v) : NULL;
            TEST_CHECK(x && xl == cxl && !memcmp(x, cx, cxl * sizeof(float)) && c && nf == cnf &&
                           !memcmp(c, cc, cnf * NQ * sizeof(int32_t)) && t && !strcmp(t, REF_TEXT),
                       "the imported .qvoice differs from the cloned voice %s", lerr);
            TEST_CHECK(v && speak(e, v, &got) == 0 && same_audio(&want, &got),
                       "the imported .qvoice speaks otherwise (%zu vs %zu samples)", got.n, want.n);
            printf(
                "  .qvoice v3 (gm-C), %zu frames        same x-vector, codes, transcript; same audio (%zu samples)\n",
                cnf, got.n);
            qtts_voice_release(v);
            free(got.d), got = (pcm_buf){0};
        }
        qtts_voice_release(cloned);
        free(want.d);
        npy_free(&clip);
    }
    snprintf(p, sizeof p, "%s/galatea2.qvoice", tmp);
    TEST_CHECK(write_qvoice(p, 2, xv, D, "", NULL, 0, 0) == 0, "write");
    snprintf(args, sizeof args, "%s --name galatea-x", p);
    TEST_CHECK(import(dir, args, err, sizeof err) == 0, "import .qvoice: %s", err);
    check_files(e, dir, "galatea-x", xv, D, NULL, NULL);
    printf("  .qvoice v2 (gm-C), no codes       same x-vector, x-vector-only\n");

    /* CrispASR: a voice pack of two */
    snprintf(p, sizeof p, "%s/pack.gguf", tmp);
    TEST_CHECK(write_pack(p, "qwen3tts.voicepack", xv, neg, D, codes) == 0, "write pack");
    TEST_CHECK(import(dir, p, err, sizeof err) == 0, "import pack: %s", err);
    check_files(e, dir, "alice", xv, D, codes, REF_TEXT);
    check_files(e, dir, "bob", neg, D, NULL, NULL);
    v = srv_voice_files_load(e, dir, "alice", lerr, sizeof lerr);
    TEST_CHECK(v && speak(e, v, &got) == 0 && same_audio(&ref, &got), "the pack's voice speaks otherwise %s", lerr);
    printf("  voice pack .gguf (CrispASR)       2 voices; alice's audio the same (%zu samples)\n", got.n);
    qtts_voice_release(v);
    free(got.d);

    /* refusals */
    check_refused(dir, p, "already exists", "names that exist");
    snprintf(p2, sizeof p2, "%s/model.gguf", tmp);
    TEST_CHECK(write_pack(p2, "qwen3tts", xv, neg, D, codes) == 0, "write");
    check_refused(dir, p2, "not a voice pack", "a GGUF model");
    snprintf(args, sizeof args, "%s --rvq %s/narrator.rvq", p, tmp);
    check_refused(dir, args, "--rvq goes with a raw x-vector", "--rvq beside a pack");
    snprintf(args, sizeof args, "%s --name carol", p);
    check_refused(dir, args, "holds 2 voices", "--name for a pack of two");
    xv[3] = NAN;
    snprintf(p2, sizeof p2, "%s/nan.spk", tmp);
    FILE *f = fopen(p2, "wb");
    TEST_CHECK(f && fwrite(xv, sizeof(float), (size_t)D, f) == (size_t)D && fclose(f) == 0, "write nan");
    check_refused(dir, p2, "finite", "a NaN in the x-vector");
    xv[3] = 0;
    codes[5] = 4000;
    snprintf(p2, sizeof p2, "%s/badcodes.gguf", tmp);
    TEST_CHECK(write_pack(p2, "qwen3tts.voicepack", xv, neg, D, codes) == 0, "write");
    check_refused(dir, p2, "outside [0, 2048)", "a pack code of 4000");
    snprintf(p2, sizeof p2, "%s/v1.qvoice", tmp);
    TEST_CHECK(write_qvoice(p2, 1, xv, D, REF_TEXT, codes, T, 0) == 0, "write");
    check_refused(dir, p2, "versions 2 and 3 are read", "a .qvoice of version 1");
    snprintf(p2, sizeof p2, "%s/badcodes.qvoice", tmp);
    TEST_CHECK(write_qvoice(p2, 3, xv, D, REF_TEXT, codes, T, 1) == 0, "write");
    check_refused(dir, p2, "outside [0, 2048)", "a .qvoice code of 4000");
    TEST_CHECK(truncate(p2, 12 + 4 * D + 4 + (off_t)strlen(REF_TEXT) + 4 + 100) == 0, "truncate");
    check_refused(dir, p2, "codes do not fit", "a .qvoice cut inside its codes");
    snprintf(p2, sizeof p2, "%s/voices/nan.spk", tmp);
    struct stat sb;
    TEST_CHECK(stat(p2, &sb) != 0, "a refused import left %s", p2);

    qtts_engine_free(e);
    free(ref.d);
    free(xv), free(neg);
    TEST_CHECK(rm_rf(tmp) == 0, "cleanup");
    return test_finish("test_voices_import");
}
