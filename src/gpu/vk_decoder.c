/* The speech-tokenizer decoder assembled from the kernels (gpu_decoder.h).
 *
 * Layouts: the transformer and the ConvNeXt blocks run time-major
 * ([samples][channels], the gemv rows), every conv channel-major with its
 * history first (gpu_conv.h); transposes move between the two. A step records
 * each stream's kernels one after the other into one sequence over shared
 * scratch buffers (every kernel waits for the ones before it), so a stream's
 * arithmetic is the same alone or in a batch. A step's sequence depends on
 * its streams, their frame counts and how many keys each holds (the
 * transformer's window shift, tracked by the host): it is recorded the first
 * time that combination occurs and resubmitted while it recurs (once their
 * windows are full, every step of the same streams and frame counts), up to
 * SEQ_CACHE of them kept. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_conv.h"
#include "gpu/gpu_decoder.h"
#include "gpu/gpu_ops.h"
#include "tensor/ops.h"

/* MAXF: frames of one stream per submission (bounds the scratch);
 * N_RES residual units per block, each a RES_K-tap dilated conv then a 1x1. */
/* ROPE_MIN: RoPE rows made first (doubled as streams get longer: test_gpu_decoder's 310 frames grow it once). */
enum {
    MAXF = QTTS_GPU_DEC_STAGE_FRAMES,
    MAX_STAGES = 8,
    N_RES = 3,
    RES_K = 7,
    PRE_K = 3,
    ROPE_MIN = 256,
    SEQ_CACHE = 8,
    SEQ_MAX_STREAMS = 64,
};
static const int64_t k_res_dil[N_RES] = {1, 3, 9}; /* fixed by the architecture */
static const float k_usage_floor = 1e-5f;          /* codebooks: embedding_sum / max(cluster_usage, floor) */
static const float k_snake_eps = 1e-9f;            /* SnakeBeta: x + sin^2(a x) / (exp(beta) + eps) */
static const float k_ln_eps = 1e-6f;               /* ConvNeXt LayerNorm */

typedef struct {
    qtts_gpu_buf *ea, *ib; /* exp(alpha), 1/(exp(beta)+eps): the CPU decoder's precomputed form */
} dsnake;

typedef struct {
    qtts_gpu_mat *qkv, *o, *gate_up, *down; /* q|k|v and gate|up stacked */
    qtts_gpu_buf *in_norm, *post_norm, *ls_attn, *ls_mlp;
} dlayer;

typedef struct {
    qtts_gpu_conv *tconv;
    qtts_gpu_buf *dw_wt, *dw_b, *ln_w, *ln_b, *gamma, *pw1_b, *pw2_b; /* dw_wt: [k][L] */
    qtts_gpu_mat *pw1, *pw2;
    int64_t ratio, dw_k, inner;
} dupstage;

typedef struct {
    int64_t in, out, rate;
    dsnake act, a1[N_RES], a2[N_RES];
    qtts_gpu_conv *tconv, *c1[N_RES], *c2[N_RES];
} dblock;

/* Scratch: the channel-major chain's (CM_*, "big") and the time-major layers' (TM_*). */
enum { CM_A, CM_B, CM_XP, CM_TMP, CM_TMP2, N_CM };
enum { TM_P, TM_X, TM_HN, TM_QKV, TM_AO, TM_O, TM_GU, TM_G, TM_DWB, TM_DW, TM_P1, TM_A0, TM_AR, TM_Z, TM_Z2, TM_KV, N_TM };

/* A recorded step: stream i is the stream numbered id[i], with F[i] frames and held[i] keys,
 * its codes read from the code ring where ring[i] (else written by the host). */
typedef struct {
    qtts_gpu_seq *seq;
    int n;
    uint64_t id[SEQ_MAX_STREAMS];
    int64_t F[SEQ_MAX_STREAMS], held[SEQ_MAX_STREAMS];
    int ring[SEQ_MAX_STREAMS];
} step_seq;

struct qtts_gpu_decoder {
    qtts_gpu *g;
    step_seq seqs[SEQ_CACHE]; /* they bind the buffers below: dropped when one is remade */
    int next_evict;
    uint64_t next_id; /* numbers streams: a freed stream's number is never reused */
    int64_t nq, cb, cd, ed, L, Hd, nh, nkv, hd, I, W, Cd, n_up, n_blk, up_factor, fs, n_layers, out_dim;
    float rms_eps;
    double theta;
    qtts_gpu_buf *codebooks; /* [nq][cb][ed], normalised */
    qtts_gpu_mat *p_first, *p_rest, *in_proj, *out_proj;
    qtts_gpu_buf *in_b, *out_b, *norm_w;
    qtts_gpu_conv *pre, *dec0, *fin;
    dlayer *layers;
    dupstage up[MAX_STAGES];
    dblock blk[MAX_STAGES];
    dsnake fin_act;
    qtts_gpu_buf *rope; /* qtts_rope_angles rows, grown as streams get longer */
    int64_t rope_rows;
    qtts_gpu_buf *cm[N_CM], *tm[N_TM];
    qtts_gpu_buf *codes, *pos, *at, *pcm; /* per step, host-written / read: grown with the batch */
    int64_t io_streams;
    qtts_gpu_buf *ring; /* the device LM's codes (qtts_gpu_decoder_use_ring), or NULL */
    int64_t ring_rows, ring_slots;
};

enum { MAX_STREAM_BUFS = 4 + 2 * 64 + 2 * MAX_STAGES + MAX_STAGES * (1 + N_RES) };

struct qtts_gpu_dec_stream {
    qtts_gpu_decoder *d;
    uint64_t id;
    int64_t frames, pos, n_cached; /* frames decoded, next RoPE position, keys in the window (<= W-1) */
    qtts_gpu_buf *pre_hist, *dec0_hist, *fin_hist, **kc, **vc;
    qtts_gpu_buf *up_hist[MAX_STAGES], *dw_hist[MAX_STAGES], *blk_hist[MAX_STAGES], *ru_hist[MAX_STAGES][N_RES];
    qtts_gpu_buf *all[MAX_STREAM_BUFS]; /* every buffer above, for reset and free */
    int n_all;
};

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        if (x) return -1;                                                                                              \
    } while (0)

/* ---- loading ---- */

static qtts_gpu_buf *upload(qtts_gpu *g, const float *x, int64_t n, qtts_err *err) {
    qtts_gpu_buf *b = qtts_gpu_buf_new(g, (size_t)(n > 0 ? n : 1) * sizeof(float), err);
    if (b && x) memcpy(qtts_gpu_buf_data(b), x, (size_t)n * sizeof(float));
    return b;
}

/* f32 copy of tensor `name` (shape checked; -1 = any), or NULL with err. */
static float *tensor(const qtts_store *st, const char *name, int ndim, const int64_t *shape, qtts_err *err) {
    const qtts_tensor *t = qtts_store_get(st, name, ndim, shape, err);
    return t ? qtts_tensor_to_f32(t, err) : NULL;
}

static qtts_gpu_buf *vec(qtts_gpu *g, const qtts_store *st, const char *name, int64_t n, qtts_err *err) {
    float *v = tensor(st, name, 1, &n, err);
    if (!v) return NULL;
    qtts_gpu_buf *b = upload(g, v, n, err);
    free(v);
    return b;
}

static qtts_gpu_mat *mat_f32(qtts_gpu *g, const float *w, int64_t rows, int64_t cols, qtts_err *err) {
    qtts_mat m = {.type = QTTS_F32, .rows = rows, .cols = cols, .row_bytes = (size_t)cols * sizeof(float), .data = w};
    return qtts_gpu_mat_upload(g, &m, err);
}

/* Linear weight `name` [rows][cols] (cols may fold trailing 1-tap dims). */
static qtts_gpu_mat *mat(qtts_gpu *g, const qtts_store *st, const char *name, int ndim, const int64_t *shape,
                         int64_t rows, int64_t cols, qtts_err *err) {
    float *w = tensor(st, name, ndim, shape, err);
    if (!w) return NULL;
    qtts_gpu_mat *m = mat_f32(g, w, rows, cols, err);
    free(w);
    return m;
}

/* Several "<prefix>.<sub_i>.weight" [rows_i][cols] stacked into one matrix. */
static qtts_gpu_mat *stacked(qtts_gpu *g, const qtts_store *st, const char *prefix, const char *const *subs,
                             const int64_t *rows, int n, int64_t cols, qtts_err *err) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += rows[i];
    float *w = qtts_malloc((size_t)(total * cols) * sizeof(float), err);
    if (!w) return NULL;
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s.%s.weight", prefix, subs[i]);
        float *p = tensor(st, name, 2, (int64_t[]){rows[i], cols}, err);
        if (!p) {
            free(w);
            return NULL;
        }
        memcpy(w + off * cols, p, (size_t)(rows[i] * cols) * sizeof(float));
        free(p);
        off += rows[i];
    }
    qtts_gpu_mat *m = mat_f32(g, w, total, cols, err);
    free(w);
    return m;
}

static int snake_load(qtts_gpu *g, const qtts_store *st, const char *prefix, int64_t C, dsnake *s, qtts_err *err) {
    char n[256];
    snprintf(n, sizeof n, "%s.alpha", prefix);
    float *a = tensor(st, n, 1, &C, err);
    snprintf(n, sizeof n, "%s.beta", prefix);
    float *b = a ? tensor(st, n, 1, &C, err) : NULL;
    if (b)
        for (int64_t c = 0; c < C; c++) {
            a[c] = expf(a[c]);
            b[c] = 1.0f / (expf(b[c]) + k_snake_eps);
        }
    int rc = !b || !(s->ea = upload(g, a, C, err)) || !(s->ib = upload(g, b, C, err)) ? -1 : 0;
    free(a);
    free(b);
    return rc;
}

/* Conv "<prefix>.weight" / ".bias": plain [c_out][c_in][k] (k < 0: from the
 * tensor), or transposed [c_in][c_out][k] with stride `stride`. */
static qtts_gpu_conv *conv_load(qtts_gpu *g, const qtts_store *st, const char *prefix, int64_t c_out, int64_t c_in,
                                int64_t k, int64_t dil, int64_t stride, qtts_err *err) {
    char n[256];
    snprintf(n, sizeof n, "%s.weight", prefix);
    const qtts_tensor *t = stride ? qtts_store_get3(st, n, c_in, c_out, k, err) : qtts_store_get3(st, n, c_out, c_in, k, err);
    if (!t) return NULL;
    k = t->shape[2];
    float *w = qtts_tensor_to_f32(t, err);
    snprintf(n, sizeof n, "%s.bias", prefix);
    float *b = w ? tensor(st, n, 1, &c_out, err) : NULL;
    qtts_gpu_conv *cv = NULL;
    if (b)
        cv = stride ? qtts_gpu_conv_new_transposed(g, w, b, c_in, c_out, k, stride, err)
                    : qtts_gpu_conv_new(g, w, b, c_out, c_in, k, dil, err);
    free(w);
    free(b);
    return cv;
}

static int sizes(qtts_gpu_decoder *d, const qtts_codec_config *cfg, qtts_err *err) {
    d->nq = cfg->dec.num_quantizers;
    d->cb = cfg->dec.codebook_size;
    d->cd = cfg->dec.codebook_dim;
    d->ed = d->cd / 2;
    d->L = cfg->dec.latent_dim;
    d->Hd = cfg->dec.hidden;
    d->nh = cfg->dec.heads;
    d->nkv = cfg->dec.kv_heads;
    d->hd = cfg->dec.head_dim;
    d->I = cfg->dec.intermediate;
    d->W = cfg->dec.sliding_window;
    d->Cd = cfg->dec.decoder_dim;
    d->n_up = cfg->dec.n_upsampling_ratios;
    d->n_blk = cfg->dec.n_upsample_rates;
    d->n_layers = cfg->dec.layers;
    d->rms_eps = (float)cfg->dec.rms_eps;
    d->theta = cfg->dec.rope_theta;
    if (d->nq < 2 || d->cb <= 0 || d->cd < 2 || d->cd % 2 || d->L <= 0 || d->Hd <= 0 || d->nh <= 0 || d->nkv <= 0 ||
        d->nh % d->nkv || d->hd <= 0 || d->hd % 2 || d->I <= 0 || d->W <= 0 || d->Cd <= 0 || d->n_layers < 0 ||
        d->n_up < 0 || d->n_up > MAX_STAGES || d->n_blk < 1 || d->n_blk > MAX_STAGES || d->Cd % (1LL << d->n_blk))
        return qtts_fail(err, "GPU speech tokenizer decoder: unsupported sizes");
    d->up_factor = 1;
    for (int64_t u = 0; u < d->n_up; u++) d->up_factor *= cfg->dec.upsampling_ratios[u];
    d->fs = d->up_factor;
    for (int64_t b = 0; b < d->n_blk; b++) d->fs *= cfg->dec.upsample_rates[b];
    if (d->up_factor <= 0 || d->fs <= 0) return qtts_fail(err, "GPU speech tokenizer decoder: bad upsampling rates");
    d->out_dim = d->Cd >> d->n_blk;
    return 0;
}

static int load_quantizer(qtts_gpu_decoder *d, const qtts_store *st, qtts_err *err) {
    const int64_t cb = d->cb, ed = d->ed;
    if (!(d->codebooks = upload(d->g, NULL, d->nq * cb * ed, err))) return -1;
    float *dst = qtts_gpu_buf_data(d->codebooks);
    for (int64_t j = 0; j < d->nq; j++) {
        const char *grp = j == 0 ? "rvq_first" : "rvq_rest";
        char n[256];
        snprintf(n, sizeof n, "decoder.quantizer.%s.vq.layers.%lld._codebook.embedding_sum", grp,
                 (long long)(j ? j - 1 : 0));
        float *e = tensor(st, n, 2, (int64_t[]){cb, ed}, err);
        snprintf(n, sizeof n, "decoder.quantizer.%s.vq.layers.%lld._codebook.cluster_usage", grp,
                 (long long)(j ? j - 1 : 0));
        float *u = e ? tensor(st, n, 1, &cb, err) : NULL;
        if (u)
            for (int64_t c = 0; c < cb; c++) {
                float us = u[c] < k_usage_floor ? k_usage_floor : u[c];
                for (int64_t i = 0; i < ed; i++) dst[(j * cb + c) * ed + i] = e[c * ed + i] / us;
            }
        free(e);
        free(u);
        if (!u) return -1;
    }
    const int64_t shape[3] = {d->cd, ed, 1};
    return !(d->p_first = mat(d->g, st, "decoder.quantizer.rvq_first.output_proj.weight", 3, shape, d->cd, ed, err)) ||
                   !(d->p_rest = mat(d->g, st, "decoder.quantizer.rvq_rest.output_proj.weight", 3, shape, d->cd, ed,
                                     err))
               ? -1
               : 0;
}

static int load_transformer(qtts_gpu_decoder *d, const qtts_store *st, qtts_err *err) {
    qtts_gpu *g = d->g;
    const int64_t Hd = d->Hd, L = d->L, qd = d->nh * d->hd, kvd = d->nkv * d->hd;
    if (!(d->in_proj = mat(g, st, "decoder.pre_transformer.input_proj.weight", 2, (int64_t[]){Hd, L}, Hd, L, err)) ||
        !(d->in_b = vec(g, st, "decoder.pre_transformer.input_proj.bias", Hd, err)) ||
        !(d->out_proj = mat(g, st, "decoder.pre_transformer.output_proj.weight", 2, (int64_t[]){L, Hd}, L, Hd, err)) ||
        !(d->out_b = vec(g, st, "decoder.pre_transformer.output_proj.bias", L, err)) ||
        !(d->norm_w = vec(g, st, "decoder.pre_transformer.norm.weight", Hd, err)))
        return -1;
    if (!(d->layers = qtts_calloc((size_t)(d->n_layers ? d->n_layers : 1), sizeof *d->layers, err))) return -1;
    for (int64_t l = 0; l < d->n_layers; l++) {
        dlayer *ly = &d->layers[l];
        char p[128], n[256];
        snprintf(p, sizeof p, "decoder.pre_transformer.layers.%lld", (long long)l);
        const char *attn[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"};
        const char *mlp[] = {"mlp.gate_proj", "mlp.up_proj"};
        if (!(ly->qkv = stacked(g, st, p, attn, (int64_t[]){qd, kvd, kvd}, 3, Hd, err)) ||
            !(ly->gate_up = stacked(g, st, p, mlp, (int64_t[]){d->I, d->I}, 2, Hd, err)))
            return -1;
        snprintf(n, sizeof n, "%s.self_attn.o_proj.weight", p);
        if (!(ly->o = mat(g, st, n, 2, (int64_t[]){Hd, qd}, Hd, qd, err))) return -1;
        snprintf(n, sizeof n, "%s.mlp.down_proj.weight", p);
        if (!(ly->down = mat(g, st, n, 2, (int64_t[]){Hd, d->I}, Hd, d->I, err))) return -1;
        snprintf(n, sizeof n, "%s.input_layernorm.weight", p);
        if (!(ly->in_norm = vec(g, st, n, Hd, err))) return -1;
        snprintf(n, sizeof n, "%s.post_attention_layernorm.weight", p);
        if (!(ly->post_norm = vec(g, st, n, Hd, err))) return -1;
        snprintf(n, sizeof n, "%s.self_attn_layer_scale.scale", p);
        if (!(ly->ls_attn = vec(g, st, n, Hd, err))) return -1;
        snprintf(n, sizeof n, "%s.mlp_layer_scale.scale", p);
        if (!(ly->ls_mlp = vec(g, st, n, Hd, err))) return -1;
    }
    return 0;
}

static int load_upsample(qtts_gpu_decoder *d, const qtts_store *st, const qtts_codec_config *cfg, int64_t u,
                         qtts_err *err) {
    qtts_gpu *g = d->g;
    dupstage *us = &d->up[u];
    const int64_t L = d->L, s = cfg->dec.upsampling_ratios[u];
    char p[128], n[256];
    us->ratio = s;
    snprintf(p, sizeof p, "decoder.upsample.%lld.0.conv", (long long)u);
    if (!(us->tconv = conv_load(g, st, p, L, L, s, 1, s, err))) return -1;
    snprintf(n, sizeof n, "decoder.upsample.%lld.1.dwconv.conv.weight", (long long)u);
    const qtts_tensor *tw = qtts_store_get3(st, n, L, 1, -1, err);
    if (!tw) return -1;
    us->dw_k = tw->shape[2];
    float *w = qtts_tensor_to_f32(tw, err);
    if (!w || !(us->dw_wt = upload(g, NULL, us->dw_k * L, err))) {
        free(w);
        return -1;
    }
    float *wt = qtts_gpu_buf_data(us->dw_wt);
    for (int64_t c = 0; c < L; c++)
        for (int64_t k = 0; k < us->dw_k; k++) wt[k * L + c] = w[c * us->dw_k + k];
    free(w);
    snprintf(p, sizeof p, "decoder.upsample.%lld.1", (long long)u);
    const char *vn[] = {"dwconv.conv.bias", "norm.weight", "norm.bias", "gamma"};
    qtts_gpu_buf **vb[] = {&us->dw_b, &us->ln_w, &us->ln_b, &us->gamma};
    for (int i = 0; i < 4; i++) {
        snprintf(n, sizeof n, "%s.%s", p, vn[i]);
        if (!(*vb[i] = vec(g, st, n, L, err))) return -1;
    }
    snprintf(n, sizeof n, "%s.pwconv1.weight", p);
    const qtts_tensor *t1 = qtts_store_get2(st, n, -1, L, err);
    if (!t1) return -1;
    us->inner = t1->shape[0];
    if (!(us->pw1 = mat(g, st, n, 2, (int64_t[]){us->inner, L}, us->inner, L, err))) return -1;
    snprintf(n, sizeof n, "%s.pwconv1.bias", p);
    if (!(us->pw1_b = vec(g, st, n, us->inner, err))) return -1;
    snprintf(n, sizeof n, "%s.pwconv2.weight", p);
    if (!(us->pw2 = mat(g, st, n, 2, (int64_t[]){L, us->inner}, L, us->inner, err))) return -1;
    snprintf(n, sizeof n, "%s.pwconv2.bias", p);
    return (us->pw2_b = vec(g, st, n, L, err)) ? 0 : -1;
}

static int load_block(qtts_gpu_decoder *d, const qtts_store *st, const qtts_codec_config *cfg, int64_t b,
                      qtts_err *err) {
    qtts_gpu *g = d->g;
    dblock *bk = &d->blk[b];
    bk->in = d->Cd >> b;
    bk->out = d->Cd >> (b + 1);
    bk->rate = cfg->dec.upsample_rates[b];
    char p[128];
    snprintf(p, sizeof p, "decoder.decoder.%lld.block.0", (long long)b + 1);
    if (snake_load(g, st, p, bk->in, &bk->act, err)) return -1;
    snprintf(p, sizeof p, "decoder.decoder.%lld.block.1.conv", (long long)b + 1);
    if (!(bk->tconv = conv_load(g, st, p, bk->out, bk->in, -1, 1, bk->rate, err))) return -1;
    for (int r = 0; r < N_RES; r++) {
        snprintf(p, sizeof p, "decoder.decoder.%lld.block.%d.act1", (long long)b + 1, r + 2);
        if (snake_load(g, st, p, bk->out, &bk->a1[r], err)) return -1;
        snprintf(p, sizeof p, "decoder.decoder.%lld.block.%d.act2", (long long)b + 1, r + 2);
        if (snake_load(g, st, p, bk->out, &bk->a2[r], err)) return -1;
        snprintf(p, sizeof p, "decoder.decoder.%lld.block.%d.conv1.conv", (long long)b + 1, r + 2);
        if (!(bk->c1[r] = conv_load(g, st, p, bk->out, bk->out, RES_K, k_res_dil[r], 0, err))) return -1;
        snprintf(p, sizeof p, "decoder.decoder.%lld.block.%d.conv2.conv", (long long)b + 1, r + 2);
        if (!(bk->c2[r] = conv_load(g, st, p, bk->out, bk->out, 1, 1, 0, err))) return -1;
    }
    return 0;
}

/* Floats the largest scratch of each kind holds, for MAXF frames of one stream. */
static void scratch_sizes(const qtts_gpu_decoder *d, int64_t *cm, int64_t *tm) {
#define MAXV(v, x)                                                                                                     \
    do {                                                                                                               \
        if ((x) > (v)) (v) = (x);                                                                                      \
    } while (0)
    const int64_t F = MAXF, qkvd = (d->nh + 2 * d->nkv) * d->hd;
    int64_t c = d->cd * (PRE_K - 1 + F), t = F * qkvd;
    MAXV(c, d->L * F);
    MAXV(t, F * 2 * d->I);
    MAXV(t, F * d->L);
    MAXV(t, F * d->cd);
    MAXV(t, d->W * d->nkv * d->hd);
    int64_t T = F;
    for (int64_t u = 0; u < d->n_up; u++) {
        MAXV(c, d->L * (qtts_gpu_conv_history(d->up[u].tconv) + T));
        T *= d->up[u].ratio;
        MAXV(c, d->L * T);
        MAXV(t, (d->up[u].dw_k - 1 + T) * d->L);
        MAXV(t, T * d->up[u].inner);
    }
    MAXV(c, d->L * (qtts_gpu_conv_history(d->dec0) + T));
    MAXV(c, d->Cd * T);
    for (int64_t b = 0; b < d->n_blk; b++) {
        const dblock *bk = &d->blk[b];
        MAXV(c, bk->in * (qtts_gpu_conv_history(bk->tconv) + T));
        T *= bk->rate;
        for (int r = 0; r < N_RES; r++) MAXV(c, bk->out * (qtts_gpu_conv_history(bk->c1[r]) + T));
    }
    MAXV(c, d->out_dim * (qtts_gpu_conv_history(d->fin) + T));
    *cm = c;
    *tm = t;
#undef MAXV
}

static void drop_seqs(qtts_gpu_decoder *d) {
    for (int i = 0; i < SEQ_CACHE; i++) {
        qtts_gpu_seq_free(d->seqs[i].seq);
        d->seqs[i].seq = NULL;
    }
}

void qtts_gpu_decoder_free(qtts_gpu_decoder *d) {
    if (!d) return;
    qtts_gpu *g = d->g;
    drop_seqs(d);
    qtts_gpu_buf_free(g, d->codebooks);
    qtts_gpu_mat_free(g, d->p_first);
    qtts_gpu_mat_free(g, d->p_rest);
    qtts_gpu_mat_free(g, d->in_proj);
    qtts_gpu_mat_free(g, d->out_proj);
    qtts_gpu_buf_free(g, d->in_b);
    qtts_gpu_buf_free(g, d->out_b);
    qtts_gpu_buf_free(g, d->norm_w);
    qtts_gpu_conv_free(g, d->pre);
    qtts_gpu_conv_free(g, d->dec0);
    qtts_gpu_conv_free(g, d->fin);
    for (int64_t l = 0; d->layers && l < d->n_layers; l++) {
        dlayer *ly = &d->layers[l];
        qtts_gpu_mat_free(g, ly->qkv);
        qtts_gpu_mat_free(g, ly->o);
        qtts_gpu_mat_free(g, ly->gate_up);
        qtts_gpu_mat_free(g, ly->down);
        qtts_gpu_buf_free(g, ly->in_norm);
        qtts_gpu_buf_free(g, ly->post_norm);
        qtts_gpu_buf_free(g, ly->ls_attn);
        qtts_gpu_buf_free(g, ly->ls_mlp);
    }
    free(d->layers);
    for (int u = 0; u < MAX_STAGES; u++) {
        dupstage *us = &d->up[u];
        qtts_gpu_conv_free(g, us->tconv);
        qtts_gpu_buf *bs[] = {us->dw_wt, us->dw_b, us->ln_w, us->ln_b, us->gamma, us->pw1_b, us->pw2_b};
        for (size_t i = 0; i < sizeof bs / sizeof *bs; i++) qtts_gpu_buf_free(g, bs[i]);
        qtts_gpu_mat_free(g, us->pw1);
        qtts_gpu_mat_free(g, us->pw2);
    }
    for (int b = 0; b < MAX_STAGES; b++) {
        dblock *bk = &d->blk[b];
        qtts_gpu_buf_free(g, bk->act.ea);
        qtts_gpu_buf_free(g, bk->act.ib);
        qtts_gpu_conv_free(g, bk->tconv);
        for (int r = 0; r < N_RES; r++) {
            qtts_gpu_buf_free(g, bk->a1[r].ea);
            qtts_gpu_buf_free(g, bk->a1[r].ib);
            qtts_gpu_buf_free(g, bk->a2[r].ea);
            qtts_gpu_buf_free(g, bk->a2[r].ib);
            qtts_gpu_conv_free(g, bk->c1[r]);
            qtts_gpu_conv_free(g, bk->c2[r]);
        }
    }
    qtts_gpu_buf_free(g, d->fin_act.ea);
    qtts_gpu_buf_free(g, d->fin_act.ib);
    qtts_gpu_buf_free(g, d->rope);
    for (int i = 0; i < N_CM; i++) qtts_gpu_buf_free(g, d->cm[i]);
    for (int i = 0; i < N_TM; i++) qtts_gpu_buf_free(g, d->tm[i]);
    qtts_gpu_buf_free(g, d->codes);
    qtts_gpu_buf_free(g, d->pos);
    qtts_gpu_buf_free(g, d->at);
    qtts_gpu_buf_free(g, d->pcm);
    free(d);
}

static int load_all(qtts_gpu_decoder *d, const qtts_store *st, const qtts_codec_config *cfg, qtts_err *err) {
    qtts_gpu *g = d->g;
    char p[128];
    if (sizes(d, cfg, err) || load_quantizer(d, st, err) ||
        !(d->pre = conv_load(g, st, "decoder.pre_conv.conv", d->L, d->cd, PRE_K, 1, 0, err)) ||
        load_transformer(d, st, err))
        return -1;
    for (int64_t u = 0; u < d->n_up; u++) TRY(load_upsample(d, st, cfg, u, err));
    if (!(d->dec0 = conv_load(g, st, "decoder.decoder.0.conv", d->Cd, d->L, -1, 1, 0, err))) return -1;
    for (int64_t b = 0; b < d->n_blk; b++) TRY(load_block(d, st, cfg, b, err));
    snprintf(p, sizeof p, "decoder.decoder.%lld", (long long)d->n_blk + 1);
    TRY(snake_load(g, st, p, d->out_dim, &d->fin_act, err));
    snprintf(p, sizeof p, "decoder.decoder.%lld.conv", (long long)d->n_blk + 2);
    if (!(d->fin = conv_load(g, st, p, 1, d->out_dim, -1, 1, 0, err))) return -1;
    int64_t cm, tm;
    scratch_sizes(d, &cm, &tm);
    for (int i = 0; i < N_CM; i++)
        if (!(d->cm[i] = upload(g, NULL, cm, err))) return -1;
    for (int i = 0; i < N_TM; i++)
        if (!(d->tm[i] = upload(g, NULL, tm, err))) return -1;
    return 0;
}

qtts_gpu_decoder *qtts_gpu_decoder_new(qtts_gpu *g, const qtts_store *st, const qtts_codec_config *cfg, qtts_err *err) {
    qtts_gpu_decoder *d = qtts_calloc(1, sizeof *d, err);
    if (!d) return NULL;
    d->g = g;
    if (load_all(d, st, cfg, err)) {
        qtts_gpu_decoder_free(d);
        return NULL;
    }
    return d;
}

int64_t qtts_gpu_decoder_frame_samples(const qtts_gpu_decoder *d) { return d->fs; }
int64_t qtts_gpu_decoder_num_quantizers(const qtts_gpu_decoder *d) { return d->nq; }

/* ---- streams ---- */

void qtts_gpu_dec_stream_free(qtts_gpu_dec_stream *s) {
    if (!s) return;
    for (int i = 0; i < s->n_all; i++) qtts_gpu_buf_free(s->d->g, s->all[i]);
    free(s->kc);
    free(s->vc);
    free(s);
}

/* A zeroed history buffer of n floats (NULL and no error when n is 0: a conv without history). */
static int hist(qtts_gpu_dec_stream *s, qtts_gpu_buf **b, int64_t n, qtts_err *err) {
    if (n <= 0) return 0;
    if (!(*b = upload(s->d->g, NULL, n, err))) return -1;
    s->all[s->n_all++] = *b;
    return 0;
}

qtts_gpu_dec_stream *qtts_gpu_dec_stream_new(qtts_gpu_decoder *d, qtts_err *err) {
    if (d->n_layers > 64) {
        qtts_fail(err, "GPU speech tokenizer decoder: more than 64 transformer layers");
        return NULL;
    }
    qtts_gpu_dec_stream *s = qtts_calloc(1, sizeof *s, err);
    if (!s) return NULL;
    s->d = d;
    s->id = ++d->next_id;
    s->kc = qtts_calloc((size_t)(d->n_layers ? d->n_layers : 1), sizeof *s->kc, err);
    s->vc = s->kc ? qtts_calloc((size_t)(d->n_layers ? d->n_layers : 1), sizeof *s->vc, err) : NULL;
    int rc = !s->vc;
    const int64_t kv = (d->W - 1 + MAXF) * d->nkv * d->hd; /* the window's keys and a step's new ones */
    rc = rc || hist(s, &s->pre_hist, qtts_gpu_conv_history(d->pre) * d->cd, err);
    for (int64_t l = 0; !rc && l < d->n_layers; l++)
        rc = hist(s, &s->kc[l], kv, err) || hist(s, &s->vc[l], kv, err);
    for (int64_t u = 0; !rc && u < d->n_up; u++)
        rc = hist(s, &s->up_hist[u], qtts_gpu_conv_history(d->up[u].tconv) * d->L, err) ||
             hist(s, &s->dw_hist[u], (d->up[u].dw_k - 1) * d->L, err);
    rc = rc || hist(s, &s->dec0_hist, qtts_gpu_conv_history(d->dec0) * d->L, err);
    for (int64_t b = 0; !rc && b < d->n_blk; b++) {
        const dblock *bk = &d->blk[b];
        rc = hist(s, &s->blk_hist[b], qtts_gpu_conv_history(bk->tconv) * bk->in, err);
        for (int r = 0; !rc && r < N_RES; r++)
            rc = hist(s, &s->ru_hist[b][r], qtts_gpu_conv_history(bk->c1[r]) * bk->out, err);
    }
    rc = rc || hist(s, &s->fin_hist, qtts_gpu_conv_history(d->fin) * d->out_dim, err);
    if (rc) {
        qtts_gpu_dec_stream_free(s);
        return NULL;
    }
    return s;
}

void qtts_gpu_dec_stream_reset(qtts_gpu_dec_stream *s) {
    s->frames = s->pos = s->n_cached = 0;
    for (int i = 0; i < s->n_all; i++) memset(qtts_gpu_buf_data(s->all[i]), 0, qtts_gpu_buf_size(s->all[i]));
}

int64_t qtts_gpu_dec_stream_frames(const qtts_gpu_dec_stream *s) { return s->frames; }

/* ---- recording ---- */

static qtts_gpu_rows rows(qtts_gpu_buf *b, int64_t off, int64_t ld) { return (qtts_gpu_rows){b, off, ld}; }
static const qtts_gpu_rows k_none = {NULL, 0, 0};

/* The transformer over the F rows of TM_P (time-major) into TM_P; stream
 * index i reads its positions at pos[2i] (RoPE) and pos[2i+1] (keys held). */
static int rec_transformer(qtts_gpu_seq *q, qtts_gpu_decoder *d, qtts_gpu_dec_stream *s, int i, int64_t F,
                           qtts_err *err) {
    qtts_gpu_buf **t = d->tm;
    const int64_t Hd = d->Hd, qd = d->nh * d->hd, kvd = d->nkv * d->hd, qkvd = qd + 2 * kvd, I = d->I;
    TRY(qtts_gpu_gemv(q, d->in_proj, t[TM_P], 0, d->L, t[TM_X], 0, Hd, F, err));
    TRY(qtts_gpu_add_rows(q, d->in_b, 0, 0, t[TM_X], 0, Hd, Hd, F, 1, err));
    const int64_t have = s->n_cached + F, keep = have < d->W - 1 ? have : d->W - 1;
    for (int64_t l = 0; l < d->n_layers; l++) {
        const dlayer *ly = &d->layers[l];
        TRY(qtts_gpu_rmsnorm(q, t[TM_X], 0, ly->in_norm, t[TM_HN], 0, F, Hd, d->rms_eps, err));
        TRY(qtts_gpu_gemv(q, ly->qkv, t[TM_HN], 0, Hd, t[TM_QKV], 0, qkvd, F, err));
        TRY(qtts_gpu_rope(q, t[TM_QKV], 0, qkvd, F, d->nh, d->hd, d->rope, d->pos, 2 * i, err));
        TRY(qtts_gpu_rope(q, t[TM_QKV], qd, qkvd, F, d->nkv, d->hd, d->rope, d->pos, 2 * i, err));
        TRY(qtts_gpu_kv_store(q, t[TM_QKV], qd, qkvd, F, kvd, s->kc[l], kvd, d->pos, 2 * i + 1, err));
        TRY(qtts_gpu_kv_store(q, t[TM_QKV], qd + kvd, qkvd, F, kvd, s->vc[l], kvd, d->pos, 2 * i + 1, err));
        qtts_gpu_attn_args a = {.q = t[TM_QKV], .k = s->kc[l], .v = s->vc[l], .out = t[TM_AO], .pos = d->pos,
                                .q_off = 0, .q_stride = qkvd, .kv_stride = kvd, .out_off = 0, .out_stride = qd,
                                .n_q = F, .n_heads = d->nh, .n_kv_heads = d->nkv, .head_dim = d->hd,
                                .window = d->W, .pos_index = 2 * i + 1, .scale = 1.0f / sqrtf((float)d->hd)};
        TRY(qtts_gpu_attention(q, &a, err));
        /* keep the last window-1 keys (all a later query can still see), through a copy: the ranges overlap */
        if (have > keep) {
            qtts_gpu_buf *kv[2] = {s->kc[l], s->vc[l]};
            for (int j = 0; j < 2; j++) {
                TRY(qtts_gpu_copy_rows(q, rows(kv[j], (have - keep) * kvd, 0), rows(t[TM_KV], 0, 0), 1, keep * kvd,
                                       err));
                TRY(qtts_gpu_copy_rows(q, rows(t[TM_KV], 0, 0), rows(kv[j], 0, 0), 1, keep * kvd, err));
            }
        }
        TRY(qtts_gpu_gemv(q, ly->o, t[TM_AO], 0, qd, t[TM_O], 0, Hd, F, err));
        TRY(qtts_gpu_scale_add(q, rows(t[TM_X], 0, Hd), ly->ls_attn, rows(t[TM_O], 0, Hd), F, Hd, err));
        TRY(qtts_gpu_rmsnorm(q, t[TM_X], 0, ly->post_norm, t[TM_HN], 0, F, Hd, d->rms_eps, err));
        TRY(qtts_gpu_gemv(q, ly->gate_up, t[TM_HN], 0, Hd, t[TM_GU], 0, 2 * I, F, err));
        TRY(qtts_gpu_silu_mul(q, t[TM_GU], 0, I, 2 * I, t[TM_G], 0, I, I, F, err));
        TRY(qtts_gpu_gemv(q, ly->down, t[TM_G], 0, I, t[TM_O], 0, Hd, F, err));
        TRY(qtts_gpu_scale_add(q, rows(t[TM_X], 0, Hd), ly->ls_mlp, rows(t[TM_O], 0, Hd), F, Hd, err));
    }
    TRY(qtts_gpu_rmsnorm(q, t[TM_X], 0, d->norm_w, t[TM_HN], 0, F, Hd, d->rms_eps, err));
    TRY(qtts_gpu_gemv(q, d->out_proj, t[TM_HN], 0, Hd, t[TM_P], 0, d->L, F, err));
    return qtts_gpu_add_rows(q, d->out_b, 0, 0, t[TM_P], 0, d->L, d->L, F, 1, err);
}

/* Upsampling stage u on T time-major rows at cur (cur_off) of L floats; the
 * output (T * ratio rows) is left in TM_DWB after the depthwise history. */
static int rec_upsample(qtts_gpu_seq *q, qtts_gpu_decoder *d, qtts_gpu_dec_stream *s, int64_t u, qtts_gpu_buf *cur,
                        int64_t cur_off, int64_t T, qtts_err *err) {
    const dupstage *us = &d->up[u];
    qtts_gpu_buf **t = d->tm, **c = d->cm;
    const int64_t L = d->L, H = qtts_gpu_conv_history(us->tconv), Hw = us->dw_k - 1, To = T * us->ratio;
    TRY(qtts_gpu_transpose(q, rows(cur, cur_off, L), rows(c[CM_A], 0, T), T, L, err));
    TRY(qtts_gpu_conv_pad(q, rows(c[CM_A], 0, T), L, T, NULL, NULL, rows(s->up_hist[u], 0, H), H,
                          rows(c[CM_XP], 0, H + T), err));
    TRY(qtts_gpu_conv1d(q, us->tconv, rows(c[CM_XP], 0, H + T), T, rows(c[CM_B], 0, To), k_none, err));
    /* ConvNeXt: depthwise conv over [history | new rows], time-major */
    TRY(qtts_gpu_transpose(q, rows(c[CM_B], 0, To), rows(t[TM_DWB], Hw * L, L), L, To, err));
    if (Hw > 0) TRY(qtts_gpu_copy_rows(q, rows(s->dw_hist[u], 0, 0), rows(t[TM_DWB], 0, 0), 1, Hw * L, err));
    TRY(qtts_gpu_dwconv(q, t[TM_DWB], 0, L, To, us->dw_wt, us->dw_k, us->dw_b, t[TM_DW], 0, err));
    if (Hw > 0) TRY(qtts_gpu_copy_rows(q, rows(t[TM_DWB], To * L, 0), rows(s->dw_hist[u], 0, 0), 1, Hw * L, err));
    TRY(qtts_gpu_layernorm(q, t[TM_DW], 0, us->ln_w, us->ln_b, t[TM_DW], 0, To, L, k_ln_eps, err));
    TRY(qtts_gpu_gemv(q, us->pw1, t[TM_DW], 0, L, t[TM_P1], 0, us->inner, To, err));
    TRY(qtts_gpu_add_rows(q, us->pw1_b, 0, 0, t[TM_P1], 0, us->inner, us->inner, To, 1, err));
    TRY(qtts_gpu_gelu(q, rows(t[TM_P1], 0, us->inner), To, us->inner, err));
    TRY(qtts_gpu_gemv(q, us->pw2, t[TM_P1], 0, us->inner, t[TM_DW], 0, L, To, err));
    TRY(qtts_gpu_add_rows(q, us->pw2_b, 0, 0, t[TM_DW], 0, L, L, To, 1, err));
    return qtts_gpu_scale_add(q, rows(t[TM_DWB], Hw * L, L), us->gamma, rows(t[TM_DW], 0, L), To, L, err);
}

/* Decoder block b on C = in channel-major rows of T samples in *cur (CM_A or
 * CM_B); its output (T * rate samples) goes to the other, which *cur becomes. */
static int rec_block(qtts_gpu_seq *q, qtts_gpu_decoder *d, qtts_gpu_dec_stream *s, int64_t b, int *cur, int64_t T,
                     qtts_err *err) {
    const dblock *bk = &d->blk[b];
    qtts_gpu_buf **c = d->cm, *x = c[*cur], *y = c[*cur ^ 1];
    const int64_t H = qtts_gpu_conv_history(bk->tconv), To = T * bk->rate;
    TRY(qtts_gpu_conv_pad(q, rows(x, 0, T), bk->in, T, bk->act.ea, bk->act.ib, rows(s->blk_hist[b], 0, H), H,
                          rows(c[CM_XP], 0, H + T), err));
    TRY(qtts_gpu_conv1d(q, bk->tconv, rows(c[CM_XP], 0, H + T), T, rows(y, 0, To), k_none, err));
    for (int r = 0; r < N_RES; r++) {
        const int64_t Hr = qtts_gpu_conv_history(bk->c1[r]);
        TRY(qtts_gpu_conv_pad(q, rows(y, 0, To), bk->out, To, bk->a1[r].ea, bk->a1[r].ib, rows(s->ru_hist[b][r], 0, Hr),
                              Hr, rows(c[CM_XP], 0, Hr + To), err));
        TRY(qtts_gpu_conv1d(q, bk->c1[r], rows(c[CM_XP], 0, Hr + To), To, rows(c[CM_TMP], 0, To), k_none, err));
        TRY(qtts_gpu_snake(q, rows(c[CM_TMP], 0, To), rows(c[CM_TMP2], 0, To), bk->out, To, bk->a2[r].ea,
                           bk->a2[r].ib, err));
        TRY(qtts_gpu_conv1d(q, bk->c2[r], rows(c[CM_TMP2], 0, To), To, rows(y, 0, To), rows(y, 0, To), err));
    }
    *cur ^= 1;
    return 0;
}

/* Stream i of the step: F frames whose codes are at codes[i*MAXF*nq] (copied there from the code ring
 * first where from_ring), samples to pcm[i*MAXF*fs]. */
static int rec_stream(qtts_gpu_seq *q, qtts_gpu_decoder *d, qtts_gpu_dec_stream *s, int i, int64_t F, int from_ring,
                      qtts_err *err) {
    qtts_gpu_buf **t = d->tm, **c = d->cm;
    const int64_t ed = d->ed, cd = d->cd, L = d->L, ci = (int64_t)i * MAXF * d->nq;
    if (from_ring)
        TRY(qtts_gpu_ring_gather(q, d->ring, d->ring_rows, d->nq, d->at, 2 * (int64_t)i, F, d->codes, ci, err));
    /* 1. split RVQ: codebook 0 through P_first plus the sum of the others through P_rest */
    for (int64_t f = 0; f < F; f++)
        for (int64_t j = 0; j < d->nq; j++)
            TRY(qtts_gpu_embed_add(q, d->codebooks, j * d->cb, d->cb, ed, d->codes, ci + f * d->nq + j,
                                   t[j ? TM_AR : TM_A0], f * ed, j > 1, err));
    TRY(qtts_gpu_gemv(q, d->p_first, t[TM_A0], 0, ed, t[TM_Z], 0, cd, F, err));
    TRY(qtts_gpu_gemv(q, d->p_rest, t[TM_AR], 0, ed, t[TM_Z2], 0, cd, F, err));
    TRY(qtts_gpu_add_rows(q, t[TM_Z2], 0, cd, t[TM_Z], 0, cd, cd, F, 1, err));
    /* 2. pre_conv (channel-major), back to time-major for the transformer */
    const int64_t Hp = qtts_gpu_conv_history(d->pre);
    TRY(qtts_gpu_transpose(q, rows(t[TM_Z], 0, cd), rows(c[CM_A], 0, F), F, cd, err));
    TRY(qtts_gpu_conv_pad(q, rows(c[CM_A], 0, F), cd, F, NULL, NULL, rows(s->pre_hist, 0, Hp), Hp,
                          rows(c[CM_XP], 0, Hp + F), err));
    TRY(qtts_gpu_conv1d(q, d->pre, rows(c[CM_XP], 0, Hp + F), F, rows(c[CM_B], 0, F), k_none, err));
    TRY(qtts_gpu_transpose(q, rows(c[CM_B], 0, F), rows(t[TM_P], 0, L), L, F, err));
    /* 3. transformer; 4. upsampling stages */
    TRY(rec_transformer(q, d, s, i, F, err));
    qtts_gpu_buf *cur = t[TM_P];
    int64_t cur_off = 0, T = F;
    for (int64_t u = 0; u < d->n_up; u++) {
        TRY(rec_upsample(q, d, s, u, cur, cur_off, T, err));
        T *= d->up[u].ratio;
        cur = t[TM_DWB];
        cur_off = (d->up[u].dw_k - 1) * L;
    }
    /* 5. decoder.0 */
    const int64_t H0 = qtts_gpu_conv_history(d->dec0);
    TRY(qtts_gpu_transpose(q, rows(cur, cur_off, L), rows(c[CM_A], 0, T), T, L, err));
    TRY(qtts_gpu_conv_pad(q, rows(c[CM_A], 0, T), L, T, NULL, NULL, rows(s->dec0_hist, 0, H0), H0,
                          rows(c[CM_XP], 0, H0 + T), err));
    TRY(qtts_gpu_conv1d(q, d->dec0, rows(c[CM_XP], 0, H0 + T), T, rows(c[CM_B], 0, T), k_none, err));
    /* 6. blocks; 7. final SnakeBeta, output conv and clamp */
    int cb = CM_B;
    for (int64_t b = 0; b < d->n_blk; b++) {
        TRY(rec_block(q, d, s, b, &cb, T, err));
        T *= d->blk[b].rate;
    }
    const int64_t Hf = qtts_gpu_conv_history(d->fin);
    const qtts_gpu_rows out = rows(d->pcm, (int64_t)i * MAXF * d->fs, T);
    TRY(qtts_gpu_conv_pad(q, rows(c[cb], 0, T), d->out_dim, T, d->fin_act.ea, d->fin_act.ib,
                          rows(s->fin_hist, 0, Hf), Hf, rows(c[CM_XP], 0, Hf + T), err));
    TRY(qtts_gpu_conv1d(q, d->fin, rows(c[CM_XP], 0, Hf + T), T, out, k_none, err));
    return qtts_gpu_clamp(q, out, 1, T, -1.0f, 1.0f, err);
}

/* ---- running ---- */

/* Room for n streams' codes, positions and samples, and RoPE rows up to position `positions`. */
static int reserve(qtts_gpu_decoder *d, int n, int64_t positions, qtts_err *err) {
    if (n > d->io_streams || positions > d->rope_rows) drop_seqs(d); /* they bind the buffers remade here */
    if (n > d->io_streams) {
        qtts_gpu_buf_free(d->g, d->codes);
        qtts_gpu_buf_free(d->g, d->pos);
        qtts_gpu_buf_free(d->g, d->at);
        qtts_gpu_buf_free(d->g, d->pcm);
        d->pos = d->at = d->pcm = NULL;
        d->io_streams = 0;
        if (!(d->codes = upload(d->g, NULL, (int64_t)n * MAXF * d->nq, err)) ||
            !(d->pos = upload(d->g, NULL, 2 * (int64_t)n, err)) || !(d->at = upload(d->g, NULL, 2 * (int64_t)n, err)) ||
            !(d->pcm = upload(d->g, NULL, (int64_t)n * MAXF * d->fs, err)))
            return -1;
        d->io_streams = n;
    }
    if (positions > d->rope_rows) {
        int64_t rows_new = d->rope_rows * 2 > positions ? d->rope_rows * 2 : positions;
        if (rows_new < ROPE_MIN) rows_new = ROPE_MIN;
        qtts_gpu_buf_free(d->g, d->rope);
        d->rope_rows = 0;
        if (!(d->rope = upload(d->g, NULL, rows_new * d->hd, err))) return -1;
        float *tb = qtts_gpu_buf_data(d->rope);
        for (int64_t p = 0; p < rows_new; p++) qtts_rope_angles(tb + p * d->hd, tb + p * d->hd + d->hd / 2, d->hd, p, d->theta);
        d->rope_rows = rows_new;
    }
    return 0;
}

/* The recorded sequence of a step (recorded now if it is not kept). */
static qtts_gpu_seq *step_sequence(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *S, const int64_t *F,
                                   const int *R, int n, qtts_err *err) {
    for (int e = 0; e < SEQ_CACHE; e++) {
        const step_seq *c = &d->seqs[e];
        int same = c->seq && c->n == n;
        for (int i = 0; same && i < n; i++)
            same = c->id[i] == S[i]->id && c->F[i] == F[i] && c->held[i] == S[i]->n_cached && c->ring[i] == R[i];
        if (same) return c->seq;
    }
    qtts_gpu_seq *q = qtts_gpu_seq_new(d->g, err);
    if (!q) return NULL;
    int rc = 0;
    for (int i = 0; !rc && i < n; i++) rc = rec_stream(q, d, S[i], i, F[i], R[i], err);
    if (rc || qtts_gpu_seq_end(q, err)) {
        qtts_gpu_seq_free(q);
        return NULL;
    }
    step_seq *c = &d->seqs[d->next_evict];
    d->next_evict = (d->next_evict + 1) % SEQ_CACHE;
    qtts_gpu_seq_free(c->seq);
    c->seq = q;
    c->n = n;
    for (int i = 0; i < n; i++) {
        c->id[i] = S[i]->id;
        c->F[i] = F[i];
        c->held[i] = S[i]->n_cached;
        c->ring[i] = R[i];
    }
    return q;
}

/* A submission's inputs: stream i decodes F[i] (1..MAXF) frames from C[i], or from the ring at A[i] where
 * A[i].slot >= 0; returns its recorded sequence. */
static qtts_gpu_seq *stage(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *S, const int32_t *const *C,
                           const qtts_gpu_ring_at *A, const int64_t *F, int n, qtts_err *err) {
    int64_t positions = 0;
    int R[SEQ_MAX_STREAMS];
    for (int i = 0; i < n; i++) {
        if (S[i]->pos + F[i] > positions) positions = S[i]->pos + F[i];
        R[i] = A && A[i].slot >= 0;
    }
    if (reserve(d, n, positions, err)) return NULL;
    int32_t *codes = qtts_gpu_buf_data(d->codes);
    uint32_t *pos = qtts_gpu_buf_data(d->pos), *at = qtts_gpu_buf_data(d->at);
    for (int i = 0; i < n; i++) {
        if (R[i]) {
            at[2 * i] = (uint32_t)A[i].slot;
            at[2 * i + 1] = (uint32_t)(A[i].first & (d->ring_rows - 1));
        } else {
            for (int64_t k = 0; k < F[i] * d->nq; k++)
                codes[(int64_t)i * MAXF * d->nq + k] = C[i][k] < 0 ? 0 : C[i][k];
        }
        pos[2 * i] = (uint32_t)S[i]->pos;
        pos[2 * i + 1] = (uint32_t)S[i]->n_cached;
    }
    return step_sequence(d, S, F, R, n, err);
}

/* After a submission: the samples out, the streams advanced. */
static void collect(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *S, const int64_t *F, int n, float *const *O) {
    const float *pcm = qtts_gpu_buf_data(d->pcm);
    for (int i = 0; i < n; i++) {
        memcpy(O[i], pcm + (int64_t)i * MAXF * d->fs, (size_t)(F[i] * d->fs) * sizeof(float));
        const int64_t have = S[i]->n_cached + F[i];
        S[i]->n_cached = have < d->W - 1 ? have : d->W - 1;
        S[i]->pos += F[i];
        S[i]->frames += F[i];
    }
}

static int submit(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *S, const int32_t *const *C,
                  const qtts_gpu_ring_at *A, const int64_t *F, int n, float *const *O, qtts_err *err) {
    qtts_gpu_seq *q = stage(d, S, C, A, F, n, err);
    if (!q || qtts_gpu_seq_run(q, err)) return -1;
    collect(d, S, F, n, O);
    return 0;
}

int qtts_gpu_decoder_use_ring(qtts_gpu_decoder *d, qtts_gpu_buf *ring, int64_t ring_rows, int64_t width,
                              qtts_err *err) {
    if (ring && (width != d->nq || ring_rows < 2 || (ring_rows & (ring_rows - 1)) ||
                 qtts_gpu_buf_size(ring) < (size_t)(ring_rows * width) * sizeof(int32_t)))
        return qtts_fail_as(err, QTTS_ERR_INVALID,
                            "GPU speech tokenizer: a code ring of %lld rows of %lld codes (it reads %lld a frame)",
                            (long long)ring_rows, (long long)width, (long long)d->nq);
    drop_seqs(d); /* they bind the ring */
    d->ring = ring;
    d->ring_rows = ring ? ring_rows : 0;
    d->ring_slots = ring ? (int64_t)(qtts_gpu_buf_size(ring) / ((size_t)(ring_rows * width) * sizeof(int32_t))) : 0;
    return 0;
}

/* The step's arguments checked before anything runs. */
static int check_step(const qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams, const int32_t *const *codes,
                      const qtts_gpu_ring_at *at, const int64_t *n_frames, int n, qtts_err *err) {
    for (int i = 0; i < n; i++) {
        if (n_frames[i] < 0) return qtts_fail(err, "codes: negative frame count %lld", (long long)n_frames[i]);
        if (!streams[i] || streams[i]->d != d)
            return qtts_fail(err, "GPU speech tokenizer: stream belongs to another decoder");
        for (int j = 0; j < i; j++)
            if (streams[j] == streams[i])
                return qtts_fail(err, "GPU speech tokenizer: the same stream twice in one step");
        if (at && at[i].slot >= 0) {
            if (!d->ring || at[i].slot >= d->ring_slots || at[i].first < 0 || n_frames[i] >= d->ring_rows)
                return qtts_fail_as(err, QTTS_ERR_INVALID,
                                    "GPU speech tokenizer: %lld frames of code ring slot %d (%lld slots of %lld rows)",
                                    (long long)n_frames[i], at[i].slot, (long long)d->ring_slots,
                                    (long long)d->ring_rows);
            continue;
        }
        for (int64_t k = 0; k < n_frames[i] * d->nq; k++)
            if (codes[i][k] >= d->cb)
                return qtts_fail(err, "codes: frame %lld, codebook %lld: code %d is out of range (codebook size %lld)",
                                 (long long)(k / d->nq), (long long)(k % d->nq), codes[i][k], (long long)d->cb);
    }
    return 0;
}

int qtts_gpu_decoder_step_from(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams, const int32_t *const *codes,
                               const qtts_gpu_ring_at *at, const int64_t *n_frames, int n, float *const *out,
                               qtts_err *err) {
    if (n <= 0) return 0;
    if (check_step(d, streams, codes, at, n_frames, n, err)) return -1;
    qtts_gpu_dec_stream **S = malloc((size_t)n * sizeof *S);
    const int32_t **C = malloc((size_t)n * sizeof *C);
    qtts_gpu_ring_at *A = malloc((size_t)n * sizeof *A);
    float **O = malloc((size_t)n * sizeof *O);
    int64_t *F = malloc((size_t)n * sizeof *F), *done = calloc((size_t)n, sizeof *done);
    int rc = 0;
    if (!S || !C || !A || !O || !F || !done)
        rc = qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "GPU speech tokenizer: out of memory");
    while (!rc) {
        int ns = 0;
        for (int i = 0; i < n && ns < SEQ_MAX_STREAMS; i++) {
            const int64_t left = n_frames[i] - done[i];
            if (left <= 0) continue;
            const int ring = at && at[i].slot >= 0;
            S[ns] = streams[i];
            F[ns] = left < MAXF ? left : MAXF;
            C[ns] = ring ? NULL : codes[i] + done[i] * d->nq;
            A[ns] = ring ? (qtts_gpu_ring_at){at[i].slot, at[i].first + done[i]} : (qtts_gpu_ring_at){-1, 0};
            O[ns] = out[i] + done[i] * d->fs;
            done[i] += F[ns];
            ns++;
        }
        if (!ns) break;
        rc = submit(d, S, C, A, F, ns, O, err);
    }
    free(S);
    free(C);
    free(A);
    free(O);
    free(F);
    free(done);
    return rc;
}

int qtts_gpu_decoder_step(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams, const int32_t *const *codes,
                          const int64_t *n_frames, int n, float *const *out, qtts_err *err) {
    return qtts_gpu_decoder_step_from(d, streams, codes, NULL, n_frames, n, out, err);
}

qtts_gpu_seq *qtts_gpu_decoder_stage(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams,
                                     const int32_t *const *codes, const qtts_gpu_ring_at *at, const int64_t *n_frames,
                                     int n, qtts_err *err) {
    if (n < 1 || n > SEQ_MAX_STREAMS) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "GPU speech tokenizer: a staged step of %d streams (1..%d)", n,
                     SEQ_MAX_STREAMS);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        if (n_frames[i] < 1 || n_frames[i] > MAXF) {
            qtts_fail_as(err, QTTS_ERR_INVALID, "GPU speech tokenizer: a staged step of %lld frames (1..%d)",
                         (long long)n_frames[i], MAXF);
            return NULL;
        }
    if (check_step(d, streams, codes, at, n_frames, n, err)) return NULL;
    return stage(d, streams, codes, at, n_frames, n, err);
}

void qtts_gpu_decoder_collect(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams, const int64_t *n_frames, int n,
                              float *const *out) {
    collect(d, streams, n_frames, n, out);
}
