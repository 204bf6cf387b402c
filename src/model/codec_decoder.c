/* Speech-tokenizer decoder: see codec_decoder.h. Codes are dequantised by a
 * split RVQ (z = P_first C0[c0] + P_rest sum_j Cj[cj], tables normalised as
 * embedding_sum / max(cluster_usage, 1e-5)), then run through pre_conv, a
 * sliding-window transformer, the ConvNeXt upsampling stages, decoder.0, the
 * SnakeBeta + transposed-conv + residual-unit blocks and the output conv
 * (clamped to [-1, 1]). Every conv is causal, so streaming is exact.
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
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/clock.h"
#include "tensor/conv.h"
#include "tensor/conv_winograd.h"
#include "tensor/conv_calibrate.h"
#include "tensor/attention.h"
#include "tensor/ops.h"

/* MAX_STAGES: most upsampling stages / decoder blocks a config may have;
 * N_RES residual units per block, each a dilated conv of RES_K taps then a 1x1. */
enum { MAX_STAGES = 8, N_RES = 3, RES_K = 7 };
static const int64_t k_res_dilations[N_RES] = {1, 3, 9}; /* fixed by the architecture */

enum {
    PRE_CONV_K = 3,              /* pre_conv taps (decoder.pre_conv.conv: [latent][codebook_dim][3]) */
    DEFAULT_MAX_CHUNK = 8,       /* frames per internal step (see qtts_codec_decoder_set_max_chunk) */
    MAX_CHUNK_LIMIT = 256,       /* upper clamp of set_max_chunk */
    /* Frames of all streams in one internal step: the time-major stages' buffers grow with them, and
     * beyond this a step is no faster per frame, only larger in memory. */
    STEP_FRAME_CAP = 16,
    DEFAULT_CM_BUDGET = 1 << 19, /* 512 KiB: largest block output kept cache-resident (see cm_chain) */
    TM_MAX_SPF = 16,             /* the first block's transposed conv runs time-major when its input has
                                    fewer samples per frame than this (the low-rate rule above) */
    DEFAULT_SAMPLE_RATE = 24000, /* when the config gives no output sample rate */
};
static const float k_usage_floor = 1e-5f; /* codebook tables: embedding_sum / max(cluster_usage, floor) */
static const float k_snake_eps = 1e-9f;   /* SnakeBeta: x + sin^2(a x) / (exp(beta) + eps) */
static const float k_convnext_ln_eps = 1e-6f; /* ConvNeXt LayerNorm */

/* A dense layer run time-major: y[m][:] = W x[m][:K] + bias (W packed for qtts_gemm). */
typedef struct {
    qtts_gemm_b w;
    float *bias; /* [N] or NULL */
    int64_t K, N; /* input and output width */
} lin;

/* A causal conv run time-major: y rows = im2col(x with history) * wt + bias.
 * For a transposed conv each input row yields `mult` output rows. */
typedef struct {
    lin l;
    int64_t c_in, c_out, k, dil; /* channels, taps, dilation */
    int64_t hist;                /* input rows of history it keeps: (k-1)*dil */
    int64_t mult;                /* output rows per input row (stride of a transposed conv, else 1) */
} tmconv;

/* SnakeBeta activation parameters, precomputed at load. */
typedef struct {
    float *ea, *ib; /* [C] each: exp(alpha), 1/(exp(beta)+1e-9) */
} snake;

/* One transformer layer (RMSNorm, RoPE attention in a sliding window, SwiGLU MLP, LayerScale). */
typedef struct {
    lin qkv, o, gate_up, down; /* q|k|v and gate|up stacked: one weight pass each */
    float *in_norm, *post_norm, *ls_attn, *ls_mlp; /* [hidden] each */
} tlayer;

/* One upsampling stage: causal ConvTranspose (stride = ratio) + ConvNeXt block. */
typedef struct {
    tmconv tconv;
    float *dw_wt, *dw_b; /* depthwise [k][L] (transposed), bias [L] */
    int64_t dw_k;        /* depthwise taps */
    float *ln_w, *ln_b, *gamma; /* LayerNorm weight/bias, layer scale: [L] each */
    lin pw1, pw2;        /* pointwise L -> inner -> L */
    int64_t inner;       /* pwconv1 width */
} upstage;

/* Residual unit: x += conv2(snake2(conv1(snake1(x)))), conv1 dilated RES_K taps, conv2 1x1. */
typedef struct {
    snake a1, a2;
    qtts_conv c1, c2;
} resunit;

/* Decoder block: SnakeBeta, causal ConvTranspose (in -> out channels, stride rate), N_RES residual units. */
typedef struct {
    int64_t in, out, rate, spf_in; /* channels in/out, upsampling rate; spf_in: input samples per frame */
    int tm;                        /* transposed conv time-major (low rate): tconv_tm, else tconv_cm */
    snake act;
    tmconv tconv_tm;
    qtts_conv tconv_cm;
    resunit ru[N_RES];
} dblock;

/* Scratch slots (grown on demand, reused by every step). N = stacked frames
 * of the step, S = N * samples per frame at the current stage, T = samples of
 * one stream at a channel-major stage. */
enum {
    WS_A0,   /* [N][entry_dim] first-codebook entries */
    WS_AR,   /* [N][entry_dim] sum of the other codebooks' entries */
    WS_Z,    /* [N][codebook_dim] RVQ output (P_first part, then the sum) */
    WS_Z2,   /* [N][codebook_dim] P_rest part */
    WS_P,    /* [N][latent_dim] pre_conv output */
    WS_COL,  /* [rows][c_in*k] im2col rows of a time-major conv */
    WS_HTMP, /* [hist + rows][c_in] one stream's history followed by its new rows */
    WS_X,    /* [N][hidden] transformer residual stream */
    WS_H,    /* [N][hidden] RMS-normed hidden */
    WS_Q,    /* [N][q|k|v] stacked projections */
    WS_AO,   /* [N][n_heads*head_dim] attention output */
    WS_O,    /* [N][hidden] o_proj / down_proj output */
    WS_G,    /* [N][intermediate] SwiGLU output */
    WS_U,    /* [N][2*intermediate] gate|up */
    WS_T0,   /* [N][latent_dim] transformer output */
    WS_PA,   /* [S][C] time-major stage outputs, ping-pong with WS_PB */
    WS_PB,   /* [S][C] */
    WS_DW,   /* [S][latent_dim] ConvNeXt depthwise / LayerNorm / pwconv2 output */
    WS_PW1,  /* [S][inner] ConvNeXt pwconv1 output */
    WS_CMA,  /* [C][T] channel-major copy of the last time-major output */
    WS_XP,   /* [C][hist + T] channel-major conv input: history | snake(x) */
    WS_PH,   /* [rate*out][T] transposed-conv phases before interleaving */
    WS_TMP,  /* [out][T] residual unit conv1 output */
    WS_PACK, /* qtts_gemm packing of the activations */
    WS_BLK,  /* WS_BLK + b: [out][T*rate] output of block b (channel-major) */
    WS_COUNT = WS_BLK + MAX_STAGES
};

/* Work memory: the scratch slots, the channel-major convs' work memory
 * (Winograd tiles, bf16 input, panels) and where the tail's operation times
 * go. The decoder's own set serves every step; with several streams in a
 * step and a pool of several threads, each further thread runs whole
 * streams' channel-major tails on a set of its own (see run_tails). */
typedef struct {
    float *buf[WS_COUNT]; /* scratch slots (see ws_get()) */
    size_t cap[WS_COUNT]; /* their capacity in floats */
    qtts_conv_ws conv;
    qtts_decoder_op_times *times; /* NULL, or where cm_chain adds its operations' times */
} work_set;

/* The loader's scratch buffers: the weight being packed, as f32 (read_weight),
 * and a matrix made from it or from several (a transposed conv's phases,
 * stacked layers). */
enum { PREP_WEIGHT, PREP_MATRIX, PREP_SLOTS };

struct qtts_codec_decoder {
    qtts_codec_config cfg;
    qtts_decoder_precision precision; /* the form its weights are in (set_precision converts them once) */
    qtts_store *owned_store; /* from qtts_codec_decoder_open, else NULL */
    qtts_pool *prep_pool;    /* while loading: packs the weights on its threads (NULL: this thread) */
    float *prep_buf[PREP_SLOTS]; /* while loading: reused scratch (prep_scratch) */
    size_t prep_cap[PREP_SLOTS]; /* their bytes */
    int pack_lin_bf16;       /* while loading: dense layers (convs) being packed straight into bf16, */
    int pack_conv_bf16;      /* the ones the precision asked for converts to bf16 anyway */
    /* sizes (config dec.*): */
    int64_t n_quantizers;  /* codebooks per frame (16) */
    int64_t codebook_size; /* entries per codebook (2048) */
    int64_t codebook_dim;  /* RVQ output width (512) */
    int64_t entry_dim;     /* width of one codebook entry: codebook_dim / 2 */
    int64_t latent_dim;    /* pre_conv / transformer in-out / upsampling width (1024) */
    int64_t hidden;        /* transformer hidden width (512) */
    int64_t n_heads, n_kv_heads, head_dim; /* attention geometry (GQA) */
    int64_t intermediate;  /* transformer MLP width */
    int64_t window;        /* attention sliding window (keys a query sees, itself included) */
    int64_t decoder_dim;   /* decoder.0 output channels; block b has decoder_dim >> b in, >> (b+1) out */
    int64_t n_up_stages;   /* upsampling stages (upsampling_ratios) */
    int64_t n_blocks;      /* decoder blocks (upsample_rates) */
    int64_t up_factor;     /* samples per frame after the upsampling stages: product of their ratios */
    int64_t frame_samples; /* output samples per frame: up_factor * product of the block rates (1920) */
    int64_t n_layers;      /* transformer layers */
    int64_t out_dim;       /* channels into the output conv: decoder_dim >> n_blocks */
    float rms_eps;
    double rope_theta;
    /* weights: */
    float *codebooks; /* [n_quantizers][codebook_size][entry_dim], normalised */
    lin p_first, p_rest; /* RVQ output projections entry_dim -> codebook_dim */
    tmconv pre;          /* pre_conv codebook_dim -> latent_dim */
    lin in_proj, out_proj; /* transformer latent_dim -> hidden -> latent_dim */
    float *norm_w;       /* [hidden] final RMSNorm */
    tlayer *layers;      /* [n_layers] */
    upstage up[MAX_STAGES];
    tmconv dec0;         /* decoder.0: latent_dim -> decoder_dim */
    dblock blk[MAX_STAGES];
    snake fin_act;       /* final SnakeBeta over out_dim channels */
    qtts_conv fin_conv;  /* output conv out_dim -> 1 */
    /* tuning: */
    int64_t max_chunk; /* frames per step (longer feeds are split) */
    int64_t cm_budget; /* bytes of a block output kept cache-resident (see cm_chain) */
    /* memory: */
    void **allocs; /* buffers owned by the decoder (see own()) */
    int n_allocs, cap_allocs;
    int weights_dropped;   /* qtts_codec_decoder_drop_weights: sizes only, no streams */
    double macs_per_frame; /* what qtts_codec_decoder_macs_per_frame said before the drop */
    work_set ws;       /* the steps' work memory; ws.times: qtts_codec_decoder_set_op_times */
    work_set *tail_ws; /* [n_tail_ws]: threads 1.. of run_tails, made on first use */
    int n_tail_ws;
};

/* A stream's history: everything a causal layer needs from earlier steps. */
struct qtts_codec_stream {
    const qtts_codec_decoder *dec;
    int64_t frames;   /* frames decoded */
    int64_t pos;      /* next RoPE position */
    int64_t n_cached; /* keys in the KV window (<= window - 1) */
    int64_t kv_cap;   /* rows allocated in kc/vc */
    float *pre_hist;  /* [pre.hist][codebook_dim] */
    float **kc, **vc; /* [n_layers] -> [kv_cap][n_kv_heads*head_dim] */
    float *up_hist[MAX_STAGES], *up_dw_hist[MAX_STAGES]; /* time-major: transposed conv, depthwise conv */
    float *dec0_hist;                                     /* [dec0.hist][latent_dim] */
    float *blk_hist[MAX_STAGES];       /* block transposed-conv input history (time- or channel-major) */
    float *ru_hist[MAX_STAGES][N_RES]; /* channel-major [out][hist] */
    float *fin_hist;                   /* channel-major [out_dim][hist] */
    qtts_codec_stage_fn dbg;
    void *dbg_ctx;
};

/* ---- loading ------------------------------------------------------------ */

/* Takes ownership of p (freed with the decoder); frees p and fails on OOM. NULL in, NULL out. */
static void *own(qtts_codec_decoder *d, void *p, qtts_err *err) {
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

/* Frees an owned buffer that was only a packing source (keeps the RSS to the
 * packed weights). */
static void disown_free(qtts_codec_decoder *d, void *p) {
    for (int i = d->n_allocs - 1; i >= 0; i--)
        if (d->allocs[i] == p) {
            d->allocs[i] = d->allocs[--d->n_allocs];
            free(p);
            return;
        }
}

/* Owned f32 copy of a tensor of the given shape (ndim entries, -1 = any). */
static float *load_f32(qtts_codec_decoder *d, const qtts_store *st, const char *name, int ndim, const int64_t *shape,
                       qtts_err *err) {
    const qtts_tensor *t = qtts_store_get(st, name, ndim, shape, err);
    if (!t) return NULL;
    return own(d, qtts_store_tensor_to_f32(st, t, err), err);
}

static float *load_vec(qtts_codec_decoder *d, const qtts_store *st, const char *name, int64_t n, qtts_err *err) {
    return load_f32(d, st, name, 1, &n, err);
}

/* Vector "<prefix>.<sub>" of n floats. */
static float *load_vec_at(qtts_codec_decoder *d, const qtts_store *st, const char *prefix, const char *sub, int64_t n,
                          qtts_err *err) {
    char name[256];
    snprintf(name, sizeof name, "%s.%s", prefix, sub);
    return load_vec(d, st, name, n, err);
}
/* Loader scratch buffer `slot` of at least `bytes`, kept from one weight to
 * the next: fresh pages for each weight (the kernel zeroes every one) were
 * most of the decoder's load. */
static float *prep_scratch(qtts_codec_decoder *d, int slot, size_t bytes, qtts_err *err) {
    if (bytes > d->prep_cap[slot]) {
        free(d->prep_buf[slot]); /* its contents are not needed: no realloc copy */
        d->prep_cap[slot] = 0;
        if (!(d->prep_buf[slot] = qtts_malloc(bytes, err))) return NULL;
        d->prep_cap[slot] = bytes;
        qtts_advise_huge(d->prep_buf[slot], bytes);
    }
    return d->prep_buf[slot];
}

/* Weight t as f32 for packing, in PREP_WEIGHT (valid until the next call).
 * A mapped file's bytes are read into it rather than faulted in. */
static const float *read_weight(qtts_codec_decoder *d, const qtts_store *st, const qtts_tensor *t, qtts_err *err) {
    float *w = prep_scratch(d, PREP_WEIGHT, (size_t)qtts_tensor_numel(t) * sizeof(float), err);
    if (!w || qtts_store_tensor_f32_into(st, t, w, err)) return NULL;
    qtts_tensor_f32_done(t, NULL); /* a mapped original leaves the RSS */
    return w;
}

/* A dense layer from a row-major [N][K] weight (PyTorch Linear / folded conv). */
static int make_lin(qtts_codec_decoder *d, const float *w, int64_t N, int64_t K, float *bias, lin *l, qtts_err *err) {
    if (qtts_gemm_b_init_pool(&l->w, w, N, K, d->pack_lin_bf16, d->prep_pool, err)) return -1;
    if (!own(d, l->w.p ? (void *)l->w.p : (void *)l->w.pbf, err)) {
        l->w.p = NULL;
        l->w.pbf = NULL;
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
    const float *w = read_weight(d, st, t, err);
    return w ? make_lin(d, w, rows, cols, b, l, err) : -1;
}

/* Bias-free linear "<prefix>.<sub>.weight" of shape [rows][cols]. */
static int load_mat_at(qtts_codec_decoder *d, const qtts_store *st, const char *prefix, const char *sub,
                       int64_t rows, int64_t cols, lin *l, qtts_err *err) {
    char name[256];
    snprintf(name, sizeof name, "%s.%s.weight", prefix, sub);
    return load_lin(d, st, name, 2, (int64_t[]){rows, cols}, NULL, l, err);
}

/* Several [rows_i][cols] weights "<prefix>.<sub_i>.weight" stacked into one layer. */
static int stack_lin(qtts_codec_decoder *d, const qtts_store *st, const char *prefix, const char *const *subs,
                     const int64_t *rows, int n, int64_t cols, lin *l, qtts_err *err) {
    int64_t total = 0;
    for (int i = 0; i < n; i++) total += rows[i];
    float *w = prep_scratch(d, PREP_MATRIX, (size_t)(total * cols) * sizeof(float), err);
    if (!w) return -1;
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
        char name[256];
        snprintf(name, sizeof name, "%s.%s.weight", prefix, subs[i]);
        const qtts_tensor *t = qtts_store_get2(st, name, rows[i], cols, err);
        if (!t || qtts_store_tensor_f32_into(st, t, w + off * cols, err)) return -1;
        off += rows[i];
    }
    return make_lin(d, w, total, cols, NULL, l, err);
}

/* SnakeBeta "<prefix>.alpha" / ".beta" over C channels, stored as exp(alpha), 1/(exp(beta)+eps). */
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
        b[c] = 1.0f / (expf(b[c]) + k_snake_eps);
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
    if (k <= 0) return qtts_fail(err, "%s: empty kernel", n);
    const qtts_tensor *t = qtts_store_get(st, n, 3, (int64_t[]){c_in, c_out, k}, err);
    const float *w = t ? read_weight(d, st, t, err) : NULL;
    if (!w) return -1;
    snprintf(n, sizeof n, "%s.bias", prefix);
    float *b = load_vec(d, st, n, c_out, err);
    const int64_t taps = qtts_conv_tm_transposed_taps(k, s);
    float *m = b ? prep_scratch(d, PREP_MATRIX, (size_t)(s * c_out * c_in * taps) * sizeof(float), err) : NULL;
    float *bt = m ? own(d, qtts_malloc((size_t)(s * c_out) * sizeof(float), err), err) : NULL;
    if (!bt) return -1;
    qtts_conv_tm_transposed_matrix_into(w, c_in, c_out, k, s, m, d->prep_pool);
    for (int64_t j = 0; j < s; j++) memcpy(bt + j * c_out, b, (size_t)c_out * sizeof(float));
    if (make_lin(d, m, s * c_out, c_in * taps, bt, &c->l, err)) return -1;
    c->c_in = c_in;
    c->c_out = c_out;
    c->k = taps;
    c->dil = 1;
    c->hist = taps - 1;
    c->mult = s;
    return 0;
}

/* Plain causal conv kept channel-major (tensor/conv.h; the f32 source is freed). */
static int load_cmconv(qtts_codec_decoder *d, const qtts_store *st, const char *prefix, int64_t c_out, int64_t c_in,
                       int64_t k, int64_t dil, qtts_conv *c, qtts_err *err) {
    char n[256];
    snprintf(n, sizeof n, "%s.weight", prefix);
    const qtts_tensor *t = qtts_store_get(st, n, 3, (int64_t[]){c_out, c_in, k}, err);
    const float *w = t ? read_weight(d, st, t, err) : NULL;
    if (!w) return -1;
    snprintf(n, sizeof n, "%s.bias", prefix);
    float *b = load_vec(d, st, n, c_out, err);
    return b ? qtts_conv_init_pool(c, w, b, c_out, c_in, k, dil, d->pack_conv_bf16, d->prep_pool, err) : -1;
}


/* Sizes from the config, checked; the frame length must match the product of the upsampling factors. */
static int load_sizes(qtts_codec_decoder *d, qtts_err *err) {
    const qtts_codec_config *cfg = &d->cfg;
    d->n_quantizers = cfg->dec.num_quantizers;
    d->codebook_size = cfg->dec.codebook_size;
    d->codebook_dim = cfg->dec.codebook_dim;
    d->entry_dim = d->codebook_dim / 2;
    d->latent_dim = cfg->dec.latent_dim;
    d->hidden = cfg->dec.hidden;
    d->n_heads = cfg->dec.heads;
    d->n_kv_heads = cfg->dec.kv_heads;
    d->head_dim = cfg->dec.head_dim;
    d->intermediate = cfg->dec.intermediate;
    d->window = cfg->dec.sliding_window;
    d->decoder_dim = cfg->dec.decoder_dim;
    d->n_up_stages = cfg->dec.n_upsampling_ratios;
    d->n_blocks = cfg->dec.n_upsample_rates;
    d->n_layers = cfg->dec.layers;
    d->rms_eps = (float)cfg->dec.rms_eps;
    d->rope_theta = cfg->dec.rope_theta;
    d->max_chunk = DEFAULT_MAX_CHUNK;
    d->cm_budget = DEFAULT_CM_BUDGET;
    if (d->n_quantizers < 2 || d->codebook_size <= 0 || d->codebook_dim < 2 || d->codebook_dim % 2 ||
        d->latent_dim <= 0 || d->hidden <= 0 || d->n_heads <= 0 || d->n_kv_heads <= 0 || d->n_heads % d->n_kv_heads ||
        d->head_dim <= 0 || d->head_dim % 2 || d->intermediate <= 0 || d->window <= 0 || d->decoder_dim <= 0 ||
        d->n_layers < 0 || d->n_up_stages < 0 || d->n_up_stages > MAX_STAGES || d->n_blocks < 1 ||
        d->n_blocks > MAX_STAGES || d->decoder_dim % (1LL << d->n_blocks))
        return qtts_fail(err, "speech tokenizer decoder config: unsupported sizes (quantizers %lld, codebook dim %lld, "
                              "latent %lld, hidden %lld, heads %lld/%lld x %lld, window %lld, decoder dim %lld, "
                              "%lld upsample rates, %lld upsampling ratios)",
                         (long long)d->n_quantizers, (long long)d->codebook_dim, (long long)d->latent_dim,
                         (long long)d->hidden, (long long)d->n_heads, (long long)d->n_kv_heads, (long long)d->head_dim,
                         (long long)d->window, (long long)d->decoder_dim, (long long)d->n_blocks,
                         (long long)d->n_up_stages);
    d->up_factor = 1;
    for (int64_t i = 0; i < d->n_up_stages; i++) {
        if (cfg->dec.upsampling_ratios[i] <= 0) return qtts_fail(err, "speech tokenizer: bad upsampling ratio");
        d->up_factor *= cfg->dec.upsampling_ratios[i];
    }
    int64_t total = d->up_factor;
    for (int64_t i = 0; i < d->n_blocks; i++) {
        if (cfg->dec.upsample_rates[i] <= 0) return qtts_fail(err, "speech tokenizer: bad upsample rate");
        total *= cfg->dec.upsample_rates[i];
    }
    if (cfg->frame_samples > 0 && cfg->frame_samples != total)
        return qtts_fail(err, "speech tokenizer: decode_upsample_rate %lld != product of the upsampling factors %lld",
                         (long long)cfg->frame_samples, (long long)total);
    d->frame_samples = total;
    d->out_dim = d->decoder_dim >> d->n_blocks;
    return 0;
}

/* Codebook j normalised into d->codebooks: embedding_sum / max(cluster_usage, 1e-5). */
static int load_codebook(qtts_codec_decoder *d, const qtts_store *st, int64_t j, qtts_err *err) {
    const int64_t cb = d->codebook_size, dim = d->entry_dim;
    const char *grp = j == 0 ? "rvq_first" : "rvq_rest";
    int64_t li = j == 0 ? 0 : j - 1;
    char n[256];
    snprintf(n, sizeof n, "decoder.quantizer.%s.vq.layers.%lld._codebook.embedding_sum", grp, (long long)li);
    const qtts_tensor *te = qtts_store_get2(st, n, cb, dim, err);
    if (!te) return -1;
    snprintf(n, sizeof n, "decoder.quantizer.%s.vq.layers.%lld._codebook.cluster_usage", grp, (long long)li);
    const qtts_tensor *tu = qtts_store_get1(st, n, cb, err);
    if (!tu) return -1;
    float *e = qtts_store_tensor_to_f32(st, te, err), *u = e ? qtts_store_tensor_to_f32(st, tu, err) : NULL;
    if (!e || !u) {
        free(e);
        free(u);
        return -1;
    }
    float *dst = d->codebooks + j * cb * dim;
    for (int64_t c = 0; c < cb; c++) {
        float us = u[c] < k_usage_floor ? k_usage_floor : u[c];
        for (int64_t i = 0; i < dim; i++) dst[c * dim + i] = e[c * dim + i] / us;
    }
    free(e);
    free(u);
    return 0;
}

/* Split RVQ: all codebooks and the two 1x1 output projections (rvq_first for codebook 0, rvq_rest for the sum). */
static int load_quantizer(qtts_codec_decoder *d, const qtts_store *st, qtts_err *err) {
    d->codebooks =
        own(d, qtts_malloc((size_t)(d->n_quantizers * d->codebook_size * d->entry_dim) * sizeof(float), err), err);
    if (!d->codebooks) return -1;
    for (int64_t j = 0; j < d->n_quantizers; j++)
        if (load_codebook(d, st, j, err)) return -1;
    const int64_t shape[3] = {d->codebook_dim, d->entry_dim, 1};
    if (load_lin(d, st, "decoder.quantizer.rvq_first.output_proj.weight", 3, shape, NULL, &d->p_first, err) ||
        load_lin(d, st, "decoder.quantizer.rvq_rest.output_proj.weight", 3, shape, NULL, &d->p_rest, err))
        return -1;
    return 0;
}

/* Transformer layer l: q|k|v and gate|up stacked into one weight each. */
static int load_tlayer(qtts_codec_decoder *d, const qtts_store *st, int64_t l, qtts_err *err) {
    tlayer *ly = &d->layers[l];
    const int64_t Hd = d->hidden, qd = d->n_heads * d->head_dim, kvd = d->n_kv_heads * d->head_dim;
    char p[128];
    snprintf(p, sizeof p, "decoder.pre_transformer.layers.%lld", (long long)l);
    const char *attn[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"};
    const int64_t attn_rows[] = {qd, kvd, kvd};
    const char *mlp[] = {"mlp.gate_proj", "mlp.up_proj"};
    const int64_t mlp_rows[] = {d->intermediate, d->intermediate};
    if (stack_lin(d, st, p, attn, attn_rows, 3, Hd, &ly->qkv, err) ||
        stack_lin(d, st, p, mlp, mlp_rows, 2, Hd, &ly->gate_up, err) ||
        load_mat_at(d, st, p, "self_attn.o_proj", Hd, qd, &ly->o, err) ||
        load_mat_at(d, st, p, "mlp.down_proj", Hd, d->intermediate, &ly->down, err))
        return -1;
    if (!(ly->in_norm = load_vec_at(d, st, p, "input_layernorm.weight", Hd, err)) ||
        !(ly->post_norm = load_vec_at(d, st, p, "post_attention_layernorm.weight", Hd, err)) ||
        !(ly->ls_attn = load_vec_at(d, st, p, "self_attn_layer_scale.scale", Hd, err)) ||
        !(ly->ls_mlp = load_vec_at(d, st, p, "mlp_layer_scale.scale", Hd, err)))
        return -1;
    return 0;
}

/* pre_transformer: input/output projections, final norm and the layers. */
static int load_transformer(qtts_codec_decoder *d, const qtts_store *st, qtts_err *err) {
    if (load_lin(d, st, "decoder.pre_transformer.input_proj.weight", 2, (int64_t[]){d->hidden, d->latent_dim},
                 "decoder.pre_transformer.input_proj.bias", &d->in_proj, err) ||
        load_lin(d, st, "decoder.pre_transformer.output_proj.weight", 2, (int64_t[]){d->latent_dim, d->hidden},
                 "decoder.pre_transformer.output_proj.bias", &d->out_proj, err))
        return -1;
    if (!(d->norm_w = load_vec(d, st, "decoder.pre_transformer.norm.weight", d->hidden, err))) return -1;
    d->layers = own(d, qtts_calloc((size_t)(d->n_layers ? d->n_layers : 1), sizeof *d->layers, err), err);
    if (!d->layers) return -1;
    for (int64_t l = 0; l < d->n_layers; l++)
        if (load_tlayer(d, st, l, err)) return -1;
    return 0;
}

/* Upsampling stage u: ConvTranspose (stride = kernel = ratio) then a ConvNeXt block. */
static int load_upsample(qtts_codec_decoder *d, const qtts_store *st, int64_t u, qtts_err *err) {
    upstage *us = &d->up[u];
    const int64_t L = d->latent_dim, s = d->cfg.dec.upsampling_ratios[u];
    char p[128], n[256], bn[256];
    snprintf(p, sizeof p, "decoder.upsample.%lld.0.conv", (long long)u);
    if (load_tmconv_transposed(d, st, p, L, L, s, s, &us->tconv, err)) return -1;
    snprintf(n, sizeof n, "decoder.upsample.%lld.1.dwconv.conv.weight", (long long)u);
    const qtts_tensor *tw = qtts_store_get3(st, n, L, 1, -1, err);
    if (!tw) return -1;
    us->dw_k = tw->shape[2];
    float *w = qtts_store_tensor_to_f32(st, tw, err);
    if (!w) return -1;
    us->dw_wt = own(d, qtts_malloc((size_t)(us->dw_k * L) * sizeof(float), err), err);
    if (!us->dw_wt) {
        free(w);
        return -1;
    }
    for (int64_t c = 0; c < L; c++)
        for (int64_t kk = 0; kk < us->dw_k; kk++) us->dw_wt[kk * L + c] = w[c * us->dw_k + kk];
    free(w);
    snprintf(p, sizeof p, "decoder.upsample.%lld.1", (long long)u);
    if (!(us->dw_b = load_vec_at(d, st, p, "dwconv.conv.bias", L, err)) ||
        !(us->ln_w = load_vec_at(d, st, p, "norm.weight", L, err)) ||
        !(us->ln_b = load_vec_at(d, st, p, "norm.bias", L, err)) ||
        !(us->gamma = load_vec_at(d, st, p, "gamma", L, err)))
        return -1;
    snprintf(n, sizeof n, "%s.pwconv1.weight", p);
    snprintf(bn, sizeof bn, "%s.pwconv1.bias", p);
    if (load_lin(d, st, n, 2, (int64_t[]){-1, L}, bn, &us->pw1, err)) return -1;
    us->inner = us->pw1.N;
    snprintf(n, sizeof n, "%s.pwconv2.weight", p);
    snprintf(bn, sizeof bn, "%s.pwconv2.bias", p);
    return load_lin(d, st, n, 2, (int64_t[]){L, us->inner}, bn, &us->pw2, err);
}

/* decoder.0: causal conv latent_dim -> decoder_dim (taps from the tensor). */
static int load_dec0(qtts_codec_decoder *d, const qtts_store *st, qtts_err *err) {
    const qtts_tensor *t = qtts_store_get3(st, "decoder.decoder.0.conv.weight", d->decoder_dim, d->latent_dim, -1, err);
    if (!t) return -1;
    return load_tmconv(d, st, "decoder.decoder.0.conv", d->decoder_dim, d->latent_dim, t->shape[2], 1, &d->dec0, err);
}

/* Block b's transposed conv "decoder.decoder.<b+1>.block.1.conv", time-major or channel-major. */
static int load_block_tconv(qtts_codec_decoder *d, const qtts_store *st, int64_t b, qtts_err *err) {
    dblock *bk = &d->blk[b];
    char p[128], n[256];
    snprintf(p, sizeof p, "decoder.decoder.%lld.block.1.conv", (long long)b + 1);
    snprintf(n, sizeof n, "%s.weight", p);
    const qtts_tensor *t = qtts_store_get3(st, n, bk->in, bk->out, -1, err);
    if (!t) return -1;
    int64_t k = t->shape[2];
    if (bk->tm) return load_tmconv_transposed(d, st, p, bk->in, bk->out, k, bk->rate, &bk->tconv_tm, err);
    const float *w = read_weight(d, st, t, err);
    if (!w) return -1;
    snprintf(n, sizeof n, "%s.bias", p);
    float *bb = load_vec(d, st, n, bk->out, err);
    return !bb || qtts_conv_init_transposed_pool(&bk->tconv_cm, w, bb, bk->in, bk->out, k, bk->rate, d->pack_conv_bf16,
                                                  d->prep_pool, err)
               ? -1
               : 0;
}

/* Decoder block b ("decoder.decoder.<b+1>"): SnakeBeta, transposed conv, residual units. spf_in: its input
 * samples per frame. */
static int load_block(qtts_codec_decoder *d, const qtts_store *st, int64_t b, int64_t spf_in, qtts_err *err) {
    dblock *bk = &d->blk[b];
    bk->in = d->decoder_dim >> b;
    bk->out = d->decoder_dim >> (b + 1);
    bk->rate = d->cfg.dec.upsample_rates[b];
    bk->spf_in = spf_in;
    /* Only the first block may run its transposed conv time-major: the
     * residual units after it are channel-major. */
    bk->tm = b == 0 && spf_in < TM_MAX_SPF;
    char p[128];
    snprintf(p, sizeof p, "decoder.decoder.%lld.block.0", (long long)b + 1);
    if (load_snake(d, st, p, bk->in, &bk->act, err) || load_block_tconv(d, st, b, err)) return -1;
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
    return 0;
}

/* Final SnakeBeta "decoder.decoder.<n_blocks+1>" and output conv "decoder.decoder.<n_blocks+2>.conv" (-> 1 channel). */
static int load_output(qtts_codec_decoder *d, const qtts_store *st, qtts_err *err) {
    char p[128], n[256];
    snprintf(p, sizeof p, "decoder.decoder.%lld", (long long)d->n_blocks + 1);
    if (load_snake(d, st, p, d->out_dim, &d->fin_act, err)) return -1;
    snprintf(n, sizeof n, "decoder.decoder.%lld.conv.weight", (long long)d->n_blocks + 2);
    const qtts_tensor *t = qtts_store_get3(st, n, 1, d->out_dim, -1, err);
    if (!t) return -1;
    snprintf(p, sizeof p, "decoder.decoder.%lld.conv", (long long)d->n_blocks + 2);
    return load_cmconv(d, st, p, 1, d->out_dim, t->shape[2], 1, &d->fin_conv, err);
}

/* bf16: the weights qtts_codec_decoder_set_precision converts to bf16 (see
 * convert_precision: the transformer's and the upsampling stages' dense
 * layers, the blocks' and the output's convs) are packed in it directly. */
static int load_all(qtts_codec_decoder *d, const qtts_store *st, int bf16, qtts_err *err) {
    if (load_sizes(d, err) || load_quantizer(d, st, err) ||
        load_tmconv(d, st, "decoder.pre_conv.conv", d->latent_dim, d->codebook_dim, PRE_CONV_K, 1, &d->pre, err))
        return -1;
    d->pack_lin_bf16 = bf16;
    if (load_transformer(d, st, err)) return -1;
    for (int64_t u = 0; u < d->n_up_stages; u++)
        if (load_upsample(d, st, u, err)) return -1;
    d->pack_lin_bf16 = 0;
    if (load_dec0(d, st, err)) return -1;
    d->pack_conv_bf16 = bf16; /* a low-rate block's time-major transposed conv is a dense layer: f32 */
    int64_t spf = d->up_factor;
    for (int64_t b = 0; b < d->n_blocks; b++) {
        if (load_block(d, st, b, spf, err)) return -1;
        spf *= d->blk[b].rate;
    }
    return load_output(d, st, err);
}

qtts_codec_decoder *qtts_codec_decoder_load(const qtts_store *st, const qtts_codec_config *cfg, qtts_err *err) {
    return qtts_codec_decoder_load_pool(st, cfg, NULL, QTTS_DECODER_F32, err);
}

qtts_codec_decoder *qtts_codec_decoder_load_pool(const qtts_store *st, const qtts_codec_config *cfg, qtts_pool *pool,
                                                 qtts_decoder_precision prec, qtts_err *err) {
    qtts_codec_decoder *d = qtts_calloc(1, sizeof *d, err);
    if (!d) return NULL;
    d->cfg = *cfg;
    d->prep_pool = pool;
    /* where bf16 cannot run, set_precision below says so */
    int rc = load_all(d, st, prec == QTTS_DECODER_BF16 && qtts_conv_bf16_supported(), err);
    d->prep_pool = NULL;
    d->pack_lin_bf16 = d->pack_conv_bf16 = 0;
    for (int i = 0; i < PREP_SLOTS; i++) {
        free(d->prep_buf[i]);
        d->prep_buf[i] = NULL;
        d->prep_cap[i] = 0;
    }
    if (!rc) rc = qtts_codec_decoder_set_precision_pool(d, prec, pool, err);
    if (rc) {
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
    return qtts_codec_decoder_open_pool(path, NULL, QTTS_DECODER_F32, err);
}

qtts_codec_decoder *qtts_codec_decoder_open_pool(const char *path, qtts_pool *pool, qtts_decoder_precision prec,
                                                 qtts_err *err) {
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
    qtts_codec_decoder *d = qtts_codec_decoder_load_pool(st, &cfg, pool, prec, err);
    if (!d) {
        qtts_store_free(st);
        return NULL;
    }
    d->owned_store = st;
    return d;
}

qtts_store *qtts_codec_decoder_owned_store(const qtts_codec_decoder *dec) { return dec->owned_store; }
const qtts_codec_config *qtts_codec_decoder_config(const qtts_codec_decoder *dec) { return &dec->cfg; }

/* One weight's conversion to another precision form: a dense layer's
 * panels (made beside the f32 ones, adopted afterwards on the calling thread:
 * the decoder's list of owned buffers is not shared between threads) or a
 * channel-major conv (converted in place, its f32 weights freed). The
 * conversions of one step touch disjoint weights, so they run on the pool's
 * threads at once, and each gives the same bits on any thread. */
typedef enum { CV_LIN_BF16, CV_LIN_F16, CV_LIN_I16, CV_CONV_BF16, CV_CONV_WINOGRAD, CV_CONV_I16 } convert_kind;

typedef struct {
    convert_kind kind;
    lin *l;
    qtts_conv *c;
    int m;          /* Winograd tile outputs */
    void *out;      /* a dense layer's new panels */
    float *scale;   /* and their int16 row scales */
    int failed;
    qtts_err err;
} convert_task;

typedef struct {
    convert_task *t;
    int n, cap;
    int oom;
} convert_list;

static void add_task(convert_list *cl, convert_task t) {
    if (cl->n == cl->cap) {
        int nc = cl->cap ? cl->cap * 2 : 64;
        convert_task *nt = realloc(cl->t, (size_t)nc * sizeof *nt);
        if (!nt) {
            cl->oom = 1;
            return;
        }
        cl->t = nt;
        cl->cap = nc;
    }
    cl->t[cl->n++] = t;
}

static void add_lin(convert_list *cl, lin *l, convert_kind k) {
    /* already converted, or nothing to convert from */
    if (!l->w.p || l->w.pbf || l->w.ph || l->w.pi16) return;
    add_task(cl, (convert_task){.kind = k, .l = l});
}

static void add_conv(convert_list *cl, qtts_conv *c, convert_kind k, int m) {
    add_task(cl, (convert_task){.kind = k, .c = c, .m = m});
}

static void convert_one(convert_task *t) {
    lin *l = t->l;
    int rc = 0;
    switch (t->kind) {
    case CV_LIN_BF16: rc = !(t->out = qtts_gemm_b_bf16_panels(&l->w, &t->err)); break;
    case CV_LIN_F16: rc = !(t->out = qtts_gemm_b_f16_panels(&l->w, &t->err)); break;
    case CV_LIN_I16: {
        uint32_t *pi = NULL;
        rc = qtts_gemm_b_i16_panels(&l->w, &pi, &t->scale, &t->err);
        t->out = pi;
        break;
    }
    case CV_CONV_BF16: rc = qtts_conv_to_bf16(t->c, &t->err); break;
    case CV_CONV_WINOGRAD: rc = qtts_conv_to_winograd(t->c, t->m, &t->err); break;
    case CV_CONV_I16: rc = qtts_conv_to_i16(t->c, &t->err); break;
    }
    t->failed = rc != 0;
}

static void convert_range(void *ctx, int64_t begin, int64_t end, int tid) {
    (void)tid;
    convert_list *cl = ctx;
    for (int64_t i = begin; i < end; i++) convert_one(&cl->t[i]);
}

/* Runs cl's conversions on pool (NULL: this thread), then adopts the dense
 * layers' new panels in list order; the first failure is reported (every
 * task ran, so the decoder is left consistent: converted or not, each
 * weight in one form). Empties cl. */
static int run_tasks(qtts_codec_decoder *d, convert_list *cl, qtts_pool *pool, qtts_err *err) {
    int rc = 0;
    if (cl->oom) {
        rc = qtts_fail(err, "speech tokenizer decoder: out of memory listing the precision conversion");
        cl->n = 0; /* nothing ran */
    }
    qtts_parallel_for(pool, cl->n, 1, convert_range, cl);
    for (int i = 0; i < cl->n; i++) {
        convert_task *t = &cl->t[i];
        if (t->failed) {
            if (!rc) rc = qtts_fail(err, "%s", t->err.msg);
            continue;
        }
        if (!t->l) continue;
        lin *l = t->l;
        if (!own(d, t->out, err)) { /* own freed it */
            free(t->scale);
            rc = -1;
            continue;
        }
        if (t->kind == CV_LIN_I16 && !own(d, t->scale, err)) { /* the panels stay owned */
            rc = -1;
            continue;
        }
        disown_free(d, l->w.p);
        l->w.p = NULL;
        if (t->kind == CV_LIN_BF16) l->w.pbf = t->out;
        else if (t->kind == CV_LIN_F16) l->w.ph = t->out;
        else {
            l->w.pi16 = t->out;
            l->w.si16 = t->scale;
        }
    }
    cl->n = 0;
    cl->oom = 0;
    return rc;
}

/* Lists the time-major dense layers: the transformer's (with its in and out
 * projections) and the upsampling stages', and where all is set also the
 * RVQ projections, pre_conv, decoder.0 and a low-rate block's transposed
 * conv. */
static void each_time_major_lin(qtts_codec_decoder *d, int all, convert_list *cl, convert_kind k) {
    add_lin(cl, &d->in_proj, k);
    add_lin(cl, &d->out_proj, k);
    for (int64_t l = 0; l < d->n_layers; l++) {
        tlayer *ly = &d->layers[l];
        add_lin(cl, &ly->qkv, k);
        add_lin(cl, &ly->o, k);
        add_lin(cl, &ly->gate_up, k);
        add_lin(cl, &ly->down, k);
    }
    for (int64_t u = 0; u < d->n_up_stages; u++) {
        add_lin(cl, &d->up[u].tconv.l, k);
        add_lin(cl, &d->up[u].pw1, k);
        add_lin(cl, &d->up[u].pw2, k);
    }
    if (!all) return;
    add_lin(cl, &d->p_first, k);
    add_lin(cl, &d->p_rest, k);
    add_lin(cl, &d->pre.l, k);
    add_lin(cl, &d->dec0.l, k);
    for (int64_t b = 0; b < d->n_blocks; b++)
        if (d->blk[b].tm) add_lin(cl, &d->blk[b].tconv_tm.l, k);
}

/* Outputs per Winograd tile of the residual units' 7-tap convs: F(4, 7)
 * multiplies 2.5 times per output and weight (F(2, 7): 4, the direct conv
 * 7) at ~100 dB SNR against f32, and its transforms stay a small share at
 * 96 channels; longer tiles lose accuracy fast (F(6, 7) needs 12 points).
 *
 * The channel-major transposed convs are 2-tap convs over their phases;
 * F(4, 2) multiplies 1.25 times per output and weight instead of 2, but
 * holds 5 point matrices where the conv had 2 taps. That pays where the
 * conv's input runs at WINOGRAD_TCONV_MIN_SPF samples per frame or more, so
 * each weight serves many tiles (the 384- and 192-channel blocks); the
 * 768-channel one, at 32 samples per frame, is bound by reading its weights
 * and would gain little for much more memory. With int16 points its
 * matrices cost little more than its f32 taps, so it is converted too. */
enum { WINOGRAD_M = 4, WINOGRAD_TCONV_M = 4, WINOGRAD_TCONV_MIN_SPF = 96 };

static int convert_precision(qtts_codec_decoder *d, qtts_decoder_precision p, convert_list *cl, qtts_pool *pool,
                             qtts_err *err);

int qtts_codec_decoder_set_precision(qtts_codec_decoder *d, qtts_decoder_precision p, qtts_err *err) {
    return qtts_codec_decoder_set_precision_pool(d, p, NULL, err);
}

int qtts_codec_decoder_set_precision_pool(qtts_codec_decoder *d, qtts_decoder_precision p, qtts_pool *pool,
                                          qtts_err *err) {
    if (p == d->precision) return 0;
    if (d->weights_dropped) return qtts_fail(err, "the speech decoder's weights were dropped: it runs on the device");
    if (d->precision != QTTS_DECODER_F32)
        return qtts_fail(err, "the decoder's f32 weights were already dropped for %s",
                         qtts_decoder_precision_name(d->precision));
    convert_list cl = {0};
    int rc = convert_precision(d, p, &cl, pool, err);
    free(cl.t);
    if (rc) return -1;
    d->precision = p;
    return 0;
}

static int convert_precision(qtts_codec_decoder *d, qtts_decoder_precision p, convert_list *cl, qtts_pool *pool,
                             qtts_err *err) {
    if (p == QTTS_DECODER_WINOGRAD_I16 && qtts_conv_i16_require(err)) return -1; /* before any weight is changed */
    if (p == QTTS_DECODER_WINOGRAD || p == QTTS_DECODER_WINOGRAD_F16 || p == QTTS_DECODER_WINOGRAD_I16) {
        for (int64_t b = 0; b < d->n_blocks; b++) {
            dblock *bk = &d->blk[b];
            for (int r = 0; r < N_RES; r++) add_conv(cl, &bk->ru[r].c1, CV_CONV_WINOGRAD, WINOGRAD_M);
            if (!bk->tm && (bk->spf_in >= WINOGRAD_TCONV_MIN_SPF || p == QTTS_DECODER_WINOGRAD_I16))
                add_conv(cl, &bk->tconv_cm, CV_CONV_WINOGRAD, WINOGRAD_TCONV_M);
        }
        /* the dense layers beside them: they share no weight */
        if (p != QTTS_DECODER_WINOGRAD)
            each_time_major_lin(d, 1, cl, p == QTTS_DECODER_WINOGRAD_I16 ? CV_LIN_I16 : CV_LIN_F16);
        if (run_tasks(d, cl, pool, err)) return -1;
        if (p == QTTS_DECODER_WINOGRAD_I16) { /* every channel-major 1-tap product in int16 (of the Winograd forms) */
            for (int64_t b = 0; b < d->n_blocks; b++) {
                dblock *bk = &d->blk[b];
                if (!bk->tm && bk->tconv_cm.wg) add_conv(cl, &bk->tconv_cm, CV_CONV_I16, 0);
                for (int r = 0; r < N_RES; r++) {
                    add_conv(cl, &bk->ru[r].c1, CV_CONV_I16, 0);
                    add_conv(cl, &bk->ru[r].c2, CV_CONV_I16, 0);
                }
            }
            return run_tasks(d, cl, pool, err);
        }
        return 0;
    }
    /* Time-major layers in bf16: the transformer and the upsampling stages,
     * whose weights (~70 MB in f32 at the real size) are read once per
     * streaming step, so at 1-4 frames per step they are bandwidth-bound and
     * bf16 halves their time. Each added layer costs SNR against f32 (the
     * golden decoders, T20 / T310, stay above the 30 dB floor with these);
     * the RVQ projections, pre_conv, decoder.0 and a time-major block conv
     * stay f32: each would cost more accuracy than its small share of the
     * step's time is worth, too close to the floor. */
    each_time_major_lin(d, 0, cl, CV_LIN_BF16);
    for (int64_t b = 0; b < d->n_blocks; b++) {
        dblock *bk = &d->blk[b];
        if (!bk->tm) add_conv(cl, &bk->tconv_cm, CV_CONV_BF16, 0);
        for (int r = 0; r < N_RES; r++) {
            add_conv(cl, &bk->ru[r].c1, CV_CONV_BF16, 0);
            add_conv(cl, &bk->ru[r].c2, CV_CONV_BF16, 0);
        }
    }
    add_conv(cl, &d->fin_conv, CV_CONV_BF16, 0);
    return run_tasks(d, cl, pool, err);
}

int qtts_decoder_precision_measures(const char *opt, qtts_dtype lm_weights) {
    /* f32 weights ask for the reference: f32, and no start-up measurement for it */
    return (!opt || !*opt || !strcmp(opt, "auto")) && (lm_weights == QTTS_Q8_0 || lm_weights == QTTS_Q4_K);
}

int qtts_decoder_precision_choose(const char *opt, qtts_dtype lm_weights, const qtts_conv_calibration *measured,
                                  qtts_decoder_precision *out, qtts_err *err) {
    if (!opt || !*opt || !strcmp(opt, "auto")) {
        if (!qtts_decoder_precision_measures(opt, lm_weights) || !measured) {
            *out = QTTS_DECODER_F32;
            return 0;
        }
        /* another path only where it was measured faster here (tensor/conv_calibrate.h), never by flag alone */
        const qtts_conv_calibration *c = measured;
        /* not WINOGRAD_F16: widening its panels can make batched steps slower, so it is a memory saving to be
         * asked for */
        switch (qtts_conv_calibration_best(c)) {
        case QTTS_CONV_PATH_BF16: *out = QTTS_DECODER_BF16; break;
        case QTTS_CONV_PATH_WINOGRAD_I16: *out = QTTS_DECODER_WINOGRAD_I16; break;
        case QTTS_CONV_PATH_WINOGRAD: *out = QTTS_DECODER_WINOGRAD; break;
        default: *out = QTTS_DECODER_F32; break;
        }
        return 0;
    }
    if (qtts_decoder_precision_parse(opt, out))
        return qtts_fail(err, "unknown decoder precision \"%s\" (%s)", opt, QTTS_DECODER_PRECISION_NAMES);
    return 0;
}

/* The one table of precision names (QTTS_DECODER_PRECISION_NAMES lists them for messages and help). */
static const struct {
    qtts_decoder_precision p;
    const char *name;
} precision_names[] = {
    {QTTS_DECODER_F32, "f32"},
    {QTTS_DECODER_WINOGRAD, "winograd"},
    {QTTS_DECODER_WINOGRAD_F16, "winograd-f16"},
    {QTTS_DECODER_WINOGRAD_I16, "winograd-i16"},
    {QTTS_DECODER_BF16, "bf16"},
};

int qtts_decoder_precision_parse(const char *name, qtts_decoder_precision *out) {
    for (size_t i = 0; name && i < sizeof precision_names / sizeof precision_names[0]; i++)
        if (!strcmp(name, precision_names[i].name)) {
            *out = precision_names[i].p;
            return 0;
        }
    return -1;
}

const char *qtts_decoder_precision_name(qtts_decoder_precision p) {
    for (size_t i = 0; i < sizeof precision_names / sizeof precision_names[0]; i++)
        if (precision_names[i].p == p) return precision_names[i].name;
    return "f32";
}

qtts_decoder_precision qtts_codec_decoder_precision(const qtts_codec_decoder *d) { return d->precision; }

static void work_set_free(work_set *w) {
    for (int i = 0; i < WS_COUNT; i++) free(w->buf[i]);
    qtts_conv_ws_free(&w->conv);
    memset(w, 0, sizeof *w);
}

/* Every weight and scratch buffer; the sizes stay. */
static void free_weights(qtts_codec_decoder *d) {
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
    d->allocs = NULL;
    d->n_allocs = d->cap_allocs = 0;
    work_set_free(&d->ws);
    for (int i = 0; i < d->n_tail_ws; i++) work_set_free(&d->tail_ws[i]);
    free(d->tail_ws);
    d->tail_ws = NULL;
    d->n_tail_ws = 0;
}

void qtts_codec_decoder_free(qtts_codec_decoder *d) {
    if (!d) return;
    free_weights(d);
    qtts_store_free(d->owned_store);
    free(d);
}

void qtts_codec_decoder_drop_weights(qtts_codec_decoder *d) {
    if (d->weights_dropped) return;
    d->macs_per_frame = qtts_codec_decoder_macs_per_frame(d); /* it reads the layers' shapes */
    free_weights(d);
    d->weights_dropped = 1;
}

int64_t qtts_codec_decoder_num_quantizers(const qtts_codec_decoder *d) { return d->n_quantizers; }
int64_t qtts_codec_decoder_frame_samples(const qtts_codec_decoder *d) { return d->frame_samples; }
int64_t qtts_codec_decoder_sample_rate(const qtts_codec_decoder *d) {
    return d->cfg.sample_rate > 0 ? d->cfg.sample_rate : DEFAULT_SAMPLE_RATE;
}
void qtts_codec_decoder_set_max_chunk(qtts_codec_decoder *d, int64_t frames) {
    d->max_chunk = frames < 1 ? 1 : frames > MAX_CHUNK_LIMIT ? MAX_CHUNK_LIMIT : frames;
}

const char *qtts_decoder_op_name(qtts_decoder_op op) {
    static const char *const names[QTTS_DECODER_OP_COUNT] = {"pad", "tconv", "interleave", "res_conv",
                                                            "snake", "point_conv", "output"};
    return op >= 0 && op < QTTS_DECODER_OP_COUNT ? names[op] : "?";
}

void qtts_codec_decoder_set_op_times(qtts_codec_decoder *d, qtts_decoder_op_times *times) {
    d->ws.times = times;
}

void qtts_codec_decoder_set_cache_budget(qtts_codec_decoder *d, int64_t bytes) {
    d->cm_budget = bytes < 1 ? 1 : bytes;
}

double qtts_codec_decoder_macs_per_frame(const qtts_codec_decoder *d) {
    if (d->weights_dropped) return d->macs_per_frame;
    double m = 2.0 * d->codebook_dim * d->entry_dim + (double)d->latent_dim * d->codebook_dim * d->pre.k;
    int64_t qd = d->n_heads * d->head_dim, kvd = d->n_kv_heads * d->head_dim;
    m += 2.0 * d->hidden * d->latent_dim +
         d->n_layers * (2.0 * d->hidden * qd + 2.0 * d->hidden * kvd + 3.0 * d->hidden * d->intermediate);
    int64_t spf = 1;
    for (int64_t u = 0; u < d->n_up_stages; u++) {
        const upstage *us = &d->up[u];
        m += (double)spf * us->tconv.l.N * us->tconv.l.K;
        spf *= us->tconv.mult;
        m += (double)spf * (d->latent_dim * us->dw_k + 2.0 * d->latent_dim * us->inner);
    }
    m += (double)spf * d->dec0.l.N * d->dec0.l.K;
    for (int64_t b = 0; b < d->n_blocks; b++) {
        const dblock *bk = &d->blk[b];
        m += (double)spf * bk->in * bk->out * (bk->tm ? bk->tconv_tm.k : bk->tconv_cm.k) * bk->rate;
        spf *= bk->rate;
        for (int r = 0; r < N_RES; r++) m += (double)spf * bk->out * bk->out * (RES_K + 1);
    }
    m += (double)spf * d->out_dim * d->fin_conv.k;
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

/* Zeroed n floats (at least one); sets *fail on OOM. */
static float *zalloc(int64_t n, int *fail) {
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    if (!p) *fail = 1;
    return p;
}

qtts_codec_stream *qtts_codec_stream_new(const qtts_codec_decoder *d, qtts_err *err) {
    if (d->weights_dropped) {
        qtts_fail(err, "the speech decoder's weights were dropped: it runs on the device");
        return NULL;
    }
    qtts_codec_stream *s = qtts_calloc(1, sizeof *s, err);
    if (!s) return NULL;
    s->dec = d;
    int fail = 0;
    s->pre_hist = zalloc(d->pre.hist * d->pre.c_in, &fail);
    s->kc = calloc((size_t)(d->n_layers ? d->n_layers : 1), sizeof *s->kc);
    s->vc = calloc((size_t)(d->n_layers ? d->n_layers : 1), sizeof *s->vc);
    if (!s->kc || !s->vc) fail = 1;
    for (int64_t u = 0; u < d->n_up_stages; u++) {
        s->up_hist[u] = zalloc(d->up[u].tconv.hist * d->latent_dim, &fail);
        s->up_dw_hist[u] = zalloc((d->up[u].dw_k - 1) * d->latent_dim, &fail);
    }
    s->dec0_hist = zalloc(d->dec0.hist * d->latent_dim, &fail);
    for (int64_t b = 0; b < d->n_blocks; b++) {
        const dblock *bk = &d->blk[b];
        int64_t h = bk->tm ? bk->tconv_tm.hist : qtts_conv_history(&bk->tconv_cm);
        s->blk_hist[b] = zalloc(h * bk->in, &fail);
        for (int r = 0; r < N_RES; r++) s->ru_hist[b][r] = zalloc(qtts_conv_history(&bk->ru[r].c1) * bk->out, &fail);
    }
    s->fin_hist = zalloc(qtts_conv_history(&d->fin_conv) * d->out_dim, &fail);
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
    for (int64_t u = 0; u < d->n_up_stages; u++) {
        memset(s->up_hist[u], 0, sizeof(float) * (size_t)(d->up[u].tconv.hist * d->latent_dim));
        memset(s->up_dw_hist[u], 0, sizeof(float) * (size_t)((d->up[u].dw_k - 1) * d->latent_dim));
    }
    memset(s->dec0_hist, 0, sizeof(float) * (size_t)(d->dec0.hist * d->latent_dim));
    for (int64_t b = 0; b < d->n_blocks; b++) {
        const dblock *bk = &d->blk[b];
        int64_t h = bk->tm ? bk->tconv_tm.hist : qtts_conv_history(&bk->tconv_cm);
        memset(s->blk_hist[b], 0, sizeof(float) * (size_t)(h * bk->in));
        for (int r = 0; r < N_RES; r++)
            memset(s->ru_hist[b][r], 0, sizeof(float) * (size_t)(qtts_conv_history(&bk->ru[r].c1) * bk->out));
    }
    memset(s->fin_hist, 0, sizeof(float) * (size_t)(qtts_conv_history(&d->fin_conv) * d->out_dim));
}

int64_t qtts_codec_stream_frames(const qtts_codec_stream *s) { return s->frames; }

void qtts_codec_stream_set_debug(qtts_codec_stream *s, qtts_codec_stage_fn fn, void *ctx) {
    s->dbg = fn;
    s->dbg_ctx = ctx;
}

/* Grows every layer's KV window to hold `need` keys/values. */
static int kv_reserve(qtts_codec_stream *s, int64_t need, qtts_err *err) {
    const qtts_codec_decoder *d = s->dec;
    if (need <= s->kv_cap) return 0;
    int64_t kvd = d->n_kv_heads * d->head_dim;
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

/* Scratch slot `slot` (WS_*) of w with room for n floats; contents are not kept across growth. */
static float *ws_get(work_set *w, int slot, int64_t n, qtts_err *err) {
    size_t need = (size_t)(n > 0 ? n : 1);
    if (need > w->cap[slot]) {
        free(w->buf[slot]);
        w->buf[slot] = malloc(need * sizeof(float));
        w->cap[slot] = w->buf[slot] ? need : 0;
        if (!w->buf[slot]) {
            qtts_fail(err, "speech tokenizer decoder: out of memory (%zu floats of scratch)", need);
            return NULL;
        }
    }
    return w->buf[slot];
}

/* The decoder's own set's slot. */
static float *scratch(qtts_codec_decoder *d, int slot, int64_t n, qtts_err *err) {
    return ws_get(&d->ws, slot, n, err);
}

/* Debug hook for a time-major [n][C] stage output. */
static void emit_tm(qtts_codec_stream *s, const char *stage, const float *x, int64_t C, int64_t n) {
    if (s->dbg) s->dbg(s->dbg_ctx, stage, x, C, n, 1, C);
}

/* Debug hook for a channel-major [C][n] stage output (row stride ld). */
static void emit_cm(qtts_codec_stream *s, const char *stage, const float *x, int64_t ld, int64_t C, int64_t n) {
    if (s->dbg) s->dbg(s->dbg_ctx, stage, x, C, n, ld, 1);
}

/* y [M][N] = x [M][K] through layer l (+ bias); the activations are packed into WS_PACK. */
static int lin_run(qtts_codec_decoder *d, qtts_pool *pool, const lin *l, const float *x, int64_t M, float *y,
                   qtts_err *err) {
    float *pack = scratch(d, WS_PACK, (int64_t)qtts_gemm_work_size(M, &l->w, pool), err);
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
    float *col = scratch(d, WS_COL, N * cols, err), *tmp = scratch(d, WS_HTMP, (c->hist + mx) * c->c_in, err);
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

/* The transformer over the stacked rows in [N][latent_dim] -> y [N][latent_dim]; every stream keeps its
 * last window-1 keys and values and its RoPE position. */
static int transformer(qtts_codec_decoder *d, qtts_pool *pool, qtts_codec_stream *const *S, const int64_t *F,
                       const int64_t *roff, int ns, int64_t N, const float *in, float *y, qtts_err *err) {
    int64_t Hd = d->hidden, qd = d->n_heads * d->head_dim, kvd = d->n_kv_heads * d->head_dim;
    int64_t qkvd = qd + 2 * kvd, I = d->intermediate;
    float *X = scratch(d, WS_X, N * Hd, err), *Hn = scratch(d, WS_H, N * Hd, err),
          *QKV = scratch(d, WS_Q, N * qkvd, err);
    float *AO = scratch(d, WS_AO, N * qd, err), *O = scratch(d, WS_O, N * Hd, err), *G = scratch(d, WS_G, N * I, err);
    float *GU = scratch(d, WS_U, N * 2 * I, err);
    if (!X || !Hn || !QKV || !AO || !O || !G || !GU) return -1;
    for (int i = 0; i < ns; i++)
        if (kv_reserve(S[i], d->window - 1 + F[i], err)) return -1;
    if (lin_run(d, pool, &d->in_proj, in, N, X, err)) return -1;
    for (int64_t l = 0; l < d->n_layers; l++) {
        const tlayer *ly = &d->layers[l];
        qtts_rmsnorm(pool, X, ly->in_norm, N, Hd, d->rms_eps, Hn);
        if (lin_run(d, pool, &ly->qkv, Hn, N, QKV, err)) return -1;
        for (int i = 0; i < ns; i++) {
            qtts_codec_stream *s = S[i];
            float *q = QKV + roff[i] * qkvd, *k = q + qd;
            qtts_rope_neox(q, F[i], qkvd, d->n_heads, d->head_dim, s->pos, d->rope_theta);
            qtts_rope_neox(k, F[i], qkvd, d->n_kv_heads, d->head_dim, s->pos, d->rope_theta);
            for (int64_t f = 0; f < F[i]; f++) {
                memcpy(s->kc[l] + (s->n_cached + f) * kvd, k + f * qkvd, (size_t)kvd * sizeof(float));
                memcpy(s->vc[l] + (s->n_cached + f) * kvd, k + f * qkvd + kvd, (size_t)kvd * sizeof(float));
            }
            qtts_attn_args a = {.q = q, .q_stride = qkvd, .k = s->kc[l], .v = s->vc[l], .kv_stride = kvd,
                                .out = AO + roff[i] * qd, .out_stride = qd, .n_q = F[i], .q_first = s->n_cached,
                                .n_heads = d->n_heads, .n_kv_heads = d->n_kv_heads, .head_dim = d->head_dim,
                                .window = d->window, .scale = 1.0f / sqrtf((float)d->head_dim)};
            qtts_attention(pool, &a);
            /* keep the last window-1 keys: all a later query can still see */
            int64_t have = s->n_cached + F[i], keepn = have < d->window - 1 ? have : d->window - 1;
            memmove(s->kc[l], s->kc[l] + (have - keepn) * kvd, (size_t)(keepn * kvd) * sizeof(float));
            memmove(s->vc[l], s->vc[l] + (have - keepn) * kvd, (size_t)(keepn * kvd) * sizeof(float));
        }
        if (lin_run(d, pool, &ly->o, AO, N, O, err)) return -1;
        for (int64_t r = 0; r < N; r++)
            for (int64_t c = 0; c < Hd; c++) X[r * Hd + c] += ly->ls_attn[c] * O[r * Hd + c];
        qtts_rmsnorm(pool, X, ly->post_norm, N, Hd, d->rms_eps, Hn);
        if (lin_run(d, pool, &ly->gate_up, Hn, N, GU, err)) return -1;
        qtts_swiglu_fused(pool, GU, N, I, G);
        if (lin_run(d, pool, &ly->down, G, N, O, err)) return -1;
        for (int64_t r = 0; r < N; r++)
            for (int64_t c = 0; c < Hd; c++) X[r * Hd + c] += ly->ls_mlp[c] * O[r * Hd + c];
    }
    for (int i = 0; i < ns; i++) {
        qtts_codec_stream *s = S[i];
        int64_t have = s->n_cached + F[i];
        s->n_cached = have < d->window - 1 ? have : d->window - 1;
        s->pos += F[i];
    }
    qtts_rmsnorm(pool, X, d->norm_w, N, Hd, d->rms_eps, Hn);
    return lin_run(d, pool, &d->out_proj, Hn, N, y, err);
}

typedef struct {
    float *x;
    int64_t width;
} gelu_job;

/* Exact (erf) GELU over rows r0..r1 of a gelu_job. */
static void gelu_rows(void *p, int64_t r0, int64_t r1, int tid) {
    (void)tid;
    const gelu_job *j = p;
    qtts_gelu_erf(j->x + r0 * j->width, (r1 - r0) * j->width);
}

/* ConvNeXt block in place on x [rows][L] (stacked streams). */
static int convnext(qtts_codec_decoder *d, qtts_pool *pool, const upstage *us, qtts_codec_stream *const *S,
                    const int64_t *rows, int ns, int u, float *x, qtts_err *err) {
    int64_t L = d->latent_dim, N = 0, mx = 0, H = us->dw_k - 1;
    for (int i = 0; i < ns; i++) {
        N += rows[i];
        mx = rows[i] > mx ? rows[i] : mx;
    }
    float *dw = scratch(d, WS_DW, N * L, err), *tmp = scratch(d, WS_HTMP, (H + mx) * L, err);
    float *p1 = scratch(d, WS_PW1, N * us->inner, err);
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
    qtts_layernorm(pool, dw, us->ln_w, us->ln_b, N, L, k_convnext_ln_eps, dw);
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
    for (int64_t j = b; j < d->n_blocks; j++) g *= d->blk[j].tm ? 1 : d->blk[j].rate;
    return g;
}


/* The one failure of qtts_conv1d_cm: no memory for its per-call buffers
 * (a bf16 conv's rounded input, a Winograd conv's transformed tiles). */
static int conv_oom(qtts_err *err) {
    return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "speech tokenizer decoder: out of memory (convolution work buffers)");
}

/* Runs stmt, adding its wall time to operation op's total when timing is on. */
#define OP_TIMED(w, op, stmt)                                                                                 \
    do {                                                                                                      \
        const double op_t0_ = (w)->times ? qtts_now_ms() : 0;                                                \
        stmt;                                                                                                 \
        if ((w)->times) (w)->times->ms[op] += qtts_now_ms() - op_t0_;                                        \
    } while (0)

/* Blocks b.. of the channel-major tail and the output conv for one stream:
 * in holds C channels x T samples (row stride ldin; for a block whose
 * transposed conv already ran time-major it is that conv's output and is
 * updated in place); out gets T*chain_gain(b) samples. When a block's output
 * would outgrow the cache budget, the rest of the chain runs on pieces of
 * the input: every layer carries its own history, so this is exact, and the
 * big early weights still see the whole chunk. */
static int cm_chain(const qtts_codec_decoder *d, qtts_pool *pool, work_set *w, qtts_codec_stream *s, int64_t b,
                    float *in, int64_t ldin, int64_t C, int64_t T, float *out, qtts_err *err) {
    char name[32];
    for (; b < d->n_blocks; b++) {
        const dblock *bk = &d->blk[b];
        int64_t up = bk->tm ? 1 : bk->rate;
        if (T > 1 && T * up * bk->out * (int64_t)sizeof(float) > d->cm_budget) {
            int64_t p = d->cm_budget / (up * bk->out * (int64_t)sizeof(float)), g = chain_gain(d, b);
            if (p < 1) p = 1;
            for (int64_t t0 = 0; t0 < T; t0 += p)
                if (cm_chain(d, pool, w, s, b, in + t0, ldin, C, T - t0 < p ? T - t0 : p, out + t0 * g, err)) return -1;
            return 0;
        }
        float *cur = in;
        int64_t ld = ldin;
        if (!bk->tm) {
            int64_t H = qtts_conv_history(&bk->tconv_cm), Tout = T * bk->rate;
            float *xp = ws_get(w, WS_XP, bk->in * (H + T), err), *ph = ws_get(w, WS_PH, bk->rate * bk->out * T, err);
            cur = ws_get(w, WS_BLK + (int)b, bk->out * Tout, err);
            if (!xp || !ph || !cur) return -1;
            OP_TIMED(w, QTTS_DECODER_OP_PAD, cm_pad(pool, in, ldin, xp, s->blk_hist[b], bk->in, H, T, &bk->act));
            int rc;
            OP_TIMED(w, QTTS_DECODER_OP_TCONV,
                     rc = qtts_conv1d_cm_ws(pool, &bk->tconv_cm, xp, H + T, T, ph, T, NULL, 0, &w->conv));
            if (rc) return conv_oom(err);
            OP_TIMED(w, QTTS_DECODER_OP_INTERLEAVE,
                     qtts_conv_interleave(pool, ph, T, bk->out, bk->rate, T, cur, Tout));
            ld = T = Tout;
        }
        for (int r = 0; r < N_RES; r++) {
            const resunit *ru = &bk->ru[r];
            int64_t H = qtts_conv_history(&ru->c1);
            float *xp = ws_get(w, WS_XP, bk->out * (H + T), err), *tmp = ws_get(w, WS_TMP, bk->out * T, err);
            if (!xp || !tmp) return -1;
            int rc;
            OP_TIMED(w, QTTS_DECODER_OP_PAD, cm_pad(pool, cur, ld, xp, s->ru_hist[b][r], bk->out, H, T, &ru->a1));
            OP_TIMED(w, QTTS_DECODER_OP_RES_CONV,
                     rc = qtts_conv1d_cm_ws(pool, &ru->c1, xp, H + T, T, tmp, T, NULL, 0, &w->conv));
            if (rc) return conv_oom(err);
            OP_TIMED(w, QTTS_DECODER_OP_SNAKE, qtts_snake_cm(pool, tmp, T, tmp, T, bk->out, T, ru->a2.ea, ru->a2.ib));
            OP_TIMED(w, QTTS_DECODER_OP_POINT_CONV,
                     rc = qtts_conv1d_cm_ws(pool, &ru->c2, tmp, T, T, cur, ld, cur, ld, &w->conv));
            if (rc) return conv_oom(err);
        }
        snprintf(name, sizeof name, "decoder%lld_out", (long long)b + 1);
        emit_cm(s, name, cur, ld, bk->out, T);
        in = cur;
        ldin = ld;
        C = bk->out;
    }
    int64_t H = qtts_conv_history(&d->fin_conv);
    float *xp = ws_get(w, WS_XP, d->out_dim * (H + T), err);
    if (!xp) return -1;
    const double t0 = w->times ? qtts_now_ms() : 0;
    cm_pad(pool, in, ldin, xp, s->fin_hist, d->out_dim, H, T, &d->fin_act);
    snprintf(name, sizeof name, "decoder%lld_out", (long long)d->n_blocks + 1);
    emit_cm(s, name, xp + H, H + T, d->out_dim, T);
    if (qtts_conv1d_cm_ws(pool, &d->fin_conv, xp, H + T, T, out, T, NULL, 0, &w->conv)) return conv_oom(err);
    snprintf(name, sizeof name, "decoder%lld_out", (long long)d->n_blocks + 2);
    emit_cm(s, name, out, T, 1, T);
    for (int64_t t = 0; t < T; t++) out[t] = out[t] > 1.0f ? 1.0f : out[t] < -1.0f ? -1.0f : out[t];
    if (w->times) w->times->ms[QTTS_DECODER_OP_OUTPUT] += qtts_now_ms() - t0;
    return 0;
}

/* Channel-major part of one stream, from the last time-major output [T][C]. */
static int cm_tail(const qtts_codec_decoder *d, qtts_pool *pool, work_set *w, qtts_codec_stream *s,
                   const float *in_tm, int64_t C, int64_t T, float *out, qtts_err *err) {
    float *cur = ws_get(w, WS_CMA, C * T, err);
    if (!cur) return -1;
    for (int64_t t = 0; t < T; t++)
        for (int64_t c = 0; c < C; c++) cur[c * T + t] = in_tm[t * C + c];
    return cm_chain(d, pool, w, s, 0, cur, T, C, T, out, err);
}

/* Split-RVQ dequantisation of the stacked frames into Z [N][codebook_dim]: codebook 0 through P_first plus
 * the sum of the others through P_rest (negative codes read entry 0). */
static int dequantise(qtts_codec_decoder *d, qtts_pool *pool, qtts_codec_stream *const *S, const int32_t *const *codes,
                      const int64_t *F, const int64_t *roff, int ns, int64_t N, float *Z, qtts_err *err) {
    const int64_t ed = d->entry_dim, cd = d->codebook_dim;
    float *A0 = scratch(d, WS_A0, N * ed, err), *AR = scratch(d, WS_AR, N * ed, err);
    float *Z2 = scratch(d, WS_Z2, N * cd, err);
    if (!A0 || !AR || !Z2) return -1;
    for (int i = 0; i < ns; i++)
        for (int64_t f = 0; f < F[i]; f++) {
            const int32_t *c = codes[i] + f * d->n_quantizers;
            float *a0 = A0 + (roff[i] + f) * ed, *ar = AR + (roff[i] + f) * ed;
            memcpy(a0, d->codebooks + (int64_t)(c[0] < 0 ? 0 : c[0]) * ed, (size_t)ed * sizeof(float));
            for (int64_t k = 0; k < ed; k++) ar[k] = 0.0f;
            for (int64_t j = 1; j < d->n_quantizers; j++) {
                const float *e = d->codebooks + (j * d->codebook_size + (c[j] < 0 ? 0 : c[j])) * ed;
                for (int64_t k = 0; k < ed; k++) ar[k] += e[k];
            }
        }
    if (lin_run(d, pool, &d->p_first, A0, N, Z, err) || lin_run(d, pool, &d->p_rest, AR, N, Z2, err)) return -1;
    for (int64_t k = 0; k < N * cd; k++) Z[k] += Z2[k];
    for (int i = 0; i < ns; i++) emit_tm(S[i], "rvq_out", Z + roff[i] * cd, cd, F[i]);
    return 0;
}

/* The upsampling stages (transposed conv + ConvNeXt, time-major) from *cur [N][latent_dim]: *cur becomes the
 * last stage's output (in the WS_PA/WS_PB slot *pp selects, which then flips) and *scale the rows per frame. */
static int upsample(qtts_codec_decoder *d, qtts_pool *pool, qtts_codec_stream *const *S, const int64_t *F,
                    const int64_t *roff, int ns, int64_t N, int64_t *rows, float **hists, float **cur, int *pp,
                    int64_t *scale, qtts_err *err) {
    const int64_t L = d->latent_dim;
    char name[48];
    for (int64_t u = 0; u < d->n_up_stages; u++) {
        const upstage *us = &d->up[u];
        float *nx = scratch(d, *pp ? WS_PB : WS_PA, N * *scale * us->tconv.mult * L, err);
        if (!nx) return -1;
        *pp ^= 1;
        for (int i = 0; i < ns; i++) {
            hists[i] = S[i]->up_hist[u];
            rows[i] = F[i] * *scale;
        }
        if (tmconv_run(d, pool, &us->tconv, hists, rows, ns, *cur, nx, err)) return -1;
        *scale *= us->tconv.mult;
        snprintf(name, sizeof name, "upsample%lld_transconv_out", (long long)u);
        for (int i = 0; i < ns; i++) emit_tm(S[i], name, nx + roff[i] * *scale * L, L, F[i] * *scale);
        for (int i = 0; i < ns; i++) rows[i] = F[i] * *scale;
        if (convnext(d, pool, us, S, rows, ns, (int)u, nx, err)) return -1;
        snprintf(name, sizeof name, "upsample%lld_convnext_out", (long long)u);
        for (int i = 0; i < ns; i++) emit_tm(S[i], name, nx + roff[i] * *scale * L, L, F[i] * *scale);
        *cur = nx;
    }
    return 0;
}

/* The channel-major tails of a step's streams, which are independent. One
 * stream: its convs split across the pool's threads. Several, on a pool of
 * several threads: each thread takes whole streams, one after the other, on
 * its own lane and work set, so a conv never waits for the slowest thread
 * and each stream's activations stay in one core's cache; a thread out of
 * streams helps the lanes still working. Same results either way (each stream's
 * arithmetic does not depend on the thread that runs it). */
typedef struct {
    const qtts_codec_decoder *d;
    qtts_pool *pool;
    work_set **sets; /* [n_threads] */
    qtts_codec_stream *const *S;
    const float *cur;
    const int64_t *roff, *F;
    int64_t scale, C;
    float *const *out;
    int ns;
    atomic_int next;
    atomic_int *done; /* [n_threads] */
    int *rc;          /* [n_threads] */
    qtts_err *errs;   /* [n_threads] */
} tails_job;

static void tails_body(void *ctx, int tid, int n_threads) {
    tails_job *j = ctx;
    qtts_pool *lane = qtts_pool_lane(j->pool, tid);
    for (int i; !j->rc[tid] && (i = atomic_fetch_add(&j->next, 1)) < j->ns;)
        j->rc[tid] = cm_tail(j->d, lane, j->sets[tid], j->S[i], j->cur + j->roff[i] * j->scale * j->C, j->C,
                             j->F[i] * j->scale, j->out[i], &j->errs[tid]);
    atomic_store_explicit(&j->done[tid], 1, memory_order_release);
    /* a helper's slot in lane o: its tid, thread 0's the lane owner's own (free: the owner is slot 0) */
    for (int o = 0; o < n_threads; o++)
        if (o != tid) qtts_pool_lane_help(qtts_pool_lane(j->pool, o), tid ? tid : o, &j->done[o]);
}

static int run_tails(qtts_codec_decoder *d, qtts_pool *pool, qtts_codec_stream *const *S, int ns, const float *cur,
                     const int64_t *roff, int64_t scale, int64_t C, const int64_t *F, float *const *out,
                     qtts_err *err) {
    const int n = qtts_pool_lane(pool, 0) ? qtts_pool_size(pool) : 1; /* a lane (or one thread) has no lanes */
    int parallel = ns > 1 && n > 1;
    for (int i = 0; i < ns; i++) parallel &= !S[i]->dbg; /* debug hooks are called on the owner's thread */
    if (parallel && d->n_tail_ws < n - 1) {
        work_set *t = realloc(d->tail_ws, (size_t)(n - 1) * sizeof *t);
        if (!t) return qtts_fail(err, "speech tokenizer decoder: out of memory");
        memset(t + d->n_tail_ws, 0, (size_t)(n - 1 - d->n_tail_ws) * sizeof *t);
        d->tail_ws = t;
        d->n_tail_ws = n - 1;
    }
    if (!parallel) {
        for (int i = 0; i < ns; i++)
            if (cm_tail(d, pool, &d->ws, S[i], cur + roff[i] * scale * C, C, F[i] * scale, out[i], err)) return -1;
        return 0;
    }
    qtts_decoder_op_times *const op = d->ws.times; /* a benchmark's table, or NULL */
    work_set *sets[n];
    atomic_int done[n];
    int rc[n];
    qtts_err errs[n];
    qtts_decoder_op_times times[n]; /* one per thread (they run at once), added to op after */
    for (int t = 0; t < n; t++) {
        sets[t] = t ? &d->tail_ws[t - 1] : &d->ws;
        memset(&times[t], 0, sizeof times[t]);
        sets[t]->times = op ? &times[t] : NULL;
        atomic_init(&done[t], 0);
        rc[t] = 0;
        errs[t].msg[0] = 0;
    }
    tails_job j = {.d = d, .pool = pool, .sets = sets, .S = S, .cur = cur, .roff = roff, .F = F, .scale = scale,
                   .C = C, .out = out, .ns = ns, .done = done, .rc = rc, .errs = errs};
    atomic_init(&j.next, 0);
    qtts_pool_run(pool, tails_body, &j);
    for (int t = 0; t < n; t++) {
        sets[t]->times = NULL;
        if (op)
            for (int o = 0; o < QTTS_DECODER_OP_COUNT; o++) op->ms[o] += times[t].ms[o];
    }
    d->ws.times = op;
    for (int t = 0; t < n; t++)
        if (rc[t]) {
            *err = errs[t];
            return -1;
        }
    return 0;
}

/* One step: ns streams S[i] with F[i] = 1..max_chunk frames each, codes validated; out[i] gets
 * F[i]*frame_samples samples. */
static int decode_step(qtts_codec_decoder *d, qtts_pool *pool, qtts_codec_stream *const *S,
                       const int32_t *const *codes, const int64_t *F, int ns, float *const *out, qtts_err *err) {
    /* Per stream i: roff[i] its first stacked row, rows[i] its rows at the current stage and hists[i] its
     * history of the layer being run (first pre_conv); N: the frames of all streams. */
    int64_t roff[ns > 0 ? ns : 1], rows[ns > 0 ? ns : 1], N = 0;
    float *hists[ns > 0 ? ns : 1];
    for (int i = 0; i < ns; i++) {
        roff[i] = N;
        rows[i] = F[i];
        hists[i] = S[i]->pre_hist;
        N += F[i];
    }
    const int64_t L = d->latent_dim;
    float *Z = scratch(d, WS_Z, N * d->codebook_dim, err), *P = scratch(d, WS_P, N * L, err);
    float *T0 = scratch(d, WS_T0, N * L, err);
    if (!Z || !P || !T0) return -1;

    /* 1. dequantise; 2. pre_conv; 3. transformer */
    if (dequantise(d, pool, S, codes, F, roff, ns, N, Z, err)) return -1;
    if (tmconv_run(d, pool, &d->pre, hists, rows, ns, Z, P, err)) return -1;
    for (int i = 0; i < ns; i++) emit_tm(S[i], "pre_conv_out", P + roff[i] * L, L, F[i]);
    if (transformer(d, pool, S, F, roff, ns, N, P, T0, err)) return -1;
    for (int i = 0; i < ns; i++) emit_tm(S[i], "pre_transformer_out", T0 + roff[i] * L, L, F[i]);

    /* 4. upsampling */
    float *cur = T0;
    int pp = 0;
    int64_t scale = 1;
    if (upsample(d, pool, S, F, roff, ns, N, rows, hists, &cur, &pp, &scale, err)) return -1;

    /* 5. decoder.0 */
    int64_t C = d->decoder_dim;
    float *d0 = scratch(d, pp ? WS_PB : WS_PA, N * scale * C, err);
    if (!d0) return -1;
    pp ^= 1;
    for (int i = 0; i < ns; i++) {
        hists[i] = S[i]->dec0_hist;
        rows[i] = F[i] * scale;
    }
    if (tmconv_run(d, pool, &d->dec0, hists, rows, ns, cur, d0, err)) return -1;
    for (int i = 0; i < ns; i++) emit_tm(S[i], "decoder0_out", d0 + roff[i] * scale * C, C, F[i] * scale);
    cur = d0;

    /* 6. first block's SnakeBeta + transposed conv, time-major when the rate is low */
    const dblock *b0 = &d->blk[0];
    if (b0->tm) {
        qtts_snake_tm(cur, C, C, N * scale, b0->act.ea, b0->act.ib);
        float *nx = scratch(d, pp ? WS_PB : WS_PA, N * scale * b0->rate * b0->out, err);
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
    if (run_tails(d, pool, S, ns, cur, roff, scale, C, F, out, err)) return -1;
    for (int i = 0; i < ns; i++) S[i]->frames += F[i];
    return 0;
}

/* Rejects codes >= codebook_size (negative ones are padding, read as 0). */
static int check_codes(const qtts_codec_decoder *d, const int32_t *codes, int64_t n, qtts_err *err) {
    for (int64_t f = 0; f < n; f++)
        for (int64_t q = 0; q < d->n_quantizers; q++) {
            int32_t c = codes[f * d->n_quantizers + q];
            if (c >= d->codebook_size)
                return qtts_fail(err, "codes: frame %lld, codebook %lld: code %d is out of range (codebook size %lld)",
                                 (long long)f, (long long)q, c, (long long)d->codebook_size);
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
        int64_t frames = 0;
        for (int i = 0; i < n_streams; i++) {
            int64_t left = n_frames[i] - done[i];
            if (left <= 0) continue;
            if (ns && frames + (left < d->max_chunk ? left : d->max_chunk) > STEP_FRAME_CAP) break;
            S[ns] = streams[i];
            F[ns] = left < d->max_chunk ? left : d->max_chunk;
            C[ns] = codes[i] + done[i] * d->n_quantizers;
            O[ns] = out[i] + done[i] * d->frame_samples;
            done[i] += F[ns];
            frames += F[ns];
            ns++;
        }
        if (!ns) break;
        if ((rc = decode_step(d, pool, S, C, F, ns, O, err))) break;
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
        float *junk = context ? qtts_malloc((size_t)(context * d->frame_samples) * sizeof(float), err) : NULL;
        if (context && !junk) rc = -1;
        for (int64_t start = 0; !rc && start < T;) {
            int64_t end = start + chunk < T ? start + chunk : T;
            int64_t ctx = start - context > 0 ? context : start;
            qtts_codec_stream_reset(s);
            if (ctx) rc = qtts_codec_decode_feed(d, pool, s, codes + (start - ctx) * d->n_quantizers, ctx, junk, err);
            if (!rc)
                rc = qtts_codec_decode_feed(d, pool, s, codes + start * d->n_quantizers, end - start,
                                            out + start * d->frame_samples, err);
            start = end;
        }
        free(junk);
    }
    qtts_codec_stream_free(s);
    return rc;
}
