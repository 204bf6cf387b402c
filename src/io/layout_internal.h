/* What the layout readers (io/layout_*.c) share: the rule tables that map a
 * foreign tensor name onto an official one, the builder that applies them,
 * and the writers of the config and tokenizer files a foreign file lacks. */
#ifndef QTTS_IO_LAYOUT_INTERNAL_H
#define QTTS_IO_LAYOUT_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "io/gguf.h"
#include "io/layout.h"

/* One foreign name -> official name. Patterns: "{a}" and "{b}" in `from`
 * match decimal indices, a final "{s}" any rest; `to` uses {a}, {b}
 * (optionally {a*N+M}), {s} and, for stacked tensors, {k}: the index along
 * the first dimension. */
typedef struct {
    const char *from, *to;
    unsigned char dest;  /* LR_MODEL, LR_CODEC, LR_DROP (known and not needed) */
    unsigned char xform; /* XF_* */
} layout_rule;

enum { LR_MODEL, LR_CODEC, LR_DROP };

enum {
    XF_NONE,
    XF_ADD_DIM,      /* a squeezed [out, in] 1x1 convolution: [out, in, 1] */
    XF_CODEBOOK,     /* a pre-divided codebook: `to` gets the table as embedding_sum/embed_sum, and a unit
                        cluster_usage is added next to it (table / max(1, 1e-5) = table) */
    XF_STACK,        /* [n, ...] -> n tensors `to` with {k} = 0..n-1 (views) */
    XF_STACK_CODEBOOK, /* XF_STACK of pre-divided codebooks */
    XF_SNAKE_ALPHA,  /* stored exp(alpha): log back */
    XF_SNAKE_BETA,   /* stored 1/(exp(beta)+1e-9): back to beta */
    XF_TOKEN_EMBD,   /* llama.cpp: [text rows (projected) | codec rows] -> the two tables */
};

typedef struct {
    qtts_store *model, *codec;
    const char *label;
    int flags;               /* QTTS_LAYOUT_CONVERT */
    int converted[32];       /* storage-only tensors converted, by source type */
    int64_t text_rows;       /* XF_TOKEN_EMBD: rows of the text part */
} layout_build;

/* Maps every tensor of src through rules (first match wins) into b's stores.
 * A tensor no rule matches is an error naming it (a file of another layout). */
int layout_map(layout_build *b, const qtts_store *src, const layout_rule *rules, size_t n_rules, qtts_err *err);
/* Adds a tensor to a result store, converting a storage-only matrix when
 * b->flags has QTTS_LAYOUT_CONVERT. data is borrowed unless owned. */
int layout_emit(layout_build *b, qtts_store *dst, const char *name, qtts_dtype type, int ndim, const int64_t *shape,
                const void *data, int owned, qtts_err *err);

/* Config pieces derived from the official tensors: a Qwen3 stack's sizes
 * (prefix "talker.model." or "talker.code_predictor.model."). */
int layout_lm_sizes(const qtts_store *st, const char *prefix, cJSON *obj, qtts_err *err);
/* The speech tokenizer's config.json from its tensors; decoder values that
 * no tensor shape tells (heads, window, eps, theta) come from dec_extra
 * (keys of decoder_config), encoder ones from enc_extra. */
cJSON *layout_codec_config(const qtts_store *codec, const cJSON *dec_extra, const cJSON *enc_extra, qtts_err *err);
/* config.json's talker_config, code_predictor_config and speaker_encoder
 * sizes from the mapped model store; the caller adds ids and names. */
cJSON *layout_model_config(const qtts_store *model, qtts_err *err);

/* Writes obj as <dir>/<rel> (JSON). */
int layout_write_json(const char *dir, const char *rel, const cJSON *obj, qtts_err *err);
/* vocab.json, merges.txt, tokenizer_config.json from tokenizer.ggml.tokens /
 * .merges / .token_type of g, for the first n_text tokens (n_text <= 0: all). */
int layout_write_tokenizer(const char *dir, const qtts_gguf *g, int64_t n_text, qtts_err *err);

/* GGUF metadata helpers: a number or string if present. */
int layout_kv_num(const qtts_gguf *g, const char *key, double *out);
const char *layout_kv_str(const qtts_gguf *g, const char *key, char *buf, size_t n);
/* name -> id object from a string array and an integer array of the same length. */
cJSON *layout_kv_named_ids(const qtts_gguf *g, const char *names_key, const char *ids_key);

/* The layouts. detect: 1 when g is one of its files, -1 when g's metadata
 * claims the layout but its tensors are not the layout's (a mislabeled
 * file), 0 otherwise; open: fills m from the file(s) and frees g. */
typedef struct {
    const char *name;
    const char *expect;    /* for the unknown-layout message */
    const char *signature; /* a tensor every file of the layout has, for the mislabeled message */
    int (*detect)(const qtts_gguf *g);
    int (*open)(qtts_model_files *m, const char *path, qtts_gguf *g, int flags, qtts_err *err);
} layout_reader;

extern const layout_reader qtts_layout_qwentts, qtts_layout_crispasr, qtts_layout_llamacpp;
/* The Transformers-native folder (detected from its safetensors names). */
int layout_transformers_detect(const qtts_store *st);
int layout_transformers_open(qtts_model_files *m, const char *dir, qtts_store *st, int flags, qtts_err *err);

/* A layout of two GGUF files: a talker file and a speech-tokenizer file
 * (or, for llama.cpp, a talker file and an mmproj). */
typedef struct {
    int (*is_first)(const qtts_gguf *g);  /* the talker file */
    int (*is_second)(const qtts_gguf *g); /* its companion */
    const char *second_what;              /* "speech tokenizer (qwen-tokenizer-12hz-*.gguf)" */
    const layout_rule *first_rules, *second_rules;
    size_t n_first, n_second;
    /* before mapping (e.g. the text rows of a combined table) */
    int (*prepare)(layout_build *b, const qtts_gguf *first, const qtts_gguf *second, qtts_err *err);
    /* config.json, generation_config.json, speech_tokenizer/config.json and
     * the tokenizer files into m->dir, from the mapped stores and the metadata */
    int (*configs)(qtts_model_files *m, const layout_build *b, const qtts_gguf *first, const qtts_gguf *second,
                   qtts_err *err);
} layout_pair;

int layout_open_pair(qtts_model_files *m, const char *path, qtts_gguf *g, int flags, const layout_pair *lp,
                     qtts_err *err);

/* Helpers for the readers. */
int layout_make_tmp(qtts_model_files *m, qtts_err *err);
/* The companion of a two-file layout next to path: the first .gguf in its
 * folder for which want(g) holds (NULL with an error naming what was looked for). */
qtts_gguf *layout_find_companion(const char *path, int (*want)(const qtts_gguf *g), const char *what, char *found,
                                 size_t found_size, qtts_err *err);
int layout_arch_is(const qtts_gguf *g, const char *arch);
int layout_has_tensor(const qtts_gguf *g, const char *name);
/* Copies GGUF keys prefix+names[i] (numbers, bools, integer arrays) into obj under names[i]. */
void layout_copy_kv(const qtts_gguf *g, const char *prefix, const char *const *names, size_t n, cJSON *obj);
/* The generation defaults as a generation_config.json object from GGUF keys prefix+name (NULL if none). */
cJSON *layout_generation_config(const qtts_gguf *g, const char *prefix);

#endif
