#include "model/codec_encoder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/conv1d_pad.h"
#include "tensor/linear.h"
#include "tensor/attention.h"
#include "tensor/ops.h"

enum { ENC_MAX_RATIOS = 8, ENC_MAX_RES = 8, ENC_MAX_Q = 64 };

typedef struct {
    float *w, *b; /* b may be NULL */
    int64_t c_out, c_in, k, stride, dil;
} enc_conv;

typedef struct {
    enc_conv c1[ENC_MAX_RES], c2[ENC_MAX_RES]; /* residual units: k3 (dilated) then k1 */
    enc_conv down;                            /* c -> 2c, kernel 2r, stride r */
} enc_stage;

typedef struct {
    float *ln1_w, *ln1_b, *ln2_w, *ln2_b, *ls_attn, *ls_mlp;
    qtts_mat q, k, v, o, fc1, fc2;
} enc_layer;

typedef struct {
    float *embed; /* [K][dim] = embed_sum / max(cluster_usage, 1e-5) */
    float *norm2; /* [K] squared norms */
    float norm2_max;
} enc_codebook;

typedef struct {
    qtts_mat proj; /* input_proj [dim][hidden]; rows == 0 when absent (identity) */
    int has_proj;
    enc_codebook *books;
    int64_t n_books;
} enc_rvq;

struct qtts_codec_encoder {
    int64_t sample_rate, hop, valid_q, n_stages, n_res, hidden, heads, kv_heads, head_dim, inter, n_layers;
    int64_t codebook_size, vq_dim, attn_window;
    double norm_eps, rope_theta;
    enc_conv first, last, downsample;
    enc_stage stages[ENC_MAX_RATIOS];
    enc_layer *layers;
    enc_rvq semantic, acoustic;
};

static void conv_free(enc_conv *c) {
    free(c->w);
    free(c->b);
}

static void rvq_free(enc_rvq *r) {
    qtts_mat_free(&r->proj);
    if (r->books)
        for (int64_t i = 0; i < r->n_books; i++) {
            free(r->books[i].embed);
            free(r->books[i].norm2);
        }
    free(r->books);
}

void qtts_codec_encoder_free(qtts_codec_encoder *e) {
    if (!e) return;
    conv_free(&e->first);
    conv_free(&e->last);
    conv_free(&e->downsample);
    for (int64_t s = 0; s < e->n_stages; s++) {
        for (int64_t r = 0; r < e->n_res; r++) {
            conv_free(&e->stages[s].c1[r]);
            conv_free(&e->stages[s].c2[r]);
        }
        conv_free(&e->stages[s].down);
    }
    if (e->layers)
        for (int64_t l = 0; l < e->n_layers; l++) {
            enc_layer *L = &e->layers[l];
            free(L->ln1_w);
            free(L->ln1_b);
            free(L->ln2_w);
            free(L->ln2_b);
            free(L->ls_attn);
            free(L->ls_mlp);
            qtts_mat_free(&L->q);
            qtts_mat_free(&L->k);
            qtts_mat_free(&L->v);
            qtts_mat_free(&L->o);
            qtts_mat_free(&L->fc1);
            qtts_mat_free(&L->fc2);
        }
    free(e->layers);
    rvq_free(&e->semantic);
    rvq_free(&e->acoustic);
    free(e);
}

static int load_conv(enc_conv *c, const qtts_store *st, const char *prefix, int64_t c_out, int64_t c_in, int64_t k,
                     int64_t stride, int64_t dil, int with_bias, qtts_err *err) {
    char name[256];
    snprintf(name, sizeof name, "%s.weight", prefix);
    const qtts_tensor *w = qtts_store_get3(st, name, c_out, c_in, k, err);
    if (!w) return -1;
    c->c_out = w->shape[0];
    c->c_in = w->shape[1];
    c->k = w->shape[2];
    c->stride = stride;
    c->dil = dil;
    c->w = qtts_tensor_to_f32(w, err);
    if (!c->w) return -1;
    if (with_bias) {
        snprintf(name, sizeof name, "%s.bias", prefix);
        const qtts_tensor *b = qtts_store_get1(st, name, c->c_out, err);
        if (!b || !(c->b = qtts_tensor_to_f32(b, err))) return -1;
    }
    return 0;
}

static float *load_vec(const qtts_store *st, const char *name, int64_t n, qtts_err *err) {
    const qtts_tensor *t = qtts_store_get1(st, name, n, err);
    return t ? qtts_tensor_to_f32(t, err) : NULL;
}

static int load_mat(qtts_mat *m, const qtts_store *st, const char *name, int64_t rows, int64_t cols, qtts_err *err) {
    const qtts_tensor *t = qtts_store_get2(st, name, rows, cols, err);
    return t ? qtts_mat_from_tensor_kernel(m, t, QTTS_F32, err) : -1;
}

static int load_rvq(enc_rvq *r, const qtts_store *st, const char *prefix, int64_t hidden, int64_t n_books,
                    int64_t codebook_size, int64_t *dim, qtts_err *err) {
    char name[256];
    snprintf(name, sizeof name, "%s.input_proj.weight", prefix);
    const qtts_tensor *p = qtts_store_find(st, name);
    if (p) {
        p = qtts_store_get3(st, name, -1, hidden, 1, err);
        if (!p || qtts_mat_from_tensor_kernel(&r->proj, p, QTTS_F32, err)) return -1;
        r->has_proj = 1;
    }
    int64_t d = r->has_proj ? r->proj.rows : hidden;
    if (*dim > 0 && *dim != d) return qtts_fail(err, "%s: vq dim %lld differs from %lld", prefix, (long long)d,
                                                (long long)*dim);
    *dim = d;
    r->books = qtts_calloc((size_t)n_books, sizeof(enc_codebook), err);
    if (!r->books) return -1;
    r->n_books = n_books;
    for (int64_t i = 0; i < n_books; i++) {
        snprintf(name, sizeof name, "%s.layers.%lld.codebook.embed_sum", prefix, (long long)i);
        const qtts_tensor *es = qtts_store_get2(st, name, codebook_size, d, err);
        snprintf(name, sizeof name, "%s.layers.%lld.codebook.cluster_usage", prefix, (long long)i);
        const qtts_tensor *cu = es ? qtts_store_get1(st, name, codebook_size, err) : NULL;
        if (!cu) return -1;
        enc_codebook *b = &r->books[i];
        float *usage = qtts_tensor_to_f32(cu, err);
        b->embed = usage ? qtts_tensor_to_f32(es, err) : NULL;
        b->norm2 = b->embed ? qtts_malloc((size_t)codebook_size * sizeof(float), err) : NULL;
        if (!b->norm2) {
            free(usage);
            return -1;
        }
        b->norm2_max = 0.0f;
        for (int64_t k = 0; k < codebook_size; k++) {
            float u = usage[k] > 1e-5f ? usage[k] : 1e-5f;
            double n2 = 0.0;
            for (int64_t j = 0; j < d; j++) {
                float v = b->embed[k * d + j] / u;
                b->embed[k * d + j] = v;
                n2 += (double)v * v;
            }
            b->norm2[k] = (float)n2;
            if (b->norm2[k] > b->norm2_max) b->norm2_max = b->norm2[k];
        }
        free(usage);
    }
    return 0;
}

qtts_codec_encoder *qtts_codec_encoder_load(const qtts_store *st, const qtts_codec_config *cfg, qtts_err *err) {
    if (cfg->enc.hidden <= 0 || cfg->enc.n_ratios <= 0 || cfg->enc.num_filters <= 0) {
        qtts_fail(err, "%s: the speech tokenizer config has no usable encoder_config", qtts_store_source(st));
        return NULL;
    }
    if (cfg->enc.n_ratios > ENC_MAX_RATIOS || cfg->enc.num_residual_layers > ENC_MAX_RES ||
        cfg->enc.num_residual_layers < 0 || cfg->enc.num_quantizers > ENC_MAX_Q || cfg->enc.num_quantizers < 1 ||
        cfg->enc.num_semantic_quantizers < 1 || cfg->enc.num_semantic_quantizers > cfg->enc.num_quantizers ||
        cfg->enc.compress <= 0 || cfg->enc.heads <= 0 || cfg->enc.kv_heads <= 0 || cfg->enc.head_dim <= 0 ||
        cfg->enc.heads % cfg->enc.kv_heads) {
        qtts_fail(err, "%s: encoder_config sizes out of range", qtts_store_source(st));
        return NULL;
    }
    qtts_codec_encoder *e = qtts_calloc(1, sizeof *e, err);
    if (!e) return NULL;
    e->sample_rate = cfg->input_sample_rate;
    e->n_stages = cfg->enc.n_ratios;
    e->n_res = cfg->enc.num_residual_layers;
    e->hidden = cfg->enc.hidden;
    e->heads = cfg->enc.heads;
    e->kv_heads = cfg->enc.kv_heads;
    e->head_dim = cfg->enc.head_dim;
    e->inter = cfg->enc.intermediate;
    e->n_layers = cfg->enc.layers;
    e->norm_eps = cfg->enc.norm_eps;
    e->rope_theta = cfg->enc.rope_theta;
    e->codebook_size = cfg->enc.codebook_size;
    /* The reference encodes with sdpa attention, whose mask is full causal;
     * the configured 250-frame window only applies on its flash-attention path. */
    e->attn_window = 0;
    e->valid_q = cfg->valid_quantizers < cfg->enc.num_quantizers ? cfg->valid_quantizers : cfg->enc.num_quantizers;
    if (e->valid_q < 1) e->valid_q = cfg->enc.num_quantizers;

    /* SEANet: layer indices follow HF MimiEncoder's nn.ModuleList. */
    char p[256];
    int64_t idx = 0, ch = cfg->enc.num_filters, hop = 1;
    if (load_conv(&e->first, st, "encoder.encoder.layers.0.conv", ch, 1, cfg->enc.kernel_size, 1, 1, 1, err))
        goto fail;
    idx = 1;
    for (int64_t s = 0; s < e->n_stages; s++) {
        int64_t r = cfg->enc.ratios[e->n_stages - 1 - s]; /* encoder uses the ratios reversed */
        enc_stage *S = &e->stages[s];
        int64_t dil = 1;
        for (int64_t j = 0; j < e->n_res; j++) {
            snprintf(p, sizeof p, "encoder.encoder.layers.%lld.block.1.conv", (long long)idx);
            if (load_conv(&S->c1[j], st, p, ch / cfg->enc.compress, ch, cfg->enc.residual_kernel_size, 1, dil, 1,
                          err))
                goto fail;
            snprintf(p, sizeof p, "encoder.encoder.layers.%lld.block.3.conv", (long long)idx);
            if (load_conv(&S->c2[j], st, p, ch, ch / cfg->enc.compress, 1, 1, 1, 1, err)) goto fail;
            idx++;
            dil *= cfg->enc.dilation_growth_rate;
        }
        idx++; /* ELU */
        snprintf(p, sizeof p, "encoder.encoder.layers.%lld.conv", (long long)idx);
        if (load_conv(&S->down, st, p, 2 * ch, ch, 2 * r, r, 1, 1, err)) goto fail;
        idx++;
        ch *= 2;
        hop *= r;
    }
    idx++; /* ELU */
    snprintf(p, sizeof p, "encoder.encoder.layers.%lld.conv", (long long)idx);
    if (load_conv(&e->last, st, p, e->hidden, ch, cfg->enc.last_kernel_size, 1, 1, 1, err)) goto fail;

    e->layers = qtts_calloc((size_t)(e->n_layers > 0 ? e->n_layers : 1), sizeof(enc_layer), err);
    if (!e->layers) goto fail;
    int64_t H = e->hidden, qd = e->heads * e->head_dim, kvd = e->kv_heads * e->head_dim;
    for (int64_t l = 0; l < e->n_layers; l++) {
        enc_layer *L = &e->layers[l];
        char b[160];
        snprintf(b, sizeof b, "encoder.encoder_transformer.layers.%lld", (long long)l);
#define VEC(field, suffix)                                          \
    snprintf(p, sizeof p, "%s.%s", b, suffix);                      \
    if (!(L->field = load_vec(st, p, H, err))) goto fail;
#define MAT(field, suffix, r, c)                                    \
    snprintf(p, sizeof p, "%s.%s", b, suffix);                      \
    if (load_mat(&L->field, st, p, r, c, err)) goto fail;
        VEC(ln1_w, "input_layernorm.weight")
        VEC(ln1_b, "input_layernorm.bias")
        VEC(ln2_w, "post_attention_layernorm.weight")
        VEC(ln2_b, "post_attention_layernorm.bias")
        VEC(ls_attn, "self_attn_layer_scale.scale")
        VEC(ls_mlp, "mlp_layer_scale.scale")
        MAT(q, "self_attn.q_proj.weight", qd, H)
        MAT(k, "self_attn.k_proj.weight", kvd, H)
        MAT(v, "self_attn.v_proj.weight", kvd, H)
        MAT(o, "self_attn.o_proj.weight", H, qd)
        MAT(fc1, "mlp.fc1.weight", e->inter, H)
        MAT(fc2, "mlp.fc2.weight", H, e->inter)
#undef VEC
#undef MAT
    }
    /* 25 Hz -> 12.5 Hz: kernel 2*ratio, stride 2 (HF MimiModel), no bias */
    if (qtts_store_find(st, "encoder.downsample.conv.weight")) {
        if (load_conv(&e->downsample, st, "encoder.downsample.conv", H, H, -1, 2, 1, 0, err)) goto fail;
        hop *= 2;
    }
    e->hop = hop;
    int64_t n_sem = cfg->enc.num_semantic_quantizers, n_ac = cfg->enc.num_quantizers - n_sem;
    e->vq_dim = 0;
    if (load_rvq(&e->semantic, st, "encoder.quantizer.semantic_residual_vector_quantizer", H, n_sem,
                 e->codebook_size, &e->vq_dim, err))
        goto fail;
    if (n_ac > 0 && load_rvq(&e->acoustic, st, "encoder.quantizer.acoustic_residual_vector_quantizer", H, n_ac,
                             e->codebook_size, &e->vq_dim, err))
        goto fail;
    return e;
fail:
    qtts_fail_prefix(err, "speech tokenizer encoder");
    qtts_codec_encoder_free(e);
    return NULL;
}

int64_t qtts_codec_encoder_sample_rate(const qtts_codec_encoder *e) { return e->sample_rate; }
int64_t qtts_codec_encoder_hop(const qtts_codec_encoder *e) { return e->hop; }
int64_t qtts_codec_encoder_valid_quantizers(const qtts_codec_encoder *e) { return e->valid_q; }
int64_t qtts_codec_encoder_max_quantizers(const qtts_codec_encoder *e) {
    return e->semantic.n_books + e->acoustic.n_books;
}
int64_t qtts_codec_encoder_frames(const qtts_codec_encoder *e, int64_t n) { return (n + e->hop - 1) / e->hop; }

static void elu_copy(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : expm1f(x[i]);
}

static int run_conv(qtts_pool *pool, const enc_conv *c, const float *x, int64_t t_in, qtts_pad_mode mode, float *y,
                    qtts_err *err) {
    return qtts_conv1d_causal(pool, x, c->c_in, t_in, c->w, c->b, c->c_out, c->k, c->stride, c->dil, mode, y, err);
}

/* SEANet conv stack: wav [n] -> out [hidden][T25] (malloc'd), *t_out = T25. */
static float *seanet(const qtts_codec_encoder *e, qtts_pool *pool, const float *wav, int64_t n, int64_t *t_out,
                     qtts_err *err) {
    int64_t t = n, ch = e->first.c_out;
    float *x = qtts_malloc((size_t)(ch * t) * sizeof(float), err);
    float *a = NULL, *h = NULL, *y = NULL;
    if (!x || run_conv(pool, &e->first, wav, t, QTTS_PAD_ZERO, x, err)) goto fail;
    for (int64_t s = 0; s < e->n_stages; s++) {
        const enc_stage *S = &e->stages[s];
        a = qtts_malloc((size_t)(ch * t) * sizeof(float), err);
        if (!a) goto fail;
        for (int64_t j = 0; j < e->n_res; j++) {
            /* x += conv_k1(ELU(conv_k3(ELU(x)))) */
            h = qtts_malloc((size_t)(S->c1[j].c_out * t) * sizeof(float), err);
            if (!h) goto fail;
            elu_copy(x, a, ch * t);
            if (run_conv(pool, &S->c1[j], a, t, QTTS_PAD_ZERO, h, err)) goto fail;
            elu_copy(h, h, S->c1[j].c_out * t);
            if (run_conv(pool, &S->c2[j], h, t, QTTS_PAD_ZERO, a, err)) goto fail;
            free(h);
            h = NULL;
            for (int64_t i = 0; i < ch * t; i++) x[i] += a[i];
        }
        elu_copy(x, a, ch * t);
        free(x);
        x = NULL;
        int64_t t2 = qtts_conv1d_causal_len(t, S->down.stride);
        y = qtts_malloc((size_t)(S->down.c_out * t2) * sizeof(float), err);
        if (!y || run_conv(pool, &S->down, a, t, QTTS_PAD_ZERO, y, err)) goto fail;
        free(a);
        a = NULL;
        x = y;
        y = NULL;
        t = t2;
        ch = S->down.c_out;
    }
    elu_copy(x, x, ch * t);
    y = qtts_malloc((size_t)(e->hidden * t) * sizeof(float), err);
    if (!y || run_conv(pool, &e->last, x, t, QTTS_PAD_ZERO, y, err)) goto fail;
    free(x);
    *t_out = t;
    return y;
fail:
    free(x);
    free(a);
    free(h);
    free(y);
    return NULL;
}

static void transpose(const float *x, int64_t rows, int64_t cols, float *y) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) y[c * rows + r] = x[r * cols + c];
}

/* Transformer over x [T][H] in place. */
static int transformer(const qtts_codec_encoder *e, qtts_pool *pool, float *x, int64_t t, qtts_err *err) {
    int64_t H = e->hidden, qd = e->heads * e->head_dim, kvd = e->kv_heads * e->head_dim;
    size_t n_h = (size_t)(t * H), n_q = (size_t)(t * qd), n_kv = (size_t)(t * kvd), n_i = (size_t)(t * e->inter);
    float *h = qtts_malloc(n_h * sizeof(float), err);
    float *q = qtts_malloc(n_q * sizeof(float), err);
    float *k = qtts_malloc(n_kv * sizeof(float), err);
    float *v = qtts_malloc(n_kv * sizeof(float), err);
    float *att = qtts_malloc(n_q * sizeof(float), err);
    float *f = qtts_malloc(n_i * sizeof(float), err);
    int rc = -1;
    if (!h || !q || !k || !v || !att || !f) goto done;
    for (int64_t l = 0; l < e->n_layers; l++) {
        const enc_layer *L = &e->layers[l];
        qtts_layernorm(pool, x, L->ln1_w, L->ln1_b, t, H, (float)e->norm_eps, h);
        if (qtts_linear(pool, &L->q, NULL, h, t, q) || qtts_linear(pool, &L->k, NULL, h, t, k) ||
            qtts_linear(pool, &L->v, NULL, h, t, v))
            goto oom;
        qtts_rope_neox(q, t, qd, e->heads, e->head_dim, 0, e->rope_theta);
        qtts_rope_neox(k, t, kvd, e->kv_heads, e->head_dim, 0, e->rope_theta);
        qtts_attn_args a = {
            .q = q,
            .q_stride = qd,
            .k = k,
            .v = v,
            .kv_stride = kvd,
            .out = att,
            .out_stride = qd,
            .n_q = t,
            .q_first = 0,
            .n_heads = e->heads,
            .n_kv_heads = e->kv_heads,
            .head_dim = e->head_dim,
            .window = e->attn_window,
            .scale = 1.0f / sqrtf((float)e->head_dim),
        };
        qtts_attention(pool, &a);
        if (qtts_linear(pool, &L->o, NULL, att, t, h)) goto oom;
        for (int64_t r = 0; r < t; r++)
            for (int64_t c = 0; c < H; c++) x[r * H + c] += L->ls_attn[c] * h[r * H + c];
        qtts_layernorm(pool, x, L->ln2_w, L->ln2_b, t, H, (float)e->norm_eps, h);
        if (qtts_linear(pool, &L->fc1, NULL, h, t, f)) goto oom;
        qtts_gelu_erf(f, t * e->inter);
        if (qtts_linear(pool, &L->fc2, NULL, f, t, h)) goto oom;
        for (int64_t r = 0; r < t; r++)
            for (int64_t c = 0; c < H; c++) x[r * H + c] += L->ls_mlp[c] * h[r * H + c];
    }
    rc = 0;
    goto done;
oom:
    qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "transformer: out of memory in a dense layer (%lld frames)", (long long)t);
done:
    free(h);
    free(q);
    free(k);
    free(v);
    free(att);
    free(f);
    return rc;
}

/* Residual VQ over frames; projections already applied. */
typedef struct {
    const qtts_codec_encoder *e;
    const float *sem_in, *ac_in; /* [F][dim] */
    int64_t n_q, dim;
    int32_t *codes;
    float *scratch; /* per thread: residual (dim) + dists (K) */
} rvq_job;

/* Nearest codebook row. Distances are ranked in float with the expansion
 * |c|^2 - 2 r.c; rows within the float error bound of the best are re-ranked
 * exactly in double, so ties closer than float noise resolve like the
 * reference's true argmin (first index on exact ties). */
static int32_t nearest(const enc_codebook *b, int64_t K, int64_t d, const float *r, float *dist) {
    float rr = 0.0f, best = INFINITY;
    for (int64_t j = 0; j < d; j++) rr += r[j] * r[j];
    for (int64_t k = 0; k < K; k++) {
        const float *c = b->embed + k * d;
        float dot = 0.0f;
        for (int64_t j = 0; j < d; j++) dot += r[j] * c[j];
        dist[k] = b->norm2[k] - 2.0f * dot;
        if (dist[k] < best) best = dist[k];
    }
    float tol = 1e-5f * (rr + 2.0f * b->norm2_max) + 1e-30f;
    int32_t arg = 0;
    double bestd = INFINITY;
    for (int64_t k = 0; k < K; k++) {
        if (dist[k] > best + tol) continue;
        const float *c = b->embed + k * d;
        double s = 0.0;
        for (int64_t j = 0; j < d; j++) {
            double df = (double)r[j] - (double)c[j];
            s += df * df;
        }
        if (s < bestd) {
            bestd = s;
            arg = (int32_t)k;
        }
    }
    return arg;
}

static void rvq_frames(void *ctx, int64_t f0, int64_t f1, int tid) {
    const rvq_job *j = ctx;
    const qtts_codec_encoder *e = j->e;
    int64_t d = j->dim, K = e->codebook_size;
    float *r = j->scratch + (size_t)tid * (size_t)(d + K), *dist = r + d;
    for (int64_t f = f0; f < f1; f++) {
        int32_t *out = j->codes + f * j->n_q;
        int64_t q = 0;
        for (int pass = 0; pass < 2 && q < j->n_q; pass++) {
            const enc_rvq *rv = pass == 0 ? &e->semantic : &e->acoustic;
            memcpy(r, (pass == 0 ? j->sem_in : j->ac_in) + f * d, (size_t)d * sizeof(float));
            for (int64_t l = 0; l < rv->n_books && q < j->n_q; l++, q++) {
                int32_t idx = nearest(&rv->books[l], K, d, r, dist);
                out[q] = idx;
                const float *c = rv->books[l].embed + (int64_t)idx * d;
                for (int64_t i = 0; i < d; i++) r[i] -= c[i];
            }
        }
    }
}

int qtts_codec_encoder_encode(const qtts_codec_encoder *e, qtts_pool *pool, const float *wav, int64_t n, int64_t n_q,
                              int32_t *codes, qtts_stage_tap tap, void *tap_ctx, qtts_err *err) {
    if (n < 1) return qtts_fail(err, "speech tokenizer encoder: empty waveform");
    if (n_q < 1 || n_q > qtts_codec_encoder_max_quantizers(e))
        return qtts_fail(err, "speech tokenizer encoder: %lld quantizers requested (1..%lld available)",
                         (long long)n_q, (long long)qtts_codec_encoder_max_quantizers(e));
    int64_t t25 = 0, H = e->hidden, d = e->vq_dim;
    float *xt = NULL, *ds = NULL, *dst = NULL, *sem = NULL, *ac = NULL, *scratch = NULL;
    int rc = -1;
    float *sn = seanet(e, pool, wav, n, &t25, err);
    if (!sn) goto done;
    if (tap) tap(tap_ctx, "enc_seanet_out", sn, H, t25);
    xt = qtts_malloc((size_t)(t25 * H) * sizeof(float), err);
    if (!xt) goto done;
    transpose(sn, H, t25, xt);
    if (transformer(e, pool, xt, t25, err)) goto done;
    if (tap) tap(tap_ctx, "enc_transformer_out", xt, t25, H);
    transpose(xt, t25, H, sn);
    int64_t t12 = t25;
    if (e->downsample.w) {
        t12 = qtts_conv1d_causal_len(t25, e->downsample.stride);
        ds = qtts_malloc((size_t)(H * t12) * sizeof(float), err);
        if (!ds || run_conv(pool, &e->downsample, sn, t25, QTTS_PAD_REPLICATE, ds, err)) goto done;
    } else {
        ds = sn;
        sn = NULL;
    }
    if (tap) tap(tap_ctx, "enc_downsample_out", ds, H, t12);
    /* keep ceil(n / hop) frames (the network already produces exactly that many) */
    int64_t frames = qtts_codec_encoder_frames(e, n);
    if (frames > t12) frames = t12;
    dst = qtts_malloc((size_t)(t12 * H) * sizeof(float), err);
    sem = qtts_malloc((size_t)(t12 * d) * sizeof(float), err);
    ac = qtts_malloc((size_t)(t12 * d) * sizeof(float), err);
    int nt = qtts_pool_size(pool);
    scratch = qtts_malloc((size_t)nt * (size_t)(d + e->codebook_size) * sizeof(float), err);
    if (!dst || !sem || !ac || !scratch) goto done;
    transpose(ds, H, t12, dst);
    if (!e->semantic.has_proj)
        memcpy(sem, dst, (size_t)(t12 * H) * sizeof(float));
    else if (qtts_linear(pool, &e->semantic.proj, NULL, dst, t12, sem))
        goto oom;
    if (e->acoustic.n_books > 0) {
        if (!e->acoustic.has_proj)
            memcpy(ac, dst, (size_t)(t12 * H) * sizeof(float));
        else if (qtts_linear(pool, &e->acoustic.proj, NULL, dst, t12, ac))
            goto oom;
    }
    rvq_job j = {e, sem, ac, n_q, d, codes, scratch};
    qtts_parallel_for(pool, frames, 1, rvq_frames, &j);
    rc = 0;
    goto done;
oom:
    qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory in a quantizer projection (%lld frames)", (long long)t12);
done:
    if (rc) qtts_fail_prefix(err, "speech tokenizer encoder");
    free(sn);
    free(xt);
    free(ds);
    free(dst);
    free(sem);
    free(ac);
    free(scratch);
    return rc;
}
