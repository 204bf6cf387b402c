/* Speech-tokenizer decoder: see codec_decoder.h and spec sections 9.2-9.4.
 *
 * Layout plan. The low-rate layers (RVQ, pre_conv, transformer, upsample
 * ConvNeXt stages, decoder.0 and the first block's transposed conv: at most a
 * few samples per frame) run TIME-MAJOR ([samples][channels]) as im2col rows
 * times a weight matrix through qtts_linear, with the rows of all streams of
 * a batched step stacked into one weight pass. From the first residual unit
 * on (>= 32 samples per frame) each stream runs CHANNEL-MAJOR through the
 * blocked direct convolution of tensor/conv.h, which vectorizes over time. */
#include "model/codec_decoder.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tensor/conv.h"
#include "tensor/ops.h"

enum { MAX_STAGES = 8, N_RES = 3, RES_K = 7 };
static const int64_t k_res_dilations[N_RES] = {1, 3, 9}; /* fixed by the architecture */

/* A dense layer run time-major: y[m][:] = W x[m][:K] + bias (W packed for qtts_gemm). */
typedef struct {
    qtts_gemm_b w;
    float *bias; /* [N] or NULL */
    int64_t K, N;
} lin;

/* A causal conv run time-major: y rows = im2col(x with history) * wt + bias.
 * For a transposed conv each input row yields `mult` output rows. */
typedef struct {
    lin l;
    int64_t c_in, c_out, k, dil, hist, mult;
} tmconv;

typedef struct {
    float *ea, *ib; /* exp(alpha), 1/(exp(beta)+1e-9) */
} snake;

typedef struct {
    lin qkv, o, gate_up, down; /* q|k|v and gate|up stacked: one weight pass each */
    float *in_norm, *post_norm, *ls_attn, *ls_mlp;
} tlayer;

typedef struct {
    tmconv tconv;
    float *dw_wt, *dw_b; /* depthwise [k][L] (transposed), bias [L] */
    int64_t dw_k;
    float *ln_w, *ln_b, *gamma;
    lin pw1, pw2;
    int64_t inner;
} upstage;

typedef struct {
    snake a1, a2;
    qtts_conv c1, c2;
} resunit;

typedef struct {
    int64_t in, out, rate, spf_in; /* spf_in: input samples per frame */
    int tm;                        /* transposed conv time-major (low rate) */
    snake act;
    tmconv tconv_tm;
    qtts_conv tconv_cm;
    resunit ru[N_RES];
} dblock;

enum {
    WS_A0, WS_AR, WS_Z, WS_Z2, WS_P, WS_COL, WS_HTMP, WS_X, WS_H, WS_Q, WS_AO, WS_O, WS_G, WS_U,
    WS_T0, WS_PA, WS_PB, WS_DW, WS_PW1, WS_CMA, WS_XP, WS_PH, WS_TMP, WS_PACK, WS_BLK,
    WS_COUNT = WS_BLK + MAX_STAGES
};

struct qtts_codec_decoder {
    qtts_codec_config cfg;
    qtts_store *owned_store;
    int64_t nq, cb, cd, half, L, Hd, nh, nkv, hd, I, W, D, n_up, n_blk, U, fs, n_layers, d_last;
    float rms_eps;
    double rope_theta;
    float *codebooks; /* [nq][cb][half], normalised */
    lin p_first, p_rest;
    tmconv pre;
    lin in_proj, out_proj;
    float *norm_w;
    tlayer *layers;
    upstage up[MAX_STAGES];
    tmconv dec0;
    dblock blk[MAX_STAGES];
    snake fin_act;
    qtts_conv fin_conv;
    int64_t max_chunk;
    int64_t cm_budget; /* bytes of a block output kept cache-resident (see cm_chain) */
    void **allocs;
    int n_allocs, cap_allocs;
    float *ws[WS_COUNT];
    size_t ws_cap[WS_COUNT];
};

struct qtts_codec_stream {
    const qtts_codec_decoder *dec;
    int64_t frames, pos, n_cached, kv_cap;
    float *pre_hist;
    float **kc, **vc;
    float *up_hist[MAX_STAGES], *up_dw_hist[MAX_STAGES];
    float *dec0_hist;
    float *blk_hist[MAX_STAGES];
    float *ru_hist[MAX_STAGES][N_RES];
    float *fin_hist;
    qtts_codec_stage_fn dbg;
    void *dbg_ctx;
};

/* ---- loading ------------------------------------------------------------ */

static void *keep(qtts_codec_decoder *d, void *p, qtts_err *err) {
    if (!p) return NULL;
    if (d->n_allocs == d->cap_allocs) {
        int nc = d->cap_allocs ? d->cap_allocs * 2 : 256;
        void **na = realloc(d->allocs, (size_t)nc * sizeof *na);
        if (!na) {
            free(p);
            qtts_fail(err, "speech tokenizer decoder: out of memory");
            return NULL;
        }
        d->allocs = na;
        d->cap_allocs = nc;
    }
    d->allocs[d->n_allocs++] = p;
    return p;
}

/* f32 copy of a tensor of the given shape (ndim entries, -1 = any). */
/* Frees a kept buffer that was only a packing source (keeps the RSS to the
 * packed weights). */
static void unkeep(qtts_codec_decoder *d, void *p) {
    for (int i = d->n_allocs - 1; i >= 0; i--)
        if (d->allocs[i] == p) {
            d->allocs[i] = d->allocs[--d->n_allocs];
            free(p);
            return;
        }
}

static float *load_f32(qtts_codec_decoder *d, const qtts_store *st, const char *name, int ndim, const int64_t *shape,
                       qtts_err *err) {
    const qtts_tensor *t = qtts_store_get(st, name, ndim, shape, err);
    if (!t) return NULL;
    return keep(d, qtts_tensor_to_f32(t, err), err);
}

static float *load_vec(qtts_codec_decoder *d, const qtts_store *st, const char *name, int64_t n, qtts_err *err) {
    return load_f32(d, st, name, 1, &n, err);
}

/* A dense layer from a row-major [N][K] weight (PyTorch Linear / folded conv). */
static int make_lin(qtts_codec_decoder *d, const float *w, int64_t N, int64_t K, float *bias, lin *l, qtts_err *err) {
    if (qtts_gemm_b_init(&l->w, w, N, K, err)) return -1;
    if (!keep(d, l->w.p, err)) {
        l->w.p = NULL;
        return -1;
    }
    l->bias = bias;
    l->K = K;
    l->N = N;
    return 0;
}

/* Linear weight `name` of shape [rows][cols] (-1 = any; extra trailing dims fold into cols if ndim 3). */
static int load_lin(qtts_codec_decoder *d, const qtts_store *st, const char *name, int ndim, const int64_t *shape,
                    const char *bias_name, lin *l, qtts_err *err) {
    const qtts_tensor *t = qtts_store_get(st, name, ndim, shape, err);
    if (!t) return -1;
    int64_t rows = t->shape[0], cols = qtts_tensor_numel(t) / (rows ? rows : 1);
    float *b = NULL;
    if (bias_name && !(b = load_vec(d, st, bias_name, rows, err))) return -1;
    float *w = qtts_tensor_to_f32(t, err);
    if (!w) return -1;
    int rc = make_lin(d, w, rows, cols, b, l, err);
    free(w);
    return rc;
}

static int load_mat(qtts_codec_decoder *d, const qtts_store *st, const char *name, int64_t rows, int64_t cols,
                    lin *l, qtts_err *err) {
    return load_lin(d, st, name, 2, (int64_t[]){rows, cols}, NULL, l, err);
}

/* Several [rows_i][cols] weights "<prefix>.<sub_i>.weight" stacked into one layer. */
static int stack_lin(qtts_codec_decoder *d, const qtts_store *st, const char *prefix, const char *const *subs,
                     const int64_t *rows, int n, int64_t cols, lin *l, qtts_err *err) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += rows[i];
    float *w = qtts_malloc((size_t)(total * cols) * sizeof(float), err);
    if (!w) return -1;
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s.%s.weight", prefix, subs[i]);
        const qtts_tensor *t = qtts_store_get2(st, name, rows[i], cols, err);
        if (!t || qtts_convert_to_f32(t->type, t->data, w + off * cols, rows[i] * cols, err)) {
            free(w);
            return -1;
        }
        off += rows[i];
    }
    int rc = make_lin(d, w, total, cols, NULL, l, err);
    free(w);
    return rc;
}

static int load_snake(qtts_codec_decoder *d, const qtts_store *st, const char *prefix, int64_t C, snake *s,
                      qtts_err *err) {
    char n[256];
    snprintf(n, sizeof n, "%s.alpha", prefix);
    float *a = load_vec(d, st, n, C, err);
    if (!a) return -1;
    snprintf(n, sizeof n, "%s.beta", prefix);
    float *b = load_vec(d, st, n, C, err);
    if (!b) return -1;
    for (int64_t c = 0; c < C; c++) {
        a[c] = expf(a[c]);
        b[c] = 1.0f / (expf(b[c]) + 1e-9f);
    }
    s->ea = a;
    s->ib = b;
    return 0;
}

/* Plain causal conv kept as its [c_out][c_in*k] matrix (time-major use). */
static int load_tmconv(qtts_codec_decoder *d, const qtts_store *st, const char *prefix, int64_t c_out, int64_t c_in,
                       int64_t k, int64_t dil, tmconv *c, qtts_err *err) {
    char n[256];
    char bn[256];
    snprintf(n, sizeof n, "%s.weight", prefix);
    snprintf(bn, sizeof bn, "%s.bias", prefix);
    if (load_lin(d, st, n, 3, (int64_t[]){c_out, c_in, k}, bn, &c->l, err)) return -1;
    c->c_in = c_in;
    c->c_out = c_out;
    c->k = k;
    c->dil = dil;
    c->hist = (k - 1) * dil;
    c->mult = 1;
    return 0;
}

/* Causal ConvTranspose (weight [c_in][c_out][k], stride s) as a time-major phase matrix. */
static int load_tmconv_transposed(qtts_codec_decoder *d, const qtts_store *st, const char *prefix, int64_t c_in,
                                  int64_t c_out, int64_t k, int64_t s, tmconv *c, qtts_err *err) {
    char n[256];
    snprintf(n, sizeof n, "%s.weight", prefix);
    float *w = load_f32(d, st, n, 3, (int64_t[]){c_in, c_out, k}, err);
    if (!w) return -1;
    snprintf(n, sizeof n, "%s.bias", prefix);
    float *b = load_vec(d, st, n, c_out, err);
    if (!b) return -1;
    int64_t taps = 0;
    float *m = qtts_conv_tm_transposed_matrix(w, c_in, c_out, k, s, &taps, err);
    unkeep(d, w);
    if (!m) return -1;
    float *bt = keep(d, qtts_malloc((size_t)(s * c_out) * sizeof(float), err), err);
    if (!bt) {
        free(m);
        return -1;
    }
    for (int64_t j = 0; j < s; j++) memcpy(bt + j * c_out, b, (size_t)c_out * sizeof(float));
    int rc = make_lin(d, m, s * c_out, c_in * taps, bt, &c->l, err);
    free(m);
    if (rc) return -1;
    c->c_in = c_in;
    c->c_out = c_out;
    c->k = taps;
    c->dil = 1;
    c->hist = taps - 1;
    c->mult = s;
    return 0;
}

static int load_cmconv(qtts_codec_decoder *d, const qtts_store *st, const char *prefix, int64_t c_out, int64_t c_in,
                       int64_t k, int64_t dil, qtts_conv *c, qtts_err *err) {
    char n[256];
    snprintf(n, sizeof n, "%s.weight", prefix);
    float *w = load_f32(d, st, n, 3, (int64_t[]){c_out, c_in, k}, err);
    if (!w) return -1;
    snprintf(n, sizeof n, "%s.bias", prefix);
    float *b = load_vec(d, st, n, c_out, err);
    if (!b) return -1;
    int rc = qtts_conv_init(c, w, b, c_out, c_in, k, dil, err);
    unkeep(d, w);
    return rc;
}

static int load_all(qtts_codec_decoder *d, const qtts_store *st, qtts_err *err) {
    const qtts_codec_config *cfg = &d->cfg;
    char n[256];
    d->nq = cfg->dec.num_quantizers;
    d->cb = cfg->dec.codebook_size;
    d->cd = cfg->dec.codebook_dim;
    d->half = d->cd / 2;
    d->L = cfg->dec.latent_dim;
    d->Hd = cfg->dec.hidden;
    d->nh = cfg->dec.heads;
    d->nkv = cfg->dec.kv_heads;
    d->hd = cfg->dec.head_dim;
    d->I = cfg->dec.intermediate;
    d->W = cfg->dec.sliding_window;
    d->D = cfg->dec.decoder_dim;
    d->n_up = cfg->dec.n_upsampling_ratios;
    d->n_blk = cfg->dec.n_upsample_rates;
    d->n_layers = cfg->dec.layers;
    d->rms_eps = (float)cfg->dec.rms_eps;
    d->rope_theta = cfg->dec.rope_theta;
    d->max_chunk = 8;
    d->cm_budget = 1 << 19;
    if (d->nq < 2 || d->cb <= 0 || d->cd < 2 || d->cd % 2 || d->L <= 0 || d->Hd <= 0 || d->nh <= 0 || d->nkv <= 0 ||
        d->nh % d->nkv || d->hd <= 0 || d->hd % 2 || d->I <= 0 || d->W <= 0 || d->D <= 0 || d->n_layers < 0 ||
        d->n_up < 0 || d->n_up > MAX_STAGES || d->n_blk < 1 || d->n_blk > MAX_STAGES || d->D % (1LL << d->n_blk))
        return qtts_fail(err, "speech tokenizer decoder config: unsupported sizes (quantizers %lld, codebook dim %lld, "
                              "latent %lld, hidden %lld, heads %lld/%lld x %lld, window %lld, decoder dim %lld, "
                              "%lld upsample rates, %lld upsampling ratios)",
                         (long long)d->nq, (long long)d->cd, (long long)d->L, (long long)d->Hd, (long long)d->nh,
                         (long long)d->nkv, (long long)d->hd, (long long)d->W, (long long)d->D, (long long)d->n_blk,
                         (long long)d->n_up);
    int64_t total = 1;
    d->U = 1;
    for (int64_t i = 0; i < d->n_up; i++) {
        if (cfg->dec.upsampling_ratios[i] <= 0) return qtts_fail(err, "speech tokenizer: bad upsampling ratio");
        d->U *= cfg->dec.upsampling_ratios[i];
    }
    total = d->U;
    for (int64_t i = 0; i < d->n_blk; i++) {
        if (cfg->dec.upsample_rates[i] <= 0) return qtts_fail(err, "speech tokenizer: bad upsample rate");
        total *= cfg->dec.upsample_rates[i];
    }
    if (cfg->frame_samples > 0 && cfg->frame_samples != total)
        return qtts_fail(err, "speech tokenizer: decode_upsample_rate %lld != product of the upsampling factors %lld",
                         (long long)cfg->frame_samples, (long long)total);
    d->fs = total;

    /* Codebooks: embedding_sum / max(cluster_usage, 1e-5). */
    d->codebooks = keep(d, qtts_malloc((size_t)(d->nq * d->cb * d->half) * sizeof(float), err), err);
    if (!d->codebooks) return -1;
    for (int64_t j = 0; j < d->nq; j++) {
        const char *grp = j == 0 ? "rvq_first" : "rvq_rest";
        int64_t li = j == 0 ? 0 : j - 1;
        snprintf(n, sizeof n, "decoder.quantizer.%s.vq.layers.%lld._codebook.embedding_sum", grp, (long long)li);
        const qtts_tensor *te = qtts_store_get2(st, n, d->cb, d->half, err);
        if (!te) return -1;
        snprintf(n, sizeof n, "decoder.quantizer.%s.vq.layers.%lld._codebook.cluster_usage", grp, (long long)li);
        const qtts_tensor *tu = qtts_store_get1(st, n, d->cb, err);
        if (!tu) return -1;
        float *e = qtts_tensor_to_f32(te, err), *u = e ? qtts_tensor_to_f32(tu, err) : NULL;
        if (!e || !u) {
            free(e);
            free(u);
            return -1;
        }
        float *dst = d->codebooks + j * d->cb * d->half;
        for (int64_t c = 0; c < d->cb; c++) {
            float us = u[c] < 1e-5f ? 1e-5f : u[c];
            for (int64_t i = 0; i < d->half; i++) dst[c * d->half + i] = e[c * d->half + i] / us;
        }
        free(e);
        free(u);
    }
    if (load_lin(d, st, "decoder.quantizer.rvq_first.output_proj.weight", 3, (int64_t[]){d->cd, d->half, 1}, NULL,
                 &d->p_first, err) ||
        load_lin(d, st, "decoder.quantizer.rvq_rest.output_proj.weight", 3, (int64_t[]){d->cd, d->half, 1}, NULL,
                 &d->p_rest, err))
        return -1;

    if (load_tmconv(d, st, "decoder.pre_conv.conv", d->L, d->cd, 3, 1, &d->pre, err)) return -1;

    if (load_lin(d, st, "decoder.pre_transformer.input_proj.weight", 2, (int64_t[]){d->Hd, d->L},
                 "decoder.pre_transformer.input_proj.bias", &d->in_proj, err) ||
        load_lin(d, st, "decoder.pre_transformer.output_proj.weight", 2, (int64_t[]){d->L, d->Hd},
                 "decoder.pre_transformer.output_proj.bias", &d->out_proj, err))
        return -1;
    if (!(d->norm_w = load_vec(d, st, "decoder.pre_transformer.norm.weight", d->Hd, err))) return -1;
    d->layers = keep(d, qtts_calloc((size_t)(d->n_layers ? d->n_layers : 1), sizeof *d->layers, err), err);
    if (!d->layers) return -1;
    int64_t qd = d->nh * d->hd, kvd = d->nkv * d->hd;
    for (int64_t l = 0; l < d->n_layers; l++) {
        tlayer *ly = &d->layers[l];
        char p[128];
        snprintf(p, sizeof p, "decoder.pre_transformer.layers.%lld", (long long)l);
#define LMAT(field, sub, r, c)                                    \
    snprintf(n, sizeof n, "%s.%s.weight", p, sub);                \
    if (load_mat(d, st, n, r, c, &ly->field, err)) return -1;
#define LVEC(field, sub)                                          \
    snprintf(n, sizeof n, "%s.%s", p, sub);                       \
    if (!(ly->field = load_vec(d, st, n, d->Hd, err))) return -1;
        {
            const char *subs[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"};
            const int64_t rows[] = {qd, kvd, kvd};
            if (stack_lin(d, st, p, subs, rows, 3, d->Hd, &ly->qkv, err)) return -1;
            const char *mlp[] = {"mlp.gate_proj", "mlp.up_proj"};
            const int64_t mrows[] = {d->I, d->I};
            if (stack_lin(d, st, p, mlp, mrows, 2, d->Hd, &ly->gate_up, err)) return -1;
        }
        LMAT(o, "self_attn.o_proj", d->Hd, qd)
        LMAT(down, "mlp.down_proj", d->Hd, d->I)
        LVEC(in_norm, "input_layernorm.weight")
        LVEC(post_norm, "post_attention_layernorm.weight")
        LVEC(ls_attn, "self_attn_layer_scale.scale")
        LVEC(ls_mlp, "mlp_layer_scale.scale")
#undef LMAT
#undef LVEC
    }

    for (int64_t u = 0; u < d->n_up; u++) {
        upstage *us = &d->up[u];
        int64_t s = cfg->dec.upsampling_ratios[u];
        char p[128];
        snprintf(p, sizeof p, "decoder.upsample.%lld.0.conv", (long long)u);
        if (load_tmconv_transposed(d, st, p, d->L, d->L, s, s, &us->tconv, err)) return -1;
        snprintf(n, sizeof n, "decoder.upsample.%lld.1.dwconv.conv.weight", (long long)u);
        const qtts_tensor *tw = qtts_store_get3(st, n, d->L, 1, -1, err);
        if (!tw) return -1;
        us->dw_k = tw->shape[2];
        float *w = qtts_tensor_to_f32(tw, err);
        if (!w) return -1;
        us->dw_wt = keep(d, qtts_malloc((size_t)(us->dw_k * d->L) * sizeof(float), err), err);
        if (!us->dw_wt) {
            free(w);
            return -1;
        }
        for (int64_t c = 0; c < d->L; c++)
            for (int64_t kk = 0; kk < us->dw_k; kk++) us->dw_wt[kk * d->L + c] = w[c * us->dw_k + kk];
        free(w);
#define UVEC(field, sub, len)                                                          \
    snprintf(n, sizeof n, "decoder.upsample.%lld.1.%s", (long long)u, sub);            \
    if (!(us->field = load_vec(d, st, n, len, err))) return -1;
        UVEC(dw_b, "dwconv.conv.bias", d->L)
        UVEC(ln_w, "norm.weight", d->L)
        UVEC(ln_b, "norm.bias", d->L)
        UVEC(gamma, "gamma", d->L)
#undef UVEC
        char bn[256];
        snprintf(n, sizeof n, "decoder.upsample.%lld.1.pwconv1.weight", (long long)u);
        snprintf(bn, sizeof bn, "decoder.upsample.%lld.1.pwconv1.bias", (long long)u);
        if (load_lin(d, st, n, 2, (int64_t[]){-1, d->L}, bn, &us->pw1, err)) return -1;
        us->inner = us->pw1.N;
        snprintf(n, sizeof n, "decoder.upsample.%lld.1.pwconv2.weight", (long long)u);
        snprintf(bn, sizeof bn, "decoder.upsample.%lld.1.pwconv2.bias", (long long)u);
        if (load_lin(d, st, n, 2, (int64_t[]){d->L, us->inner}, bn, &us->pw2, err)) return -1;
    }

    {
        snprintf(n, sizeof n, "decoder.decoder.0.conv.weight");
        const qtts_tensor *t = qtts_store_get3(st, n, d->D, d->L, -1, err);
        if (!t) return -1;
        if (load_tmconv(d, st, "decoder.decoder.0.conv", d->D, d->L, t->shape[2], 1, &d->dec0, err)) return -1;
    }
    int64_t spf = d->U;
    for (int64_t b = 0; b < d->n_blk; b++) {
        dblock *bk = &d->blk[b];
        bk->in = d->D >> b;
        bk->out = d->D >> (b + 1);
        bk->rate = cfg->dec.upsample_rates[b];
        bk->spf_in = spf;
        /* Only the first block may run its transposed conv time-major: the
         * residual units after it are channel-major. */
        bk->tm = b == 0 && spf < 16;
        char p[128];
        snprintf(p, sizeof p, "decoder.decoder.%lld.block.0", (long long)b + 1);
        if (load_snake(d, st, p, bk->in, &bk->act, err)) return -1;
        snprintf(p, sizeof p, "decoder.decoder.%lld.block.1.conv", (long long)b + 1);
        snprintf(n, sizeof n, "%s.weight", p);
        const qtts_tensor *t = qtts_store_get3(st, n, bk->in, bk->out, -1, err);
        if (!t) return -1;
        int64_t k = t->shape[2];
        if (bk->tm) {
            if (load_tmconv_transposed(d, st, p, bk->in, bk->out, k, bk->rate, &bk->tconv_tm, err)) return -1;
        } else {
            float *w = load_f32(d, st, n, 3, (int64_t[]){bk->in, bk->out, k}, err);
            snprintf(n, sizeof n, "%s.bias", p);
            float *bb = w ? load_vec(d, st, n, bk->out, err) : NULL;
            int rc = !bb || qtts_conv_init_transposed(&bk->tconv_cm, w, bb, bk->in, bk->out, k, bk->rate, err);
            if (w) unkeep(d, w);
            if (rc) return -1;
        }
        for (int r = 0; r < N_RES; r++) {
            resunit *ru = &bk->ru[r];
            snprintf(p, sizeof p, "decoder.decoder.%lld.block.%d.act1", (long long)b + 1, r + 2);
            if (load_snake(d, st, p, bk->out, &ru->a1, err)) return -1;
            snprintf(p, sizeof p, "decoder.decoder.%lld.block.%d.act2", (long long)b + 1, r + 2);
            if (load_snake(d, st, p, bk->out, &ru->a2, err)) return -1;
            snprintf(p, sizeof p, "decoder.decoder.%lld.block.%d.conv1.conv", (long long)b + 1, r + 2);
            if (load_cmconv(d, st, p, bk->out, bk->out, RES_K, k_res_dilations[r], &ru->c1, err)) return -1;
            snprintf(p, sizeof p, "decoder.decoder.%lld.block.%d.conv2.conv", (long long)b + 1, r + 2);
            if (load_cmconv(d, st, p, bk->out, bk->out, 1, 1, &ru->c2, err)) return -1;
        }
        spf *= bk->rate;
    }
    d->d_last = d->D >> d->n_blk;
    {
        char p[128];
        snprintf(p, sizeof p, "decoder.decoder.%lld", (long long)d->n_blk + 1);
        if (load_snake(d, st, p, d->d_last, &d->fin_act, err)) return -1;
        snprintf(n, sizeof n, "decoder.decoder.%lld.conv.weight", (long long)d->n_blk + 2);
        const qtts_tensor *t = qtts_store_get3(st, n, 1, d->d_last, -1, err);
        if (!t) return -1;
        snprintf(p, sizeof p, "decoder.decoder.%lld.conv", (long long)d->n_blk + 2);
        if (load_cmconv(d, st, p, 1, d->d_last, t->shape[2], 1, &d->fin_conv, err)) return -1;
    }
    return 0;
}

qtts_codec_decoder *qtts_codec_decoder_load(const qtts_store *st, const qtts_codec_config *cfg, qtts_err *err) {
    qtts_codec_decoder *d = qtts_calloc(1, sizeof *d, err);
    if (!d) return NULL;
    d->cfg = *cfg;
    if (load_all(d, st, err)) {
        qtts_codec_decoder_free(d);
        return NULL;
    }
    return d;
}

static int is_dir(const char *p) {
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

qtts_codec_decoder *qtts_codec_decoder_open(const char *path, qtts_err *err) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/speech_tokenizer", path);
    if (!is_dir(dir)) snprintf(dir, sizeof dir, "%s", path);
    if (!is_dir(dir)) {
        qtts_fail(err, "%s: not a model or speech-tokenizer folder", path);
        return NULL;
    }
    qtts_codec_config cfg;
    if (qtts_codec_config_load(&cfg, dir, err)) return NULL;
    qtts_store *st = qtts_store_open(dir, err);
    if (!st) return NULL;
    qtts_codec_decoder *d = qtts_codec_decoder_load(st, &cfg, err);
    if (!d) {
        qtts_store_free(st);
        return NULL;
    }
    d->owned_store = st;
    return d;
}

qtts_store *qtts_codec_decoder_owned_store(const qtts_codec_decoder *dec) { return dec->owned_store; }

int qtts_codec_decoder_set_precision(qtts_codec_decoder *d, qtts_decoder_precision p, qtts_err *err) {
    if (p == QTTS_DECODER_F32) {
        if (d->fin_conv.wbf) return qtts_fail(err, "the decoder's f32 weights were already dropped for bf16");
        return 0;
    }
    for (int64_t b = 0; b < d->n_blk; b++) {
        dblock *bk = &d->blk[b];
        if (!bk->tm && qtts_conv_to_bf16(&bk->tconv_cm, err)) return -1;
        for (int r = 0; r < N_RES; r++)
            if (qtts_conv_to_bf16(&bk->ru[r].c1, err) || qtts_conv_to_bf16(&bk->ru[r].c2, err)) return -1;
    }
    return qtts_conv_to_bf16(&d->fin_conv, err);
}

int qtts_decoder_precision_choose(const char *opt, qtts_dtype lm_weights, qtts_decoder_precision *out, qtts_err *err) {
    if (!opt || !*opt || !strcmp(opt, "auto")) {
        int quantized = lm_weights == QTTS_Q8_0 || lm_weights == QTTS_Q4_K;
        *out = quantized && qtts_conv_bf16_supported() ? QTTS_DECODER_BF16 : QTTS_DECODER_F32;
        return 0;
    }
    if (!strcmp(opt, "f32")) *out = QTTS_DECODER_F32;
    else if (!strcmp(opt, "bf16")) *out = QTTS_DECODER_BF16;
    else return qtts_fail(err, "unknown decoder precision \"%s\" (auto, f32, bf16)", opt);
    return 0;
}

const char *qtts_decoder_precision_name(qtts_decoder_precision p) { return p == QTTS_DECODER_BF16 ? "bf16" : "f32"; }

qtts_decoder_precision qtts_codec_decoder_precision(const qtts_codec_decoder *d) {
    return d->fin_conv.wbf ? QTTS_DECODER_BF16 : QTTS_DECODER_F32;
}

void qtts_codec_decoder_free(qtts_codec_decoder *d) {
    if (!d) return;
    for (int b = 0; b < MAX_STAGES; b++) {
        qtts_conv_free(&d->blk[b].tconv_cm);
        for (int r = 0; r < N_RES; r++) {
            qtts_conv_free(&d->blk[b].ru[r].c1);
            qtts_conv_free(&d->blk[b].ru[r].c2);
        }
    }
    qtts_conv_free(&d->fin_conv);
    for (int i = 0; i < d->n_allocs; i++) free(d->allocs[i]);
    free(d->allocs);
    for (int i = 0; i < WS_COUNT; i++) free(d->ws[i]);
    qtts_store_free(d->owned_store);
    free(d);
}

int64_t qtts_codec_decoder_num_quantizers(const qtts_codec_decoder *d) { return d->nq; }
int64_t qtts_codec_decoder_codebook_size(const qtts_codec_decoder *d) { return d->cb; }
int64_t qtts_codec_decoder_frame_samples(const qtts_codec_decoder *d) { return d->fs; }
int64_t qtts_codec_decoder_sample_rate(const qtts_codec_decoder *d) {
    return d->cfg.sample_rate > 0 ? d->cfg.sample_rate : 24000;
}
void qtts_codec_decoder_set_max_chunk(qtts_codec_decoder *d, int64_t frames) {
    d->max_chunk = frames < 1 ? 1 : frames > 256 ? 256 : frames;
}

void qtts_codec_decoder_set_cache_budget(qtts_codec_decoder *d, int64_t bytes) {
    d->cm_budget = bytes < 1 ? 1 : bytes;
}

double qtts_codec_decoder_macs_per_frame(const qtts_codec_decoder *d) {
    double m = 2.0 * d->cd * d->half + (double)d->L * d->cd * d->pre.k;
    int64_t qd = d->nh * d->hd, kvd = d->nkv * d->hd;
    m += 2.0 * d->Hd * d->L + d->n_layers * (2.0 * d->Hd * qd + 2.0 * d->Hd * kvd + 3.0 * d->Hd * d->I);
    int64_t spf = 1;
    for (int64_t u = 0; u < d->n_up; u++) {
        const upstage *us = &d->up[u];
        m += (double)spf * us->tconv.l.N * us->tconv.l.K;
        spf *= us->tconv.mult;
        m += (double)spf * (d->L * us->dw_k + 2.0 * d->L * us->inner);
    }
    m += (double)spf * d->dec0.l.N * d->dec0.l.K;
    for (int64_t b = 0; b < d->n_blk; b++) {
        const dblock *bk = &d->blk[b];
        m += (double)spf * bk->in * bk->out * (bk->tm ? bk->tconv_tm.k : bk->tconv_cm.k) * bk->rate;
        spf *= bk->rate;
        for (int r = 0; r < N_RES; r++) m += (double)spf * bk->out * bk->out * (RES_K + 1);
    }
    m += (double)spf * d->d_last * d->fin_conv.k;
    return m;
}

/* ---- streams ------------------------------------------------------------ */

void qtts_codec_stream_free(qtts_codec_stream *s) {
    if (!s) return;
    const qtts_codec_decoder *d = s->dec;
    free(s->pre_hist);
    if (s->kc)
        for (int64_t l = 0; l < d->n_layers; l++) free(s->kc[l]);
    if (s->vc)
        for (int64_t l = 0; l < d->n_layers; l++) free(s->vc[l]);
    free(s->kc);
    free(s->vc);
    for (int i = 0; i < MAX_STAGES; i++) {
        free(s->up_hist[i]);
        free(s->up_dw_hist[i]);
        free(s->blk_hist[i]);
        for (int r = 0; r < N_RES; r++) free(s->ru_hist[i][r]);
    }
    free(s->dec0_hist);
    free(s->fin_hist);
    free(s);
}

static float *zalloc(int64_t n, int *fail) {
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    if (!p) *fail = 1;
    return p;
}

qtts_codec_stream *qtts_codec_stream_new(const qtts_codec_decoder *d, qtts_err *err) {
    qtts_codec_stream *s = qtts_calloc(1, sizeof *s, err);
    if (!s) return NULL;
    s->dec = d;
    int fail = 0;
    s->pre_hist = zalloc(d->pre.hist * d->pre.c_in, &fail);
    s->kc = calloc((size_t)(d->n_layers ? d->n_layers : 1), sizeof *s->kc);
    s->vc = calloc((size_t)(d->n_layers ? d->n_layers : 1), sizeof *s->vc);
    if (!s->kc || !s->vc) fail = 1;
    for (int64_t u = 0; u < d->n_up; u++) {
        s->up_hist[u] = zalloc(d->up[u].tconv.hist * d->L, &fail);
        s->up_dw_hist[u] = zalloc((d->up[u].dw_k - 1) * d->L, &fail);
    }
    s->dec0_hist = zalloc(d->dec0.hist * d->L, &fail);
    for (int64_t b = 0; b < d->n_blk; b++) {
        const dblock *bk = &d->blk[b];
        int64_t h = bk->tm ? bk->tconv_tm.hist : qtts_conv_history(&bk->tconv_cm);
        s->blk_hist[b] = zalloc(h * bk->in, &fail);
        for (int r = 0; r < N_RES; r++) s->ru_hist[b][r] = zalloc(qtts_conv_history(&bk->ru[r].c1) * bk->out, &fail);
    }
    s->fin_hist = zalloc(qtts_conv_history(&d->fin_conv) * d->d_last, &fail);
    if (fail) {
        qtts_codec_stream_free(s);
        qtts_fail(err, "speech tokenizer decoder: out of memory for a stream");
        return NULL;
    }
    return s;
}

void qtts_codec_stream_reset(qtts_codec_stream *s) {
    const qtts_codec_decoder *d = s->dec;
    s->frames = s->pos = s->n_cached = 0;
    memset(s->pre_hist, 0, sizeof(float) * (size_t)(d->pre.hist * d->pre.c_in));
    for (int64_t u = 0; u < d->n_up; u++) {
        memset(s->up_hist[u], 0, sizeof(float) * (size_t)(d->up[u].tconv.hist * d->L));
        memset(s->up_dw_hist[u], 0, sizeof(float) * (size_t)((d->up[u].dw_k - 1) * d->L));
    }
    memset(s->dec0_hist, 0, sizeof(float) * (size_t)(d->dec0.hist * d->L));
    for (int64_t b = 0; b < d->n_blk; b++) {
        const dblock *bk = &d->blk[b];
        int64_t h = bk->tm ? bk->tconv_tm.hist : qtts_conv_history(&bk->tconv_cm);
        memset(s->blk_hist[b], 0, sizeof(float) * (size_t)(h * bk->in));
        for (int r = 0; r < N_RES; r++)
            memset(s->ru_hist[b][r], 0, sizeof(float) * (size_t)(qtts_conv_history(&bk->ru[r].c1) * bk->out));
    }
    memset(s->fin_hist, 0, sizeof(float) * (size_t)(qtts_conv_history(&d->fin_conv) * d->d_last));
}

int64_t qtts_codec_stream_frames(const qtts_codec_stream *s) { return s->frames; }

void qtts_codec_stream_set_debug(qtts_codec_stream *s, qtts_codec_stage_fn fn, void *ctx) {
    s->dbg = fn;
    s->dbg_ctx = ctx;
}

static int kv_reserve(qtts_codec_stream *s, int64_t need, qtts_err *err) {
    const qtts_codec_decoder *d = s->dec;
    if (need <= s->kv_cap) return 0;
    int64_t kvd = d->nkv * d->hd;
    for (int64_t l = 0; l < d->n_layers; l++) {
        float *k = realloc(s->kc[l], (size_t)(need * kvd) * sizeof(float));
        if (k) s->kc[l] = k;
        float *v = realloc(s->vc[l], (size_t)(need * kvd) * sizeof(float));
        if (v) s->vc[l] = v;
        if (!k || !v) return qtts_fail(err, "speech tokenizer decoder: out of memory for the KV window");
    }
    s->kv_cap = need;
    return 0;
}

/* ---- forward ------------------------------------------------------------ */

static float *ws(qtts_codec_decoder *d, int slot, int64_t n, qtts_err *err) {
    size_t need = (size_t)(n > 0 ? n : 1);
    if (need > d->ws_cap[slot]) {
        free(d->ws[slot]);
        d->ws[slot] = malloc(need * sizeof(float));
        d->ws_cap[slot] = d->ws[slot] ? need : 0;
        if (!d->ws[slot]) {
            qtts_fail(err, "speech tokenizer decoder: out of memory (%zu floats of scratch)", need);
            return NULL;
        }
    }
    return d->ws[slot];
}

static void emit_tm(qtts_codec_stream *s, const char *stage, const float *x, int64_t C, int64_t n) {
    if (s->dbg) s->dbg(s->dbg_ctx, stage, x, C, n, 1, C);
}

static void emit_cm(qtts_codec_stream *s, const char *stage, const float *x, int64_t ld, int64_t C, int64_t n) {
    if (s->dbg) s->dbg(s->dbg_ctx, stage, x, C, n, ld, 1);
}

/* Small jobs run inline: waking the workers costs more than the work. */
static int lin_run(qtts_codec_decoder *d, qtts_pool *pool, const lin *l, const float *x, int64_t M, float *y,
                   qtts_err *err) {
    float *pack = ws(d, WS_PACK, (int64_t)qtts_gemm_pack_size(M, l->K), err);
    if (!pack) return -1;
    qtts_gemm(pool, M, x, l->K, &l->w, y, l->N, l->bias, 0, pack);
    return 0;
}

/* Time-major causal conv over the stacked rows of several streams: rows[i]
 * input rows of stream i (from x, c_in floats each), hists[i] its history. */
static int tmconv_run(qtts_codec_decoder *d, qtts_pool *pool, const tmconv *c, float *const *hists,
                      const int64_t *rows, int ns, const float *x, float *y, qtts_err *err) {
    int64_t N = 0, mx = 0;
    for (int i = 0; i < ns; i++) {
        N += rows[i];
        mx = rows[i] > mx ? rows[i] : mx;
    }
    if (c->hist == 0 && c->k == 1) return lin_run(d, pool, &c->l, x, N, y, err);
    int64_t cols = c->c_in * c->k;
    float *col = ws(d, WS_COL, N * cols, err), *tmp = ws(d, WS_HTMP, (c->hist + mx) * c->c_in, err);
    if (!col || !tmp) return -1;
    int64_t off = 0;
    for (int i = 0; i < ns; i++) {
        size_t hb = (size_t)(c->hist * c->c_in) * sizeof(float);
        memcpy(tmp, hists[i], hb);
        memcpy(tmp + c->hist * c->c_in, x + off * c->c_in, (size_t)(rows[i] * c->c_in) * sizeof(float));
        qtts_im2col_tm(tmp, c->c_in, c->c_in, rows[i], c->k, c->dil, col + off * cols);
        memcpy(hists[i], tmp + rows[i] * c->c_in, hb);
        off += rows[i];
    }
    return lin_run(d, pool, &c->l, col, N, y, err);
}

/* The transformer over the stacked rows x [N][L] -> y [N][L]. */
static int transformer(qtts_codec_decoder *d, qtts_pool *pool, qtts_codec_stream *const *S, const int64_t *F,
                       const int64_t *roff, int ns, int64_t N, const float *in, float *y, qtts_err *err) {
    int64_t Hd = d->Hd, qd = d->nh * d->hd, kvd = d->nkv * d->hd;
    int64_t qkvd = qd + 2 * kvd, I = d->I;
    float *X = ws(d, WS_X, N * Hd, err), *Hn = ws(d, WS_H, N * Hd, err), *QKV = ws(d, WS_Q, N * qkvd, err);
    float *AO = ws(d, WS_AO, N * qd, err), *O = ws(d, WS_O, N * Hd, err), *G = ws(d, WS_G, N * I, err);
    float *GU = ws(d, WS_U, N * 2 * I, err);
    if (!X || !Hn || !QKV || !AO || !O || !G || !GU) return -1;
    for (int i = 0; i < ns; i++)
        if (kv_reserve(S[i], d->W - 1 + F[i], err)) return -1;
    if (lin_run(d, pool, &d->in_proj, in, N, X, err)) return -1;
    for (int64_t l = 0; l < d->n_layers; l++) {
        const tlayer *ly = &d->layers[l];
        qtts_rmsnorm(pool, X, ly->in_norm, N, Hd, d->rms_eps, Hn);
        if (lin_run(d, pool, &ly->qkv, Hn, N, QKV, err)) return -1;
        for (int i = 0; i < ns; i++) {
            qtts_codec_stream *s = S[i];
            float *q = QKV + roff[i] * qkvd, *k = q + qd;
            qtts_rope_neox(q, F[i], qkvd, d->nh, d->hd, s->pos, d->rope_theta);
            qtts_rope_neox(k, F[i], qkvd, d->nkv, d->hd, s->pos, d->rope_theta);
            for (int64_t f = 0; f < F[i]; f++) {
                memcpy(s->kc[l] + (s->n_cached + f) * kvd, k + f * qkvd, (size_t)kvd * sizeof(float));
                memcpy(s->vc[l] + (s->n_cached + f) * kvd, k + f * qkvd + kvd, (size_t)kvd * sizeof(float));
            }
            qtts_attn_args a = {.q = q, .q_stride = qkvd, .k = s->kc[l], .v = s->vc[l], .kv_stride = kvd,
                                .out = AO + roff[i] * qd, .out_stride = qd, .n_q = F[i], .q_first = s->n_cached,
                                .n_heads = d->nh, .n_kv_heads = d->nkv, .head_dim = d->hd, .window = d->W,
                                .scale = 1.0f / sqrtf((float)d->hd)};
            qtts_attention(pool, &a);
            /* keep the last W-1 keys: all a later query can still see */
            int64_t have = s->n_cached + F[i], keepn = have < d->W - 1 ? have : d->W - 1;
            memmove(s->kc[l], s->kc[l] + (have - keepn) * kvd, (size_t)(keepn * kvd) * sizeof(float));
            memmove(s->vc[l], s->vc[l] + (have - keepn) * kvd, (size_t)(keepn * kvd) * sizeof(float));
        }
        if (lin_run(d, pool, &ly->o, AO, N, O, err)) return -1;
        for (int64_t r = 0; r < N; r++)
            for (int64_t c = 0; c < Hd; c++) X[r * Hd + c] += ly->ls_attn[c] * O[r * Hd + c];
        qtts_rmsnorm(pool, X, ly->post_norm, N, Hd, d->rms_eps, Hn);
        if (lin_run(d, pool, &ly->gate_up, Hn, N, GU, err)) return -1;
        for (int64_t r = 0; r < N; r++) {
            memcpy(G + r * I, GU + r * 2 * I, (size_t)I * sizeof(float));
            qtts_swiglu(G + r * I, GU + r * 2 * I + I, I);
        }
        if (lin_run(d, pool, &ly->down, G, N, O, err)) return -1;
        for (int64_t r = 0; r < N; r++)
            for (int64_t c = 0; c < Hd; c++) X[r * Hd + c] += ly->ls_mlp[c] * O[r * Hd + c];
    }
    for (int i = 0; i < ns; i++) {
        qtts_codec_stream *s = S[i];
        int64_t have = s->n_cached + F[i];
        s->n_cached = have < d->W - 1 ? have : d->W - 1;
        s->pos += F[i];
    }
    qtts_rmsnorm(pool, X, d->norm_w, N, Hd, d->rms_eps, Hn);
    return lin_run(d, pool, &d->out_proj, Hn, N, y, err);
}

typedef struct {
    float *x;
    int64_t width;
} gelu_job;

static void gelu_rows(void *p, int64_t r0, int64_t r1, int tid) {
    (void)tid;
    const gelu_job *j = p;
    qtts_gelu_erf(j->x + r0 * j->width, (r1 - r0) * j->width);
}

/* ConvNeXt block in place on x [rows][L] (stacked streams). */
static int convnext(qtts_codec_decoder *d, qtts_pool *pool, const upstage *us, qtts_codec_stream *const *S,
                    const int64_t *rows, int ns, int u, float *x, qtts_err *err) {
    int64_t L = d->L, N = 0, mx = 0, H = us->dw_k - 1;
    for (int i = 0; i < ns; i++) {
        N += rows[i];
        mx = rows[i] > mx ? rows[i] : mx;
    }
    float *dw = ws(d, WS_DW, N * L, err), *tmp = ws(d, WS_HTMP, (H + mx) * L, err);
    float *p1 = ws(d, WS_PW1, N * us->inner, err);
    if (!dw || !tmp || !p1) return -1;
    int64_t off = 0;
    for (int i = 0; i < ns; i++) {
        float *h = S[i]->up_dw_hist[u];
        memcpy(tmp, h, (size_t)(H * L) * sizeof(float));
        memcpy(tmp + H * L, x + off * L, (size_t)(rows[i] * L) * sizeof(float));
        qtts_dwconv_tm(tmp, L, rows[i], us->dw_wt, us->dw_k, us->dw_b, dw + off * L);
        memcpy(h, tmp + rows[i] * L, (size_t)(H * L) * sizeof(float));
        off += rows[i];
    }
    qtts_layernorm(pool, dw, us->ln_w, us->ln_b, N, L, 1e-6f, dw);
    if (lin_run(d, pool, &us->pw1, dw, N, p1, err)) return -1;
    gelu_job gj = {p1, us->inner};
    qtts_parallel_for_work(pool, N, 1, (double)N * us->inner * 2, gelu_rows, &gj); /* ~8 flops per erf-GELU */
    if (lin_run(d, pool, &us->pw2, p1, N, dw, err)) return -1;
    for (int64_t r = 0; r < N; r++)
        for (int64_t c = 0; c < L; c++) x[r * L + c] += us->gamma[c] * dw[r * L + c];
    return 0;
}

/* Channel-major padded input: xp[c] = [hist[c] (H) | f(in[c]) (T)], hist <- last H. */
static void cm_pad(qtts_pool *pool, const float *in, int64_t ldin, float *xp, float *hist, int64_t C, int64_t H,
                   int64_t T, const snake *act) {
    int64_t ld = H + T;
    for (int64_t c = 0; c < C; c++) memcpy(xp + c * ld, hist + c * H, (size_t)H * sizeof(float));
    qtts_snake_cm(pool, in, ldin, xp + H, ld, C, T, act->ea, act->ib);
    for (int64_t c = 0; c < C; c++) memcpy(hist + c * H, xp + c * ld + T, (size_t)H * sizeof(float));
}

/* Output samples per input sample of the channel-major chain from block b on. */
static int64_t chain_gain(const qtts_codec_decoder *d, int64_t b) {
    int64_t g = 1;
    for (int64_t j = b; j < d->n_blk; j++) g *= d->blk[j].tm ? 1 : d->blk[j].rate;
    return g;
}


static int conv_oom(qtts_err *err) { return qtts_fail(err, "speech tokenizer decoder: out of memory (bf16 conv input)"); }

/* Blocks b.. of the channel-major tail and the output conv for one stream:
 * in holds C channels x T samples (row stride ldin; for a block whose
 * transposed conv already ran time-major it is that conv's output and is
 * updated in place); out gets T*chain_gain(b) samples. When a block's output
 * would outgrow the cache budget, the rest of the chain runs on pieces of
 * the input: every layer carries its own history, so this is exact, and the
 * big early weights still see the whole chunk. */
static int cm_chain(qtts_codec_decoder *d, qtts_pool *pool, qtts_codec_stream *s, int64_t b, float *in,
                    int64_t ldin, int64_t C, int64_t T, float *out, qtts_err *err) {
    char name[32];
    for (; b < d->n_blk; b++) {
        const dblock *bk = &d->blk[b];
        int64_t up = bk->tm ? 1 : bk->rate;
        if (T > 1 && T * up * bk->out * (int64_t)sizeof(float) > d->cm_budget) {
            int64_t p = d->cm_budget / (up * bk->out * (int64_t)sizeof(float)), g = chain_gain(d, b);
            if (p < 1) p = 1;
            for (int64_t t0 = 0; t0 < T; t0 += p)
                if (cm_chain(d, pool, s, b, in + t0, ldin, C, T - t0 < p ? T - t0 : p, out + t0 * g, err)) return -1;
            return 0;
        }
        float *cur = in;
        int64_t ld = ldin;
        if (!bk->tm) {
            int64_t H = qtts_conv_history(&bk->tconv_cm), Tout = T * bk->rate;
            float *xp = ws(d, WS_XP, bk->in * (H + T), err), *ph = ws(d, WS_PH, bk->rate * bk->out * T, err);
            cur = ws(d, WS_BLK + (int)b, bk->out * Tout, err);
            if (!xp || !ph || !cur) return -1;
            cm_pad(pool, in, ldin, xp, s->blk_hist[b], bk->in, H, T, &bk->act);
            if (qtts_conv1d_cm(pool, &bk->tconv_cm, xp, H + T, T, ph, T, NULL, 0)) return conv_oom(err);
            qtts_conv_interleave(pool, ph, T, bk->out, bk->rate, T, cur, Tout);
            ld = T = Tout;
        }
        for (int r = 0; r < N_RES; r++) {
            const resunit *ru = &bk->ru[r];
            int64_t H = qtts_conv_history(&ru->c1);
            float *xp = ws(d, WS_XP, bk->out * (H + T), err), *tmp = ws(d, WS_TMP, bk->out * T, err);
            if (!xp || !tmp) return -1;
            cm_pad(pool, cur, ld, xp, s->ru_hist[b][r], bk->out, H, T, &ru->a1);
            if (qtts_conv1d_cm(pool, &ru->c1, xp, H + T, T, tmp, T, NULL, 0)) return conv_oom(err);
            qtts_snake_cm(pool, tmp, T, tmp, T, bk->out, T, ru->a2.ea, ru->a2.ib);
            if (qtts_conv1d_cm(pool, &ru->c2, tmp, T, T, cur, ld, cur, ld)) return conv_oom(err);
        }
        snprintf(name, sizeof name, "decoder%lld_out", (long long)b + 1);
        emit_cm(s, name, cur, ld, bk->out, T);
        in = cur;
        ldin = ld;
        C = bk->out;
    }
    int64_t H = qtts_conv_history(&d->fin_conv);
    float *xp = ws(d, WS_XP, d->d_last * (H + T), err);
    if (!xp) return -1;
    cm_pad(pool, in, ldin, xp, s->fin_hist, d->d_last, H, T, &d->fin_act);
    snprintf(name, sizeof name, "decoder%lld_out", (long long)d->n_blk + 1);
    emit_cm(s, name, xp + H, H + T, d->d_last, T);
    if (qtts_conv1d_cm(pool, &d->fin_conv, xp, H + T, T, out, T, NULL, 0)) return conv_oom(err);
    snprintf(name, sizeof name, "decoder%lld_out", (long long)d->n_blk + 2);
    emit_cm(s, name, out, T, 1, T);
    for (int64_t t = 0; t < T; t++) out[t] = out[t] > 1.0f ? 1.0f : out[t] < -1.0f ? -1.0f : out[t];
    return 0;
}

/* Channel-major part of one stream, from the last time-major output [T][C]. */
static int cm_tail(qtts_codec_decoder *d, qtts_pool *pool, qtts_codec_stream *s, const float *in_tm, int64_t C,
                   int64_t T, float *out, qtts_err *err) {
    float *cur = ws(d, WS_CMA, C * T, err);
    if (!cur) return -1;
    for (int64_t t = 0; t < T; t++)
        for (int64_t c = 0; c < C; c++) cur[c * T + t] = in_tm[t * C + c];
    return cm_chain(d, pool, s, 0, cur, T, C, T, out, err);
}

/* One step: ns streams with 1..max_chunk frames each, codes validated. */
static int step(qtts_codec_decoder *d, qtts_pool *pool, qtts_codec_stream *const *S, const int32_t *const *codes,
                const int64_t *F, int ns, float *const *out, qtts_err *err) {
    int64_t roff[ns > 0 ? ns : 1], rows[ns > 0 ? ns : 1], N = 0;
    for (int i = 0; i < ns; i++) {
        roff[i] = N;
        N += F[i];
    }
    int64_t half = d->half, cd = d->cd, L = d->L;
    float *A0 = ws(d, WS_A0, N * half, err), *AR = ws(d, WS_AR, N * half, err);
    float *Z = ws(d, WS_Z, N * cd, err), *Z2 = ws(d, WS_Z2, N * cd, err), *P = ws(d, WS_P, N * L, err);
    float *T0 = ws(d, WS_T0, N * L, err);
    if (!A0 || !AR || !Z || !Z2 || !P || !T0) return -1;

    /* 1. dequantise: first codebook and the sum of the rest, then the 1x1 projections */
    for (int i = 0; i < ns; i++)
        for (int64_t f = 0; f < F[i]; f++) {
            const int32_t *c = codes[i] + f * d->nq;
            float *a0 = A0 + (roff[i] + f) * half, *ar = AR + (roff[i] + f) * half;
            memcpy(a0, d->codebooks + (int64_t)(c[0] < 0 ? 0 : c[0]) * half, (size_t)half * sizeof(float));
            for (int64_t k = 0; k < half; k++) ar[k] = 0.0f;
            for (int64_t j = 1; j < d->nq; j++) {
                const float *e = d->codebooks + (j * d->cb + (c[j] < 0 ? 0 : c[j])) * half;
                for (int64_t k = 0; k < half; k++) ar[k] += e[k];
            }
        }
    if (lin_run(d, pool, &d->p_first, A0, N, Z, err) || lin_run(d, pool, &d->p_rest, AR, N, Z2, err)) return -1;
    for (int64_t k = 0; k < N * cd; k++) Z[k] += Z2[k];
    for (int i = 0; i < ns; i++) emit_tm(S[i], "rvq_out", Z + roff[i] * cd, cd, F[i]);

    /* 2. pre_conv */
    float *hists[ns > 0 ? ns : 1];
    for (int i = 0; i < ns; i++) {
        hists[i] = S[i]->pre_hist;
        rows[i] = F[i];
    }
    if (tmconv_run(d, pool, &d->pre, hists, rows, ns, Z, P, err)) return -1;
    for (int i = 0; i < ns; i++) emit_tm(S[i], "pre_conv_out", P + roff[i] * L, L, F[i]);

    /* 3. transformer */
    if (transformer(d, pool, S, F, roff, ns, N, P, T0, err)) return -1;
    for (int i = 0; i < ns; i++) emit_tm(S[i], "pre_transformer_out", T0 + roff[i] * L, L, F[i]);

    /* 4. upsampling: transposed conv + ConvNeXt, time-major */
    float *cur = T0;
    int pp = 0;
    int64_t scale = 1;
    char name[48];
    for (int64_t u = 0; u < d->n_up; u++) {
        const upstage *us = &d->up[u];
        float *nx = ws(d, pp ? WS_PB : WS_PA, N * scale * us->tconv.mult * L, err);
        if (!nx) return -1;
        pp ^= 1;
        for (int i = 0; i < ns; i++) {
            hists[i] = S[i]->up_hist[u];
            rows[i] = F[i] * scale;
        }
        if (tmconv_run(d, pool, &us->tconv, hists, rows, ns, cur, nx, err)) return -1;
        scale *= us->tconv.mult;
        snprintf(name, sizeof name, "upsample%lld_transconv_out", (long long)u);
        for (int i = 0; i < ns; i++) emit_tm(S[i], name, nx + roff[i] * scale * L, L, F[i] * scale);
        for (int i = 0; i < ns; i++) rows[i] = F[i] * scale;
        if (convnext(d, pool, us, S, rows, ns, (int)u, nx, err)) return -1;
        snprintf(name, sizeof name, "upsample%lld_convnext_out", (long long)u);
        for (int i = 0; i < ns; i++) emit_tm(S[i], name, nx + roff[i] * scale * L, L, F[i] * scale);
        cur = nx;
    }

    /* 5. decoder.0 */
    float *d0 = ws(d, pp ? WS_PB : WS_PA, N * scale * d->D, err);
    if (!d0) return -1;
    pp ^= 1;
    for (int i = 0; i < ns; i++) {
        hists[i] = S[i]->dec0_hist;
        rows[i] = F[i] * scale;
    }
    if (tmconv_run(d, pool, &d->dec0, hists, rows, ns, cur, d0, err)) return -1;
    for (int i = 0; i < ns; i++) emit_tm(S[i], "decoder0_out", d0 + roff[i] * scale * d->D, d->D, F[i] * scale);
    cur = d0;
    int64_t C = d->D;

    /* 6. first block's SnakeBeta + transposed conv, time-major when the rate is low */
    const dblock *b0 = &d->blk[0];
    if (b0->tm) {
        qtts_snake_tm(cur, C, C, N * scale, b0->act.ea, b0->act.ib);
        float *nx = ws(d, pp ? WS_PB : WS_PA, N * scale * b0->rate * b0->out, err);
        if (!nx) return -1;
        for (int i = 0; i < ns; i++) {
            hists[i] = S[i]->blk_hist[0];
            rows[i] = F[i] * scale;
        }
        if (tmconv_run(d, pool, &b0->tconv_tm, hists, rows, ns, cur, nx, err)) return -1;
        scale *= b0->rate;
        cur = nx;
        C = b0->out;
    }

    /* 7. the rest, channel-major, stream by stream */
    for (int i = 0; i < ns; i++)
        if (cm_tail(d, pool, S[i], cur + roff[i] * scale * C, C, F[i] * scale, out[i], err)) return -1;
    for (int i = 0; i < ns; i++) S[i]->frames += F[i];
    return 0;
}

static int check_codes(const qtts_codec_decoder *d, const int32_t *codes, int64_t n, qtts_err *err) {
    for (int64_t f = 0; f < n; f++)
        for (int64_t q = 0; q < d->nq; q++) {
            int32_t c = codes[f * d->nq + q];
            if (c >= d->cb)
                return qtts_fail(err, "codes: frame %lld, codebook %lld: code %d is out of range (codebook size %lld)",
                                 (long long)f, (long long)q, c, (long long)d->cb);
        }
    return 0;
}

int qtts_codec_decode_step_batch(qtts_codec_decoder *d, qtts_pool *pool, qtts_codec_stream *const *streams,
                                 const int32_t *const *codes, const int64_t *n_frames, int n_streams,
                                 float *const *out, qtts_err *err) {
    if (n_streams <= 0) return 0;
    for (int i = 0; i < n_streams; i++) {
        if (n_frames[i] < 0) return qtts_fail(err, "codes: negative frame count %lld", (long long)n_frames[i]);
        if (streams[i]->dec != d) return qtts_fail(err, "speech tokenizer: stream belongs to another decoder");
        for (int j = 0; j < i; j++)
            if (streams[j] == streams[i]) return qtts_fail(err, "speech tokenizer: the same stream twice in one step");
        if (n_frames[i] && check_codes(d, codes[i], n_frames[i], err)) return -1;
    }
    qtts_codec_stream **S = malloc((size_t)n_streams * sizeof *S);
    const int32_t **C = malloc((size_t)n_streams * sizeof *C);
    float **O = malloc((size_t)n_streams * sizeof *O);
    int64_t *F = malloc((size_t)n_streams * sizeof *F), *done = calloc((size_t)n_streams, sizeof *done);
    int rc = 0;
    if (!S || !C || !O || !F || !done) {
        rc = qtts_fail(err, "speech tokenizer decoder: out of memory");
        goto out;
    }
    for (;;) {
        int ns = 0;
        for (int i = 0; i < n_streams; i++) {
            int64_t left = n_frames[i] - done[i];
            if (left <= 0) continue;
            S[ns] = streams[i];
            F[ns] = left < d->max_chunk ? left : d->max_chunk;
            C[ns] = codes[i] + done[i] * d->nq;
            O[ns] = out[i] + done[i] * d->fs;
            done[i] += F[ns];
            ns++;
        }
        if (!ns) break;
        if ((rc = step(d, pool, S, C, F, ns, O, err))) break;
    }
out:
    free(S);
    free(C);
    free(O);
    free(F);
    free(done);
    return rc;
}

int qtts_codec_decode_feed(qtts_codec_decoder *d, qtts_pool *pool, qtts_codec_stream *s, const int32_t *codes,
                           int64_t n_frames, float *out, qtts_err *err) {
    return qtts_codec_decode_step_batch(d, pool, &s, &codes, &n_frames, 1, &out, err);
}

int qtts_codec_decode_offline(qtts_codec_decoder *d, qtts_pool *pool, const int32_t *codes, int64_t T,
                              int64_t chunk, int64_t context, float *out, qtts_err *err) {
    if (T <= 0) return qtts_fail(err, "codes: no frames to decode");
    if (check_codes(d, codes, T, err)) return -1;
    qtts_codec_stream *s = qtts_codec_stream_new(d, err);
    if (!s) return -1;
    int rc = 0;
    if (chunk <= 0) {
        rc = qtts_codec_decode_feed(d, pool, s, codes, T, out, err);
    } else {
        if (context < 0) context = 0;
        float *junk = context ? qtts_malloc((size_t)(context * d->fs) * sizeof(float), err) : NULL;
        if (context && !junk) rc = -1;
        for (int64_t start = 0; !rc && start < T;) {
            int64_t end = start + chunk < T ? start + chunk : T;
            int64_t ctx = start - context > 0 ? context : start;
            qtts_codec_stream_reset(s);
            if (ctx) rc = qtts_codec_decode_feed(d, pool, s, codes + (start - ctx) * d->nq, ctx, junk, err);
            if (!rc) rc = qtts_codec_decode_feed(d, pool, s, codes + start * d->nq, end - start, out + start * d->fs, err);
            start = end;
        }
        free(junk);
    }
    qtts_codec_stream_free(s);
    return rc;
}
