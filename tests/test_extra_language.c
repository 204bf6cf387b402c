/* A fine-tune that adds a language through a new codec_language_id entry
 * (Arabic at 2072, as community fine-tunes do): a copy of the golden
 * CustomVoice checkpoint whose config.json has the extra id (written in a
 * temporary folder; the golden files are linked, never edited). The language
 * comes from the config alone: the engine lists it, a request naming it (any
 * case) runs, `qtts say --lang` and `qtts info` take it, and a language the
 * config does not have is refused with the valid list. That the request uses
 * the config's id: a second copy puts "arabic" at Russian's id (2069), and
 * Arabic then speaks exactly as Russian does (and unlike English). On the
 * tiny random model greedy codes can coincide between two languages, so the
 * 2072 copy's audio is not compared. The servers: `qtts serve` lists it in
 * /v1/models (its model entry's languages) and speaks a request naming it;
 * `qtts wyoming` lists it in its describe -> info languages. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "qtts.h"
#include "support/test_util.h"
#include "test_server_http.h"

static const char *const model_name = "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny";

static int make_copy(const char *dst, int arabic_id) {
    char src[1024], f[2048], l[2048];
    golden_path(src, sizeof src, model_name);
    if (mkdir(dst, 0700) != 0) return -1;
    static const char *const files[] = {"model.safetensors", "speech_tokenizer", "vocab.json", "merges.txt",
                                        "tokenizer_config.json", "generation_config.json"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(f, sizeof f, "%s/%s", src, files[i]);
        snprintf(l, sizeof l, "%s/%s", dst, files[i]);
        if (symlink(f, l) != 0) return -1;
    }
    unsigned char *text = NULL;
    size_t n = 0;
    snprintf(f, sizeof f, "%s/config.json", src);
    if (read_bytes(f, &text, &n)) return -1;
    cJSON *cfg = cJSON_ParseWithLength((const char *)text, n);
    free(text);
    cJSON *langs = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cfg, "talker_config"),
                                                    "codec_language_id");
    if (!langs) {
        cJSON_Delete(cfg);
        return -1;
    }
    cJSON_AddNumberToObject(langs, "arabic", arabic_id);
    char *out = cJSON_Print(cfg);
    cJSON_Delete(cfg);
    snprintf(l, sizeof l, "%s/config.json", dst);
    int rc = out ? write_text_file(l, out) : -1;
    free(out);
    return rc;
}

static qtts_status say(qtts_engine *e, const char *lang, pcm_buf *out, qtts_error *err) {
    qtts_request r;
    qtts_request_default(&r);
    r.text = "She said she would be here by noon.";
    r.speaker = "Ryan";
    r.language = lang;
    r.greedy = 1;
    r.max_frames = 7;
    return qtts_synthesize(e, &r, pcm_collect, out, NULL, err);
}

/* Wyoming: describe -> the raw reply (header line and data) up to 10 s, into buf (NUL-terminated). */
static size_t wyoming_describe(int port, char *buf, size_t cap) {
    int fd = th_connect(port);
    size_t n = 0;
    if (fd < 0) return 0;
    if (th_send_all(fd, "{\"type\":\"describe\"}\n", 21) == 0) {
        double t0 = th_now();
        while (n + 1 < cap && th_now() - t0 < 10 && !memmem(buf, n, "arabic", 6)) {
            struct pollfd p = {fd, POLLIN, 0};
            if (poll(&p, 1, 200) <= 0) continue;
            ssize_t k = read(fd, buf + n, cap - 1 - n);
            if (k <= 0) break;
            n += (size_t)k;
        }
    }
    close(fd);
    buf[n] = 0;
    return n;
}

static double max_diff(const pcm_buf *a, const pcm_buf *b) {
    if (a->n != b->n) return INFINITY;
    double m = 0;
    for (size_t i = 0; i < a->n; i++)
        if (fabs((double)a->d[i] - b->d[i]) > m) m = fabs((double)a->d[i] - b->d[i]);
    return m;
}

int main(void) {
    char tmp[] = "/tmp/qtts_extra_lang_XXXXXX", dir[600], cmd[2400], out[700];
    if (!mkdtemp(tmp)) return 1;
    snprintf(dir, sizeof dir, "%s/arabic-finetune", tmp);
    TEST_CHECK(make_copy(dir, 2072) == 0, "copy of %s with arabic at 2072", model_name);
    char alias[600];
    snprintf(alias, sizeof alias, "%s/arabic-at-russian", tmp);
    TEST_CHECK(make_copy(alias, 2069) == 0, "copy of %s with arabic at 2069", model_name);

    qtts_error err = {0};
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = dir;
    p.n_threads = 2;
    qtts_engine *e = qtts_engine_create(&p, &err);
    TEST_CHECK(e != NULL, "load: %s", err.message);
    if (e) {
        const qtts_model_info *info = qtts_engine_info(e);
        int listed = 0;
        for (int i = 0; info && i < info->n_languages; i++) listed |= !strcmp(info->languages[i], "arabic");
        TEST_CHECK(listed, "the engine does not list arabic");
        pcm_buf ar = {0}, ar2 = {0};
        TEST_CHECK(say(e, "Arabic", &ar, &err) == QTTS_OK, "Arabic: %s", err.message);
        TEST_CHECK(say(e, "arabic", &ar2, &err) == QTTS_OK, "arabic: %s", err.message);
        TEST_CHECK(ar.n > 0 && max_diff(&ar, &ar2) == 0, "Arabic and arabic differ");
        printf("  arabic (2072) runs: %zu samples\n", ar.n);
        free(ar.d), free(ar2.d);
        pcm_buf x = {0};
        qtts_status st = say(e, "klingon", &x, &err);
        TEST_CHECK(st == QTTS_ERR_INVALID && strstr(err.message, "arabic") && strstr(err.message, "klingon"),
                   "unknown language: status %d, '%s'", st, err.message);
        printf("  unknown language: %s\n", err.message);
        free(x.d);
        qtts_engine_free(e);
    }
    p.model_path = alias;
    e = qtts_engine_create(&p, &err);
    TEST_CHECK(e != NULL, "load: %s", err.message);
    if (e) {
        pcm_buf ar = {0}, ru = {0}, en = {0};
        TEST_CHECK(say(e, "arabic", &ar, &err) == QTTS_OK && say(e, "russian", &ru, &err) == QTTS_OK &&
                       say(e, "english", &en, &err) == QTTS_OK,
                   "%s", err.message);
        TEST_CHECK(ar.n > 0 && max_diff(&ar, &ru) == 0, "arabic at 2069 differs from russian (%g)", max_diff(&ar, &ru));
        TEST_CHECK(max_diff(&ar, &en) > 1e-3, "arabic at 2069 speaks as english does");
        printf("  arabic at 2069 == russian bit for bit (%zu samples); english differs\n", ar.n);
        free(ar.d), free(ru.d), free(en.d);
        qtts_engine_free(e);
    }

    /* the CLI: info lists it, say takes it */
    snprintf(out, sizeof out, "%s/info.txt", tmp);
    snprintf(cmd, sizeof cmd, "%s info %s > %s 2>&1", QTTS_BINARY, dir, out);
    int st = system(cmd);
    unsigned char *text = NULL;
    size_t n = 0;
    TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && read_bytes(out, &text, &n) == 0 && text &&
                   memmem(text, n, "arabic", 6),
               "%s", cmd);
    free(text);
    snprintf(out, sizeof out, "%s/ar.wav", tmp);
    snprintf(cmd, sizeof cmd, "%s say -m %s --speaker Ryan --lang Arabic --max-frames 4 -o %s \"Hello.\" 2>&1",
             QTTS_BINARY, dir, out);
    st = system(cmd);
    struct stat sb;
    TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && stat(out, &sb) == 0 && sb.st_size > 44, "%s", cmd);

    /* the servers list it and take it */
    th_server srv;
    const char *args[] = {"-m", dir, "--threads", "2", NULL};
    if (th_start(&srv, args, 120)) {
        TEST_CHECK(0, "serve starts: %s", srv.log);
    } else {
        th_resp r;
        memset(&r, 0, sizeof r);
        TEST_CHECK(th_get(srv.port, "/v1/models", NULL, &r) == 0 && r.status == 200 && r.body &&
                       memmem(r.body, r.body_len, "\"arabic\"", 8),
                   "/v1/models does not list arabic: %d %.*s", r.status, (int)r.body_len,
                   r.body ? (const char *)r.body : "");
        th_resp_free(&r);
        memset(&r, 0, sizeof r);
        TEST_CHECK(th_post_json(srv.port, "/v1/audio/speech", NULL,
                                "{\"input\":\"Hello.\",\"voice\":\"Ryan\",\"language\":\"Arabic\","
                                "\"max_new_tokens\":4,\"response_format\":\"wav\"}",
                                &r, 120) == 0 &&
                       r.status == 200 && r.body_len > 44,
                   "POST /v1/audio/speech in arabic: %d %.*s", r.status, (int)(r.body_len < 300 ? r.body_len : 300),
                   r.body ? (const char *)r.body : "");
        printf("  serve: /v1/models lists arabic; /v1/audio/speech in Arabic: %d, %zu bytes\n", r.status,
               r.body_len);
        th_resp_free(&r);
        th_stop(&srv, 30);
    }
    if (th_start_cmd(&srv, "wyoming", "tcp", args, 120, NULL, NULL)) {
        TEST_CHECK(0, "wyoming starts: %s", srv.log);
    } else {
        char info[65536];
        size_t n = wyoming_describe(srv.port, info, sizeof info);
        TEST_CHECK(n > 0 && strstr(info, "\"info\"") && strstr(info, "\"arabic\""),
                   "wyoming info does not list arabic: %.300s", info);
        printf("  wyoming: describe -> info lists arabic (%zu bytes)\n", n);
        th_stop(&srv, 30);
    }
    TEST_CHECK(rm_rf(tmp) == 0, "cleanup");
    return test_finish("test_extra_language");
}
