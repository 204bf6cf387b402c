#include "model/model_random.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tensor/quant.h"

int qtts_model_random_config(qtts_model_config *c, const char *size, qtts_variant variant, qtts_err *err) {
    memset(c, 0, sizeof *c);
    int big;
    if (!strcmp(size, "0.6b") || !strcmp(size, "0b6") || !strcmp(size, "0.6B")) big = 0;
    else if (!strcmp(size, "1.7b") || !strcmp(size, "1b7") || !strcmp(size, "1.7B")) big = 1;
    else return qtts_fail(err, "unknown model size \"%s\" (use 0.6b or 1.7b)", size);
    if (big == 0 && variant == QTTS_VARIANT_VOICE_DESIGN) return qtts_fail(err, "there is no 0.6B VoiceDesign model");
    c->talker = (qtts_lm_config){.hidden = big ? 2048 : 1024, .layers = 28, .heads = 16, .kv_heads = 8, .head_dim = 128,
                                 .intermediate = big ? 6144 : 3072, .vocab = 3072, .rms_eps = 1e-6, .rope_theta = 1e6};
    c->cp = (qtts_lm_config){.hidden = 1024, .layers = 5, .heads = 16, .kv_heads = 8, .head_dim = 128,
                             .intermediate = 3072, .vocab = 2048, .rms_eps = 1e-6, .rope_theta = 1e6};
    c->text_vocab = 151936;
    c->text_hidden = 2048;
    c->num_code_groups = 16;
    c->codec_pad = 2148, c->codec_bos = 2149, c->codec_eos = 2150, c->think = 2154, c->nothink = 2155;
    c->think_bos = 2156, c->think_eos = 2157;
    c->tts_pad = 151671, c->tts_bos = 151672, c->tts_eos = 151673, c->im_start = 151644, c->im_end = 151645;
    c->assistant = 77091;
    static const struct {
        const char *name;
        int64_t id;
    } langs[] = {{"chinese", 2055},  {"english", 2050},  {"german", 2053},  {"italian", 2070},
                 {"portuguese", 2071}, {"spanish", 2054}, {"japanese", 2058}, {"korean", 2064},
                 {"french", 2061},   {"russian", 2069},  {"beijing_dialect", 2074}, {"sichuan_dialect", 2062}};
    for (size_t i = 0; i < sizeof langs / sizeof langs[0]; i++) {
        snprintf(c->languages[i].name, QTTS_NAME_LEN, "%s", langs[i].name);
        c->languages[i].id = langs[i].id;
    }
    c->n_languages = (int)(sizeof langs / sizeof langs[0]);
    if (variant == QTTS_VARIANT_CUSTOM_VOICE) {
        static const struct {
            const char *name, *dialect;
            int64_t id;
        } spk[] = {{"serena", "", 3066}, {"vivian", "", 3065}, {"uncle_fu", "", 3010},
                   {"ryan", "", 3061},   {"aiden", "", 2861},  {"ono_anna", "", 2873},
                   {"sohee", "", 2864},  {"eric", "sichuan_dialect", 2875}, {"dylan", "beijing_dialect", 2878}};
        for (size_t i = 0; i < sizeof spk / sizeof spk[0]; i++) {
            snprintf(c->speakers[i].name, QTTS_NAME_LEN, "%s", spk[i].name);
            snprintf(c->speakers[i].dialect, QTTS_NAME_LEN, "%s", spk[i].dialect);
            c->speakers[i].id = spk[i].id;
        }
        c->n_speakers = (int)(sizeof spk / sizeof spk[0]);
    }
    c->variant = variant;
    snprintf(c->size, sizeof c->size, "%s", big ? "1b7" : "0b6");
    if (variant == QTTS_VARIANT_BASE) {
        c->has_speaker_encoder = 1;
        c->spk_mel_dim = 128;
        c->spk_enc_dim = c->talker.hidden;
        const int64_t ch[5] = {512, 512, 512, 512, 1536}, k[5] = {5, 3, 3, 3, 1}, d[5] = {1, 2, 3, 4, 1};
        memcpy(c->spk_channels, ch, sizeof ch);
        memcpy(c->spk_kernels, k, sizeof k);
        memcpy(c->spk_dilations, d, sizeof d);
        c->spk_attention_channels = 128;
        c->spk_res2net_scale = 8;
        c->spk_se_channels = 128;
        c->spk_sample_rate = 24000;
    }
    return 0;
}

/* splitmix64 stream -> uniform floats in [-a, a] */
typedef struct {
    uint64_t s;
} rng;
static inline float rnd(rng *r, float a) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return ((float)(z >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f) * a;
}

static uint64_t name_seed(uint64_t seed, const char *name) {
    uint64_t h = 1469598103934665603ull ^ seed;
    for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    return h;
}

/* Fills rows x cols with entries U(-a, a) (+ offset), stored as type t at buf. */
static int fill_random(char *buf, const char *name, qtts_dtype t, int64_t rows, int64_t cols, float a, float offset,
                       uint64_t seed, qtts_err *err) {
    size_t rb = qtts_dtype_row_bytes(t, cols);
    rng r = {name_seed(seed, name)};
    if (t == QTTS_Q8_0 || t == QTTS_Q4_K) {
        /* Quantized blocks straight from random bytes (quantizing f32 rows
         * at this size takes minutes): values span about [-a, a]. */
        size_t n64 = rb * (size_t)rows / 8;
        for (size_t i = 0; i < n64; i++) {
            uint64_t z = (r.s += 0x9E3779B97F4A7C15ull);
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            z ^= z >> 31;
            memcpy(buf + 8 * i, &z, 8);
        }
        size_t bb = qtts_dtype_block_bytes(t), nb = rb * (size_t)rows / bb;
        for (size_t i = 0; i < nb; i++) {
            char *blk = buf + i * bb;
            uint16_t d = qtts_f32_to_f16(t == QTTS_Q8_0 ? a / 127.0f : 2.0f * a / (63.0f * 15.0f));
            uint16_t dmin = qtts_f32_to_f16(a / 63.0f);
            if (t == QTTS_Q8_0) memcpy(blk + offsetof(qtts_block_q8_0, d), &d, 2);
            else {
                memcpy(blk + offsetof(qtts_block_q4_k, d), &d, 2);
                memcpy(blk + offsetof(qtts_block_q4_k, dmin), &dmin, 2);
            }
        }
        return 0;
    }
    float *row = qtts_malloc((size_t)cols * sizeof(float), err);
    if (!row) return -1;
    for (int64_t i = 0; i < rows; i++) {
        for (int64_t j = 0; j < cols; j++) row[j] = offset + rnd(&r, a);
        char *dst = buf + (size_t)i * rb;
        switch (t) {
        case QTTS_F32: memcpy(dst, row, (size_t)cols * sizeof(float)); break;
        case QTTS_BF16:
            for (int64_t j = 0; j < cols; j++) ((uint16_t *)(void *)dst)[j] = qtts_f32_to_bf16(row[j]);
            break;
        case QTTS_F16:
            for (int64_t j = 0; j < cols; j++) ((uint16_t *)(void *)dst)[j] = qtts_f32_to_f16(row[j]);
            break;
        default: qtts_quantize_row(t, row, dst, cols); break;
        }
    }
    free(row);
    return 0;
}

/* n matrices of one type and width in ONE buffer, back to back (the first
 * tensor owns it), so the loader can use them as one stacked matrix. rows[i]
 * == 1 with n == 1 makes a vector. */
static int add_group(qtts_store *st, const char *const *names, const int64_t *rows, int n, qtts_dtype t, int64_t cols,
                     float a, float offset, uint64_t seed, qtts_err *err) {
    size_t rb = qtts_dtype_row_bytes(t, cols), total = 0;
    if (!rb) return qtts_fail(err, "random model: %s: %lld columns do not fit %s blocks", names[0], (long long)cols,
                              qtts_dtype_name(t));
    for (int i = 0; i < n; i++) total += rb * (size_t)rows[i];
    char *buf = qtts_malloc(total, err);
    if (!buf) return -1;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        if (fill_random(buf + off, names[i], t, rows[i], cols, a, offset, seed, err)) {
            if (i == 0) free(buf);
            return -1;
        }
        int64_t shape[2] = {rows[i], cols};
        int vec = n == 1 && rows[i] == 1;
        if (vec) shape[0] = cols;
        if (qtts_store_add(st, names[i], t, vec ? 1 : 2, shape, buf + off, i == 0, err)) {
            if (i == 0) free(buf);
            return -1;
        }
        off += rb * (size_t)rows[i];
    }
    return 0;
}

static int add_random(qtts_store *st, const char *name, qtts_dtype t, int64_t rows, int64_t cols, float a, float offset,
                      uint64_t seed, qtts_err *err) {
    return add_group(st, &name, &rows, 1, t, cols, a, offset, seed, err);
}

static int add_lm(qtts_store *st, const char *prefix, const qtts_lm_config *c, qtts_dtype wt, uint64_t seed, qtts_err *err) {
    char n[200];
    const int64_t D = c->hidden, qd = c->heads * c->head_dim, kvd = c->kv_heads * c->head_dim, I = c->intermediate;
    const float aD = sqrtf(3.0f / (float)D), aq = sqrtf(3.0f / (float)qd), aI = sqrtf(3.0f / (float)I);
    for (int64_t l = 0; l < c->layers; l++) {
#define N(s) (snprintf(n, sizeof n, "%slayers.%lld.%s", prefix, (long long)l, s), n)
        char qn[200], kn[200], vn[200], gn[200], un[200];
        snprintf(qn, sizeof qn, "%s", N("self_attn.q_proj.weight"));
        snprintf(kn, sizeof kn, "%s", N("self_attn.k_proj.weight"));
        snprintf(vn, sizeof vn, "%s", N("self_attn.v_proj.weight"));
        snprintf(gn, sizeof gn, "%s", N("mlp.gate_proj.weight"));
        snprintf(un, sizeof un, "%s", N("mlp.up_proj.weight"));
        const char *qkv[3] = {qn, kn, vn}, *gu[2] = {gn, un};
        const int64_t qkv_rows[3] = {qd, kvd, kvd}, gu_rows[2] = {I, I};
        if (add_group(st, qkv, qkv_rows, 3, wt, D, aD, 0, seed, err) ||
            add_random(st, N("self_attn.o_proj.weight"), wt, D, qd, aq, 0, seed, err) ||
            add_group(st, gu, gu_rows, 2, wt, D, aD, 0, seed, err) ||
            add_random(st, N("mlp.down_proj.weight"), wt, D, I, aI, 0, seed, err) ||
            add_random(st, N("input_layernorm.weight"), QTTS_F32, 1, D, 0.1f, 1, seed, err) ||
            add_random(st, N("post_attention_layernorm.weight"), QTTS_F32, 1, D, 0.1f, 1, seed, err) ||
            add_random(st, N("self_attn.q_norm.weight"), QTTS_F32, 1, c->head_dim, 0.1f, 1, seed, err) ||
            add_random(st, N("self_attn.k_norm.weight"), QTTS_F32, 1, c->head_dim, 0.1f, 1, seed, err))
            return -1;
#undef N
    }
    snprintf(n, sizeof n, "%snorm.weight", prefix);
    return add_random(st, n, QTTS_F32, 1, D, 0.1f, 1, seed, err);
}

/* The text embedding: a lazily committed anonymous bf16 mapping (see header). */
static int add_text_embedding(qtts_store *st, const qtts_model_config *c, uint64_t seed, qtts_err *err) {
    size_t rb = (size_t)c->text_hidden * 2, bytes = rb * (size_t)c->text_vocab;
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED) return qtts_fail(err, "random model: cannot map %zu bytes for the text embedding", bytes);
    /* anonymous: never `mapped`, since dropping its pages would zero the rows (the bench maps its copy
     * of this store from a file, where they may be dropped) */
    if (qtts_store_keep_mapping(st, map, bytes, QTTS_ANONYMOUS_MAPPING, err)) {
        munmap(map, bytes);
        return -1;
    }
    rng r = {name_seed(seed, "text_embedding")};
    for (int64_t id = 0; id < c->text_vocab; id++) {
        if (id >= 4096 && id < 151643) continue;
        uint16_t *row = (uint16_t *)((char *)map + (size_t)id * rb);
        for (int64_t j = 0; j < c->text_hidden; j++) row[j] = qtts_f32_to_bf16(rnd(&r, 1.7f));
    }
    int64_t shape[2] = {c->text_vocab, c->text_hidden};
    return qtts_store_add(st, "talker.model.text_embedding.weight", QTTS_BF16, 2, shape, map, 0, err);
}

qtts_store *qtts_model_random_store(const qtts_model_config *c, qtts_dtype wt, uint64_t seed, qtts_err *err) {
    qtts_store *st = qtts_store_new(err);
    if (!st) return NULL;
    qtts_store_set_source(st, "random weights");
    const qtts_dtype et = wt == QTTS_F32 ? QTTS_F32 : QTTS_BF16;
    const int64_t D = c->talker.hidden, TH = c->text_hidden, Dc = c->cp.hidden;
    const float aTH = sqrtf(3.0f / (float)TH), aD = sqrtf(3.0f / (float)D), aDc = sqrtf(3.0f / (float)Dc);
    char n[160];
    if (add_text_embedding(st, c, seed, err) ||
        add_random(st, "talker.model.codec_embedding.weight", et, c->talker.vocab, D, 1.7f, 0, seed, err) ||
        add_random(st, "talker.text_projection.linear_fc1.weight", wt, TH, TH, aTH, 0, seed, err) ||
        add_random(st, "talker.text_projection.linear_fc1.bias", QTTS_F32, 1, TH, 0.05f, 0, seed, err) ||
        add_random(st, "talker.text_projection.linear_fc2.weight", wt, D, TH, aTH, 0, seed, err) ||
        add_random(st, "talker.text_projection.linear_fc2.bias", QTTS_F32, 1, D, 0.05f, 0, seed, err) ||
        add_random(st, "talker.codec_head.weight", wt, c->talker.vocab, D, aD, 0, seed, err) ||
        add_lm(st, "talker.model.", &c->talker, wt, seed, err) ||
        add_lm(st, "talker.code_predictor.model.", &c->cp, wt, seed, err))
        goto fail;
    for (int64_t g = 0; g < c->num_code_groups - 1; g++) {
        snprintf(n, sizeof n, "talker.code_predictor.model.codec_embedding.%lld.weight", (long long)g);
        if (add_random(st, n, et, c->cp.vocab, D, 1.7f, 0, seed, err)) goto fail;
        snprintf(n, sizeof n, "talker.code_predictor.lm_head.%lld.weight", (long long)g);
        if (add_random(st, n, wt, c->cp.vocab, Dc, aDc, 0, seed, err)) goto fail;
    }
    if (D != Dc && (add_random(st, "talker.code_predictor.small_to_mtp_projection.weight", wt, Dc, D, aD, 0, seed, err) ||
                    add_random(st, "talker.code_predictor.small_to_mtp_projection.bias", QTTS_F32, 1, Dc, 0.05f, 0, seed, err)))
        goto fail;
    return st;
fail:
    qtts_store_free(st);
    return NULL;
}

qtts_talker_model *qtts_model_random(const char *size, qtts_variant variant, qtts_dtype wtype, uint64_t seed,
                                     qtts_err *err) {
    qtts_model_config cfg;
    if (qtts_model_random_config(&cfg, size, variant, err)) return NULL;
    qtts_store *st = qtts_model_random_store(&cfg, wtype, seed, err);
    if (!st) return NULL;
    return qtts_talker_model_from_store(st, &cfg, NULL, NULL, err);
}
