/* The tokenizer's model files as loaded from a model folder (or unpacked
 * from a .gguf): merges.txt, tokenizer_config.json (added tokens) and
 * vocab.json, through qtts_tok_load_files. The loader reads paths, so each
 * input is written to a private temporary folder (made once per process).
 * Input: a flags byte, then merges.txt, NUL, tokenizer_config.json, NUL,
 * vocab.json. Flag bit 0: use the input's vocab.json instead of a built-in
 * byte-level one (256 byte tokens plus a few merged words); bit 1: give the
 * tokenizer_config.json (else none). Beyond "no crash": a tokenizer that
 * loads encodes valid UTF-8 into ids below its vocabulary size that decode
 * again, and with the built-in vocabulary and no added tokens
 * decode(encode(s)) is the NFC of s whatever merges were loaded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <utf8proc.h>

#include "text/tokenizer.h"
#include "text/utf8.h"

/* words of the built-in vocabulary after the 256 byte tokens ("Ġ" = space) */
static const char *const k_words[] = {"Ġt", "he", "Ġthe", "in", "Ġa", "er", "ll", "Ġw", "or", "ld", "Ġwor",
                                      "Ġworld", "He", "Hell", "Hello", "Ġ,", "ĠĠ", "ing", "Ġin"};

typedef struct {
    char dir[256];
    char vocab[300], merges[300], config[300];
    char *builtin; /* the built-in vocab.json text */
    size_t builtin_len;
} harness;

static harness *h_state; /* fuzz harness state, made once */

static void cleanup(void) {
    if (!h_state) return;
    unlink(h_state->vocab);
    unlink(h_state->merges);
    unlink(h_state->config);
    rmdir(h_state->dir);
}

static size_t put_json_string(char *o, const char *s, size_t n) {
    size_t w = 0;
    o[w++] = '"';
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\') o[w++] = '\\';
        o[w++] = s[i];
    }
    o[w++] = '"';
    return w;
}

static harness *state(void) {
    if (h_state) return h_state;
    harness *h = calloc(1, sizeof *h);
    size_t cap = 256 * 16 + sizeof k_words / sizeof k_words[0] * 32 + 16;
    char *v = malloc(cap);
    if (!h || !v) abort();
    const char *tmp = getenv("TMPDIR");
    snprintf(h->dir, sizeof h->dir, "%s/qtts-fuzz-tok-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(h->dir)) abort();
    snprintf(h->vocab, sizeof h->vocab, "%s/vocab.json", h->dir);
    snprintf(h->merges, sizeof h->merges, "%s/merges.txt", h->dir);
    snprintf(h->config, sizeof h->config, "%s/tokenizer_config.json", h->dir);
    size_t w = 0;
    v[w++] = '{';
    int id = 0;
    for (int b = 0; b < 256; b++, id++) {
        char u[4];
        int n = qtts_utf8_encode(qtts_byte_to_unicode((uint8_t)b), u);
        w += put_json_string(v + w, u, (size_t)n);
        w += (size_t)sprintf(v + w, ":%d,", id);
    }
    for (size_t k = 0; k < sizeof k_words / sizeof k_words[0]; k++, id++) {
        w += put_json_string(v + w, k_words[k], strlen(k_words[k]));
        w += (size_t)sprintf(v + w, ":%d%s", id, k + 1 < sizeof k_words / sizeof k_words[0] ? "," : "}");
    }
    h->builtin = v;
    h->builtin_len = w;
    h_state = h;
    atexit(cleanup);
    return h;
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if ((n && fwrite(data, 1, n, f) != n) || fclose(f)) abort();
}

static void check_text(const qtts_tokenizer *tok, const char *s, size_t n, int exact) {
    if (qtts_utf8_check(s, n) != n) return;
    qtts_err err = {0};
    int32_t *ids = NULL;
    int nids = 0;
    if (qtts_tok_encode(tok, s, n, &ids, &nids, &err)) {
        if (!strstr(err.msg, "too long")) abort(); /* valid UTF-8 must encode */
        return;
    }
    for (int i = 0; i < nids; i++)
        if (ids[i] < 0 || ids[i] >= qtts_tok_vocab_size(tok)) abort();
    char *back = NULL;
    size_t blen = 0;
    if (qtts_tok_decode(tok, ids, nids, &back, &blen, &err)) abort();
    if (exact) {
        utf8proc_uint8_t *nfc = NULL;
        utf8proc_ssize_t nl =
            utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
        if (nl >= 0 && ((size_t)nl != blen || memcmp(nfc, back, blen))) abort();
        free(nfc);
    }
    free(back);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    harness *h = state();
    int own_vocab = data[0] & 1, with_config = data[0] >> 1 & 1;
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    const char *sec[3] = {p, p, p};
    size_t len[3] = {0, 0, 0};
    for (int k = 0; k < 3; k++) {
        const char *z = k < 2 ? memchr(p, 0, (size_t)(end - p)) : NULL;
        sec[k] = p;
        len[k] = (size_t)((z ? z : end) - p);
        p = z ? z + 1 : end;
    }
    write_file(h->merges, sec[0], len[0]);
    if (with_config) write_file(h->config, sec[1], len[1]);
    if (own_vocab) write_file(h->vocab, sec[2], len[2]);
    else write_file(h->vocab, h->builtin, h->builtin_len);
    qtts_err err = {0};
    qtts_tokenizer *tok = qtts_tok_load_files(h->vocab, h->merges, with_config ? h->config : NULL, &err);
    if (!tok) {
        if (!err.msg[0]) abort();
        return 0;
    }
    int exact = !own_vocab && !with_config;
    static const char sample[] = "Hello world, the  ring in the world. \xc3\xa9t\xc3\xa9 <|im_start|>x\n";
    check_text(tok, sample, sizeof sample - 1, exact);
    check_text(tok, sec[0], len[0] < 512 ? len[0] : 512, exact);
    qtts_tok_free(tok);
    return 0;
}
