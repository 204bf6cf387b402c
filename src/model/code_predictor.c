#include "model/code_predictor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/talker.h"
#include "tensor/linear.h"

void qtts_code_predictor_free(qtts_code_predictor *cp) {
    if (!cp) return;
    qtts_lm_free(&cp->lm);
    if (cp->heads)
        for (int i = 0; i < cp->n_groups; i++) qtts_mat_free(&cp->heads[i]);
    free(cp->heads);
    free(cp->emb);
    qtts_mat_free(&cp->proj);
    free(cp->proj_b);
    memset(cp, 0, sizeof *cp);
}

int qtts_code_predictor_load(qtts_code_predictor *cp, const qtts_store *st, const qtts_model_config *cfg,
                             const qtts_weight_plan *plan, qtts_err *err) {
    memset(cp, 0, sizeof *cp);
    const int64_t Dt = cfg->talker.hidden, Dc = cfg->cp.hidden, V = cfg->cp.vocab;
    cp->n_groups = (int)cfg->num_code_groups - 1;
    cp->talker_hidden = Dt;
    char name[160];
    cp->emb = qtts_calloc((size_t)cp->n_groups, sizeof *cp->emb, err);
    cp->heads = qtts_calloc((size_t)cp->n_groups, sizeof *cp->heads, err);
    if (!cp->emb || !cp->heads) goto fail;
    for (int i = 0; i < cp->n_groups; i++) {
        snprintf(name, sizeof name, "talker.code_predictor.model.codec_embedding.%d.weight", i);
        if (!(cp->emb[i] = qtts_store_get2(st, name, V, Dt, err))) goto fail;
        snprintf(name, sizeof name, "talker.code_predictor.lm_head.%d.weight", i);
        const qtts_tensor *t = qtts_store_get2(st, name, V, Dc, err);
        if (!t || qtts_mat_from_tensor_plan(&cp->heads[i], t, plan, err)) goto fail;
    }
    const qtts_tensor *pw = qtts_store_find(st, "talker.code_predictor.small_to_mtp_projection.weight");
    if (pw || Dt != Dc) {
        const qtts_tensor *pb;
        if (!(pw = qtts_store_get2(st, "talker.code_predictor.small_to_mtp_projection.weight", Dc, Dt, err)) ||
            !(pb = qtts_store_get1(st, "talker.code_predictor.small_to_mtp_projection.bias", Dc, err)) ||
            qtts_mat_from_tensor_plan(&cp->proj, pw, plan, err) || !(cp->proj_b = qtts_tensor_to_f32(pb, err)))
            goto fail;
        cp->has_proj = 1;
    }
    if (qtts_lm_load(&cp->lm, st, "talker.code_predictor.model.", &cfg->cp, plan, err)) goto fail;
    return 0;
fail:
    qtts_code_predictor_free(cp);
    return -1;
}

void qtts_cp_work_free(qtts_cp_work *w) {
    if (!w) return;
    qtts_lm_work_free(&w->lm);
    free(w->in);
    free(w->proj);
    free(w->hid);
    free(w->logits);
    free(w->ntok);
    memset(w, 0, sizeof *w);
}

static int cp_work_reserve(qtts_cp_work *w, const qtts_code_predictor *cp, int B, qtts_err *err) {
    if (B <= w->cap && w->in) return 0;
    int64_t rows = 2 * (int64_t)B;
    const int64_t Dt = cp->talker_hidden, Dc = cp->lm.cfg.hidden, V = cp->lm.cfg.vocab;
    float *in = realloc(w->in, (size_t)rows * (size_t)Dt * sizeof(float));
    if (in) w->in = in;
    float *pr = realloc(w->proj, (size_t)rows * (size_t)Dc * sizeof(float));
    if (pr) w->proj = pr;
    float *hid = realloc(w->hid, (size_t)rows * (size_t)Dc * sizeof(float));
    if (hid) w->hid = hid;
    float *lg = realloc(w->logits, (size_t)B * (size_t)V * sizeof(float));
    if (lg) w->logits = lg;
    int64_t *nt = realloc(w->ntok, (size_t)B * sizeof(int64_t));
    if (nt) w->ntok = nt;
    if (!in || !pr || !hid || !lg || !nt) return qtts_fail(err, "code predictor: out of memory for batch %d", B);
    w->cap = B;
    return 0;
}

/* Input rows (talker width) -> code predictor width, through the projection when present. */
static int project(const qtts_code_predictor *cp, qtts_pool *pool, const float *in, int64_t rows, float *out,
                   qtts_err *err) {
    if (!cp->has_proj) {
        memcpy(out, in, (size_t)rows * (size_t)cp->lm.cfg.hidden * sizeof(float));
        return 0;
    }
    if (qtts_linear(pool, &cp->proj, cp->proj_b, in, rows, out))
        return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "code predictor: out of memory in the input projection");
    return 0;
}

int qtts_code_predictor_run(const qtts_code_predictor *cp, qtts_pool *pool, qtts_cp_work *w, int B, const float *h,
                            const float *e0, qtts_kv_cache *const *caches, qtts_cp_pick_fn pick, void *pick_ctx,
                            int32_t *codes, float *emb_sum, float *layer_in0, float *proj_in0, qtts_err *err) {
    if (B <= 0) return 0;
    const int64_t Dt = cp->talker_hidden, Dc = cp->lm.cfg.hidden, V = cp->lm.cfg.vocab;
    const int G1 = cp->n_groups;
    if (cp_work_reserve(w, cp, B, err)) return -1;
    int64_t *ntok = w->ntok;
    for (int b = 0; b < B; b++) {
        qtts_kv_reset(caches[b]);
        memcpy(w->in + (2 * b) * Dt, h + b * Dt, (size_t)Dt * sizeof(float));
        memcpy(w->in + (2 * b + 1) * Dt, e0 + b * Dt, (size_t)Dt * sizeof(float));
        ntok[b] = 2;
    }
    if (emb_sum) memset(emb_sum, 0, (size_t)B * (size_t)Dt * sizeof(float));
    if (project(cp, pool, w->in, 2 * B, w->proj, err)) return -1;
    if (proj_in0) memcpy(proj_in0, w->proj, (size_t)(2 * B) * (size_t)Dc * sizeof(float));
    if (qtts_lm_forward(&cp->lm, pool, &w->lm, B, caches, ntok, w->proj, w->hid, layer_in0, err)) return -1;
    /* keep the last row of each sequence */
    for (int b = 0; b < B; b++) memmove(w->hid + b * Dc, w->hid + (2 * b + 1) * Dc, (size_t)Dc * sizeof(float));
    for (int b = 0; b < B; b++) ntok[b] = 1;
    for (int g = 1; g <= G1; g++) {
        if (qtts_linear(pool, &cp->heads[g - 1], NULL, w->hid, B, w->logits))
            return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "code predictor: out of memory in output head %d", g);
        for (int b = 0; b < B; b++) {
            int32_t c = pick(pick_ctx, b, g, w->logits + (int64_t)b * V, V);
            if (c < 0 || c >= V) return qtts_fail(err, "code predictor: picked token %d out of range", c);
            codes[b * G1 + (g - 1)] = c;
            if (qtts_tensor_row_f32(cp->emb[g - 1], c, w->in + b * Dt, err)) return -1;
            if (emb_sum)
                for (int64_t i = 0; i < Dt; i++) emb_sum[b * Dt + i] += w->in[b * Dt + i];
        }
        if (g == G1) break; /* the last code is never fed back */
        if (project(cp, pool, w->in, B, w->proj, err)) return -1;
        if (qtts_lm_forward(&cp->lm, pool, &w->lm, B, caches, ntok, w->proj, w->hid, NULL, err)) return -1;
    }
    return 0;
}
