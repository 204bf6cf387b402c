/* Registered voices from the command line: `qtts voices add|list|rm` and
 * `qtts say --voice`, through the binary with the tiny golden models. A
 * registered voice must be the same voice as its reference audio (identical
 * samples for the same seed), the server and the CLI must share one voices
 * directory both ways, and every misuse gets a clear line and its exit code.
 * A voice's lexicon (NAME.lexicon) applies to that voice only, over the
 * global --lexicon; a bad one warns and the voice still speaks. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "server/b64.h"
#include "support/npy.h"
#include "support/test_util.h"
#include "test_server_http.h"

#define BASE QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define CV QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define REF_TEXT "Hello there, this is my voice."
/* sampled (not greedy) so that the seed matters; short, so the test stays fast */
#define SAY "say -q --threads 2 -m '" BASE "' --seed 11 --max-frames 8 --sample-format f32 --lang english"

static char g_out[32768];

/* Runs `qtts ARGS` (a shell fragment); the exit status, stdout (+ stderr
 * when with_err) in g_out. */
static int qtts_run(const char *args, int with_err) {
    char cmd[8 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "'%s' %s %s", QTTS_BINARY, args, with_err ? "2>&1" : "2>/dev/null");
    return test_run_capture(cmd, g_out, sizeof g_out);
}
static int qtts(const char *args) { return qtts_run(args, 1); }

static int exists(const char *path) {
    struct stat s;
    return stat(path, &s) == 0;
}

static long file_size(const char *path) {
    struct stat s;
    return stat(path, &s) == 0 ? (long)s.st_size : -1;
}

/* 1 if the two files hold the same bytes (the same samples: same format, same length). */
static int same_file(const char *a, const char *b) {
    unsigned char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    int same = read_bytes(a, &x, &nx) == 0 && read_bytes(b, &y, &ny) == 0 && nx == ny && nx > 44 && !memcmp(x, y, nx);
    free(x);
    free(y);
    return same;
}

/* 1 if the table in out has a row for name (its first column) holding word. */
static int row_has(const char *out, const char *name, const char *word) {
    size_t n = strlen(name);
    for (const char *line = out; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        size_t len = strcspn(line, "\n");
        if (!strncmp(line, name, n) && line[n] == ' ') {
            char row[1024];
            snprintf(row, sizeof row, "%.*s", (int)len, line);
            return strstr(row, word) != NULL;
        }
    }
    return 0;
}

/* `voices list --json` parsed; NULL if it did not run or parse. */
static cJSON *list_json(const char *vdir) {
    char a[2 * PATH_MAX];
    snprintf(a, sizeof a, "voices list --json --voices-dir '%s'", vdir);
    if (qtts_run(a, 0) != 0) return NULL;
    return cJSON_Parse(g_out);
}

static const cJSON *find_voice(const cJSON *root, const char *name) {
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(root, "voices")) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(v, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name)) return v;
    }
    return NULL;
}

static void check_list(const char *tmp, const char *vdir) {
    char a[4 * PATH_MAX], p[2 * PATH_MAX];
    snprintf(a, sizeof a, "voices list --voices-dir '%s'", vdir);
    int rc = qtts_run(a, 0);
    TEST_CHECK(rc == 0 && !strncmp(g_out, "NAME ", 5) && row_has(g_out, "alice", "in-context") &&
                   row_has(g_out, "bob", "x-vector-only") && row_has(g_out, "alice", "\"" REF_TEXT "\""),
               "voices list: %d\n%s", rc, g_out);
    cJSON *root = list_json(vdir);
    TEST_CHECK(root != NULL, "voices list --json parses: %s", g_out);
    const cJSON *dir = cJSON_GetObjectItemCaseSensitive(root, "voices_dir");
    TEST_CHECK(cJSON_IsString(dir) && !strcmp(dir->valuestring, vdir), "--json voices_dir");
    TEST_CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "voices")) == 2, "--json: two voices");
    const cJSON *al = find_voice(root, "alice"), *bo = find_voice(root, "bob");
    snprintf(p, sizeof p, "%s/alice.rvq", vdir);
    long frames = file_size(p) / 22; /* 16 codebooks x 11 bits */
    snprintf(p, sizeof p, "%s/alice.spk", vdir);
    long dim = file_size(p) / 4;
    TEST_CHECK(frames > 0 && dim > 0, "alice's files: %ld frames, %ld floats", frames, dim);
    if (al) {
        const cJSON *rt = cJSON_GetObjectItemCaseSensitive(al, "ref_text");
        TEST_CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(al, "mode")), "in-context") &&
                       cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(al, "x_vector_only")) && cJSON_IsString(rt) &&
                       !strcmp(rt->valuestring, REF_TEXT),
                   "--json alice: in-context with its transcript");
        TEST_CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(al, "ref_frames")) == (double)frames &&
                       cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(al, "xvector_size")) == (double)dim,
                   "--json alice: ref_frames %ld, xvector_size %ld", frames, dim);
        double secs = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(al, "ref_seconds"));
        TEST_CHECK(secs > frames * 0.08 - 1e-9 && secs < frames * 0.08 + 1e-9, "--json alice: ref_seconds %g", secs);
        TEST_CHECK(!cJSON_GetObjectItemCaseSensitive(al, "error"), "--json alice: no error");
    } else {
        TEST_CHECK(0, "--json lists alice");
    }
    if (bo) {
        TEST_CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(bo, "mode")), "x-vector-only") &&
                       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(bo, "x_vector_only")) &&
                       cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(bo, "ref_text")),
                   "--json bob: x-vector-only, no transcript");
    } else {
        TEST_CHECK(0, "--json lists bob");
    }
    cJSON_Delete(root);
    (void)tmp;
}

/* The same voice by name and by its reference audio: identical samples. */
static void check_same_voice(const char *tmp, const char *vdir, const char *ref) {
    char a[4 * PATH_MAX], o1[PATH_MAX], o2[PATH_MAX], o3[PATH_MAX];
    snprintf(o1, sizeof o1, "%s/by_name.wav", tmp);
    snprintf(o2, sizeof o2, "%s/by_audio.wav", tmp);
    snprintf(o3, sizeof o3, "%s/by_env.wav", tmp);
    snprintf(a, sizeof a, SAY " --voice alice --voices-dir '%s' -o '%s' 'A short test.'", vdir, o1);
    TEST_CHECK(qtts(a) == 0, "say --voice alice: %s", g_out);
    snprintf(a, sizeof a, SAY " --ref-audio '%s' --ref-text '" REF_TEXT "' -o '%s' 'A short test.'", ref, o2);
    TEST_CHECK(qtts(a) == 0, "say --ref-audio --ref-text: %s", g_out);
    TEST_CHECK(same_file(o1, o2), "--voice alice == --ref-audio + --ref-text (in-context), same seed");
    /* $QTTS_VOICES_DIR is the default directory */
    snprintf(a, sizeof a, "QTTS_VOICES_DIR='%s' '%s' " SAY " --voice alice -o '%s' 'A short test.' 2>&1", vdir,
             QTTS_BINARY, o3);
    TEST_CHECK(system(a) == 0 && same_file(o1, o3), "$QTTS_VOICES_DIR");

    snprintf(a, sizeof a, SAY " --voice bob --voices-dir '%s' -o '%s' 'A short test.'", vdir, o1);
    TEST_CHECK(qtts(a) == 0, "say --voice bob: %s", g_out);
    snprintf(a, sizeof a, SAY " --ref-audio '%s' --x-vector-only -o '%s' 'A short test.'", ref, o2);
    TEST_CHECK(qtts(a) == 0, "say --ref-audio --x-vector-only: %s", g_out);
    TEST_CHECK(same_file(o1, o2), "--voice bob == --ref-audio --x-vector-only, same seed");
    /* --x-vector-only overrides an in-context voice, as the server's x_vector_only does */
    snprintf(a, sizeof a, SAY " --voice alice --x-vector-only --voices-dir '%s' -o '%s' 'A short test.'", vdir, o3);
    TEST_CHECK(qtts(a) == 0 && same_file(o1, o3), "--voice alice --x-vector-only == bob: %s", g_out);
    snprintf(a, sizeof a, SAY " --voice alice --voices-dir '%s' -o '%s' 'A short test.'", vdir, o3);
    TEST_CHECK(qtts(a) == 0 && !same_file(o1, o3), "in-context differs from x-vector-only");
}

/* The server registers, the CLI speaks; the CLI registers and removes, the server sees it. */
static void check_server(const char *tmp, const char *vdir, const char *ref) {
    th_server srv;
    const char *args[] = {"-m", BASE, "--threads", "2", "--voices-dir", vdir, NULL};
    if (th_start(&srv, args, 60)) {
        TEST_CHECK(0, "qtts serve --voices-dir starts");
        th_stop(&srv, 10);
        return;
    }
    size_t n = 0;
    unsigned char *wav = th_read_file(ref, &n);
    char *b64 = wav ? malloc(srv_b64_encoded_len(n) + 1) : NULL;
    char *body = b64 ? malloc(srv_b64_encoded_len(n) + 256) : NULL;
    th_resp r = {0};
    if (body) {
        srv_b64_encode(wav, n, b64);
        sprintf(body, "{\"name\":\"carol\",\"ref_text\":\"" REF_TEXT "\",\"audio_b64\":\"%s\"}", b64);
        th_post_json(srv.port, "/v1/audio/voices", NULL, body, &r, 60);
        TEST_CHECK(r.status == 201, "POST /v1/audio/voices carol: %d %s", r.status, r.body ? (char *)r.body : "");
        th_resp_free(&r);
    } else {
        TEST_CHECK(0, "reference audio for the server");
    }
    free(wav);
    free(b64);
    free(body);
    /* voices the CLI added are the server's voices */
    th_get(srv.port, "/v1/audio/voices", NULL, &r);
    TEST_CHECK(r.status == 200 && r.body && strstr((char *)r.body, "\"alice\"") && strstr((char *)r.body, "\"bob\""),
               "the server lists the CLI's voices: %s", r.body ? (char *)r.body : "");
    th_resp_free(&r);
    /* greedy: the server's speech with a registered voice == `say --voice` */
    th_post_json(
        srv.port, "/v1/audio/speech", NULL,
        "{\"input\":\"A short test.\",\"voice\":\"alice\",\"language\":\"english\",\"response_format\":\"pcm\","
        "\"temperature\":0,\"max_new_tokens\":8}",
        &r, 60);
    char a[4 * PATH_MAX], o1[PATH_MAX], o2[PATH_MAX];
    snprintf(o1, sizeof o1, "%s/server.pcm", tmp);
    snprintf(o2, sizeof o2, "%s/cli.pcm", tmp);
    FILE *f = fopen(o1, "wb");
    if (f) {
        if (r.body_len) fwrite(r.body, 1, r.body_len, f);
        fclose(f);
    }
    TEST_CHECK(r.status == 200 && r.body_len > 0, "server speech with alice: %d", r.status);
    th_resp_free(&r);
    snprintf(a, sizeof a,
             "say -q --threads 2 -m '" BASE "' --greedy --max-frames 8 --lang english --voice alice --voices-dir '%s' "
             "--format pcm -o '%s' 'A short test.'",
             vdir, o2);
    TEST_CHECK(qtts(a) == 0 && same_file(o1, o2), "server speech == say --voice alice (greedy, pcm): %s", g_out);
    /* a removal by the CLI is seen by the running server */
    snprintf(a, sizeof a, "voices rm bob --voices-dir '%s'", vdir);
    TEST_CHECK(qtts(a) == 0, "voices rm bob: %s", g_out);
    th_get(srv.port, "/v1/audio/voices", NULL, &r);
    TEST_CHECK(r.status == 200 && r.body && !strstr((char *)r.body, "\"bob\"") && strstr((char *)r.body, "\"carol\""),
               "the server no longer lists bob: %s", r.body ? (char *)r.body : "");
    th_resp_free(&r);
    TEST_CHECK(th_stop(&srv, 30) == 0, "server stops cleanly: %s", srv.log);

    /* the voice the server extracted is the voice the CLI extracts */
    snprintf(o1, sizeof o1, "%s/carol.wav", tmp);
    snprintf(o2, sizeof o2, "%s/carol_ref.wav", tmp);
    snprintf(a, sizeof a, SAY " --voice carol --voices-dir '%s' -o '%s' 'A short test.'", vdir, o1);
    TEST_CHECK(qtts(a) == 0, "say --voice carol (registered by the server): %s", g_out);
    snprintf(a, sizeof a, SAY " --ref-audio '%s' --ref-text '" REF_TEXT "' -o '%s' 'A short test.'", ref, o2);
    TEST_CHECK(qtts(a) == 0 && same_file(o1, o2), "server-registered carol == --ref-audio + --ref-text");
}

static void check_errors(const char *tmp, const char *vdir, const char *ref) {
    char a[4 * PATH_MAX], o[PATH_MAX], p[2 * PATH_MAX], empty[PATH_MAX];
    int rc;
    snprintf(o, sizeof o, "%s/err.wav", tmp);
    snprintf(empty, sizeof empty, "%s/empty", tmp);
    mkdir(empty, 0755);
    /* unknown voice: the available names, or that there are none */
    snprintf(a, sizeof a, SAY " --voice nobody --voices-dir '%s' -o '%s' hi", vdir, o);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "unknown voice 'nobody'") && strstr(g_out, "alice, carol") && !exists(o),
               "unknown voice lists the names: %d %s", rc, g_out);
    snprintf(a, sizeof a, SAY " --voice nobody --voices-dir '%s' -o '%s' hi", empty, o);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "holds no voices"), "empty voices dir: %d %s", rc, g_out);
    snprintf(a, sizeof a, SAY " --voice alice --voices-dir '%s/missing' -o '%s' hi", tmp, o);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "No such file or directory"), "missing voices dir: %d %s", rc, g_out);
    snprintf(a, sizeof a, "voices list --voices-dir '%s/missing'", tmp);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "No such file or directory"), "voices list, missing dir: %d %s", rc, g_out);
    snprintf(a, sizeof a, SAY " --voice alice -o '%s' hi", o); /* main() unset $QTTS_VOICES_DIR */
    rc = qtts(a);
    TEST_CHECK(rc == 2 && strstr(g_out, "--voices-dir"), "--voice without a voices dir: %d %s", rc, g_out);
    /* --voice excludes the other voice options */
    const char *excl[] = {"--ref-audio x.wav", "--ref-spk x.spk", "--speaker ryan", "--ref-text hello"};
    for (size_t i = 0; i < sizeof excl / sizeof excl[0]; i++) {
        snprintf(a, sizeof a, SAY " --voice alice --voices-dir '%s' %s -o '%s' hi", vdir, excl[i], o);
        rc = qtts(a);
        TEST_CHECK(rc == 2 && strstr(g_out, "--voice"), "--voice with %s: %d %s", excl[i], rc, g_out);
    }
    /* names are never paths */
    const char *bad_names[] = {"'a/b'", "'../alice'", "..", "'.hidden'"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++) {
        snprintf(a, sizeof a, SAY " --voice %s --voices-dir '%s' -o '%s' hi", bad_names[i], vdir, o);
        rc = qtts(a);
        TEST_CHECK(rc == 2 && strstr(g_out, "not a voice name"), "say --voice %s: %d %s", bad_names[i], rc, g_out);
        snprintf(a, sizeof a, "voices rm %s --voices-dir '%s'", bad_names[i], vdir);
        rc = qtts(a);
        TEST_CHECK(rc == 2 && strstr(g_out, "invalid voice name"), "voices rm %s: %d %s", bad_names[i], rc, g_out);
        snprintf(a, sizeof a, "voices add %s --ref-audio '%s' -m '" BASE "' --voices-dir '%s'", bad_names[i], ref,
                 vdir);
        rc = qtts(a);
        TEST_CHECK(rc == 2 && strstr(g_out, "invalid voice name"), "voices add %s: %d %s", bad_names[i], rc, g_out);
    }
    /* a CustomVoice model: a built-in speaker's name is accepted, a registered voice is not */
    snprintf(a, sizeof a, "say -q -m '" CV "' --voice Ryan --max-frames 2 -o '%s' hi", o);
    TEST_CHECK(qtts(a) == 0 && exists(o), "CustomVoice --voice Ryan = --speaker: %s", g_out);
    remove(o);
    snprintf(a, sizeof a, "say -q -m '" CV "' --voice alice --voices-dir '%s' -o '%s' hi", vdir, o);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "needs a Base model") && strstr(g_out, "ryan"),
               "CustomVoice --voice alice: %d %s", rc, g_out);
    snprintf(a, sizeof a, "voices add dave --ref-audio '%s' -m '" CV "' --voices-dir '%s'", ref, vdir);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "Base model"), "voices add with a CustomVoice model: %d %s", rc, g_out);
    snprintf(p, sizeof p, "%s/dave.spk", vdir);
    TEST_CHECK(!exists(p), "a failed add leaves no files");
    /* a voice that exists is not replaced (the server's 409) */
    snprintf(a, sizeof a, "voices add alice --ref-audio '%s' --x-vector-only -m '" BASE "' --voices-dir '%s'", ref,
             vdir);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "already exists"), "voices add an existing name: %d %s", rc, g_out);
    /* usage */
    snprintf(a, sizeof a, "voices add erin -m '" BASE "' --voices-dir '%s'", vdir);
    TEST_CHECK(qtts(a) == 2 && strstr(g_out, "--ref-audio"), "voices add without --ref-audio: %s", g_out);
    snprintf(a, sizeof a, "voices add erin --ref-audio '%s' --ref-text hi --x-vector-only --voices-dir '%s'", ref,
             vdir);
    TEST_CHECK(qtts(a) == 2, "voices add --ref-text --x-vector-only: %s", g_out);
    snprintf(a, sizeof a, "voices rm alice --json --voices-dir '%s'", vdir);
    TEST_CHECK(qtts(a) == 2, "voices rm --json: %s", g_out);
    TEST_CHECK(qtts("voices frobnicate") == 2, "unknown subcommand: %s", g_out);
    TEST_CHECK(qtts("voices list") == 2 && strstr(g_out, "QTTS_VOICES_DIR"), "voices list without a dir: %s", g_out);
    TEST_CHECK(qtts("help voices") == 0 && strstr(g_out, "usage: qtts voices"), "qtts help voices");
    /* corrupt files: say fails clearly, list shows it, rm removes it */
    snprintf(p, sizeof p, "%s/broken.spk", vdir);
    write_text_file(p, "abc"); /* not a whole float32 */
    snprintf(a, sizeof a, SAY " --voice broken --voices-dir '%s' -o '%s' hi", vdir, o);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "does not load") && strstr(g_out, "broken.spk") && !exists(o),
               "corrupt .spk: %d %s", rc, g_out);
    snprintf(a, sizeof a, "cp '%s/alice.spk' '%s/halfrvq.spk' && printf 12345 > '%s/halfrvq.rvq'", vdir, vdir, vdir);
    TEST_CHECK(system(a) == 0, "make halfrvq");
    snprintf(a, sizeof a, SAY " --voice halfrvq --voices-dir '%s' -o '%s' hi", vdir, o);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "halfrvq.rvq"), "corrupt .rvq: %d %s", rc, g_out);
    snprintf(a, sizeof a, "voices list --voices-dir '%s'", vdir);
    rc = qtts_run(a, 0);
    TEST_CHECK(rc == 0 && row_has(g_out, "broken", "corrupt") && row_has(g_out, "halfrvq", "corrupt") &&
                   row_has(g_out, "alice", "in-context"),
               "voices list shows corrupt voices: %d\n%s", rc, g_out);
    cJSON *root = list_json(vdir);
    const cJSON *br = find_voice(root, "broken");
    TEST_CHECK(br && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(br, "error")), "--json: broken has an error");
    cJSON_Delete(root);
    snprintf(a, sizeof a, "voices rm broken --voices-dir '%s'", vdir);
    TEST_CHECK(qtts(a) == 0, "voices rm of a corrupt voice: %s", g_out);
    snprintf(a, sizeof a, "voices rm halfrvq --voices-dir '%s'", vdir);
    TEST_CHECK(qtts(a) == 0, "voices rm of a corrupt voice: %s", g_out);
}

/* The server's speech (greedy pcm) for voice with input. */
static th_resp speak(int port, const char *voice, const char *input) {
    char body[512];
    snprintf(body, sizeof body,
             "{\"input\":\"%s\",\"voice\":\"%s\",\"language\":\"english\",\"response_format\":\"pcm\","
             "\"temperature\":0,\"max_new_tokens\":6}",
             input, voice);
    th_resp r = {0};
    th_post_json(port, "/v1/audio/speech", NULL, body, &r, 60);
    return r;
}

static int same_resp(const th_resp *x, const th_resp *y) {
    return x->status == 200 && y->status == 200 && x->body_len > 0 && x->body_len == y->body_len &&
           !memcmp(x->body, y->body, x->body_len);
}

/* Through the server: dora's lexicon applies to dora's requests only (the
 * engine merges the voice's entries in at submit); alice's bad one is
 * reported at start and alice still speaks. */
static void check_lexicon_server(const char *vdir) {
    th_server srv;
    const char *args[] = {"-m", BASE, "--threads", "2", "--voices-dir", vdir, NULL};
    if (th_start(&srv, args, 60)) {
        TEST_CHECK(0, "qtts serve --voices-dir starts");
        th_stop(&srv, 10);
        return;
    }
    th_resp d1 = speak(srv.port, "dora", "NGINX."), d2 = speak(srv.port, "dora", "engine x.");
    th_resp a1 = speak(srv.port, "alice", "NGINX."), a2 = speak(srv.port, "alice", "engine x.");
    TEST_CHECK(same_resp(&d1, &d2), "server: dora says NGINX as engine x (%d %d, %zu %zu bytes)", d1.status, d2.status,
               d1.body_len, d2.body_len);
    TEST_CHECK(a1.status == 200 && a2.status == 200 && !same_resp(&a1, &a2),
               "server: alice (no usable lexicon) says NGINX as written (%d %d)", a1.status, a2.status);
    th_resp_free(&d1), th_resp_free(&d2), th_resp_free(&a1), th_resp_free(&a2);
    int stopped = th_stop(&srv, 30);
    TEST_CHECK(stopped == 0 && strstr(srv.log, "voice 'alice': lexicon not used") && strstr(srv.log, "alice.lexicon:2:"),
               "server: alice's bad lexicon reported at start: %s", srv.log);
}

/* Per-voice lexicons: `voices add --lexicon` (checked first), list, say and
 * normalize --voice, precedence over --lexicon, a bad file in the dir. */
static void check_lexicon(const char *tmp, const char *vdir, const char *ref) {
    char a[4 * PATH_MAX], vlex[PATH_MAX], glex[PATH_MAX], blex[PATH_MAX], p[3 * PATH_MAX];
    snprintf(vlex, sizeof vlex, "%s/voice.lex", tmp);
    snprintf(glex, sizeof glex, "%s/global.lex", tmp);
    snprintf(blex, sizeof blex, "%s/bad.lex", tmp);
    TEST_CHECK(!write_text_file(vlex, "nginx\tengine x\nQTTS\tcute ts\n") &&
                   !write_text_file(glex, "NGINX\tglobal nginx\nkubectl\tcube control\n") &&
                   !write_text_file(blex, "ok\tfine\nno tab here\n"),
               "lexicon files");
    int rc;
    snprintf(a, sizeof a, "voices add dora --ref-audio '%s' --x-vector-only -m '" BASE "' --voices-dir '%s' --lexicon '%s'",
             ref, vdir, blex);
    rc = qtts(a);
    snprintf(p, sizeof p, "%s/dora.spk", vdir);
    TEST_CHECK(rc == 1 && strstr(g_out, "bad.lex:2: has no TAB") && !exists(p),
               "a bad --lexicon is refused, with its line, before the voice is added: %d %s", rc, g_out);
    snprintf(a, sizeof a, "voices add dora --ref-audio '%s' --x-vector-only -m '" BASE "' --voices-dir '%s' --lexicon '%s'",
             ref, vdir, vlex);
    rc = qtts_run(a, 0);
    snprintf(p, sizeof p, "%s/dora.lexicon", vdir);
    TEST_CHECK(rc == 0 && exists(p) && strstr(g_out, "lexicon: 2 entries"), "voices add --lexicon: %d %s", rc, g_out);
    snprintf(a, sizeof a, "voices list --voices-dir '%s'", vdir);
    rc = qtts_run(a, 0);
    TEST_CHECK(rc == 0 && strstr(g_out, "^ lexicon: 2 entries"), "voices list shows the lexicon: %s", g_out);

    const char *text = "NGINX and QTTS with kubectl";
    struct {
        const char *voice, *global, *want;
    } cases[] = {
        {"dora", glex, "engine x and cute ts with cube control"}, /* the voice's entry first, the global's for the rest */
        {"alice", glex, "global nginx and QTTS with cube control"}, /* another voice: the global lexicon only */
        {"dora", NULL, "engine x and cute ts with kubectl"},
        {"alice", NULL, "NGINX and QTTS with kubectl"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char g[PATH_MAX + 16] = "";
        if (cases[i].global) snprintf(g, sizeof g, "--lexicon '%s'", cases[i].global);
        snprintf(a, sizeof a, "normalize --lang en --voice %s --voices-dir '%s' %s '%s'", cases[i].voice, vdir, g, text);
        rc = qtts_run(a, 0);
        TEST_CHECK(rc == 0 && !strncmp(g_out, cases[i].want, strlen(cases[i].want)), "normalize --voice %s %s: %s",
                   cases[i].voice, g, g_out);
        /* what `say --voice` reads: its verbose "normalized:" line */
        snprintf(a, sizeof a, "say -v --threads 2 -m '" BASE "' --max-frames 2 --lang english --voice %s "
                 "--voices-dir '%s' %s -o '%s/lex.wav' '%s'", cases[i].voice, vdir, g, tmp, text);
        rc = qtts(a);
        char want[256];
        snprintf(want, sizeof want, "normalized: %s", cases[i].want);
        TEST_CHECK(rc == 0 && strstr(g_out, want), "say --voice %s %s: %d %s", cases[i].voice, g, rc, g_out);
    }

    /* a bad lexicon in the directory: a warning, the voice still speaks without it */
    snprintf(p, sizeof p, "cp '%s' '%s/alice.lexicon'", blex, vdir);
    TEST_CHECK(system(p) == 0, "%s", p);
    snprintf(a, sizeof a, "say -v --threads 2 -m '" BASE "' --max-frames 2 --lang english --voice alice "
             "--voices-dir '%s' --lexicon '%s' -o '%s/lex.wav' '%s'", vdir, glex, tmp, text);
    rc = qtts(a);
    TEST_CHECK(rc == 0 && strstr(g_out, "lexicon not used") && strstr(g_out, "alice.lexicon:2:") &&
                   strstr(g_out, "normalized: global nginx and QTTS with cube control"),
               "a bad voice lexicon: warned, skipped: %d %s", rc, g_out);
    snprintf(a, sizeof a, "voices list --voices-dir '%s'", vdir);
    rc = qtts_run(a, 0);
    TEST_CHECK(rc == 0 && strstr(g_out, "^ lexicon not used:") && strstr(g_out, "alice.lexicon:2:"),
               "voices list names the bad lexicon: %s", g_out);
    check_lexicon_server(vdir);
    snprintf(p, sizeof p, "%s/alice.lexicon", vdir);
    unlink(p);
    snprintf(a, sizeof a, "voices rm dora --voices-dir '%s'", vdir);
    TEST_CHECK(qtts(a) == 0, "voices rm dora: %s", g_out);
    snprintf(p, sizeof p, "%s/dora.lexicon", vdir);
    TEST_CHECK(!exists(p), "voices rm removed dora.lexicon");
}

int main(void) {
    char tmpl[] = "/tmp/qtts_cli_voices_XXXXXX", a[4 * PATH_MAX], vdir[PATH_MAX], ref[PATH_MAX], p[2 * PATH_MAX];
    char *tmp = mkdtemp(tmpl);
    if (!tmp) return 1;
    unsetenv("QTTS_VOICES_DIR"); /* the tests say which directory */
    snprintf(vdir, sizeof vdir, "%s/voices", tmp); /* not there yet: add creates it, like the server */
    snprintf(ref, sizeof ref, "%s/ref.wav", tmp);
    npy_array wave;
    if (npy_load_fixture("input_wave_1p5s", &wave)) return test_finish("test_cli_voices (no fixture)");
    size_t wav_n = 0;
    unsigned char *wav = th_make_wav(wave.f, (size_t)wave.numel, 24000, &wav_n);
    npy_free(&wave);
    FILE *f = wav ? fopen(ref, "wb") : NULL;
    TEST_CHECK(f && fwrite(wav, 1, wav_n, f) == wav_n, "write %s", ref);
    if (f) fclose(f);
    free(wav);

    int rc;
    snprintf(a, sizeof a, "voices add alice --ref-audio '%s' --ref-text '" REF_TEXT "' -m '" BASE "' --voices-dir '%s'",
             ref, vdir);
    rc = qtts_run(a, 0);
    TEST_CHECK(rc == 0 && strstr(g_out, "alice") && strstr(g_out, "in-context"), "voices add alice: %d %s", rc, g_out);
    snprintf(a, sizeof a, "voices add bob --ref-audio - --x-vector-only -m '" BASE "' --voices-dir '%s' < '%s'", vdir,
             ref);
    rc = qtts_run(a, 0);
    TEST_CHECK(rc == 0 && strstr(g_out, "bob") && strstr(g_out, "x-vector-only"), "voices add bob: %d %s", rc, g_out);
    snprintf(p, sizeof p, "%s/alice.json", vdir);
    TEST_CHECK(exists(p), "alice.json written");
    check_list(tmp, vdir);
    check_same_voice(tmp, vdir, ref);
    check_server(tmp, vdir, ref);
    check_errors(tmp, vdir, ref);
    check_lexicon(tmp, vdir, ref);

    /* rm: all three files go; a second rm says what is there */
    snprintf(a, sizeof a, "voices rm carol --voices-dir '%s'", vdir);
    TEST_CHECK(qtts(a) == 0, "voices rm carol: %s", g_out);
    const char *exts[] = {"spk", "rvq", "json"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/carol.%s", vdir, exts[i]);
        TEST_CHECK(!exists(p), "voices rm removed carol.%s", exts[i]);
    }
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "unknown voice 'carol'") && strstr(g_out, "alice"),
               "voices rm carol again: %d %s", rc, g_out);
    snprintf(a, sizeof a, "voices rm alice --voices-dir '%s'", vdir);
    TEST_CHECK(qtts(a) == 0, "voices rm alice: %s", g_out);
    snprintf(a, sizeof a, "voices list --voices-dir '%s'", vdir);
    rc = qtts(a);
    TEST_CHECK(rc == 0 && strstr(g_out, "no voices in"), "an emptied dir lists nothing: %d %s", rc, g_out);
    rm_rf(tmp);
    return test_finish("test_cli_voices");
}
