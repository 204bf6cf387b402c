/* Text tokenizer on arbitrary bytes: encode (ids in range, and decoding gives
 * back the NFC of the input), prompt templates, the vocab.json scanner and
 * decode of arbitrary ids. Never a crash; invalid input is a clean error.
 * The real tokenizer is loaded once from $QTTS_TOKENIZER_DIR or the golden
 * Base model folder. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/tokenizer.h"
#include "text/utf8.h"
#include "text/vocab.h"

#ifndef QTTS_GOLDEN_DIR
#define QTTS_GOLDEN_DIR "../shared/golden"
#endif

static const qtts_tokenizer *tokenizer(void) {
    static qtts_tokenizer *tok; /* fuzz harness state, loaded once */
    if (!tok) {
        const char *dir = getenv("QTTS_TOKENIZER_DIR");
        qtts_err err = {0};
        tok = qtts_tok_load(dir && *dir ? dir : QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-0.6B-Base-tiny", &err);
        if (!tok) {
            fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
            abort();
        }
    }
    return tok;
}

static void check_encode(const qtts_tokenizer *tok, const char *s, size_t n) {
    qtts_err err = {0};
    int32_t *ids = NULL;
    int nids = 0;
    int valid = qtts_utf8_check(s, n) == n;
    if (qtts_tok_encode(tok, s, n, &ids, &nids, &err)) {
        if (valid && !strstr(err.msg, "too long")) abort(); /* valid UTF-8 must encode */
        return;
    }
    if (!valid) abort();
    for (int i = 0; i < nids; i++)
        if (ids[i] < 0 || ids[i] >= qtts_tok_vocab_size(tok)) abort();
    char *back = NULL;
    size_t blen = 0;
    if (qtts_tok_decode(tok, ids, nids, &back, &blen, &err)) abort();
    utf8proc_uint8_t *nfc = NULL;
    utf8proc_ssize_t nl =
        utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &nfc, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    /* Added tokens are matched before NFC, so compare only when there are
     * none of their opening characters around. */
    if (nl >= 0 && !memchr(s, '<', n) && ((size_t)nl != blen || memcmp(nfc, back, blen))) abort();
    free(nfc);
    free(back);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const qtts_tokenizer *tok = tokenizer();
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    qtts_err err = {0};
    switch (data[0] & 3) {
    case 0:
        check_encode(tok, s, n);
        break;
    case 1: { /* templates on NUL-terminated text */
        char *text = malloc(n + 1);
        if (!text) return 0;
        memcpy(text, s, n);
        text[n] = 0;
        int32_t *ids = NULL;
        int nids = 0;
        if (qtts_tok_encode_template(tok, (qtts_template_kind)((data[0] >> 2) % 3), text, &ids, &nids, &err) == 0) {
            if (nids < 5 || ids[0] != qtts_tok_token_id(tok, "<|im_start|>")) abort();
            free(ids);
        }
        free(text);
        break;
    }
    case 2: { /* the vocab.json scanner */
        qtts_vocab v;
        if (qtts_vocab_init(&v, 16, &err) == 0) {
            if (qtts_vocab_parse_json(&v, "fuzz", s, n, &err) == 0) {
                for (int32_t id = 0; id < v.n_ids && id < 4096; id++) {
                    size_t l;
                    const char *t = qtts_vocab_str(&v, id, &l);
                    if (t && qtts_vocab_find(&v, t, l) < 0) abort();
                }
            }
            qtts_vocab_free(&v);
        }
        break;
    }
    default: { /* decode of arbitrary ids */
        int nids = (int)(n / 4);
        int32_t *ids = malloc(sizeof(int32_t) * (size_t)(nids + 1));
        if (!ids) return 0;
        memcpy(ids, s, (size_t)nids * 4);
        char *out = NULL;
        size_t olen;
        if (qtts_tok_decode(tok, ids, nids, &out, &olen, &err) == 0) free(out);
        free(ids);
        break;
    }
    }
    return 0;
}
