/* The web page at / (src/server/web/index.html, compiled into the binary).
 * First the route over plain HTTP: headers (type, CSP, nosniff, no-cache),
 * the bytes equal to the source file (so a stale embedding fails), HEAD, and
 * no API key needed for it. Then the page itself in real headless Chromium:
 * tests/test_web_page.cjs (puppeteer-core) against three `qtts serve`
 * children: the tiny CustomVoice model behind --api-key, the tiny Base model
 * for voice registration and the tiny VoiceDesign model. Without node, puppeteer-core or Chromium the browser
 * part is SKIPPED with a banner on stdout and stderr (scripts/deps.sh installs
 * them); QTTS_REQUIRE_CLIENTS=1 turns that skip into a failure. */
#include <ftw.h>
#include <sys/stat.h>

#include "harness.h"
#include "support/npy.h"
#include "test_server_http.h"

#define BASE_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny"
#define CUSTOM_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define DESIGN_MODEL QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-VoiceDesign-tiny"
#define PAGE_SOURCE QTTS_SOURCE_DIR "/src/server/web/index.html"
#define API_KEY "web-key-123"

/* Runs a shell command; its first output line goes to out (may be empty). Returns the exit status. */
static int run_capture(const char *cmd, char *out, size_t size) {
    FILE *p = popen(cmd, "r");
    out[0] = 0;
    if (!p) return -1;
    if (!fgets(out, (int)size, p)) out[0] = 0;
    char sink[512];
    while (fgets(sink, sizeof sink, p)) {
    }
    out[strcspn(out, "\n")] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* GET (or HEAD) of the page, checked against the source file. */
static void check_page(int port, const char *method, const char *path, const char *extra, const unsigned char *want,
                       size_t want_n) {
    th_resp r;
    th_request(port, method, path, extra, NULL, 0, &r, 30);
    const char *what = path;
    TEST_CHECK(r.status == 200, "%s %s: status %d", method, what, r.status);
    const char *ct = th_header(&r, "Content-Type");
    TEST_CHECK(ct && !strcmp(ct, "text/html; charset=utf-8"), "%s %s: Content-Type %s", method, what, ct ? ct : "-");
    const char *cc = th_header(&r, "Cache-Control");
    TEST_CHECK(cc && strstr(cc, "no-cache"), "%s %s: Cache-Control %s", method, what, cc ? cc : "-");
    const char *nos = th_header(&r, "X-Content-Type-Options");
    TEST_CHECK(nos && !strcmp(nos, "nosniff"), "%s %s: X-Content-Type-Options %s", method, what, nos ? nos : "-");
    const char *csp = th_header(&r, "Content-Security-Policy");
    TEST_CHECK(csp && strstr(csp, "default-src 'self'") && strstr(csp, "connect-src 'self'") &&
                   strstr(csp, "media-src 'self' blob:") && strstr(csp, "script-src 'self' 'unsafe-inline'") &&
                   strstr(csp, "style-src 'self' 'unsafe-inline'"),
               "%s %s: Content-Security-Policy %s", method, what, csp ? csp : "-");
    const char *cl = th_header(&r, "Content-Length");
    TEST_CHECK(cl && strtoull(cl, NULL, 10) == want_n, "%s %s: Content-Length %s, the page has %zu bytes", method, what,
               cl ? cl : "-", want_n);
    if (!strcmp(method, "HEAD")) {
        TEST_CHECK(r.body_len == 0, "HEAD %s: no body (%zu bytes)", what, r.body_len);
    } else {
        TEST_CHECK(r.body_len == want_n && !memcmp(r.body, want, want_n),
                   "GET %s: the body (%zu bytes) is the source file %s (%zu bytes)", what, r.body_len, PAGE_SOURCE,
                   want_n);
    }
    th_resp_free(&r);
}

static int write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* The golden reference recording (1.5 s at 24 kHz) as a WAV file to upload. */
static int write_reference_wav(const char *path) {
    npy_array a;
    if (npy_load_fixture("input_wave_1p5s", &a)) return -1;
    size_t n = 0;
    unsigned char *w = th_make_wav(a.f, (size_t)a.numel, 24000, &n);
    npy_free(&a);
    int rc = w ? write_file(path, w, n) : -1;
    free(w);
    return rc;
}

static const char *find_chromium(void) {
    const char *env = getenv("QTTS_CHROMIUM");
    if (env && *env) return access(env, X_OK) == 0 ? env : NULL;
    static const char *const paths[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (access(paths[i], X_OK) == 0) return paths[i];
    return NULL;
}

/* A skip must not pass unnoticed: a banner on both streams. */
static int skip_browser(const char *why) {
    const char *strict = getenv("QTTS_REQUIRE_CLIENTS");
    if (strict && *strict && strcmp(strict, "0")) {
        TEST_CHECK(0, "browser checks cannot run (QTTS_REQUIRE_CLIENTS is set): %s", why);
        return -1;
    }
    const char *banner = "********************************************************************************";
    printf("%s\nSKIP test_web_page: THE WEB PAGE WAS NOT TESTED IN A BROWSER: %s\n"
           "     (scripts/deps.sh installs chromium, node and puppeteer-core)\n%s\n",
           banner, why, banner);
    fprintf(stderr, "SKIP test_web_page: the web page was not tested in a browser: %s\n", why);
    fflush(stdout);
    return 0;
}

/* Runs the browser script; returns 0 when it passed. */
static int run_browser(const char *node_path, const char *chromium, int custom_port, int base_port, int design_port,
                       const char *wav, const char *out_dir) {
    char cmd[4096], line[2048];
    snprintf(cmd, sizeof cmd,
             "NODE_PATH='%s' node '%s/tests/test_web_page.cjs' --custom http://127.0.0.1:%d --key '%s' "
             "--base http://127.0.0.1:%d --design http://127.0.0.1:%d --wav '%s' --out '%s' --chromium '%s' 2>&1",
             node_path, QTTS_SOURCE_DIR, custom_port, API_KEY, base_port, design_port, wav, out_dir, chromium);
    double t0 = th_now();
    FILE *p = popen(cmd, "r");
    int oks = 0, fails = 0;
    while (p && fgets(line, sizeof line, p)) {
        fputs(line, stdout);
        fflush(stdout);
        if (!strncmp(line, "ok", 2)) oks++;
        else if (line[0] != '#') fails++; /* FAIL lines and anything unexpected (a stack trace) */
    }
    int st = p ? pclose(p) : -1;
    int code = p && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    TEST_CHECK(code == 0 && fails == 0 && oks >= 40, "browser checks: %d ok, %d failed or unexpected lines, exit %d",
               oks, fails, code);
    printf("browser checks: %d ok, %d failed, %.1f s\n", oks, fails, th_now() - t0);
    return code == 0 && fails == 0 ? 0 : -1;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    if (stat(BASE_MODEL "/config.json", &st) || stat(CUSTOM_MODEL "/config.json", &st) ||
        stat(DESIGN_MODEL "/config.json", &st)) {
        TEST_CHECK(0, "tiny Base, CustomVoice and VoiceDesign models missing under %s", QTTS_GOLDEN_DIR);
        return test_finish("test_web_page");
    }
    size_t page_n = 0;
    unsigned char *page = th_read_file(PAGE_SOURCE, &page_n);
    TEST_CHECK(page && page_n > 1000, "page source %s readable (%zu bytes)", PAGE_SOURCE, page_n);
    if (!page) return test_finish("test_web_page");

    char tmp[] = "/tmp/qtts_webXXXXXX";
    if (!mkdtemp(tmp)) {
        TEST_CHECK(0, "mkdtemp");
        return test_finish("test_web_page");
    }
    char vdir[256], wav[256];
    snprintf(vdir, sizeof vdir, "%s/voices", tmp);
    snprintf(wav, sizeof wav, "%s/reference.wav", tmp);
    TEST_CHECK(mkdir(vdir, 0700) == 0, "mkdir %s", vdir);
    TEST_CHECK(write_reference_wav(wav) == 0, "reference WAV written to %s", wav);

    th_server custom, base, design;
    /* --max-input-chars 100: the page's character counter reads the server's limit */
    const char *cargs[] = {"-m", CUSTOM_MODEL, "--threads", "2", "--api-key", API_KEY, "--max-input-chars", "100", NULL};
    const char *bargs[] = {"-m", BASE_MODEL, "--threads", "2", "--voices-dir", vdir, NULL};
    const char *dargs[] = {"-m", DESIGN_MODEL, "--threads", "2", NULL};
    int custom_up = th_start(&custom, cargs, 120) == 0;
    int base_up = th_start(&base, bargs, 120) == 0;
    int design_up = th_start(&design, dargs, 120) == 0;
    int up = custom_up && base_up && design_up, ran_browser = 0;
    TEST_CHECK(up, "the servers start (CustomVoice %d, Base %d, VoiceDesign %d)", custom_up, base_up, design_up);
    if (up) {
        /* ---- the route ---- */
        check_page(base.port, "GET", "/", NULL, page, page_n);
        check_page(base.port, "GET", "/index.html", NULL, page, page_n);
        check_page(base.port, "HEAD", "/", NULL, page, page_n);
        check_page(custom.port, "GET", "/", NULL, page, page_n); /* no key needed for the page */
        th_resp r;
        th_get(custom.port, "/v1/models", NULL, &r);
        TEST_CHECK(r.status == 401, "the API itself still needs the key: %d", r.status);
        th_resp_free(&r);

        /* ---- the page in Chromium ---- */
        char line[1024], root[1024], cmd[2048];
        const char *chromium = find_chromium();
        if (run_capture("node --version 2>/dev/null", line, sizeof line) != 0) {
            skip_browser("node is not installed");
        } else if (!chromium) {
            skip_browser(getenv("QTTS_CHROMIUM") && *getenv("QTTS_CHROMIUM")
                             ? "$QTTS_CHROMIUM is not an executable file"
                             : "no Chromium at /usr/bin/chromium (set $QTTS_CHROMIUM to another one)");
        } else {
            if (run_capture("npm root -g 2>/dev/null", root, sizeof root) != 0) root[0] = 0;
            snprintf(cmd, sizeof cmd, "NODE_PATH='%s' node -e \"require.resolve('puppeteer-core')\" 2>/dev/null", root);
            if (run_capture(cmd, line, sizeof line) != 0) skip_browser("the puppeteer-core npm package is missing");
            else {
                run_browser(root, chromium, custom.port, base.port, design.port, wav, tmp);
                ran_browser = 1;
            }
        }
    }
    if (custom_up) TEST_CHECK(th_stop(&custom, 30) == 0, "CustomVoice server: SIGTERM exit status 0");
    else th_stop(&custom, 5);
    if (base_up) TEST_CHECK(th_stop(&base, 30) == 0, "Base server: SIGTERM exit status 0");
    else th_stop(&base, 5);
    if (design_up) TEST_CHECK(th_stop(&design, 30) == 0, "VoiceDesign server: SIGTERM exit status 0");
    else th_stop(&design, 5);
    free(page);
    const char *keep = getenv("QTTS_KEEP_TMP");
    if (g_test_counts.failed || (keep && *keep)) {
        printf("test files (screenshots, server voices) kept in %s\n", tmp);
    } else {
        if (ran_browser) printf("screenshots were in %s (removed; QTTS_KEEP_TMP=1 keeps them)\n", tmp);
        nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    return test_finish("test_web_page");
}
