#include "model/lm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/linear.h"
#include "tensor/attention.h"
#include "tensor/ops.h"

static float *load_vec(const qtts_store *st, const char *name, int64_t n, qtts_err *err) {
    const qtts_tensor *t = qtts_store_get1(st, name, n, err);
    return t ? qtts_tensor_to_f32(t, err) : NULL;
}

static int load_mat(qtts_mat *m, const qtts_store *st, const char *name, int64_t rows, int64_t cols,
                    const qtts_weight_plan *plan,
                    qtts_err *err) {
    const qtts_tensor *t = qtts_store_get2(st, name, rows, cols, err);
    if (!t) return -1;
    return qtts_mat_from_tensor_plan(m, t, plan, err);
}

/* Stacks owned matrices of one type and width into one (see qtts_lm_layer). */
static int fuse(qtts_mat *out, qtts_mat **parts, int n, qtts_err *err) {
    memset(out, 0, sizeof *out);
    /* zero-copy when the parts are views lying back to back (e.g. a file written in q,k,v order) */
    int adjacent = 1;
    for (int i = 0; i < n; i++)
        adjacent &= !parts[i]->owned && parts[i]->interleave == parts[0]->interleave && parts[i]->type == parts[0]->type &&
                    parts[i]->cols == parts[0]->cols &&
                    (i == 0 || (const char *)parts[i]->data ==
                                   (const char *)parts[i - 1]->data + parts[i - 1]->row_bytes * (size_t)parts[i - 1]->rows);
    if (adjacent) {
        int64_t rows = 0;
        for (int i = 0; i < n; i++) rows += parts[i]->rows;
        *out = (qtts_mat){.type = parts[0]->type, .rows = rows, .cols = parts[0]->cols,
                          .row_bytes = parts[0]->row_bytes, .data = parts[0]->data,
                          .interleave = parts[0]->interleave, .prefetch = parts[0]->prefetch,
                          .lockstep = parts[0]->lockstep};
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (!parts[i]->owned || parts[i]->type != parts[0]->type || parts[i]->cols != parts[0]->cols ||
            parts[i]->interleave != parts[0]->interleave)
            return 0;
    int64_t rows = 0;
    for (int i = 0; i < n; i++) rows += parts[i]->rows;
    size_t rb = parts[0]->row_bytes;
    size_t bytes_all = (rb * (size_t)rows + 63) / 64 * 64; /* 64-aligned: whole-vector kernel loads */
    char *buf = aligned_alloc(64, bytes_all ? bytes_all : 64);
    if (!buf) return qtts_fail(err, "out of memory stacking %lld weight rows", (long long)rows);
    qtts_advise_huge(buf, bytes_all ? bytes_all : 64);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        size_t bytes = rb * (size_t)parts[i]->rows;
        memcpy(buf + off, parts[i]->data, bytes);
        qtts_mat_free(parts[i]);
        parts[i]->data = buf + off;
        parts[i]->owned = NULL;
        off += bytes;
    }
    *out = (qtts_mat){.type = parts[0]->type, .rows = rows, .cols = parts[0]->cols, .row_bytes = rb, .data = buf,
                      .owned = buf, .interleave = parts[0]->interleave, .prefetch = parts[0]->prefetch,
                      .lockstep = parts[0]->lockstep};
    return 0;
}

/* Matrices used stacked (q|k|v, gate|up) from tensors ts[0..n): converted as
 * plan says, then interleaved straight into one buffer where the layout
 * interleaves them all (one copy fewer than repacking each and stacking the
 * copies), else each laid out on its own and stacked by fuse. */
static int load_stack(qtts_mat *out, qtts_mat **parts, const qtts_tensor *const *ts, int n,
                      const qtts_weight_plan *plan, qtts_err *err) {
    qtts_pool *pool = plan ? plan->pool : NULL;
    const qtts_weight_layout *layout = plan ? plan->layout : NULL;
    for (int i = 0; i < n; i++)
        if (qtts_mat_from_tensor_pool(parts[i], ts[i], plan ? plan->type : QTTS_DTYPE_INVALID, pool, err) ||
            qtts_mat_fit_layout(parts[i], layout, pool, err))
            return -1;
    if (qtts_mats_interleave_stacked(out, parts, n, layout, pool, err)) return -1;
    if (out->data) {
        for (int i = 0; i < n; i++) qtts_tensor_mat_done(ts[i], parts[i]);
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (qtts_mat_interleave_pool(parts[i], layout, pool, err)) return -1;
        qtts_tensor_mat_done(ts[i], parts[i]);
    }
    return fuse(out, parts, n, err);
}

/* A stack (or, unstacked, its parts) that views st's file mapping copied
 * into a, the parts moved along with it. */
static void own_stack(qtts_mat *stack, qtts_mat **parts, int n, const qtts_store *st, qtts_weight_arena *a) {
    if (!stack->data) {
        for (int i = 0; i < n; i++) qtts_mat_own_mapped(parts[i], st, a);
        return;
    }
    const char *view = stack->data;
    qtts_mat_own_mapped(stack, st, a);
    for (int i = 0; i < n; i++) parts[i]->data = (const char *)stack->data + ((const char *)parts[i]->data - view);
}

void qtts_lm_own_mapped(qtts_lm *lm, const qtts_store *st, qtts_weight_arena *a) {
    for (int64_t i = 0; i < lm->cfg.layers; i++) {
        qtts_lm_layer *L = &lm->layers[i];
        qtts_mat *qkv[3] = {&L->q, &L->k, &L->v}, *gu[2] = {&L->gate, &L->up};
        own_stack(&L->qkv, qkv, 3, st, a);
        own_stack(&L->gate_up, gu, 2, st, a);
        qtts_mat_own_mapped(&L->o, st, a);
        qtts_mat_own_mapped(&L->down, st, a);
    }
}

int qtts_lm_load(qtts_lm *lm, const qtts_store *st, const char *prefix, const qtts_lm_config *cfg,
                 const qtts_weight_plan *plan,
                 qtts_err *err) {
    memset(lm, 0, sizeof *lm);
    lm->cfg = *cfg;
    const int64_t D = cfg->hidden, qd = cfg->heads * cfg->head_dim, kvd = cfg->kv_heads * cfg->head_dim;
    const int64_t I = cfg->intermediate;
    char name[256];
    lm->layers = qtts_calloc((size_t)cfg->layers, sizeof *lm->layers, err);
    if (!lm->layers) return -1;
    for (int64_t i = 0; i < cfg->layers; i++) {
        qtts_lm_layer *L = &lm->layers[i];
#define NM(suffix) (snprintf(name, sizeof name, "%slayers.%lld.%s", prefix, (long long)i, suffix), name)
        const qtts_tensor *qkv_t[3] = {qtts_store_get2(st, NM("self_attn.q_proj.weight"), qd, D, err), NULL, NULL};
        if (qkv_t[0]) qkv_t[1] = qtts_store_get2(st, NM("self_attn.k_proj.weight"), kvd, D, err);
        if (qkv_t[1]) qkv_t[2] = qtts_store_get2(st, NM("self_attn.v_proj.weight"), kvd, D, err);
        const qtts_tensor *gu_t[2] = {NULL, NULL};
        if (qkv_t[2]) gu_t[0] = qtts_store_get2(st, NM("mlp.gate_proj.weight"), I, D, err);
        if (gu_t[0]) gu_t[1] = qtts_store_get2(st, NM("mlp.up_proj.weight"), I, D, err);
        qtts_mat *qkv[3] = {&L->q, &L->k, &L->v}, *gu[2] = {&L->gate, &L->up};
        if (!gu_t[1] || load_stack(&L->qkv, qkv, qkv_t, 3, plan, err) ||
            load_mat(&L->o, st, NM("self_attn.o_proj.weight"), D, qd, plan, err) ||
            load_stack(&L->gate_up, gu, gu_t, 2, plan, err) ||
            load_mat(&L->down, st, NM("mlp.down_proj.weight"), D, I, plan, err) ||
            !(L->in_norm = load_vec(st, NM("input_layernorm.weight"), D, err)) ||
            !(L->post_norm = load_vec(st, NM("post_attention_layernorm.weight"), D, err)) ||
            !(L->q_norm = load_vec(st, NM("self_attn.q_norm.weight"), cfg->head_dim, err)) ||
            !(L->k_norm = load_vec(st, NM("self_attn.k_norm.weight"), cfg->head_dim, err))) {
            qtts_lm_free(lm);
            return -1;
        }
#undef NM
        if (plan && plan->layer_done) plan->layer_done(plan->layer_user);
    }
    snprintf(name, sizeof name, "%snorm.weight", prefix);
    if (!(lm->norm = load_vec(st, name, D, err))) {
        qtts_lm_free(lm);
        return -1;
    }
    return 0;
}

void qtts_lm_free(qtts_lm *lm) {
    if (!lm) return;
    if (lm->layers) {
        for (int64_t i = 0; i < lm->cfg.layers; i++) {
            qtts_lm_layer *L = &lm->layers[i];
            qtts_mat_free(&L->q);
            qtts_mat_free(&L->k);
            qtts_mat_free(&L->v);
            qtts_mat_free(&L->o);
            qtts_mat_free(&L->gate);
            qtts_mat_free(&L->up);
            qtts_mat_free(&L->down);
            qtts_mat_free(&L->qkv);
            qtts_mat_free(&L->gate_up);
            free(L->in_norm);
            free(L->post_norm);
            free(L->q_norm);
            free(L->k_norm);
        }
        free(lm->layers);
    }
    free(lm->norm);
    memset(lm, 0, sizeof *lm);
}

/* ---- KV cache ---- */

int qtts_kv_init(qtts_kv_cache *c, const qtts_lm_config *cfg, qtts_dtype type, int64_t initial_cap, int64_t max_cap,
                 qtts_err *err) {
    memset(c, 0, sizeof *c);
    if (type != QTTS_F32 && type != QTTS_F16)
        return qtts_fail(err, "KV cache: %s entries are not supported (f32 or f16)", qtts_dtype_name(type));
    c->type = type;
    c->n_layers = cfg->layers;
    c->kv_dim = cfg->kv_heads * cfg->head_dim;
    c->max_cap = max_cap;
    c->k = qtts_calloc((size_t)c->n_layers, sizeof *c->k, err);
    c->v = qtts_calloc((size_t)c->n_layers, sizeof *c->v, err);
    if (!c->k || !c->v) {
        qtts_kv_free(c);
        return -1;
    }
    if (initial_cap > 0 && qtts_kv_reserve(c, initial_cap, err)) {
        qtts_kv_free(c);
        return -1;
    }
    return 0;
}

int qtts_kv_reserve(qtts_kv_cache *c, int64_t need, qtts_err *err) {
    if (need <= c->cap) return 0;
    if (c->max_cap > 0 && need > c->max_cap)
        return qtts_fail(err, "KV cache: %lld positions needed, limit is %lld", (long long)need,
                         (long long)c->max_cap);
    int64_t cap = c->cap ? c->cap : 16;
    while (cap < need) cap *= 2;
    if (c->max_cap > 0 && cap > c->max_cap) cap = c->max_cap;
    for (int64_t l = 0; l < c->n_layers; l++) {
        size_t bytes = (size_t)cap * (size_t)c->kv_dim * qtts_kv_elem_size(c);
        void *k = realloc(c->k[l], bytes);
        if (!k) return qtts_fail(err, "KV cache: out of memory growing to %lld positions", (long long)cap);
        c->k[l] = k;
        void *v = realloc(c->v[l], bytes);
        if (!v) return qtts_fail(err, "KV cache: out of memory growing to %lld positions", (long long)cap);
        c->v[l] = v;
    }
    c->cap = cap;
    return 0;
}

void qtts_kv_reset(qtts_kv_cache *c) { c->len = 0; }

int qtts_kv_type_choose(const char *opt, qtts_dtype lm_weights, qtts_dtype *out, qtts_err *err) {
    if (!opt || !*opt || !strcmp(opt, "auto"))
        *out = lm_weights == QTTS_Q8_0 || lm_weights == QTTS_Q4_K ? QTTS_F16 : QTTS_F32;
    else if (!strcmp(opt, "f32"))
        *out = QTTS_F32;
    else if (!strcmp(opt, "f16"))
        *out = QTTS_F16;
    else
        return qtts_fail(err, "unknown KV cache type \"%s\" (auto, f32, f16)", opt);
    return 0;
}

void qtts_kv_free(qtts_kv_cache *c) {
    if (!c) return;
    for (int64_t l = 0; l < c->n_layers; l++) {
        if (c->k) free(c->k[l]);
        if (c->v) free(c->v[l]);
    }
    free(c->k);
    free(c->v);
    memset(c, 0, sizeof *c);
}

/* Stores n tokens' keys and values (rows of kv_dim) at positions len.. of layer l. */
static void kv_append(qtts_kv_cache *c, int64_t l, const float *k, const float *v, int64_t n) {
    const size_t count = (size_t)n * (size_t)c->kv_dim, at = (size_t)c->len * (size_t)c->kv_dim;
    if (c->type == QTTS_F16) {
        qtts_f32_to_f16_row(k, (uint16_t *)c->k[l] + at, (int64_t)count);
        qtts_f32_to_f16_row(v, (uint16_t *)c->v[l] + at, (int64_t)count);
    } else {
        memcpy((float *)c->k[l] + at, k, count * sizeof(float));
        memcpy((float *)c->v[l] + at, v, count * sizeof(float));
    }
}

/* ---- forward ---- */

void qtts_lm_work_free(qtts_lm_work *w) {
    if (!w) return;
    free(w->x);
    free(w->h);
    free(w->q);
    free(w->k);
    free(w->v);
    free(w->att);
    free(w->gate);
    free(w->up);
    free(w->fused);
    memset(w, 0, sizeof *w);
}

static int work_reserve(qtts_lm_work *w, const qtts_lm_config *c, int64_t rows, qtts_err *err) {
    int64_t dims[4] = {c->hidden, c->heads * c->head_dim, c->kv_heads * c->head_dim, c->intermediate};
    int grow = rows > w->rows_cap || !w->x;
    for (int i = 0; i < 4; i++)
        if (dims[i] > w->dim_cap[i]) grow = 1;
    if (!grow) return 0;
    int64_t cap = rows > w->rows_cap ? rows : w->rows_cap;
    for (int i = 0; i < 4; i++)
        if (dims[i] > w->dim_cap[i]) w->dim_cap[i] = dims[i];
    struct {
        float **p;
        int64_t n;
    } bufs[] = {{&w->x, w->dim_cap[0]},   {&w->h, w->dim_cap[0]},   {&w->q, w->dim_cap[1]},
                {&w->k, w->dim_cap[2]},   {&w->v, w->dim_cap[2]},   {&w->att, w->dim_cap[1]},
                {&w->gate, w->dim_cap[3]}, {&w->up, w->dim_cap[3]},
                {&w->fused, w->dim_cap[1] + 2 * w->dim_cap[2] > 2 * w->dim_cap[3] ? w->dim_cap[1] + 2 * w->dim_cap[2]
                                                                                : 2 * w->dim_cap[3]}};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        float *p = realloc(*bufs[i].p, (size_t)cap * (size_t)bufs[i].n * sizeof(float));
        if (!p) return qtts_fail(err, "decoder: out of memory for %lld rows of scratch", (long long)cap);
        *bufs[i].p = p;
    }
    w->rows_cap = cap;
    return 0;
}

/* Attention work item: one (row, KV head) with the query heads that share
 * it (each key and value row read once for the group), or one (row, head)
 * where that leaves threads idle. Each row knows its sequence. */
typedef struct {
    const qtts_lm_config *cfg;
    const float *q;
    float *att;
    const int64_t *row_seq, *row_pos;
    qtts_kv_cache *const *caches; /* per sequence */
    int64_t layer;
    float scale;
    int64_t per_row; /* items per row: kv_heads or heads */
} attn_job;

static void attn_items(void *p, int64_t i0, int64_t i1, int tid) {
    (void)tid;
    const attn_job *j = p;
    const int64_t H = j->cfg->heads, hd = j->cfg->head_dim, KH = j->cfg->kv_heads, group = H / KH;
    const int64_t qd = H * hd, kvd = KH * hd, gh = H / j->per_row;
    for (int64_t it = i0; it < i1; it++) {
        const int64_t r = it / j->per_row, h0 = it % j->per_row * gh;
        const qtts_kv_cache *kv = j->caches[j->row_seq[r]];
        const size_t first = (size_t)(h0 / group * hd) * qtts_kv_elem_size(kv);
        qtts_attn_args a = {
            .q = j->q + r * qd + h0 * hd,
            .q_stride = qd,
            .k = (const char *)kv->k[j->layer] + first,
            .v = (const char *)kv->v[j->layer] + first,
            .kv_stride = kvd,
            .kv_f16 = kv->type == QTTS_F16,
            .out = j->att + r * qd + h0 * hd,
            .out_stride = qd,
            .n_q = 1,
            .q_first = j->row_pos[r],
            .n_heads = gh,
            .n_kv_heads = 1,
            .head_dim = hd,
            .window = 0,
            .scale = j->scale,
        };
        qtts_attention(NULL, &a); /* inline: this already runs on a pool thread (attn_items) */
    }
}

int qtts_lm_forward(const qtts_lm *lm, qtts_pool *pool, qtts_lm_work *w, int n_seq, qtts_kv_cache *const *caches,
                    const int64_t *n_tok, const float *x_in, float *out, float *layer_in, qtts_err *err) {
    const qtts_lm_config *c = &lm->cfg;
    const int64_t D = c->hidden, hd = c->head_dim, qd = c->heads * hd, kvd = c->kv_heads * hd, I = c->intermediate;
    const float eps = (float)c->rms_eps;
    int64_t rows = 0;
    for (int s = 0; s < n_seq; s++) {
        if (n_tok[s] < 0) return qtts_fail(err, "decoder: negative token count");
        if (qtts_kv_reserve(caches[s], caches[s]->len + n_tok[s], err)) return -1;
        rows += n_tok[s];
    }
    if (rows == 0) return 0;
    if (work_reserve(w, c, rows, err)) return -1;
    int64_t *row_seq = qtts_malloc((size_t)rows * 2 * sizeof(int64_t), err);
    /* each row's RoPE cos | sin, computed once here rather than twice per layer (libm trig) */
    float *rope = qtts_malloc((size_t)rows * (size_t)hd * sizeof(float), err);
    if (!row_seq || !rope) {
        free(row_seq);
        free(rope);
        return -1;
    }
    int64_t *row_pos = row_seq + rows;
    for (int s = 0, r = 0; s < n_seq; s++)
        for (int64_t t = 0; t < n_tok[s]; t++, r++) {
            row_seq[r] = s;
            row_pos[r] = caches[s]->len + t;
            qtts_rope_angles(rope + r * hd, rope + r * hd + hd / 2, hd, row_pos[r], c->rope_theta);
        }

    float *x = w->x;
    memmove(x, x_in, (size_t)rows * (size_t)D * sizeof(float));
    for (int64_t l = 0; l < c->layers; l++) {
        const qtts_lm_layer *L = &lm->layers[l];
        if (layer_in) memcpy(layer_in + l * rows * D, x, (size_t)rows * (size_t)D * sizeof(float));
        qtts_rmsnorm(pool, x, L->in_norm, rows, D, eps, w->h);
        if (L->qkv.data) {
            /* one call, then split each row [q | k | v] */
            if (qtts_linear(pool, &L->qkv, NULL, w->h, rows, w->fused)) goto oom;
            for (int64_t r = 0; r < rows; r++) {
                const float *f = w->fused + r * (qd + 2 * kvd);
                memcpy(w->q + r * qd, f, (size_t)qd * sizeof(float));
                memcpy(w->k + r * kvd, f + qd, (size_t)kvd * sizeof(float));
                memcpy(w->v + r * kvd, f + qd + kvd, (size_t)kvd * sizeof(float));
            }
        } else {
            if (qtts_linear(pool, &L->q, NULL, w->h, rows, w->q) || qtts_linear(pool, &L->k, NULL, w->h, rows, w->k) ||
                qtts_linear(pool, &L->v, NULL, w->h, rows, w->v))
                goto oom;
        }
        qtts_rmsnorm(pool, w->q, L->q_norm, rows * c->heads, hd, eps, w->q);
        qtts_rmsnorm(pool, w->k, L->k_norm, rows * c->kv_heads, hd, eps, w->k);
        for (int s = 0, r = 0; s < n_seq; r += (int)n_tok[s], s++) {
            if (!n_tok[s]) continue;
            qtts_kv_cache *kv = caches[s];
            for (int64_t t = r; t < r + n_tok[s]; t++) {
                const float *cs = rope + t * hd, *sn = cs + hd / 2;
                qtts_rope_neox_rotate(w->q + t * qd, c->heads, hd, cs, sn);
                qtts_rope_neox_rotate(w->k + t * kvd, c->kv_heads, hd, cs, sn);
            }
            kv_append(kv, l, w->k + r * kvd, w->v + r * kvd, n_tok[s]);
        }
        const int64_t per_row = qtts_attention_group_items(pool, rows * c->kv_heads) ? c->kv_heads : c->heads;
        attn_job aj = {c, w->q, w->att, row_seq, row_pos, caches, l, 1.0f / sqrtf((float)hd), per_row};
        qtts_parallel_for(pool, rows * per_row, 1, attn_items, &aj);
        if (qtts_linear(pool, &L->o, NULL, w->att, rows, w->h)) goto oom;
        for (int64_t i = 0; i < rows * D; i++) x[i] += w->h[i];
        qtts_rmsnorm(pool, x, L->post_norm, rows, D, eps, w->h);
        if (L->gate_up.data) {
            if (qtts_linear(pool, &L->gate_up, NULL, w->h, rows, w->fused)) goto oom;
            qtts_swiglu_fused(pool, w->fused, rows, I, w->gate);
        } else {
            if (qtts_linear(pool, &L->gate, NULL, w->h, rows, w->gate) ||
                qtts_linear(pool, &L->up, NULL, w->h, rows, w->up))
                goto oom;
            qtts_swiglu(w->gate, w->up, rows * I);
        }
        if (qtts_linear(pool, &L->down, NULL, w->gate, rows, w->h)) goto oom;
        for (int64_t i = 0; i < rows * D; i++) x[i] += w->h[i];
    }
    for (int s = 0; s < n_seq; s++) caches[s]->len += n_tok[s];
    qtts_rmsnorm(pool, x, lm->norm, rows, D, eps, out);
    if (layer_in) memcpy(layer_in + c->layers * rows * D, out, (size_t)rows * (size_t)D * sizeof(float));
    free(row_seq);
    free(rope);
    return 0;
oom: /* the caches' lengths are unchanged: what this call wrote past them is ignored */
    free(row_seq);
    free(rope);
    return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "decoder: out of memory in a dense layer (%lld rows)",
                        (long long)rows);
}
