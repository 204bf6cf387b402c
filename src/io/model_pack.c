#include "io/model_pack.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/gguf.h"
#include "io/kernel_layout.h"
#include "io/layout.h"
#include "io/lora.h"
#include "tensor/interleave.h"
#include "tensor/interleave_calibrate.h"
#include "tensor/quant.h"
#include "io/file.h"

typedef struct {
    const char *key;
    const char *file; /* relative to the model folder */
    int required;
} text_file;

static const text_file text_files[] = {
    {QTTS_GGUF_KEY_CONFIG_JSON, "config.json", 1},
    {QTTS_GGUF_KEY_GENERATION_CONFIG_JSON, "generation_config.json", 0},
    {QTTS_GGUF_KEY_VOCAB_JSON, "vocab.json", 1},
    {QTTS_GGUF_KEY_MERGES_TXT, "merges.txt", 1},
    {QTTS_GGUF_KEY_TOKENIZER_CONFIG_JSON, "tokenizer_config.json", 0},
    {QTTS_GGUF_KEY_CODEC_CONFIG_JSON, "speech_tokenizer/config.json", 1},
};
enum { N_TEXT_FILES = sizeof text_files / sizeof text_files[0] };

int qtts_pack_is_quantizable(const char *name, int ndim) {
    size_t n = strlen(name);
    /* not the embedding tables: the loader reads their rows as stored whatever --quant says, so a .gguf
     * loads to exactly the engine the folder gives with the same --quant (bit-identical audio) */
    return ndim == 2 && !strncmp(name, "talker.", 7) && n > 7 && !strcmp(name + n - 7, ".weight") &&
           !strstr(name, "norm") && !strstr(name, "embedding");
}

/* Matrices the LM runs stacked (q|k|v, gate|up): written back to back, in
 * that order, so the loader stacks them as they lie in the file. */
static const char *const k_stacks[][3] = {
    {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"},
    {"mlp.gate_proj.weight", "mlp.up_proj.weight", NULL},
};

/* The name of the k-th member (k >= 1) of the stack whose leader is name, in next; 0 when there is none. */
static int stacked_next(const char *name, int k, char *next, size_t n) {
    size_t len = strlen(name);
    for (size_t s = 0; s < sizeof k_stacks / sizeof k_stacks[0]; s++) {
        size_t m = strlen(k_stacks[s][0]);
        if (len < m || strcmp(name + len - m, k_stacks[s][0])) continue;
        if (k >= 3 || !k_stacks[s][k]) return 0;
        return snprintf(next, n, "%.*s%s", (int)(len - m), name, k_stacks[s][k]) < (int)n;
    }
    return 0;
}

/* Whether name is a stack member after the first whose leader st holds (then written with it). */
static int stacked_follower(const qtts_store *st, const char *name) {
    size_t len = strlen(name);
    for (size_t s = 0; s < sizeof k_stacks / sizeof k_stacks[0]; s++)
        for (int k = 1; k < 3 && k_stacks[s][k]; k++) {
            size_t m = strlen(k_stacks[s][k]);
            if (len < m || strcmp(name + len - m, k_stacks[s][k])) continue;
            char leader[512];
            if (snprintf(leader, sizeof leader, "%.*s%s", (int)(len - m), name, k_stacks[s][0]) >= (int)sizeof leader)
                return 0;
            return qtts_store_find(st, leader) != NULL;
        }
    return 0;
}

/* The layout a load on this CPU runs Q8_0 and Q4_K matrices in, as the
 * engine decides it (QTTS_INTERLEAVE forces it, else the measurement of
 * tensor/interleave_calibrate.h on a pool of every CPU, an engine's default
 * thread count), so the file stores interleaved only what such a load runs
 * interleaved: a type measured faster in rows stays in rows, read in place. */
static void choose_layout(qtts_dtype type, qtts_weight_layout *l) {
    memset(l, 0, sizeof *l);
    const char *env = getenv("QTTS_INTERLEAVE");
    const int forced = env && (!strcmp(env, "0") || !strcmp(env, "1")) ? env[0] - '0' : -1;
    qtts_err ignored = {0};
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    qtts_pool *pool = forced < 0 ? qtts_pool_create(cpus > 0 && cpus < 1024 ? (int)cpus : 1, &ignored) : NULL;
    const qtts_dtype types[2] = {QTTS_Q8_0, QTTS_Q4_K}; /* a Q4_K pack holds Q8_0 rows where Q4_K does not fit */
    for (int i = 0; i < 2; i++) {
        if (types[i] != type && !(type == QTTS_Q4_K && types[i] == QTTS_Q8_0)) continue;
        qtts_interleave_choice *c = types[i] == QTTS_Q8_0 ? &l->q8_0 : &l->q4_k;
        if (forced >= 0) {
            c->interleave = forced;
            continue;
        }
        qtts_interleave_calibration cal;
        qtts_interleave_measure(pool, types[i], &cal); /* NULL pool (none could start): this thread */
        *c = qtts_interleave_calibration_choice(&cal);
    }
    qtts_pool_free(pool);
}

/* One model tensor into out: quantized to type where it is a quantizable
 * matrix, in the kernels' layout where x16 (NULL: none) interleaves its type
 * (io/kernel_layout.h), else as stored (sharing the mapping). */
static int pack_tensor(qtts_store *out, const qtts_tensor *t, qtts_dtype type, const qtts_weight_layout *x16_layout,
                       qtts_pack_stats *st, qtts_err *err) {
    const int quantizable = qtts_pack_is_quantizable(t->name, t->ndim);
    const qtts_dtype fitted = t->ndim == 2 ? qtts_dtype_fit(type, t->shape[1], t->type) : t->type;
    const int x16 = x16_layout && quantizable && t->ndim == 2 &&
                    qtts_weight_layout_for(x16_layout, fitted)->interleave &&
                    qtts_kernel_layout_stores(t->name, fitted, t->shape[0], t->shape[1]);
    if (!quantizable || (type == t->type && !x16)) {
        if (quantizable && t->type >= 0 && t->type < 32) st->matrices[t->type]++;
        return qtts_store_add(out, t->name, t->type, t->ndim, t->shape, t->data, 0, err);
    }
    qtts_mat m;
    if (qtts_mat_from_tensor(&m, t, type, err)) return -1;
    if (m.type >= 0 && m.type < 32) st->matrices[m.type]++;
    if (x16) {
        int rc = qtts_kernel_layout_add(out, t->name, &m, err);
        qtts_mat_free(&m);
        return rc;
    }
    void *data = m.owned;
    if (!data) /* same type after fitting: share the mapping */
        return qtts_store_add(out, t->name, t->type, t->ndim, t->shape, t->data, 0, err);
    m.owned = NULL;
    if (qtts_store_add(out, t->name, m.type, t->ndim, t->shape, data, 1, err)) {
        free(data);
        return -1;
    }
    return 0;
}

/* config and tokenizer files; vocab.json is 2.8 MB */
#define MAX_TEXT_FILE_BYTES ((size_t)256 << 20)

int qtts_model_pack(const char *in_path, const char *out_path, qtts_dtype type, int kernel_layout,
                    void (*progress)(void *user, int done, int total), void *user, qtts_pack_stats *stats,
                    qtts_err *err) {
    return qtts_model_pack_lora(in_path, out_path, type, kernel_layout, NULL, 0, progress, user, stats, err);
}

/* The adapters merged into *model (f32, for the one conversion after), each
 * noted in *note as "PATH scale S, N weights\n". */
static int merge_lora(qtts_store **model, const char *const *lora, int n_lora, char **note, qtts_err *err) {
    for (int i = 0; i < n_lora; i++) {
        char path[PATH_MAX];
        double scale;
        int n = 0;
        if (qtts_lora_spec(lora[i], path, sizeof path, &scale, err)) return -1;
        if (qtts_lora_merge(model, path, scale, 1, NULL, &n, err)) {
            qtts_fail_prefix(err, "LoRA adapter");
            return -1;
        }
        size_t have = *note ? strlen(*note) : 0, add = strlen(path) + 64;
        char *grown = realloc(*note, have + add);
        if (!grown) return qtts_fail(err, "out of memory");
        snprintf(grown + have, add, "%s scale %g, %d weights\n", path, scale, n);
        *note = grown;
    }
    return 0;
}

char *qtts_pack_lora_note(const char *path) {
    qtts_err err = {0};
    qtts_gguf *g = qtts_gguf_is_path(path) ? qtts_gguf_load(path, &err) : NULL;
    char *note =
        g && qtts_gguf_find_key(g, QTTS_PACK_KEY_LORA) >= 0 ? qtts_gguf_dup_str(g, QTTS_PACK_KEY_LORA, &err) : NULL;
    qtts_gguf_free(g);
    return note;
}

int qtts_model_pack_lora(const char *in_path, const char *out_path, qtts_dtype type, int kernel_layout,
                         const char *const *lora, int n_lora, void (*progress)(void *user, int done, int total),
                         void *user, qtts_pack_stats *stats, qtts_err *err) {
    char *lora_note = NULL;
    qtts_pack_stats st = {0};
    char path[PATH_MAX];
    int rc = -1;
    /* any layout (io/layout.h): its text files and its tensors under the official names */
    qtts_model_files mf;
    if (qtts_model_files_open(&mf, in_path, 0, err)) return -1;
    const char *dir = mf.dir;
    char *texts[N_TEXT_FILES] = {0};
    size_t lens[N_TEXT_FILES] = {0};
    qtts_gguf_kv kv[N_TEXT_FILES + 5];
    int n_kv = 0;
    qtts_store *model = NULL, *codec = NULL, *out = NULL;
    for (int i = 0; i < N_TEXT_FILES; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, text_files[i].file);
        if (access(path, R_OK) != 0) {
            if (text_files[i].required) {
                qtts_fail(err, "%s: missing (a model folder needs it)", path);
                goto done;
            }
            continue;
        }
        if (qtts_read_file(path, MAX_TEXT_FILE_BYTES, &texts[i], &lens[i], err)) goto done;
        kv[n_kv++] = qtts_gguf_kv_str(text_files[i].key, texts[i], lens[i]);
    }
    kv[n_kv++] = qtts_gguf_kv_str("general.architecture", "qwen3_tts", 9);
    kv[n_kv++] = qtts_gguf_kv_str("qtts.weight_type", qtts_dtype_name(type), strlen(qtts_dtype_name(type)));
    const char *here = qtts_kernel_layout_here();
    if (!here) kernel_layout = 0;
    qtts_weight_layout x16_layout;
    if (kernel_layout) {
        choose_layout(type, &x16_layout);
        kv[n_kv++] = qtts_gguf_kv_str(QTTS_GGUF_KEY_KERNEL_LAYOUT, here, strlen(here));
        kv[n_kv++] = qtts_gguf_kv_u32(QTTS_GGUF_KEY_KERNEL_LAYOUT_VERSION, QTTS_KERNEL_LAYOUT_VERSION);
    }
    if (mf.model_store) {
        model = mf.model_store, codec = mf.codec_store;
        mf.model_store = mf.codec_store = NULL;
    } else {
        model = qtts_store_open(dir, err);
        if (!model) goto done;
        snprintf(path, sizeof path, "%s/speech_tokenizer", dir);
        codec = qtts_store_open(path, err);
        if (!codec) goto done;
    }
    if (n_lora) {
        if (merge_lora(&model, lora, n_lora, &lora_note, err)) goto done;
        kv[n_kv++] = qtts_gguf_kv_str(QTTS_PACK_KEY_LORA, lora_note, strlen(lora_note));
    }
    out = qtts_store_new(err);
    if (!out) goto done;
    int total = qtts_store_count(model) + qtts_store_count(codec), done_n = 0;
    for (int i = 0; i < qtts_store_count(model); i++, done_n++) {
        const qtts_tensor *t = qtts_store_at(model, i);
        if (progress) progress(user, done_n, total);
        /* a packed .gguf's store holds the speech tokenizer's tensors too: they come from the codec store below */
        if (!strncmp(t->name, QTTS_PACK_CODEC_PREFIX, strlen(QTTS_PACK_CODEC_PREFIX))) continue;
        if (stacked_follower(model, t->name)) continue; /* written right after its leader */
        if (pack_tensor(out, t, type, kernel_layout ? &x16_layout : NULL, &st, err)) goto done;
        char next[512];
        for (int k = 1; stacked_next(t->name, k, next, sizeof next); k++) {
            const qtts_tensor *f = qtts_store_find(model, next);
            if (f && pack_tensor(out, f, type, kernel_layout ? &x16_layout : NULL, &st, err)) goto done;
        }
    }
    for (int i = 0; i < qtts_store_count(codec); i++, done_n++) {
        const qtts_tensor *t = qtts_store_at(codec, i);
        char name[512];
        if (progress) progress(user, done_n, total);
        if (snprintf(name, sizeof name, "%s%s", QTTS_PACK_CODEC_PREFIX, t->name) >= (int)sizeof name) {
            qtts_fail(err, "tensor name too long: %s", t->name);
            goto done;
        }
        if (qtts_store_add(out, name, t->type, t->ndim, t->shape, t->data, 0, err)) goto done;
    }
    if (progress) progress(user, total, total);
    st.tensors = qtts_store_count(out);
    rc = qtts_gguf_write(out_path, out, kv, n_kv, err);
    if (!rc && stats) *stats = st;
done:
    qtts_store_free(out);
    qtts_store_free(codec);
    qtts_store_free(model);
    for (int i = 0; i < N_TEXT_FILES; i++) free(texts[i]);
    free(lora_note);
    qtts_model_files_close(&mf);
    return rc;
}

static int write_text(const char *path, const char *data, size_t len, qtts_err *err) {
    FILE *f = fopen(path, "wb");
    if (!f) return qtts_fail(err, "%s: %s", path, strerror(errno));
    size_t w = fwrite(data, 1, len, f);
    if (fclose(f) != 0 || w != len) return qtts_fail(err, "%s: write failed", path);
    return 0;
}

void qtts_pack_remove_dir(const char *tmp_dir) {
    if (!tmp_dir || !*tmp_dir) return;
    char path[PATH_MAX];
    for (int i = 0; i < N_TEXT_FILES; i++) {
        snprintf(path, sizeof path, "%s/%s", tmp_dir, text_files[i].file);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/speech_tokenizer", tmp_dir);
    rmdir(path);
    rmdir(tmp_dir);
}

int qtts_model_unpack(const char *gguf_path, int kernel_layout, char *tmp_dir, size_t tmp_size,
                      qtts_store **model_store, qtts_store **codec_store, qtts_err *err) {
    *model_store = *codec_store = NULL;
    tmp_dir[0] = 0;
    qtts_gguf *g = qtts_gguf_load(gguf_path, err);
    if (!g) return -1;
    int rc = -1;
    const char *base = getenv("TMPDIR");
    snprintf(tmp_dir, tmp_size, "%s/qtts-model-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmp_dir)) {
        qtts_fail(err, "cannot create a temporary folder for %s: %s", gguf_path, strerror(errno));
        tmp_dir[0] = 0;
        goto done;
    }
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/speech_tokenizer", tmp_dir);
    if (mkdir(path, 0700) != 0) {
        qtts_fail(err, "%s: %s", path, strerror(errno));
        goto done;
    }
    for (int i = 0; i < N_TEXT_FILES; i++) {
        size_t len = 0;
        const char *s = qtts_gguf_get_str(g, text_files[i].key, &len);
        if (!s) {
            if (text_files[i].required) {
                qtts_fail(err, "%s: not a qtts model file (no '%s' metadata; make it with 'qtts quantize')", gguf_path,
                          text_files[i].key);
                goto done;
            }
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", tmp_dir, text_files[i].file);
        if (write_text(path, s, len, err)) goto done;
    }
    *model_store = qtts_gguf_open_kernel(gguf_path, kernel_layout, err);
    if (!*model_store) goto done;
    *codec_store = qtts_store_new(err);
    if (!*codec_store) goto done;
    qtts_store_set_source(*codec_store, gguf_path);
    /* the speech tokenizer's f32 weights are copied at load: their pages must be released as the talker's are,
     * or the mapped originals stay resident beside the copies */
    if (qtts_store_borrow_mappings(*codec_store, *model_store, err)) goto done;
    size_t plen = strlen(QTTS_PACK_CODEC_PREFIX);
    for (int i = 0; i < qtts_store_count(*model_store); i++) {
        const qtts_tensor *t = qtts_store_at(*model_store, i);
        if (strncmp(t->name, QTTS_PACK_CODEC_PREFIX, plen)) continue;
        if (qtts_store_add(*codec_store, t->name + plen, t->type, t->ndim, t->shape, t->data, 0, err)) goto done;
    }
    rc = 0;
done:
    qtts_gguf_free(g);
    if (rc) {
        qtts_store_free(*codec_store);
        qtts_store_free(*model_store);
        *model_store = *codec_store = NULL;
        qtts_pack_remove_dir(tmp_dir);
        tmp_dir[0] = 0;
    }
    return rc;
}
