#include "bench/random_checkpoint.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "io/model_pack.h"
#include "io/store.h"
#include "model/codec_random.h"
#include "model/model_random.h"
#include "text/utf8.h"

/* ---- the tokenizer files ---- */

enum {
    FIRST_WORD_ID = 1000, /* word tokens and the pieces merging into them: rows the random embedding fills */
    LAST_WORD_ID = 4095,
    ID_USER = 872,          /* "user", as in the published vocabulary */
    ID_ENDOFTEXT = 151643,  /* <|endoftext|> */
};

typedef struct {
    cJSON *vocab;
    char *merges;
    size_t len, cap;
    int32_t next_id;
    int bad;
} tok_builder;

static void merges_add(tok_builder *t, const char *a, const char *b) {
    size_t need = t->len + strlen(a) + strlen(b) + 3;
    if (need > t->cap) {
        size_t cap = need * 2;
        char *p = realloc(t->merges, cap);
        if (!p) {
            t->bad = 1;
            return;
        }
        t->merges = p, t->cap = cap;
    }
    t->len += (size_t)snprintf(t->merges + t->len, t->cap - t->len, "%s %s\n", a, b);
}

static void vocab_add(tok_builder *t, const char *token, int32_t id) {
    if (!cJSON_AddNumberToObject(t->vocab, token, id)) t->bad = 1;
}

/* The byte-level token of byte b (GPT-2's byte-to-unicode map, as UTF-8). */
static void byte_token(uint8_t b, char out[5]) { out[qtts_utf8_encode(qtts_byte_to_unicode(b), out)] = 0; }

/* The 256 byte tokens at the published ids: the printable bytes first in
 * byte order, then the others (so "\n" is 198). */
static void add_bytes(tok_builder *t) {
    int32_t id = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int b = 0; b < 256; b++) {
            int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
            if (printable != (pass == 0)) continue;
            char tok[5];
            byte_token((uint8_t)b, tok);
            vocab_add(t, tok, id++);
        }
}

/* One token for the bytes of word (len bytes), merged left to right; the
 * whole word gets id (< 0: the next free one). */
static void add_word(tok_builder *t, const char *word, size_t len, int32_t id) {
    if (len < 2) return;
    char cur[512], unit[5];
    byte_token((uint8_t)word[0], cur);
    for (size_t k = 1; k < len && !t->bad; k++) {
        byte_token((uint8_t)word[k], unit);
        char next[sizeof cur];
        if (snprintf(next, sizeof next, "%s%s", cur, unit) >= (int)sizeof next) return;
        if (!cJSON_GetObjectItemCaseSensitive(t->vocab, next)) {
            int32_t nid = k + 1 == len && id >= 0 ? id : t->next_id++;
            if (nid > LAST_WORD_ID && !(k + 1 == len && id >= 0)) return; /* out of filled rows: bytes from here */
            merges_add(t, cur, unit);
            vocab_add(t, next, nid);
        }
        memcpy(cur, next, sizeof cur);
    }
}

static cJSON *tokenizer_config(void) {
    static const struct {
        int32_t id;
        const char *text;
    } added[] = {{ID_ENDOFTEXT, "<|endoftext|>"}, {ID_ENDOFTEXT + 1, "<|im_start|>"}, {ID_ENDOFTEXT + 2, "<|im_end|>"}};
    cJSON *root = cJSON_CreateObject(), *dec = cJSON_AddObjectToObject(root, "added_tokens_decoder");
    for (size_t i = 0; dec && i < sizeof added / sizeof added[0]; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", (int)added[i].id);
        cJSON *a = cJSON_AddObjectToObject(dec, key);
        if (!a || !cJSON_AddStringToObject(a, "content", added[i].text) || !cJSON_AddTrueToObject(a, "special")) {
            dec = NULL;
            break;
        }
    }
    if (!dec) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

/* vocab.json and merges.txt (malloc'd) for the words. */
static int tokenizer_files(const qtts_model_config *mc, const char *words, char **vocab, char **merges,
                           qtts_err *err) {
    tok_builder t = {.vocab = cJSON_CreateObject(), .next_id = FIRST_WORD_ID};
    merges_add(&t, "#version:", "0.2");
    if (t.vocab) add_bytes(&t);
    add_word(&t, "assistant", 9, (int32_t)mc->assistant);
    add_word(&t, "user", 4, ID_USER);
    /* each word with the leading space the pre-tokenizer keeps on every word but the first, then without:
       merges apply lowest rank first, and a space-led chain can only start at a piece's first byte, so
       the bare words' merges, ranked after, cannot cut it */
    for (int bare = 0; bare < 2; bare++)
        for (const char *p = words ? words : ""; *p && !t.bad;) {
            size_t n = strcspn(p, " ");
            char w[256];
            if (n > 0 && n + 1 < sizeof w) {
                snprintf(w, sizeof w, " %.*s", (int)n, p);
                add_word(&t, w + bare, n + !bare, -1);
            }
            p += n;
            p += strspn(p, " ");
        }
    *vocab = t.bad || !t.vocab ? NULL : cJSON_PrintUnformatted(t.vocab);
    cJSON_Delete(t.vocab);
    if (!*vocab) {
        free(t.merges);
        return qtts_fail(err, "out of memory");
    }
    *merges = t.merges;
    return 0;
}

/* ---- the checkpoint ---- */

/* The tensors of both stores in one (the codec's under the packed prefix); borrowed. */
static qtts_store *joined(const qtts_store *model, const qtts_store *codec, qtts_err *err) {
    qtts_store *out = qtts_store_new(err);
    for (int i = 0; out && i < qtts_store_count(model); i++) {
        const qtts_tensor *t = qtts_store_at(model, i);
        if (qtts_store_add(out, t->name, t->type, t->ndim, t->shape, t->data, 0, err)) goto fail;
    }
    for (int i = 0; out && i < qtts_store_count(codec); i++) {
        const qtts_tensor *t = qtts_store_at(codec, i);
        char name[512];
        snprintf(name, sizeof name, "%s%s", QTTS_PACK_CODEC_PREFIX, t->name);
        if (qtts_store_add(out, name, t->type, t->ndim, t->shape, t->data, 0, err)) goto fail;
    }
    return out;
fail:
    qtts_store_free(out);
    return NULL;
}

static char *json_text(cJSON *o) {
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

int qtts_random_checkpoint_write(const char *path, const qtts_random_checkpoint *c, qtts_err *err) {
    if (c->variant == QTTS_VARIANT_BASE)
        return qtts_fail(err, "random weights: no Base model (it needs speaker and codec encoders, not generated); "
                              "use custom_voice or voice_design");
    qtts_model_config mc;
    qtts_codec_config cc;
    qtts_codec_config_real(&cc);
    if (qtts_model_random_config(&mc, c->size, c->variant, err)) return -1;
    qtts_store *model = qtts_model_random_store(&mc, c->wtype, c->seed, err);
    qtts_store *codec = model ? qtts_codec_random_store(&cc, c->seed, err) : NULL;
    qtts_store *all = codec ? joined(model, codec, err) : NULL;
    char *config = json_text(qtts_model_config_to_json(&mc)), *codec_config = json_text(qtts_codec_config_to_json(&cc));
    char *tok_config = json_text(tokenizer_config()), *vocab = NULL, *merges = NULL;
    int rc = -1;
    if (all && (!config || !codec_config || !tok_config)) qtts_fail(err, "out of memory");
    else if (all && !tokenizer_files(&mc, c->words, &vocab, &merges, err)) {
        const char *wt = qtts_dtype_name(c->wtype);
        const qtts_gguf_kv kv[] = {
            qtts_gguf_kv_str("general.architecture", "qwen3_tts", 9),
            qtts_gguf_kv_str("qtts.weight_type", wt, strlen(wt)),
            qtts_gguf_kv_str(QTTS_GGUF_KEY_CONFIG_JSON, config, strlen(config)),
            qtts_gguf_kv_str(QTTS_GGUF_KEY_CODEC_CONFIG_JSON, codec_config, strlen(codec_config)),
            qtts_gguf_kv_str(QTTS_GGUF_KEY_VOCAB_JSON, vocab, strlen(vocab)),
            qtts_gguf_kv_str(QTTS_GGUF_KEY_MERGES_TXT, merges, strlen(merges)),
            qtts_gguf_kv_str(QTTS_GGUF_KEY_TOKENIZER_CONFIG_JSON, tok_config, strlen(tok_config)),
        };
        rc = qtts_gguf_write(path, all, kv, (int)(sizeof kv / sizeof kv[0]), err);
    }
    free(config);
    free(codec_config);
    free(tok_config);
    free(vocab);
    free(merges);
    qtts_store_free(all);
    qtts_store_free(codec);
    qtts_store_free(model);
    return rc;
}
