/* qtts say --script: a dialogue on the tiny golden CustomVoice and
 * VoiceDesign models. The script's file must equal, sample for sample, the
 * per-turn runs of `qtts say` (same voice, instruction, greedy) joined with
 * the stated pause of silence; unknown speakers and bad scripts fail with
 * the line named. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "support/test_util.h"

#define CV "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define VD "Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"
#define COMMON "-q --threads 2 --greedy --max-frames 6 --sample-format f32"

static int run(const char *cmd) {
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Appends the WAV at path to *all. */
static int append_wav(const char *path, float **all, size_t *n_all) {
    size_t n = 0;
    float *x = read_wav(path, &n);
    if (!x || !n) {
        free(x);
        return -1;
    }
    float *p = realloc(*all, (*n_all + n) * sizeof *p);
    if (!p) {
        free(x);
        return -1;
    }
    memcpy(p + *n_all, x, n * sizeof *x);
    *all = p;
    *n_all += n;
    free(x);
    return 0;
}

static int append_zeros(float **all, size_t *n_all, size_t n) {
    float *p = realloc(*all, (*n_all + n) * sizeof *p);
    if (!p) return -1;
    memset(p + *n_all, 0, n * sizeof *p);
    *all = p;
    *n_all += n;
    return 0;
}

typedef struct {
    const char *voice_args, *text;
} turn;

/* The script's output against its turns spoken one by one. */
static void check_script(const char *dir, const char *model, const char *script, const char *cast, int pause_ms,
                         const turn *turns, size_t n_turns, const char *what) {
    char path[600], out[600], cmd[4096], model_path[1024];
    golden_path(model_path, sizeof model_path, model);
    snprintf(path, sizeof path, "%s/script.txt", dir);
    snprintf(out, sizeof out, "%s/script.wav", dir);
    TEST_CHECK(write_text_file(path, script) == 0, "write %s", path);
    snprintf(cmd, sizeof cmd, "%s say " COMMON " -m %s --script %s %s --pause %d -o %s", QTTS_BINARY, model_path,
             path, cast, pause_ms, out);
    TEST_CHECK(run(cmd) == 0, "%s: failed: %s", what, cmd);
    float *want = NULL;
    size_t n_want = 0;
    for (size_t i = 0; i < n_turns; i++) {
        char tpath[600], tout[600];
        snprintf(tpath, sizeof tpath, "%s/turn%zu.txt", dir, i);
        snprintf(tout, sizeof tout, "%s/turn%zu.wav", dir, i);
        TEST_CHECK(write_text_file(tpath, turns[i].text) == 0, "write %s", tpath);
        snprintf(cmd, sizeof cmd, "%s say " COMMON " -m %s %s --file %s -o %s", QTTS_BINARY, model_path,
                 turns[i].voice_args, tpath, tout);
        TEST_CHECK(run(cmd) == 0, "%s: turn %zu failed: %s", what, i, cmd);
        if (i) TEST_CHECK(append_zeros(&want, &n_want, (size_t)pause_ms * 24) == 0, "out of memory");
        TEST_CHECK(append_wav(tout, &want, &n_want) == 0, "%s: turn %zu: no audio in %s", what, i, tout);
    }
    size_t n_got = 0;
    float *got = read_wav(out, &n_got);
    TEST_CHECK(got && n_got == n_want, "%s: %zu samples, want %zu (the turns plus %zu pauses of %d ms)", what, n_got,
               n_want, n_turns - 1, pause_ms);
    if (got && n_got == n_want) TEST_NEAR(got, want, n_got, 0.0, what);
    free(got);
    free(want);
}

/* A command that must fail with msg_part in its error output. */
static void check_fails(const char *dir, const char *model, const char *script, const char *args,
                        const char *msg_part) {
    char path[600], cmd[4096], model_path[1024], log[600];
    golden_path(model_path, sizeof model_path, model);
    snprintf(path, sizeof path, "%s/bad.txt", dir);
    snprintf(log, sizeof log, "%s/bad.log", dir);
    TEST_CHECK(write_text_file(path, script) == 0, "write %s", path);
    snprintf(cmd, sizeof cmd, "%s say " COMMON " -m %s --script %s %s -o %s/bad.wav 2> %s", QTTS_BINARY,
             model_path, path, args, dir, log);
    int rc = run(cmd);
    TEST_CHECK(rc != 0, "accepted: %s", cmd);
    unsigned char *text = NULL;
    size_t n = 0;
    if (read_bytes(log, &text, &n) == 0) {
        char *t = realloc(text, n + 1);
        if (t) {
            t[n] = 0;
            TEST_CHECK(strstr(t, msg_part) != NULL, "error '%s' lacks '%s'", t, msg_part);
            text = (unsigned char *)t;
        }
    }
    free(text);
}

int main(void) {
    char dir[] = "/tmp/qtts_script_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    /* two speakers, both tag forms, a turn's instruction, English and Chinese */
    check_script(dir, CV,
                 "# dialogue\n[Ryan] She said she would be here by noon.\nVivian: 今天天气真不错，我们一起去吃火锅吧！\n"
                 "[Ryan] (Speak in a cheerful, excited tone.) I can't believe we actually won the game!\n",
                 "", 250,
                 (turn[]){{"--speaker Ryan", "She said she would be here by noon."},
                          {"--speaker Vivian", "今天天气真不错，我们一起去吃火锅吧！"},
                          {"--speaker Ryan --instruct 'Speak in a cheerful, excited tone.'",
                           "I can't believe we actually won the game!"}},
                 3, "CustomVoice script");
    /* names cast to speakers, inline tags, no pause */
    check_script(dir, CV, "[Host] Good night. [Guest] Sweet dreams.\n", "--cast Host=aiden --cast guest=Eric", 0,
                 (turn[]){{"--speaker aiden", "Good night."}, {"--speaker Eric", "Sweet dreams."}}, 2,
                 "cast names, no pause");
    /* VoiceDesign: a description per name, plus a turn's instruction */
    check_script(dir, VD, "[Narrator] Good morning!\n[Kid] (whispering) How are you?\n",
                 "--cast 'Narrator=A calm, deep male voice.' --cast 'Kid=A bright young girl'", 500,
                 (turn[]){{"--instruct 'A calm, deep male voice.'", "Good morning!"},
                          {"--instruct 'A bright young girl. whispering'", "How are you?"}},
                 2, "VoiceDesign script");

    check_fails(dir, CV, "[Ryan] Hi.\n\n[Bob] Hello.\n", "", "line 3: unknown speaker 'Bob'");
    check_fails(dir, CV, "[Ryan] Hi.\n[Vivian] Hello.\n", "--cast Vivian=Nobody", "line 2: unknown speaker 'Vivian' (cast as 'Nobody')");
    check_fails(dir, VD, "[Ryan] Hi.\n", "", "line 1: speaker 'Ryan' needs a voice description");
    check_fails(dir, CV, "Hello.\n[Ryan] Hi.\n", "", "line 1: text before the first speaker tag");
    check_fails(dir, CV, "[Ryan] Hi.\n", "--speaker Ryan", "--script takes each turn's voice");
    check_fails(dir, CV, "[Ryan] Hi.\n", "--cast Ryan", "expected NAME=VOICE");
    rm_rf(dir);
    return test_finish("test_cli_script");
}
