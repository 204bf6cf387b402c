#include "model/talker.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/linear.h"
#include "tensor/ops.h"

void qtts_talker_model_free(qtts_talker_model *m) {
    if (!m) return;
    qtts_mat_free(&m->fc1);
    qtts_mat_free(&m->fc2);
    free(m->fc1_b);
    free(m->fc2_b);
    qtts_mat_free(&m->codec_head);
    qtts_lm_free(&m->lm);
    qtts_code_predictor_free(&m->cp);
    qtts_store_free(m->store);
    free(m->weights);
    free(m);
}

qtts_talker_model *qtts_talker_model_from_store(qtts_store *st, const qtts_model_config *cfg,
                                               const qtts_generation_config *gen, const qtts_talker_options *opt,
                                               qtts_err *err) {
    qtts_talker_model *m = qtts_calloc(1, sizeof *m, err);
    if (!m) {
        qtts_store_free(st);
        return NULL;
    }
    m->store = st;
    m->cfg = *cfg;
    m->kv_type = QTTS_F32;
    if (gen) m->gen = *gen;
    else qtts_generation_config_defaults(&m->gen);
    const qtts_weight_plan plan = {.type = opt ? opt->weight_type : QTTS_DTYPE_INVALID,
                                   .pool = opt ? opt->pool : NULL,
                                   .layout = opt ? opt->layout : NULL,
                                   .store = st,
                                   .layer_done = opt ? opt->layer_done : NULL,
                                   .layer_user = opt ? opt->layer_user : NULL},
                           *wt = &plan;
    const int64_t D = cfg->talker.hidden, TH = cfg->text_hidden;
    const qtts_tensor *t;
    if (cfg->cp.vocab > cfg->talker.vocab) {
        qtts_fail(err, "code predictor vocabulary %lld exceeds the talker's %lld", (long long)cfg->cp.vocab,
                  (long long)cfg->talker.vocab);
        goto fail;
    }
    if (!(m->codec_emb = qtts_store_get2(st, "talker.model.codec_embedding.weight", cfg->talker.vocab, D, err)))
        goto fail;
    if (qtts_store_find(st, "talker.model.text_embedding_projected.weight")) {
        if (!(m->text_emb_projected =
                  qtts_store_get2(st, "talker.model.text_embedding_projected.weight", cfg->text_vocab, D, err)))
            goto fail;
        goto heads;
    }
    if (!(m->text_emb = qtts_store_get2(st, "talker.model.text_embedding.weight", cfg->text_vocab, TH, err)))
        goto fail;
    if (!(t = qtts_store_get2(st, "talker.text_projection.linear_fc1.weight", -1, TH, err)) ||
        qtts_mat_from_tensor_plan(&m->fc1, t, wt, err))
        goto fail;
    int64_t mid = t->shape[0];
    if (!(t = qtts_store_get2(st, "talker.text_projection.linear_fc2.weight", D, mid, err)) ||
        qtts_mat_from_tensor_plan(&m->fc2, t, wt, err))
        goto fail;
    if (!(t = qtts_store_get1(st, "talker.text_projection.linear_fc1.bias", mid, err)) ||
        !(m->fc1_b = qtts_tensor_to_f32(t, err)) ||
        !(t = qtts_store_get1(st, "talker.text_projection.linear_fc2.bias", D, err)) ||
        !(m->fc2_b = qtts_tensor_to_f32(t, err)))
        goto fail;
heads:
    if (!(t = qtts_store_get2(st, "talker.codec_head.weight", cfg->talker.vocab, D, err)) ||
        qtts_mat_from_tensor_plan(&m->codec_head, t, wt, err))
        goto fail;
    if (qtts_lm_load(&m->lm, st, "talker.model.", &cfg->talker, wt, err)) goto fail;
    if (qtts_code_predictor_load(&m->cp, st, cfg, wt, err)) goto fail;
    return m;
fail:
    qtts_fail_prefix(err, "%s", qtts_store_source(st) ? qtts_store_source(st) : "talker");
    qtts_talker_model_free(m);
    return NULL;
}

qtts_talker_model *qtts_talker_model_load(const char *dir, const qtts_talker_options *opt, qtts_err *err) {
    qtts_model_config cfg;
    qtts_generation_config gen;
    if (qtts_model_config_load(&cfg, dir, err) || qtts_generation_config_load(&gen, dir, err)) return NULL;
    qtts_store *st = qtts_store_open(dir, err);
    if (!st) return NULL;
    return qtts_talker_model_from_store(st, &cfg, &gen, opt, err);
}

int qtts_talker_text_embed(const qtts_talker_model *m, qtts_pool *pool, const int32_t *ids, int64_t n, float *out,
                           qtts_err *err) {
    if (n <= 0) return 0;
    for (int64_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->cfg.text_vocab)
            return qtts_fail(err, "text token id %d is outside the text vocabulary (%lld)", ids[i],
                             (long long)m->cfg.text_vocab);
    if (m->text_emb_projected) return qtts_tensor_rows_f32(m->text_emb_projected, ids, n, out, err);
    const int64_t TH = m->cfg.text_hidden, mid = m->fc1.rows;
    float *raw = qtts_malloc((size_t)n * (size_t)(TH + mid) * sizeof(float), err);
    if (!raw) return -1;
    float *hid = raw + n * TH;
    if (qtts_tensor_rows_f32(m->text_emb, ids, n, raw, err)) {
        free(raw);
        return -1;
    }
    int rc = qtts_linear(pool, &m->fc1, m->fc1_b, raw, n, hid);
    if (!rc) {
        qtts_silu(hid, n * mid);
        rc = qtts_linear(pool, &m->fc2, m->fc2_b, hid, n, out);
    }
    free(raw);
    if (rc) return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "text projection: out of memory (%lld tokens)", (long long)n);
    return 0;
}

int qtts_talker_codec_embed(const qtts_talker_model *m, int64_t id, float *out, qtts_err *err) {
    return qtts_tensor_row_f32(m->codec_emb, id, out, err);
}

/* Every matrix of the model that may view its file: sized into a, or copied into it once a has its block. */
static void own_all(qtts_talker_model *m, qtts_weight_arena *a) {
    const qtts_store *st = m->store;
    qtts_code_predictor *cp = &m->cp;
    qtts_lm_own_mapped(&m->lm, st, a);
    qtts_lm_own_mapped(&cp->lm, st, a);
    qtts_mat_own_mapped(&m->codec_head, st, a);
    qtts_mat_own_mapped(&m->fc1, st, a);
    qtts_mat_own_mapped(&m->fc2, st, a);
    qtts_mat_own_mapped(&cp->proj, st, a);
    for (int g = 0; g < cp->n_groups; g++) qtts_mat_own_mapped(&cp->heads[g], st, a);
}

int qtts_talker_own_mapped(qtts_talker_model *m, qtts_err *err) {
    if (m->weights) return 0; /* done */
    qtts_weight_arena a = {0};
    own_all(m, &a); /* sizes */
    if (!a.size) return 0;
    if (qtts_weight_arena_alloc(&a, err)) return -1;
    m->weights = a.base;
    own_all(m, &a);
    qtts_store_release_all_pages(m->store);
    return 0;
}
