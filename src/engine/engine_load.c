/* Model loading and unloading. Both run on the engine thread: converting and
 * packing weights is compute, and the pool belongs to that thread. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_internal.h"
#include "io/gguf.h"
#include "io/layout.h"

int engine_build_name_lists(qtts_engine *e) {
    const qtts_model_config *c = &e->talker->cfg;
    e->speaker_names = calloc((size_t)c->n_speakers + 1, sizeof *e->speaker_names);
    e->language_names = calloc((size_t)c->n_languages + 2, sizeof *e->language_names);
    if (!e->speaker_names || !e->language_names) return -1;
    size_t o = 0;
    e->speaker_list[0] = 0;
    for (int i = 0; i < c->n_speakers; i++) {
        e->speaker_names[i] = c->speakers[i].name;
        o += (size_t)snprintf(e->speaker_list + o, sizeof e->speaker_list - o, "%s%s", i ? ", " : "",
                              c->speakers[i].name);
        if (o >= sizeof e->speaker_list) o = sizeof e->speaker_list - 1;
    }
    int nl = 0;
    e->language_names[nl++] = "auto";
    o = (size_t)snprintf(e->language_list, sizeof e->language_list, "auto");
    for (int i = 0; i < c->n_languages; i++) {
        if (strstr(c->languages[i].name, "dialect")) continue;
        e->language_names[nl++] = c->languages[i].name;
        o += (size_t)snprintf(e->language_list + o, sizeof e->language_list - o, ", %s", c->languages[i].name);
        if (o >= sizeof e->language_list) o = sizeof e->language_list - 1;
    }
    e->info.variant = qtts_variant_name(c->variant);
    e->info.size = c->size;
    e->info.hidden_size = (int)c->talker.hidden;
    e->info.n_speakers = c->n_speakers;
    e->info.speakers = e->speaker_names;
    e->info.n_languages = nl;
    e->info.languages = e->language_names;
    e->info.sample_rate = (int)e->sample_rate;
    e->info.frame_samples = (int)e->frame_samples;
    e->info.n_codebooks = (int)c->num_code_groups;
    e->info.codebook_size = (int)c->cp.vocab;
    e->info.max_batch = e->max_batch;
    return 0;
}

/* A model whose tensors are not an official folder's (a qtts .gguf, another
 * project's GGUF pair, a Transformers-native folder): its text files are in
 * a private folder, its tensors under the official names (io/layout.h). */
static int load_packed(qtts_engine *e, qtts_model_files *mf, const qtts_talker_options *topt, qtts_err *err) {
    const char *tmp = mf->dir;
    qtts_store *model_store = mf->model_store;
    e->codec_store = mf->codec_store;
    mf->model_store = mf->codec_store = NULL; /* the engine owns them now */
    qtts_model_config cfg;
    qtts_generation_config gen;
    qtts_codec_config cc;
    char codec_dir[PATH_MAX + 32];
    snprintf(codec_dir, sizeof codec_dir, "%s/speech_tokenizer", tmp);
    int ok = !qtts_model_config_load(&cfg, tmp, err) && !qtts_generation_config_load(&gen, tmp, err) &&
             !qtts_codec_config_load(&cc, codec_dir, err);
    if (ok) {
        e->talker = qtts_talker_model_from_store(model_store, &cfg, &gen, topt, err); /* owns the store */
        model_store = NULL;
        ok = e->talker && (e->decoder = qtts_codec_decoder_load(e->codec_store, &cc, err)) != NULL &&
             (e->tok = qtts_tok_load(tmp, err)) != NULL;
        if (ok && cfg.variant == QTTS_VARIANT_BASE)
            ok = (e->cloner = clone_frontend_open(tmp, e->talker->store, e->codec_store, &cfg, mf->has_codec_encoder,
                                                  err)) != NULL;
    }
    qtts_store_free(model_store);
    return ok ? 0 : -1;
}

/* An official model folder. */
static int load_folder(qtts_engine *e, const char *path, const qtts_talker_options *topt, qtts_err *err) {
    e->talker = qtts_talker_model_load(path, topt, err);
    if (!e->talker) return -1;
    e->decoder = qtts_codec_decoder_open(path, err);
    if (!e->decoder) return -1;
    e->tok = qtts_tok_load(path, err);
    if (!e->tok) return -1;
    if (e->talker->cfg.variant == QTTS_VARIANT_BASE) {
        e->cloner = clone_frontend_open(path, e->talker->store, NULL, &e->talker->cfg, 1, err);
        if (!e->cloner) return -1;
    }
    return 0;
}

void engine_load_models(qtts_pool *pool, void *ctx) {
    engine_load_job *j = ctx;
    qtts_engine *e = j->e;
    (void)pool;
    j->rc = -1;
    qtts_talker_options topt = {.weight_type = QTTS_DTYPE_INVALID};
    if (j->p->weight_type && *j->p->weight_type && strcmp(j->p->weight_type, "auto") != 0) {
        topt.weight_type = qtts_dtype_from_name(j->p->weight_type);
        if (topt.weight_type == QTTS_DTYPE_INVALID) {
            qtts_fail_as(&j->err, QTTS_ERR_INVALID, "unknown weight type \"%s\" (f32, bf16, q8_0, q4_k)",
                         j->p->weight_type);
            return;
        }
    }
    qtts_dtype kv_type; /* checked before the load (its "auto" is settled once the weights are known) */
    if (qtts_kv_type_choose(j->p->kv_cache, QTTS_F32, &kv_type, &j->err)) {
        j->err.status = QTTS_ERR_INVALID;
        return;
    }
    const char *path = j->p->model_path;
    qtts_model_files mf;
    if (qtts_model_files_open(&mf, path, QTTS_LAYOUT_CONVERT, &j->err)) return;
    if (mf.note[0] && j->p->verbose) fprintf(stderr, "qtts: %s (%s layout): %s\n", mf.files, mf.layout, mf.note);
    int rc = mf.model_store ? load_packed(e, &mf, &topt, &j->err) : load_folder(e, path, &topt, &j->err);
    qtts_model_files_close(&mf);
    if (rc) return;
    /* Converted and packed weights live in their own memory now: let the
     * mapped originals leave the RSS (what is still used faults back in),
     * and the heap's holes (f32 copies packed into other layouts) go back to
     * the system before the decoder's conversion adds its own weights (0.6B
     * q4_k in the bench: load peak 992 -> 973 MB, 908 -> 848 MB after it). */
    qtts_store_release_pages(e->talker->store);
    qtts_store_release_pages(qtts_codec_decoder_owned_store(e->decoder));
    qtts_store_release_pages(e->codec_store);
    if (e->cloner) clone_frontend_release_pages(e->cloner);
    qtts_heap_trim();
    qtts_decoder_precision prec;
    if (qtts_decoder_precision_choose(j->p->decoder_precision, e->talker->lm.layers[0].q.type, &prec, &j->err) ||
        qtts_codec_decoder_set_precision(e->decoder, prec, &j->err))
        return;
    qtts_heap_trim(); /* the direct weights a Winograd or bf16 conversion freed */
    e->info.weight_type = qtts_dtype_name(e->talker->lm.layers[0].q.type);
    e->info.decoder_precision = qtts_decoder_precision_name(prec);
    if (qtts_kv_type_choose(j->p->kv_cache, e->talker->lm.layers[0].q.type, &e->talker->kv_type, &j->err)) return;
    e->info.kv_cache = qtts_dtype_name(e->talker->kv_type);
    e->batch = qtts_batch_new(e->talker, &j->err);
    if (!e->batch) return;
    j->rc = 0;
}

void engine_unload_models(qtts_pool *pool, void *ctx) {
    qtts_engine *e = ctx;
    (void)pool;
    qtts_batch_free(e->batch);
    if (e->cloner) clone_frontend_free(e->cloner);
    qtts_tok_free(e->tok);
    qtts_codec_decoder_free(e->decoder);
    qtts_store_free(e->codec_store); /* borrows the talker store's mapping (packed models) */
    qtts_talker_model_free(e->talker);
}
