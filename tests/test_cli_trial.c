/* The command-line rows of the newcomer trial
 * (shared/review/newcomer-trial-3028c03.md), each checked through the qtts
 * binary: exit status, message, and what is left on disk. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "support/test_util.h"

#define BASE QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define CV QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define VD QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"

static char g_out[16384];

/* Runs `qtts ARGS` (a shell fragment); returns the exit status, output in g_out. */
static int qtts(const char *args) {
    char cmd[7 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", QTTS_BINARY, args);
    return test_run_capture(cmd, g_out, sizeof g_out);
}

static int exists(const char *path) {
    struct stat s;
    return stat(path, &s) == 0;
}

int main(void) {
    char tmpl[] = "/tmp/qtts_cli_trial_XXXXXX", a[6 * PATH_MAX], f[PATH_MAX], o[PATH_MAX];
    char *tmp = mkdtemp(tmpl);
    if (!tmp) return 1;
    int rc;
    /* 23: qtts help say */
    rc = qtts("help say");
    TEST_CHECK(rc == 0 && strstr(g_out, "usage: qtts say"), "qtts help say: %d %.80s", rc, g_out);
    /* 10, 21: usage errors exit 2, non-model files get a clear line */
    rc = qtts("info --bogus");
    TEST_CHECK(rc == 2, "info --bogus: %d", rc);
    rc = qtts("info /etc/passwd");
    TEST_CHECK(rc == 1 && strstr(g_out, "not a model folder"), "info /etc/passwd: %d %s", rc, g_out);
    snprintf(o, sizeof o, "%s/x.wav", tmp);
    snprintf(a, sizeof a, "say -m '%s' --speaker ryan --format aiff -o '%s' hi", CV, o);
    TEST_CHECK(qtts(a) == 2, "--format aiff (no such format) is a usage error: %s", g_out);
    snprintf(a, sizeof a, "say -m '%s' --speaker ryan --quant bogus -o '%s' hi", CV, o);
    TEST_CHECK(qtts(a) == 2, "--quant bogus is a usage error: %s", g_out);
    /* 11: f32 applies to wav/pcm/flac only */
    snprintf(a, sizeof a, "say -m '%s' --speaker ryan --sample-format f32 -o '%s/x.mp3' hi", CV, tmp);
    TEST_CHECK(qtts(a) == 2 && strstr(g_out, "f32"), "mp3 + f32: %s", g_out);
    snprintf(a, sizeof a, "say -m '%s' --speaker ryan --sample-format f32 -o '%s/x.m4a' hi", CV, tmp);
    TEST_CHECK(qtts(a) == 2 && strstr(g_out, "f32"), "m4a + f32: %s", g_out);
    /* 5: in-context cloning needs codes and transcript together */
    snprintf(a, sizeof a, "say -m '%s' --ref-spk x.spk --ref-text hello -o '%s' hi", BASE, o);
    TEST_CHECK(qtts(a) == 2 && strstr(g_out, "--ref-rvq"), "--ref-text without --ref-rvq: %s", g_out);
    snprintf(a, sizeof a, "say -m '%s' --ref-spk x.spk --ref-rvq x.rvq -o '%s' hi", BASE, o);
    TEST_CHECK(qtts(a) == 2 && strstr(g_out, "--ref-text"), "--ref-rvq without --ref-text: %s", g_out);
    /* 6: invalid UTF-8 is found before synthesis, at the user's offset, and leaves no file */
    snprintf(f, sizeof f, "%s/bad.txt", tmp);
    write_text_file(f, "\xe9 is not UTF-8. Then a long second sentence follows here.");
    snprintf(a, sizeof a, "say -m '%s' --speaker ryan --file '%s' -o '%s'", CV, f, o);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "offset 0") && !exists(o), "bad UTF-8: %d %s (file left: %d)", rc, g_out,
               exists(o));
    /* 20: temperature 0 means greedy, as in the API; 27: a warning at the frame limit */
    snprintf(a, sizeof a, "say -m '%s' --speaker ryan --temperature 0 --top-k 0 --max-frames 2 -o '%s' 'Hello there.'",
             CV, o);
    rc = qtts(a);
    TEST_CHECK(rc == 0 && exists(o) && strstr(g_out, "frame limit"), "temperature 0 + frame-limit warning: %d %s",
               rc, g_out);
    remove(o);
    /* the sampling ranges of the API and Wyoming, and region tags as language names */
    snprintf(a, sizeof a, "say -m '%s' --speaker ryan --temperature 50 hi -o '%s'", CV, o);
    rc = qtts(a);
    TEST_CHECK(rc == 2 && strstr(g_out, "[0, 10]"), "--temperature 50 is refused as in the API: %d %s", rc, g_out);
    snprintf(a, sizeof a, "say -m '%s' --speaker ryan --top-k 1000000 hi -o '%s'", CV, o);
    rc = qtts(a);
    TEST_CHECK(rc == 2 && strstr(g_out, "[0, 100000]"), "--top-k 1000000 is refused as in the API: %d %s", rc, g_out);
    snprintf(a, sizeof a, "say -q -m '%s' --speaker ryan --lang en-US --max-frames 2 hi -o '%s'", CV, o);
    rc = qtts(a);
    TEST_CHECK(rc == 0 && exists(o), "--lang en-US names English: %d %s", rc, g_out);
    remove(o);
    /* many utterances at the frame limit: three warnings and one summary, also with -q (it drops the progress line) */
    snprintf(f, sizeof f, "%s/lines.txt", tmp);
    FILE *lf = fopen(f, "w");
    if (lf) fputs("One.\nTwo.\nThree.\nFour.\nFive.\n", lf), fclose(lf);
    snprintf(a, sizeof a, "say -q -m '%s' --speaker ryan --seed 1 --max-frames 2 --stream-by-line --file '%s' -o '%s'", CV,
             f, o);
    rc = qtts(a);
    int listed = 0;
    for (const char *p = g_out; (p = strstr(p, "stopped at the frame limit (2 frames), not at")); p++) listed++;
    TEST_CHECK(rc == 0 && listed == 3 && strstr(g_out, "5 of 5 utterances stopped at the frame limit"),
               "-q keeps 3 frame-limit warnings and a summary: %d, %d listed: %s", rc, listed, g_out);
    remove(o);
    /* the mode's needs in the CLI's flags (usage errors, before any audio), and no download hint for a name
       that cannot be downloaded */
    static const struct {
        const char *args, *want;
    } modes[] = {
        {"-m '" VD "' Hello", "needs --instruct TEXT"},
        {"-m '" BASE "' --speaker ryan hi", "--speaker names a CustomVoice model's built-in speaker"},
        {"-m '" BASE "' hi", "give --ref-audio FILE, --ref-spk FILE or --voice NAME"},
    };
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        snprintf(a, sizeof a, "say %s -o '%s'", modes[i].args, o);
        rc = qtts(a);
        TEST_CHECK(rc == 2 && strstr(g_out, modes[i].want) && !exists(o), "say %s: %d %s", modes[i].args,
                   rc, g_out);
    }
    /* an unwritable -o and a missing reference file are found before the model loads (which prints the seed) */
    snprintf(a, sizeof a, "say -m '%s' --speaker ryan hi -o /nonexistent-dir/x.wav", CV);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "/nonexistent-dir/x.wav: cannot create: No such file") && !strstr(g_out, "seed"),
               "unwritable -o before the load: %d %s", rc, g_out);
    snprintf(a, sizeof a, "say -m '%s' --ref-audio /nonexistent.wav hi -o '%s'", BASE, o);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "/nonexistent.wav: cannot open: No such file") && !strstr(g_out, "seed") &&
                   !exists(o),
               "missing --ref-audio before the load: %d %s", rc, g_out);
    snprintf(a, sizeof a, "say -m no-such-model-name hi -o '%s'", o);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "not a model name") && !strstr(g_out, "run 'qtts download"),
               "an unknown model name gets no download hint: %d %s", rc, g_out);
    /* 3: a .gguf works for codec decode/encode, tokenize and info; 14: '-' is stdout */
    char gguf[PATH_MAX], wav[PATH_MAX], rvq[PATH_MAX];
    snprintf(gguf, sizeof gguf, "%s/base.gguf", tmp);
    snprintf(a, sizeof a, "quantize '%s' -o '%s' --type q8_0", BASE, gguf);
    TEST_CHECK(qtts(a) == 0 && strstr(g_out, "qtts quantize: wrote") && strstr(g_out, "tensors); matrices:"),
               "quantize prints a summary: %s", g_out);
    /* N23: a packed .gguf quantizes again (its speech tokenizer was added twice), and the result loads */
    char regguf[PATH_MAX];
    snprintf(regguf, sizeof regguf, "%s/re.gguf", tmp);
    snprintf(a, sizeof a, "quantize '%s' -o '%s' --type q4_k", gguf, regguf);
    rc = qtts(a);
    TEST_CHECK(rc == 0 && strstr(g_out, "qtts quantize: wrote"), "quantize of a .gguf: %d %s", rc, g_out);
    snprintf(a, sizeof a, "info '%s'", regguf);
    TEST_CHECK(qtts(a) == 0 && strstr(g_out, "variant         base"), "the re-quantized .gguf loads: %s", g_out);
    snprintf(a, sizeof a, "info '%s'", gguf);
    rc = qtts(a);
    TEST_CHECK(rc == 0 && strstr(g_out, "variant         base") && strstr(g_out, "languages       auto, chinese") &&
                   strstr(g_out, "speech tokenizer: (inside ") && !strstr(g_out, "qtts-model-"),
               "info .gguf (the speech tokenizer is inside the file, not in a temporary folder): %d %s", rc, g_out);
    snprintf(a, sizeof a, "tokenize -m '%s' Hello", gguf);
    TEST_CHECK(qtts(a) == 0 && strstr(g_out, "[9707]"), "tokenize .gguf: %s", g_out);
    snprintf(wav, sizeof wav, "%s/ref.wav", tmp);
    snprintf(a, sizeof a, "say -m '%s' --speaker ryan --max-frames 12 -q -o '%s' 'A reference sentence.'", CV, wav);
    TEST_CHECK(qtts(a) == 0, "reference wav: %s", g_out);
    snprintf(a, sizeof a, "say -m '%s' --ref-audio '%s' --instruct calm hi -o '%s/i.wav'", BASE, wav, tmp);
    rc = qtts(a);
    TEST_CHECK(rc == 2 && strstr(g_out, "--instruct is not supported when cloning"), "Base + --instruct: %d %s", rc,
               g_out);
    snprintf(rvq, sizeof rvq, "%s/ref.rvq", tmp);
    /* through a pipe: qtts()'s trailing 2>&1 then applies to cat, so the codes file gets stdout only */
    snprintf(a, sizeof a, "codec encode '%s' -o - --spk '%s/ref.spk' -m '%s' | cat > '%s'", wav, tmp, gguf, rvq);
    rc = qtts(a);
    struct stat st;
    TEST_CHECK(rc == 0 && stat(rvq, &st) == 0 && st.st_size > 0 && st.st_size % 22 == 0,
               "codec encode .gguf to stdout: %d %s", rc, g_out);
    snprintf(a, sizeof a, "codec decode '%s' -o '%s' -m '%s'", rvq, o, gguf);
    TEST_CHECK(qtts(a) == 0 && exists(o), "codec decode .gguf: %s", g_out);
    /* N7: codec encode takes 0.08 s or more of audio, as every other reference path (a 0.02 s clip was 1 frame) */
    char shortwav[PATH_MAX];
    snprintf(shortwav, sizeof shortwav, "%s/short.wav", tmp);
    FILE *sw = fopen(shortwav, "wb");
    if (sw) {
        static const unsigned char hdr[44] = {'R', 'I', 'F', 'F', (36 + 960) & 255, (36 + 960) >> 8, 0, 0, 'W', 'A', 'V',
                                              'E', 'f', 'm', 't', ' ', 16, 0, 0, 0, 1, 0, 1, 0, 0xC0, 0x5D, 0, 0, 0x80,
                                              0xBB, 0, 0, 2, 0, 16, 0, 'd', 'a', 't', 'a', 960 & 255, 960 >> 8, 0, 0};
        static const unsigned char silence[960] = {0};
        fwrite(hdr, 1, sizeof hdr, sw), fwrite(silence, 1, sizeof silence, sw), fclose(sw);
    }
    snprintf(a, sizeof a, "codec encode '%s' -o '%s/short.rvq' -m '%s'", shortwav, tmp, BASE);
    rc = qtts(a);
    TEST_CHECK(rc == 1 && strstr(g_out, "need at least 0.080 s"), "codec encode of 0.02 s: %d %s", rc, g_out);
    /* 22: a folder as reference audio says so */
    snprintf(a, sizeof a, "say -m '%s' --ref-audio '%s' --x-vector-only -o '%s' hi", BASE, tmp, o);
    TEST_CHECK(qtts(a) == 1 && strstr(g_out, "Is a directory"), "--ref-audio DIR: %s", g_out);
    /* 14: --ref-audio - reads standard input */
    snprintf(a, sizeof a, "say -m '%s' --ref-audio - --x-vector-only --max-frames 2 -q -o '%s' hi < '%s'", BASE, o,
             wav);
    TEST_CHECK(qtts(a) == 0, "--ref-audio -: %s", g_out);
    rm_rf(tmp);
    return test_finish("test_cli_trial");
}
