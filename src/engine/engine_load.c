/* Model loading and unloading. Both run on the engine thread: converting and
 * packing weights is compute, and the pool belongs to that thread. */
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "engine/engine_internal.h"
#include "gpu/device_spec.h"
#include "gpu/gpu_decoder.h"
#include "gpu/gpu_lm.h"
#include "io/gguf.h"
#include "io/layout.h"
#include "io/lora.h"

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

/* The type the LM matrices will have: as asked (fitted to their width), or as stored. */
static qtts_dtype lm_weight_type(const qtts_store *st, qtts_dtype want) {
    const qtts_tensor *t = qtts_store_find(st, "talker.model.layers.0.self_attn.q_proj.weight");
    if (!t || t->ndim != 2) return want;
    return want == QTTS_DTYPE_INVALID ? t->type : qtts_dtype_fit(want, t->shape[1], t->type);
}

/* The caller's progress callback (qtts_engine_params.load_progress). */
static void progress(const qtts_engine_params *p, const char *step, double done) {
    if (p->load_progress) p->load_progress(p->load_progress_user, step, done);
}

/* The LM weights' share done, counted in layers (talker and code predictor). */
typedef struct {
    const qtts_engine_params *p;
    int64_t layers, done;
} layer_count;

static void layer_done(void *user) {
    layer_count *lc = user;
    lc->done++;
    progress(lc->p, "LM weights", lc->layers > 0 ? (double)lc->done / (double)lc->layers : 0.0);
}

/* Milliseconds per load phase, for the report. */
typedef struct {
    double open, calibrate, weights, decoder, text, release, lora;
    double lm_heap, text_heap; /* bytes the LM weights and the tokenizer/voice front end took from the heap */
} load_times;

/* Bytes in use on the heap (glibc: small and mmapped blocks), for the load
 * report's weight sizes; 0 elsewhere. */
static double heap_bytes(void) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    const struct mallinfo2 mi = mallinfo2();
    return (double)mi.uordblks + (double)mi.hblkhd;
#else
    return 0;
#endif
}

/* The process's resident bytes now (Linux), or 0. */
static double rss_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    int n = fscanf(f, "%ld %ld", &pages, &resident);
    fclose(f);
    return n == 2 ? (double)resident * (double)sysconf(_SC_PAGESIZE) : 0;
}


/* The adapters of p->lora merged into *st, in order, on the engine's pool
 * (io/lora.h). As stored (no weight_type), a merged weight keeps its stored
 * type, so the layouts are decided as for the model without them; with one,
 * it stays f32 for the loader's one conversion. */
static int merge_adapters(const qtts_engine_params *p, qtts_pool *pool, qtts_dtype asked, qtts_store **st,
                          qtts_err *err) {
    for (int i = 0; i < p->n_lora; i++) {
        char path[PATH_MAX];
        double scale;
        int n = 0;
        if (!p->lora || !p->lora[i]) return qtts_fail(err, "lora[%d] is NULL (n_lora %d)", i, p->n_lora);
        if (qtts_lora_spec(p->lora[i], path, sizeof path, &scale, err)) return -1;
        if (qtts_lora_merge(st, path, scale, asked != QTTS_DTYPE_INVALID, pool, &n, err)) {
            qtts_fail_prefix(err, "LoRA adapter");
            return -1;
        }
        if (p->verbose) fprintf(stderr, "qtts: LoRA %s: %d weights merged, scale %g\n", path, n, scale);
    }
    return 0;
}

/* The talker from st (which it takes), its matrices converted and laid out
 * as the loader decided on the engine's pool. */
static int load_talker(qtts_engine *e, qtts_pool *pool, const qtts_engine_params *lp, qtts_store *st,
                       const qtts_model_config *cfg, const qtts_generation_config *gen, qtts_talker_options *topt,
                       load_times *lt, qtts_err *err) {
    double t0 = qtts_now_ms();
    if (merge_adapters(lp, pool, topt->weight_type, &st, err)) {
        qtts_store_free(st);
        return -1;
    }
    lt->lora += qtts_now_ms() - t0;
    t0 = qtts_now_ms();
    const double m0 = e->tuning.measure_ms;
    topt->pool = pool;
    topt->layout = engine_tuning_layout(e, pool, lm_weight_type(st, topt->weight_type));
    lt->calibrate += e->tuning.measure_ms - m0;
    t0 += e->tuning.measure_ms - m0;
    const double h0 = heap_bytes();
    layer_count lc = {.p = e->load_params, .layers = cfg->talker.layers + cfg->cp.layers};
    topt->layer_done = layer_done;
    topt->layer_user = &lc;
    progress(e->load_params, "LM weights", 0.0);
    e->talker = qtts_talker_model_from_store(st, cfg, gen, topt, err); /* owns the store */
    topt->layer_done = NULL;
    topt->layer_user = NULL;
    lt->weights += qtts_now_ms() - t0;
    lt->lm_heap += heap_bytes() - h0;
    return e->talker ? 0 : -1;
}

/* The decoder's precision for p once the LM's weight type is known ("auto"
 * with quantized LM weights follows the conv measurement, or its cache):
 * chosen before the decoder loads, so its weights are packed in that form. */
static int choose_decoder_precision(qtts_engine *e, const qtts_engine_params *p, load_times *lt,
                                    qtts_decoder_precision *prec, qtts_err *err) {
    const qtts_dtype lm_type = e->talker->lm.layers[0].q.type;
    const qtts_conv_calibration *conv = NULL;
    if (qtts_decoder_precision_measures(p->decoder_precision, lm_type)) {
        const double m0 = e->tuning.measure_ms;
        conv = engine_tuning_conv(e);
        lt->calibrate += e->tuning.measure_ms - m0;
    }
    return qtts_decoder_precision_choose(p->decoder_precision, lm_type, conv, prec, err);
}

/* A model whose tensors are not an official folder's (a qtts .gguf, another
 * project's GGUF pair, a Transformers-native folder): its text files are in
 * a private folder, its tensors under the official names (io/layout.h). */
static int load_packed(qtts_engine *e, qtts_pool *pool, const qtts_engine_params *lp, qtts_model_files *mf,
                       qtts_talker_options *topt, load_times *lt, qtts_decoder_precision *prec, qtts_err *err) {
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
        ok = !load_talker(e, pool, lp, model_store, &cfg, &gen, topt, lt, err);
        model_store = NULL;
        ok = ok && !choose_decoder_precision(e, lp, lt, prec, err);
        if (ok) progress(e->load_params, "speech decoder", 0.0);
        double t0 = qtts_now_ms();
        ok = ok && (e->decoder = qtts_codec_decoder_load_pool(e->codec_store, &cc, pool, *prec, err)) != NULL;
        lt->decoder += qtts_now_ms() - t0;
        if (ok) progress(e->load_params, "tokenizer", 0.0);
        t0 = qtts_now_ms();
        const double h0 = heap_bytes();
        ok = ok && (e->tok = qtts_tok_load(tmp, err)) != NULL;
        if (ok && cfg.variant == QTTS_VARIANT_BASE)
            ok = (e->cloner = clone_frontend_open(tmp, e->talker->store, e->codec_store, &cfg, mf->has_codec_encoder,
                                                  err)) != NULL;
        lt->text += qtts_now_ms() - t0;
        lt->text_heap += heap_bytes() - h0;
    }
    qtts_store_free(model_store);
    return ok ? 0 : -1;
}

/* An official model folder. */
static int load_folder(qtts_engine *e, qtts_pool *pool, const qtts_engine_params *lp, const char *path,
                       qtts_talker_options *topt, load_times *lt, qtts_decoder_precision *prec, qtts_err *err) {
    double t0 = qtts_now_ms();
    qtts_model_config cfg;
    qtts_generation_config gen;
    if (qtts_model_config_load(&cfg, path, err) || qtts_generation_config_load(&gen, path, err)) return -1;
    qtts_store *st = qtts_store_open(path, err);
    lt->open += qtts_now_ms() - t0;
    if (!st || load_talker(e, pool, lp, st, &cfg, &gen, topt, lt, err) ||
        choose_decoder_precision(e, lp, lt, prec, err))
        return -1;
    progress(e->load_params, "speech decoder", 0.0);
    t0 = qtts_now_ms();
    e->decoder = qtts_codec_decoder_open_pool(path, pool, *prec, err);
    lt->decoder += qtts_now_ms() - t0;
    if (!e->decoder) return -1;
    progress(e->load_params, "tokenizer", 0.0);
    t0 = qtts_now_ms();
    const double h0 = heap_bytes();
    e->tok = qtts_tok_load(path, err);
    if (!e->tok) return -1;
    if (e->talker->cfg.variant == QTTS_VARIANT_BASE) {
        e->cloner = clone_frontend_open(path, e->talker->store, NULL, &e->talker->cfg, 1, err);
        if (!e->cloner) return -1;
    }
    lt->text += qtts_now_ms() - t0;
    lt->text_heap += heap_bytes() - h0;
    return 0;
}

static void load_report(qtts_engine *e, const load_times *lt, double total, double decoder_heap) {
    /* the LM's matrices are all in the process's memory by now (qtts_talker_own_mapped), none in the mapping */
    const double mb = 1e-6;
    snprintf(
        e->load_report, sizeof e->load_report,
        "load %.0f ms: open/map %.0f, calibration %.0f (%d measured), LoRA %.0f, LM weights %.0f (convert, repack), "
        "decoder %.0f, tokenizer/voice %.0f, page release %.0f; weights: LM %.0f MB, decoder %.0f MB, "
        "tokenizer/voice %.0f MB; RSS after load %.0f MB",
        total, lt->open, lt->calibrate, e->tuning.n_measured, lt->lora, lt->weights, lt->decoder,
        lt->text, lt->release, lt->lm_heap * mb, decoder_heap * mb, lt->text_heap * mb,
        rss_bytes() * mb);
    e->info.load_report = e->load_report;
    e->info.kernels_measured = e->tuning.n_measured;
}

/* Opens the device of p->device for the batch's LM work (engine
 * thread: only it records and submits). "auto" falls back to the CPU with
 * one line saying why; "vulkan[:N]" that cannot be used is an error. */
static int open_device(qtts_engine *e, const qtts_engine_params *p, qtts_err *err) {
    qtts_device_kind kind;
    snprintf(e->device_name, sizeof e->device_name, "cpu");
    e->info.device = e->device_name;
    if (qtts_device_parse(p->device, &kind, err)) return -1;
    if (kind == QTTS_DEVICE_CPU) return 0;
    const char *spec = kind == QTTS_DEVICE_AUTO ? "vulkan" : p->device;
    qtts_err why = {0};
    e->gpu = qtts_gpu_open(spec, &why);
    if (e->gpu) {
        e->gpu_lm = qtts_gpu_lm_new(e->gpu, e->talker, e->max_batch, QTTS_ENGINE_GPU_POSITIONS, &why);
        /* the decoder's f32 weights come from the store the CPU decoder was loaded from */
        const qtts_store *cst = e->codec_store ? e->codec_store : qtts_codec_decoder_owned_store(e->decoder);
        if (e->gpu_lm && !cst) snprintf(why.msg, sizeof why.msg, "the speech decoder's weights are not at hand");
        if (e->gpu_lm && cst)
            e->gpu_dec = qtts_gpu_decoder_new(e->gpu, cst, qtts_codec_decoder_config(e->decoder), &why);
        if (!e->gpu_dec) {
            qtts_gpu_lm_free(e->gpu_lm);
            e->gpu_lm = NULL;
            qtts_gpu_close(e->gpu);
            e->gpu = NULL;
        }
    }
    if (!e->gpu) {
        if (kind == QTTS_DEVICE_AUTO) {
            fprintf(stderr, "qtts: no usable GPU (%s); running on the CPU\n", why.msg);
            return 0;
        }
        return qtts_fail_as(err, QTTS_ERR_INVALID, "%s", why.msg); /* it names the device */
    }
    qtts_batch_set_device(e->batch, e->gpu_lm, e->max_batch, QTTS_ENGINE_GPU_POSITIONS_MAX);
    /* the decoder reads the codes of the requests on the device where the frames left them (a model whose
       code groups are not the decoder's codebooks takes them from the host) */
    qtts_err no_ring = {0};
    e->code_ring = !qtts_gpu_decoder_use_ring(e->gpu_dec, qtts_gpu_lm_code_ring(e->gpu_lm), QTTS_GPU_CODE_RING_ROWS,
                                              e->talker->cfg.num_code_groups, &no_ring);
    engine_attach_frame_decode(e);
    /* every request decodes on the device, from the f32 weights it uploaded: the CPU's packed copies go */
    qtts_codec_decoder_drop_weights(e->decoder);
    qtts_heap_trim();
    e->info.decoder_precision = qtts_decoder_precision_name(QTTS_DECODER_F32);
    snprintf(e->device_name, sizeof e->device_name, "vulkan: %s", qtts_gpu_name(e->gpu));
    if (p->verbose) fprintf(stderr, "qtts: talker, code predictor and speech decoder on %s\n", e->device_name);
    return 0;
}

static void load_models(qtts_pool *pool, engine_load_job *j) {
    qtts_engine *e = j->e;
    const double t_load = qtts_now_ms();
    load_times lt = {0};
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
    engine_tuning_begin(e, pool, j->p->verbose);
    const char *path = j->p->model_path;
    qtts_model_files mf;
    double t0 = qtts_now_ms();
    /* matrices a .gguf stores in the kernels' layout run where they lie, unless adapters are merged into
     * them (they need rows) or QTTS_KERNEL_LAYOUT=rows asks for the plain form (what another CPU reads) */
    const char *kl = getenv("QTTS_KERNEL_LAYOUT");
    const int kernel = j->p->n_lora == 0 && !(kl && !strcmp(kl, "rows"));
    if (qtts_model_files_open(&mf, path, QTTS_LAYOUT_CONVERT | (kernel ? QTTS_LAYOUT_KERNEL : 0), &j->err)) return;
    lt.open += qtts_now_ms() - t0;
    if (mf.note[0] && j->p->verbose) fprintf(stderr, "qtts: %s (%s layout): %s\n", mf.files, mf.layout, mf.note);
    const double h_start = heap_bytes();
    qtts_decoder_precision prec = QTTS_DECODER_F32;
    int rc = mf.model_store ? load_packed(e, pool, j->p, &mf, &topt, &lt, &prec, &j->err)
                            : load_folder(e, pool, j->p, path, &topt, &lt, &prec, &j->err);
    qtts_model_files_close(&mf);
    if (rc) return;
    /* Converted and packed weights live in their own memory now: let the
     * mapped originals leave the RSS (what is still used faults back in),
     * and the heap's holes (f32 copies packed into other layouts) go back to
     * the system, which lowers the RSS after the load. */
    t0 = qtts_now_ms();
    qtts_store_release_pages(e->talker->store);
    qtts_store_release_pages(qtts_codec_decoder_owned_store(e->decoder));
    qtts_store_release_pages(e->codec_store);
    if (e->cloner) clone_frontend_release_pages(e->cloner);
    qtts_heap_trim();
    lt.release += qtts_now_ms() - t0;
    const qtts_dtype lm_type = e->talker->lm.layers[0].q.type;
    /* Matrices used in place from the file are copied into the process's memory: the kernels read a file
     * mapping's page-cache pages slower (0.6B q4_k kernel-layout .gguf: talker step 11-16 ms of CPU mapped,
     * 8-9 ms copied). Last, so the load's peak holds the decoder's conversions or the copies, not both. */
    t0 = qtts_now_ms();
    const double h_copy = heap_bytes();
    if (qtts_talker_own_mapped(e->talker, &j->err)) return;
    lt.weights += qtts_now_ms() - t0;
    lt.lm_heap += heap_bytes() - h_copy;
    /* what the decoder holds: the heap the load took beside the LM and the tokenizer */
    const double decoder_heap = heap_bytes() - h_start - lt.lm_heap - lt.text_heap;
    engine_tuning_end(e);
    e->info.weight_type = qtts_dtype_name(lm_type);
    e->info.decoder_precision = qtts_decoder_precision_name(prec);
    if (qtts_kv_type_choose(j->p->kv_cache, e->talker->lm.layers[0].q.type, &e->talker->kv_type, &j->err)) return;
    e->info.kv_cache = qtts_dtype_name(e->talker->kv_type);
    e->info.max_frames = e->talker->gen.max_new_tokens > 0 ? (int)(e->talker->gen.max_new_tokens - 1) : 0;
    e->batch = qtts_batch_new(e->talker, &j->err);
    if (!e->batch || open_device(e, j->p, &j->err)) return;
    load_report(e, &lt, qtts_now_ms() - t_load, e->gpu_dec ? 0.0 : decoder_heap);
    progress(j->p, "ready", 1.0);
    j->rc = 0;
}

void engine_load_models(qtts_pool *pool, void *ctx) {
    engine_load_job *j = ctx;
    j->e->load_params = j->p; /* for the progress callback, while the load runs */
    load_models(pool, j);
    j->e->load_params = NULL;
}

void engine_unload_models(qtts_pool *pool, void *ctx) {
    qtts_engine *e = ctx;
    (void)pool;
    qtts_batch_free(e->batch);
    qtts_gpu_lm_free(e->gpu_lm);
    qtts_gpu_decoder_free(e->gpu_dec);
    qtts_gpu_close(e->gpu);
    if (e->cloner) clone_frontend_free(e->cloner);
    qtts_tok_free(e->tok);
    qtts_codec_decoder_free(e->decoder);
    qtts_store_free(e->codec_store); /* borrows the talker store's mapping (packed models) */
    qtts_talker_model_free(e->talker);
}
