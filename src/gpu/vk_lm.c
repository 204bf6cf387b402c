/* The talker and code predictor assembled from the kernels (gpu_lm.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_lm.h"
#include "gpu/gpu_ops.h"
#include "gpu/gpu_sample.h"
#include "tensor/ops.h"

enum {
    MAX_STREAMS = QTTS_GPU_LM_MAX_STREAMS,
    SEQ_CACHE = 8, /* recorded frame sequences kept, one per batch composition */
    IDS_STRIDE = 64, /* ints per stream in the ids buffer: c0 (next), codes 1..G-1 */
};

typedef struct {
    qtts_gpu_mat *q, *k, *v, *o, *gate, *up, *down;
    qtts_gpu_buf *in_norm, *post_norm, *q_norm, *k_norm;
} dev_layer;

typedef struct {
    qtts_lm_config cfg;
    dev_layer *layers;
    qtts_gpu_buf *norm, *rope; /* rope: qtts_rope_angles rows for positions 0 .. positions-1 */
    int64_t positions;
    int kv_f16;              /* the caches hold f16 values (the CPU's precision choice for the stack) */
    qtts_gpu_buf **kc, **vc; /* [slot * layers + layer]: caches, cap[slot] x kv_dim values */
    int64_t cap[QTTS_GPU_LM_MAX_STREAMS];
} dev_lm;

typedef struct {
    int B;
    int slots[MAX_STREAMS];
    qtts_gpu_seq *seq;
} frame_seq;

struct qtts_gpu_lm {
    qtts_gpu *g;
    const qtts_talker_model *m;
    int max_streams, G;
    int64_t max_pos;
    dev_lm tk, cp;
    qtts_gpu_mat *codec_head, **cp_heads, *proj;
    qtts_gpu_buf *proj_b, *codec_emb, **cp_emb;
    /* per stream (slot-indexed), host-written: tpos (talker position), text;
     * device-written: ids, h (talker normed hidden) */
    qtts_gpu_buf *ids, *tpos, *cp_pos, *h, *text;
    qtts_gpu_buf *ring; /* per slot the codes of its last QTTS_GPU_CODE_RING_ROWS frames, row = frame & (rows-1) */
    qtts_gpu_sampler *sampler; /* slot i samples stream slot i: settings, RNG step, codebook-0 history */
    int64_t pos[MAX_STREAMS];
    int started[MAX_STREAMS];
    /* scratch, rows_cap rows */
    int64_t rows_cap;
    qtts_gpu_buf *x, *hn, *q, *k, *v, *att, *f, *act, *logits, *esum, *cpin;
    frame_seq seqs[SEQ_CACHE];
    int next_evict;
};

static qtts_gpu_buf *upload_f32(qtts_gpu *g, const float *p, int64_t n, qtts_err *err) {
    qtts_gpu_buf *b = qtts_gpu_buf_new(g, (size_t)n * sizeof(float), err);
    if (b) memcpy(qtts_gpu_buf_data(b), p, (size_t)n * sizeof(float));
    return b;
}

static qtts_gpu_buf *upload_tensor(qtts_gpu *g, const qtts_tensor *t, qtts_err *err) {
    float *f = qtts_tensor_to_f32(t, err);
    if (!f) return NULL;
    qtts_gpu_buf *b = upload_f32(g, f, qtts_tensor_numel(t), err);
    free(f);
    return b;
}

static qtts_gpu_buf *rope_table(qtts_gpu *g, int64_t hd, int64_t positions, double theta, qtts_err *err) {
    qtts_gpu_buf *b = qtts_gpu_buf_new(g, (size_t)(positions * hd) * sizeof(float), err);
    if (!b) return NULL;
    float *t = qtts_gpu_buf_data(b);
    for (int64_t p = 0; p < positions; p++) qtts_rope_angles(t + p * hd, t + p * hd + hd / 2, hd, p, theta);
    return b;
}

static void lm_free(qtts_gpu *g, dev_lm *lm, int streams) {
    if (lm->layers)
        for (int64_t l = 0; l < lm->cfg.layers; l++) {
            dev_layer *L = &lm->layers[l];
            qtts_gpu_mat *mats[] = {L->q, L->k, L->v, L->o, L->gate, L->up, L->down};
            for (size_t i = 0; i < sizeof mats / sizeof *mats; i++) qtts_gpu_mat_free(g, mats[i]);
            qtts_gpu_buf_free(g, L->in_norm);
            qtts_gpu_buf_free(g, L->post_norm);
            qtts_gpu_buf_free(g, L->q_norm);
            qtts_gpu_buf_free(g, L->k_norm);
        }
    free(lm->layers);
    for (int64_t i = 0; lm->kc && i < streams * lm->cfg.layers; i++) {
        qtts_gpu_buf_free(g, lm->kc[i]);
        qtts_gpu_buf_free(g, lm->vc[i]);
    }
    free(lm->kc);
    free(lm->vc);
    qtts_gpu_buf_free(g, lm->norm);
    qtts_gpu_buf_free(g, lm->rope);
    memset(lm, 0, sizeof *lm);
}

/* slot's caches (every layer) made for `positions` positions, the first
 * `keep` positions of the old ones copied over (the buffers are host-visible:
 * a host copy, rare since streams grow by doubling). One layer's old buffer
 * at a time is held beside its new one. On failure the slot has no caches. */
static int slot_caches(qtts_gpu *g, dev_lm *d, int slot, int64_t positions, int64_t keep, qtts_err *err) {
    const int64_t L = d->cfg.layers, kvd = d->cfg.kv_heads * d->cfg.head_dim;
    const size_t es = d->kv_f16 ? 2 : 4, bytes = ((size_t)(positions * kvd) * es + 3) & ~(size_t)3;
    const size_t kept = (size_t)((keep < d->cap[slot] ? keep : d->cap[slot]) * kvd) * es;
    int rc = 0;
    for (int64_t i = slot * L; i < (slot + 1) * L; i++) {
        qtts_gpu_buf **pair[2] = {&d->kc[i], &d->vc[i]};
        for (int j = 0; j < 2; j++) {
            qtts_gpu_buf *nb = rc ? NULL : qtts_gpu_buf_new(g, bytes, err);
            if (!nb) rc = -1;
            else if (*pair[j] && kept) memcpy(qtts_gpu_buf_data(nb), qtts_gpu_buf_data(*pair[j]), kept);
            qtts_gpu_buf_free(g, *pair[j]);
            *pair[j] = nb;
        }
    }
    d->cap[slot] = rc ? 0 : positions;
    return rc;
}

static int lm_upload(qtts_gpu *g, dev_lm *d, const qtts_lm *lm, int streams, int64_t positions, int kv_f16,
                     qtts_err *err) {
    const qtts_lm_config *c = &lm->cfg;
    d->cfg = *c;
    d->positions = positions;
    d->kv_f16 = kv_f16;
    const int64_t D = c->hidden, hd = c->head_dim;
    d->layers = qtts_calloc((size_t)c->layers, sizeof *d->layers, err);
    d->kc = qtts_calloc((size_t)(streams * c->layers), sizeof *d->kc, err);
    d->vc = qtts_calloc((size_t)(streams * c->layers), sizeof *d->vc, err);
    if (!d->layers || !d->kc || !d->vc) return -1;
    for (int64_t l = 0; l < c->layers; l++) {
        const qtts_lm_layer *L = &lm->layers[l];
        dev_layer *o = &d->layers[l];
        if (!(o->q = qtts_gpu_mat_upload(g, &L->q, err)) || !(o->k = qtts_gpu_mat_upload(g, &L->k, err)) ||
            !(o->v = qtts_gpu_mat_upload(g, &L->v, err)) || !(o->o = qtts_gpu_mat_upload(g, &L->o, err)) ||
            !(o->gate = qtts_gpu_mat_upload(g, &L->gate, err)) || !(o->up = qtts_gpu_mat_upload(g, &L->up, err)) ||
            !(o->down = qtts_gpu_mat_upload(g, &L->down, err)) || !(o->in_norm = upload_f32(g, L->in_norm, D, err)) ||
            !(o->post_norm = upload_f32(g, L->post_norm, D, err)) || !(o->q_norm = upload_f32(g, L->q_norm, hd, err)) ||
            !(o->k_norm = upload_f32(g, L->k_norm, hd, err)))
            return -1;
    }
    for (int sl = 0; sl < streams; sl++)
        if (slot_caches(g, d, sl, positions, 0, err)) return -1;
    if (!(d->norm = upload_f32(g, lm->norm, D, err)) || !(d->rope = rope_table(g, hd, positions, c->rope_theta, err)))
        return -1;
    return 0;
}

static void drop_seqs(qtts_gpu_lm *d) {
    for (int i = 0; i < SEQ_CACHE; i++) {
        qtts_gpu_seq_free(d->seqs[i].seq);
        d->seqs[i].seq = NULL;
        d->seqs[i].B = 0;
    }
}

static qtts_gpu_buf **scratch(qtts_gpu_lm *d, int i) {
    qtts_gpu_buf **all[] = {&d->x, &d->hn,  &d->q,      &d->k,    &d->v,   &d->att,
                            &d->f, &d->act, &d->logits, &d->esum, &d->cpin};
    return i < (int)(sizeof all / sizeof *all) ? all[i] : NULL;
}

/* Scratch for `rows` rows of either stack (recorded sequences bind the old buffers: dropped on growth). */
static int reserve_rows(qtts_gpu_lm *d, int64_t rows, qtts_err *err) {
    if (rows <= d->rows_cap) return 0;
    drop_seqs(d);
    const qtts_lm_config *a = &d->tk.cfg, *b = &d->cp.cfg;
#define MAX2(x, y) ((x) > (y) ? (x) : (y))
    const int64_t D = MAX2(a->hidden, b->hidden), qd = MAX2(a->heads * a->head_dim, b->heads * b->head_dim),
                  kvd = MAX2(a->kv_heads * a->head_dim, b->kv_heads * b->head_dim),
                  I = MAX2(a->intermediate, b->intermediate), V = MAX2(a->vocab, b->vocab);
#undef MAX2
    const int64_t width[] = {D, D, qd, kvd, kvd, qd, 2 * I, I, 0, a->hidden, a->hidden};
    for (int i = 0; scratch(d, i); i++) {
        qtts_gpu_buf **p = scratch(d, i);
        qtts_gpu_buf_free(d->g, *p);
        /* logits: one row per stream (heads run on the streams' last rows only) */
        int64_t n = i == 8 ? d->max_streams * V : rows * width[i];
        if (!(*p = qtts_gpu_buf_new(d->g, (size_t)n * sizeof(float), err))) {
            d->rows_cap = 0;
            return -1;
        }
    }
    d->rows_cap = rows;
    return 0;
}

void qtts_gpu_lm_free(qtts_gpu_lm *d) {
    if (!d) return;
    qtts_gpu *g = d->g;
    drop_seqs(d);
    lm_free(g, &d->tk, d->max_streams);
    lm_free(g, &d->cp, d->max_streams);
    qtts_gpu_mat_free(g, d->codec_head);
    qtts_gpu_mat_free(g, d->proj);
    for (int i = 0; d->cp_heads && i < d->G - 1; i++) qtts_gpu_mat_free(g, d->cp_heads[i]);
    for (int i = 0; d->cp_emb && i < d->G - 1; i++) qtts_gpu_buf_free(g, d->cp_emb[i]);
    free(d->cp_heads);
    free(d->cp_emb);
    qtts_gpu_sampler_free(g, d->sampler);
    qtts_gpu_buf *bufs[] = {d->proj_b, d->codec_emb, d->ids, d->tpos, d->cp_pos, d->h, d->text, d->ring};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) qtts_gpu_buf_free(g, bufs[i]);
    for (int i = 0; scratch(d, i); i++) qtts_gpu_buf_free(g, *scratch(d, i));
    free(d);
}

qtts_gpu_lm *qtts_gpu_lm_new(qtts_gpu *g, const qtts_talker_model *m, int max_streams, int64_t max_pos, qtts_err *err) {
    const qtts_model_config *c = &m->cfg;
    if (max_streams < 1 || max_streams > MAX_STREAMS || max_pos < 2 || c->num_code_groups < 2 ||
        c->num_code_groups > IDS_STRIDE || m->cp.n_groups != c->num_code_groups - 1) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "GPU LM: %d streams of %lld positions, %lld code groups (1..%d streams)",
                     max_streams, (long long)max_pos, (long long)c->num_code_groups, MAX_STREAMS);
        return NULL;
    }
    qtts_gpu_lm *d = qtts_calloc(1, sizeof *d, err);
    if (!d) return NULL;
    d->g = g;
    d->m = m;
    d->max_streams = max_streams;
    d->max_pos = max_pos;
    d->G = (int)c->num_code_groups;
    const int G1 = d->G - 1;
    const int64_t D = c->talker.hidden, V = c->talker.vocab;
    /* the talker's KV precision is the engine's choice (m->kv_type), the code predictor's f32, as on the CPU */
    if (lm_upload(g, &d->tk, &m->lm, max_streams, max_pos, m->kv_type == QTTS_F16, err) ||
        lm_upload(g, &d->cp, &m->cp.lm, max_streams, d->G, 0, err))
        goto fail;
    if (!(d->codec_head = qtts_gpu_mat_upload(g, &m->codec_head, err)) ||
        !(d->codec_emb = upload_tensor(g, m->codec_emb, err)))
        goto fail;
    if (!(d->cp_heads = qtts_calloc((size_t)G1, sizeof *d->cp_heads, err)) ||
        !(d->cp_emb = qtts_calloc((size_t)G1, sizeof *d->cp_emb, err)))
        goto fail;
    for (int i = 0; i < G1; i++)
        if (!(d->cp_heads[i] = qtts_gpu_mat_upload(g, &m->cp.heads[i], err)) ||
            !(d->cp_emb[i] = upload_tensor(g, m->cp.emb[i], err)))
            goto fail;
    if (m->cp.has_proj && (!(d->proj = qtts_gpu_mat_upload(g, &m->cp.proj, err)) ||
                           !(d->proj_b = upload_f32(g, m->cp.proj_b, m->cp.lm.cfg.hidden, err))))
        goto fail;
    if (!(d->ids = qtts_gpu_buf_new(g, (size_t)max_streams * IDS_STRIDE * sizeof(int32_t), err)) ||
        !(d->tpos = qtts_gpu_buf_new(g, (size_t)max_streams * sizeof(uint32_t), err)) ||
        !(d->cp_pos = qtts_gpu_buf_new(g, (size_t)(d->G + 1) * sizeof(uint32_t), err)) ||
        !(d->sampler = qtts_gpu_sampler_new(g, max_streams, V, err)) ||
        !(d->h = qtts_gpu_buf_new(g, (size_t)(max_streams * D) * sizeof(float), err)) ||
        !(d->text = qtts_gpu_buf_new(g, (size_t)(max_streams * D) * sizeof(float), err)) ||
        !(d->ring = qtts_gpu_buf_new(g, (size_t)max_streams * QTTS_GPU_CODE_RING_ROWS * d->G * sizeof(int32_t), err)))
        goto fail;
    uint32_t *cp_pos = qtts_gpu_buf_data(d->cp_pos);
    for (int i = 0; i <= d->G; i++) cp_pos[i] = (uint32_t)i;
    if (reserve_rows(d, 2 * (int64_t)max_streams, err)) goto fail;
    return d;
fail:
    qtts_fail_prefix(err, "uploading the talker to %s", qtts_gpu_name(g));
    qtts_gpu_lm_free(d);
    return NULL;
}

int qtts_gpu_lm_reserve(qtts_gpu_lm *d, int slot, int64_t positions, qtts_err *err) {
    if (slot < 0 || slot >= d->max_streams || positions < 2)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU reserve: slot %d of %d, %lld positions", slot,
                            d->max_streams, (long long)positions);
    if (positions <= d->tk.cap[slot]) return 0;
    /* recorded sequences bind the caches and the rope table: re-recorded as needed */
    drop_seqs(d);
    if (positions > d->tk.positions) {
        /* doubling: one table for the longest stream so far, not one per step */
        int64_t rp = d->tk.positions * 2 > positions ? d->tk.positions * 2 : positions;
        qtts_gpu_buf *t = rope_table(d->g, d->tk.cfg.head_dim, rp, d->tk.cfg.rope_theta, err);
        if (!t) t = rope_table(d->g, d->tk.cfg.head_dim, rp = positions, d->tk.cfg.rope_theta, err);
        if (!t) return -1;
        qtts_gpu_buf_free(d->g, d->tk.rope);
        d->tk.rope = t;
        d->tk.positions = rp;
    }
    const int64_t keep = d->started[slot] ? d->pos[slot] : 0;
    if (slot_caches(d->g, &d->tk, slot, positions, keep, err)) {
        d->started[slot] = 0;
        return qtts_fail_prefix(err, "a device KV cache of %lld positions", (long long)positions);
    }
    return 0;
}

/* ---- recording ---- */

/* The streams of one forward pass: stream i (slot[i]) adds ntok[i] rows (stacked
 * in order) at position pos[pos_index[i]]. */
typedef struct {
    int n;
    const int *slot;
    const int64_t *ntok;
    qtts_gpu_buf *pos;
    const int64_t *pos_index;
} streams;

#define TRY(x)                                                                                                         \
    do {                                                                                                               \
        if (x) return -1;                                                                                              \
    } while (0)

/* out (rows x hidden, at out_off) = the final-normed hidden states of lm over d->x. */
static int record_lm(qtts_gpu_seq *s, qtts_gpu_lm *d, dev_lm *lm, const streams *st, qtts_gpu_buf *out, int64_t out_off,
                     qtts_err *err) {
    const qtts_lm_config *c = &lm->cfg;
    const int64_t D = c->hidden, hd = c->head_dim, H = c->heads, KH = c->kv_heads, qd = H * hd, kvd = KH * hd;
    const int64_t I = c->intermediate;
    const float eps = (float)c->rms_eps;
    int64_t rows = 0;
    for (int i = 0; i < st->n; i++) rows += st->ntok[i];
    for (int64_t l = 0; l < c->layers; l++) {
        dev_layer *L = &lm->layers[l];
        TRY(qtts_gpu_rmsnorm(s, d->x, 0, L->in_norm, d->hn, 0, rows, D, eps, err));
        TRY(qtts_gpu_gemv(s, L->q, d->hn, 0, D, d->q, 0, qd, rows, err));
        TRY(qtts_gpu_gemv(s, L->k, d->hn, 0, D, d->k, 0, kvd, rows, err));
        TRY(qtts_gpu_gemv(s, L->v, d->hn, 0, D, d->v, 0, kvd, rows, err));
        TRY(qtts_gpu_rmsnorm(s, d->q, 0, L->q_norm, d->q, 0, rows * H, hd, eps, err));
        TRY(qtts_gpu_rmsnorm(s, d->k, 0, L->k_norm, d->k, 0, rows * KH, hd, eps, err));
        for (int i = 0, r = 0; i < st->n; r += (int)st->ntok[i], i++) {
            qtts_gpu_buf *kc = lm->kc[st->slot[i] * c->layers + l], *vc = lm->vc[st->slot[i] * c->layers + l];
            const int64_t n = st->ntok[i], pi = st->pos_index[i];
            TRY(qtts_gpu_rope(s, d->q, r * qd, qd, n, H, hd, lm->rope, st->pos, pi, err));
            TRY(qtts_gpu_rope(s, d->k, r * kvd, kvd, n, KH, hd, lm->rope, st->pos, pi, err));
            TRY(qtts_gpu_kv_store_as(s, d->k, r * kvd, kvd, n, kvd, kc, kvd, st->pos, pi, lm->kv_f16, err));
            TRY(qtts_gpu_kv_store_as(s, d->v, r * kvd, kvd, n, kvd, vc, kvd, st->pos, pi, lm->kv_f16, err));
            qtts_gpu_attn_args a = {.q = d->q,
                                    .k = kc,
                                    .v = vc,
                                    .out = d->att,
                                    .pos = st->pos,
                                    .q_off = r * qd,
                                    .q_stride = qd,
                                    .kv_stride = kvd,
                                    .out_off = r * qd,
                                    .out_stride = qd,
                                    .n_q = n,
                                    .n_heads = H,
                                    .n_kv_heads = KH,
                                    .head_dim = hd,
                                    .window = 0,
                                    .pos_index = pi,
                                    .scale = 1.0f / sqrtf((float)hd),
                                    .kv_f16 = lm->kv_f16};
            TRY(qtts_gpu_attention(s, &a, err));
        }
        TRY(qtts_gpu_gemv(s, L->o, d->att, 0, qd, d->hn, 0, D, rows, err));
        TRY(qtts_gpu_add_rows(s, d->hn, 0, D, d->x, 0, D, D, rows, 1, err));
        TRY(qtts_gpu_rmsnorm(s, d->x, 0, L->post_norm, d->hn, 0, rows, D, eps, err));
        TRY(qtts_gpu_gemv(s, L->gate, d->hn, 0, D, d->f, 0, 2 * I, rows, err));
        TRY(qtts_gpu_gemv(s, L->up, d->hn, 0, D, d->f, I, 2 * I, rows, err));
        TRY(qtts_gpu_silu_mul(s, d->f, 0, I, 2 * I, d->act, 0, I, I, rows, err));
        TRY(qtts_gpu_gemv(s, L->down, d->act, 0, I, d->hn, 0, D, rows, err));
        TRY(qtts_gpu_add_rows(s, d->hn, 0, D, d->x, 0, D, D, rows, 1, err));
    }
    return qtts_gpu_rmsnorm(s, d->x, 0, lm->norm, out, out_off, rows, D, eps, err);
}

/* d->x (code-predictor width) = rows of d->cpin (talker width), through the projection where there is one. */
static int record_project(qtts_gpu_seq *s, qtts_gpu_lm *d, int64_t rows, qtts_err *err) {
    const int64_t Dt = d->tk.cfg.hidden, Dc = d->cp.cfg.hidden;
    if (!d->proj) return qtts_gpu_add_rows(s, d->cpin, 0, Dt, d->x, 0, Dc, Dc, rows, 0, err);
    TRY(qtts_gpu_gemv(s, d->proj, d->cpin, 0, Dt, d->x, 0, Dc, rows, err));
    return qtts_gpu_add_rows(s, d->proj_b, 0, 0, d->x, 0, Dc, Dc, rows, 1, err);
}

/* Chooses slot's token from logits row z_off .. z_off + n into ids[id_index]
 * with the stream's sampler settings: code group `sub` (0: codebook 0, with
 * the talker's processors and history), the RNG step advancing after the
 * frame's last code. Greedy streams take the argmax there. */
static int record_pick(qtts_gpu_seq *s, qtts_gpu_lm *d, int slot, uint32_t sub, int64_t z_off, int64_t n,
                       int64_t id_index, qtts_err *err) {
    qtts_gpu_sample_args a = {.talker = sub == 0,
                              .z = d->logits,
                              .z_off = z_off,
                              .z_stride = n,
                              .n = n,
                              .rows = 1,
                              .slot0 = slot,
                              .sub = sub,
                              .advance = sub == (uint32_t)(d->G - 1),
                              .ids = d->ids,
                              .id_off = id_index,
                              .id_stride = 1,
                              .ring = d->ring,
                              .ring_rows = QTTS_GPU_CODE_RING_ROWS,
                              .ring_width = d->G};
    return qtts_gpu_sample(s, d->sampler, &a, err);
}

/* The codec head on hidden rows `hid` (row b at hid_off + b*hid_stride) of
 * streams slots[0..B) and the codebook-0 pick (logits processors included) into ids[slot*IDS_STRIDE]. */
static int record_c0(qtts_gpu_seq *s, qtts_gpu_lm *d, int B, const int *slots, qtts_gpu_buf *hid, int64_t hid_off,
                     int64_t hid_stride, qtts_err *err) {
    const int64_t V = d->tk.cfg.vocab, D = d->tk.cfg.hidden;
    TRY(qtts_gpu_gemv(s, d->codec_head, hid, hid_off, hid_stride, d->logits, 0, V, B, err));
    for (int b = 0; b < B; b++) {
        TRY(record_pick(s, d, slots[b], 0, b * V, V, (int64_t)slots[b] * IDS_STRIDE, err));
        TRY(qtts_gpu_add_rows(s, hid, hid_off + b * hid_stride, 0, d->h, (int64_t)slots[b] * D, 0, D, 1, 0, err));
    }
    return 0;
}

static int record_frame(qtts_gpu_seq *s, qtts_gpu_lm *d, int B, const int *slots, qtts_err *err) {
    const int64_t Dt = d->tk.cfg.hidden, Dc = d->cp.cfg.hidden, Vc = d->cp.cfg.vocab, Vt = d->tk.cfg.vocab;
    const int G1 = d->G - 1;
    int64_t ntok[MAX_STREAMS], pidx[MAX_STREAMS];
    /* code predictor prefill: rows [h, codec_embedding(c0)] per stream at positions 0, 1 */
    for (int b = 0; b < B; b++) {
        TRY(qtts_gpu_add_rows(s, d->h, (int64_t)slots[b] * Dt, 0, d->cpin, 2 * b * Dt, 0, Dt, 1, 0, err));
        TRY(qtts_gpu_embed_add(s, d->codec_emb, 0, Vt, Dt, d->ids, (int64_t)slots[b] * IDS_STRIDE, d->cpin,
                               (2 * b + 1) * Dt, 0, err));
        ntok[b] = 2;
        pidx[b] = 0;
    }
    TRY(record_project(s, d, 2 * B, err));
    streams cps = {B, slots, ntok, d->cp_pos, pidx};
    TRY(record_lm(s, d, &d->cp, &cps, d->hn, 0, err));
    /* the head reads each stream's last row: row 2b+1 after the prefill, row b after a step */
    int64_t hid_off = Dc, hid_stride = 2 * Dc;
    for (int g = 1; g <= G1; g++) {
        TRY(qtts_gpu_gemv(s, d->cp_heads[g - 1], d->hn, hid_off, hid_stride, d->logits, 0, Vc, B, err));
        for (int b = 0; b < B; b++) {
            const int64_t id = (int64_t)slots[b] * IDS_STRIDE + g;
            TRY(record_pick(s, d, slots[b], (uint32_t)g, b * Vc, Vc, id, err));
            TRY(qtts_gpu_embed_add(s, d->cp_emb[g - 1], 0, Vc, Dt, d->ids, id, d->esum, b * Dt, g > 1, err));
            if (g < G1) TRY(qtts_gpu_embed_add(s, d->cp_emb[g - 1], 0, Vc, Dt, d->ids, id, d->cpin, b * Dt, 0, err));
        }
        if (g == G1) break; /* the last code is never fed back */
        for (int b = 0; b < B; b++) {
            ntok[b] = 1;
            pidx[b] = g + 1;
        }
        TRY(record_project(s, d, B, err));
        TRY(record_lm(s, d, &d->cp, &cps, d->hn, 0, err));
        hid_off = 0;
        hid_stride = Dc;
    }
    /* next talker input: codec_embedding(c0) + the codes' embedding sum + the text row (the CPU's order) */
    for (int b = 0; b < B; b++) {
        TRY(qtts_gpu_embed_add(s, d->codec_emb, 0, Vt, Dt, d->ids, (int64_t)slots[b] * IDS_STRIDE, d->x, b * Dt, 0,
                               err));
        TRY(qtts_gpu_add_rows(s, d->esum, b * Dt, 0, d->x, b * Dt, 0, Dt, 1, 1, err));
        TRY(qtts_gpu_add_rows(s, d->text, (int64_t)slots[b] * Dt, 0, d->x, b * Dt, 0, Dt, 1, 1, err));
        ntok[b] = 1;
        pidx[b] = slots[b];
    }
    streams tks = {B, slots, ntok, d->tpos, pidx};
    TRY(record_lm(s, d, &d->tk, &tks, d->hn, 0, err));
    return record_c0(s, d, B, slots, d->hn, 0, Dt, err);
}

#undef TRY

/* ---- running ---- */

int qtts_gpu_lm_prefill(qtts_gpu_lm *d, int slot, const float *rows, int64_t n, const qtts_gpu_sample_settings *ss,
                        int32_t *c0, qtts_err *err) {
    const int64_t D = d->tk.cfg.hidden;
    if (slot < 0 || slot >= d->max_streams || n < 1)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU prefill: slot %d of %d, %lld rows", slot, d->max_streams,
                            (long long)n);
    if (n >= d->tk.cap[slot])
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU prefill: %lld prompt rows, the stream's caches hold %lld",
                            (long long)n, (long long)d->tk.cap[slot]);
    d->started[slot] = 0; /* a new stream: what the slot held is not kept when it grows */
    if (qtts_gpu_sampler_start(d->sampler, slot, ss, 0, NULL, 0, err) || reserve_rows(d, n, err)) return -1;
    memcpy(qtts_gpu_buf_data(d->x), rows, (size_t)(n * D) * sizeof(float));
    ((uint32_t *)qtts_gpu_buf_data(d->tpos))[slot] = 0;
    qtts_gpu_seq *s = qtts_gpu_seq_new(d->g, err);
    if (!s) return -1;
    int64_t pidx = slot;
    streams st = {1, &slot, &n, d->tpos, &pidx};
    int rc = record_lm(s, d, &d->tk, &st, d->hn, 0, err) || record_c0(s, d, 1, &slot, d->hn, (n - 1) * D, D, err) ||
             qtts_gpu_seq_run(s, err);
    qtts_gpu_seq_free(s);
    if (rc) return -1;
    d->pos[slot] = n;
    d->started[slot] = 1;
    *c0 = ((const int32_t *)qtts_gpu_buf_data(d->ids))[(int64_t)slot * IDS_STRIDE];
    return 0;
}

static qtts_gpu_seq *frame_sequence(qtts_gpu_lm *d, int B, const int *slots, qtts_err *err) {
    for (int i = 0; i < SEQ_CACHE; i++)
        if (d->seqs[i].seq && d->seqs[i].B == B && !memcmp(d->seqs[i].slots, slots, (size_t)B * sizeof *slots))
            return d->seqs[i].seq;
    frame_seq *e = &d->seqs[d->next_evict];
    d->next_evict = (d->next_evict + 1) % SEQ_CACHE;
    qtts_gpu_seq_free(e->seq);
    e->seq = NULL;
    qtts_gpu_seq *s = qtts_gpu_seq_new(d->g, err);
    if (!s) return NULL;
    if (record_frame(s, d, B, slots, err) || qtts_gpu_seq_end(s, err)) {
        qtts_gpu_seq_free(s);
        return NULL;
    }
    e->seq = s;
    e->B = B;
    memcpy(e->slots, slots, (size_t)B * sizeof *slots);
    return s;
}

int qtts_gpu_lm_frame(qtts_gpu_lm *d, int B, const int *slots, const float *const *text, int32_t *codes,
                      int32_t *next_c0, qtts_gpu_seq *then, qtts_err *err) {
    const int64_t D = d->tk.cfg.hidden;
    if (B < 1 || B > d->max_streams) return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU frame: batch of %d", B);
    uint64_t seen = 0;
    for (int b = 0; b < B; b++) {
        if (slots[b] < 0 || slots[b] >= d->max_streams || (seen >> slots[b] & 1) || !d->started[slots[b]])
            return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU frame: stream slot %d is not a started stream once",
                                slots[b]);
        seen |= 1ull << slots[b];
    }
    /* a stream whose cache is full grows it (doubling, contents kept) */
    for (int b = 0; b < B; b++)
        if (d->pos[slots[b]] >= d->tk.cap[slots[b]] &&
            qtts_gpu_lm_reserve(d, slots[b], 2 * d->tk.cap[slots[b]], err))
            return -1;
    if (reserve_rows(d, 2 * (int64_t)B, err)) return -1;
    qtts_gpu_seq *s = frame_sequence(d, B, slots, err);
    if (!s) return -1;
    int32_t *ids = qtts_gpu_buf_data(d->ids);
    for (int b = 0; b < B; b++) {
        const int sl = slots[b];
        codes[(int64_t)b * d->G] = ids[(int64_t)sl * IDS_STRIDE];
        ((uint32_t *)qtts_gpu_buf_data(d->tpos))[sl] = (uint32_t)d->pos[sl];
        memcpy((float *)qtts_gpu_buf_data(d->text) + (int64_t)sl * D, text[b], (size_t)D * sizeof(float));
    }
    if (qtts_gpu_seq_run_then(s, then, err)) return -1;
    for (int b = 0; b < B; b++) {
        const int sl = slots[b];
        memcpy(codes + (int64_t)b * d->G + 1, ids + (int64_t)sl * IDS_STRIDE + 1, (size_t)(d->G - 1) * sizeof *ids);
        next_c0[b] = ids[(int64_t)sl * IDS_STRIDE];
        d->pos[sl]++;
    }
    return 0;
}

qtts_gpu_buf *qtts_gpu_lm_code_ring(qtts_gpu_lm *d) { return d->ring; }
