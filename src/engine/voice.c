/* Public voices (include/qtts.h): extracted once on the engine thread, then
 * shared read-only by any number of requests through a reference count. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "engine/voice_lexicon.h"

#include "audio/audio_read.h"
#include "io/rvq.h"
#include "io/spk.h"
#include "model/voice.h"

struct clone_frontend {
    qtts_spk_encoder *spk;
    qtts_store *codec_store;
    qtts_codec_encoder *codec;
};

struct clone_frontend *clone_frontend_open(const char *model_dir, const qtts_store *model_store,
                                           const qtts_store *codec_store, const qtts_model_config *cfg,
                                           int with_encoder, qtts_err *err) {
    struct clone_frontend *c = qtts_calloc(1, sizeof *c, err);
    if (!c) return NULL;
    c->spk = qtts_spk_encoder_load(model_store, cfg, err);
    if (!c->spk) goto fail;
    if (!with_encoder) return c;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/speech_tokenizer", model_dir);
    qtts_codec_config cc;
    if (qtts_codec_config_load(&cc, dir, err)) goto fail;
    if (!codec_store) {
        c->codec_store = qtts_store_open(dir, err);
        if (!c->codec_store) goto fail;
        codec_store = c->codec_store;
    }
    c->codec = qtts_codec_encoder_load(codec_store, &cc, err);
    if (!c->codec) goto fail;
    return c;
fail:
    clone_frontend_free(c);
    return NULL;
}

void clone_frontend_release_pages(struct clone_frontend *c) { qtts_store_release_pages(c->codec_store); }

void clone_frontend_free(struct clone_frontend *c) {
    if (!c) return;
    qtts_codec_encoder_free(c->codec);
    qtts_store_free(c->codec_store);
    qtts_spk_encoder_free(c->spk);
    free(c);
}

static qtts_voice *voice_new(const float *xvec, size_t dim, const int32_t *codes, size_t n_frames, size_t n_q,
                             const char *ref_text) {
    qtts_voice *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    atomic_init(&v->refs, 1);
    v->xvec = malloc(dim * sizeof *v->xvec);
    v->xvec_len = dim;
    if (n_frames) v->codes = malloc(n_frames * n_q * sizeof *v->codes);
    if (ref_text) v->ref_text = strdup(ref_text);
    if (!v->xvec || (n_frames && !v->codes) || (ref_text && !v->ref_text)) {
        qtts_voice_release(v);
        return NULL;
    }
    memcpy(v->xvec, xvec, dim * sizeof *v->xvec);
    if (n_frames) memcpy(v->codes, codes, n_frames * n_q * sizeof *v->codes);
    v->n_frames = n_frames;
    v->n_codebooks = (int)n_q;
    return v;
}

qtts_voice *qtts_voice_retain(qtts_voice *v) {
    if (v) atomic_fetch_add(&v->refs, 1);
    return v;
}

void qtts_voice_release(qtts_voice *v) {
    if (!v || atomic_fetch_sub(&v->refs, 1) != 1) return;
    free(v->xvec);
    free(v->codes);
    free(v->ref_text);
    qtts_lexicon_release(v->lexicon);
    free(v);
}

void qtts_voice_set_lexicon(qtts_voice *v, const qtts_lexicon *lx) {
    qtts_lexicon *held = qtts_lexicon_retain((qtts_lexicon *)lx);
    qtts_lexicon_release(v->lexicon);
    v->lexicon = held;
}

const qtts_lexicon *qtts_voice_lexicon(const qtts_voice *v) { return v ? v->lexicon : NULL; }

const float *qtts_voice_xvector(const qtts_voice *v, size_t *len) {
    if (len) *len = v->xvec_len;
    return v->xvec;
}

const int32_t *qtts_voice_codes(const qtts_voice *v, size_t *n_frames) {
    if (n_frames) *n_frames = v->n_frames;
    return v->codes;
}

const char *qtts_voice_ref_text(const qtts_voice *v) { return v->ref_text; }

static int check_base(const qtts_engine *e, qtts_err *err) {
    if (e->cloner) return 0;
    return qtts_fail_as(err, QTTS_ERR_INVALID, "this %s model cannot clone voices (a Base model is needed)",
                        e->info.variant);
}

static qtts_voice *voice_from_parts(qtts_engine *e, const float *xvec, size_t xvec_len, const int32_t *codes,
                                    size_t n_frames, const char *ref_text, qtts_err *err) {
    if (check_base(e, err)) return NULL;
    if (!xvec || xvec_len != (size_t)e->info.hidden_size) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "the x-vector has %zu values; this model needs %d", xvec_len,
                     e->info.hidden_size);
        return NULL;
    }
    for (size_t i = 0; i < xvec_len; i++)
        if (!(xvec[i] == xvec[i]) || xvec[i] > 1e30f || xvec[i] < -1e30f) {
            qtts_fail_as(err, QTTS_ERR_INVALID, "the x-vector holds a non-finite value at index %zu", i);
            return NULL;
        }
    int64_t n_q = e->talker->cfg.num_code_groups, cb = e->talker->cfg.cp.vocab;
    for (size_t i = 0; codes && i < n_frames * (size_t)n_q; i++)
        if (codes[i] < 0 || codes[i] >= cb) {
            qtts_fail_as(err, QTTS_ERR_INVALID, "reference code %d at frame %zu is outside 0..%lld", codes[i],
                         i / (size_t)n_q, (long long)cb - 1);
            return NULL;
        }
    qtts_voice *v = voice_new(xvec, xvec_len, codes, codes ? n_frames : 0, (size_t)n_q, ref_text);
    if (!v) qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
    return v;
}

qtts_voice *qtts_voice_from_parts(qtts_engine *e, const float *xvec, size_t xvec_len, const int32_t *codes,
                                  size_t n_frames, const char *ref_text, qtts_error *err) {
    qtts_err qe = {0};
    qtts_voice *v = voice_from_parts(e, xvec, xvec_len, codes, n_frames, ref_text, &qe);
    if (!v) engine_copy_err(&qe, QTTS_ERR_INTERNAL, err);
    return v;
}

typedef struct {
    qtts_engine *e;
    const float *samples;
    size_t n;
    int rate;
    const void *bytes;
    size_t size;
    const char *ref_text;
    qtts_voice *out;
    qtts_err err;
} extract_job;

/* Runs on the engine thread: decoding/resampling the upload is compute too. */
static void extract(qtts_pool *pool, void *ctx) {
    extract_job *j = ctx;
    struct clone_frontend *c = j->e->cloner;
    qtts_voice_data vd = {0};
    int rc;
    if (j->ref_text && !c->codec) {
        qtts_fail_as(&j->err, QTTS_ERR_INVALID,
                     "this model's files carry no speech-tokenizer encoder (llama.cpp's layout): a voice clones "
                     "from the reference's x-vector alone, without its transcript");
        return;
    }
    if (j->bytes) {
        rc = qtts_voice_extract_memory(&vd, pool, c->spk, c->codec, j->bytes, j->size, "reference audio", j->ref_text,
                                       0, &j->err);
    } else {
        /* the readers' checks (finite, at most 60 s) and resampling, as for a file */
        qtts_audio_opts o;
        qtts_audio_opts_default(&o);
        o.target_rate = qtts_spk_encoder_sample_rate(c->spk);
        qtts_audio wav = {0};
        rc = qtts_audio_from_samples(j->samples, (int64_t)j->n, 1, j->rate, "reference audio", &o, &wav, &j->err);
        if (rc == 0) rc = qtts_voice_extract(&vd, pool, c->spk, c->codec, wav.samples, wav.n, j->ref_text, 0, &j->err);
        qtts_audio_free(&wav);
    }
    if (rc) {
        /* unreadable, too short or too long audio: the caller's input */
        if (j->err.status == QTTS_ERR_INTERNAL) j->err.status = QTTS_ERR_INVALID;
        return;
    }
    j->out = voice_new(vd.xvec, (size_t)vd.dim, vd.codes, vd.codes ? (size_t)vd.n_frames : 0, (size_t)vd.n_q,
                       j->ref_text);
    if (!j->out) qtts_fail_as(&j->err, QTTS_ERR_NO_MEMORY, "out of memory");
    qtts_voice_free(&vd);
}

/* Voice extraction is model compute: an engine job. The calling thread waits
 * (without computing) until it has run. */
static qtts_voice *run_extract(extract_job *j, qtts_error *err) {
    if (!check_base(j->e, &j->err)) qtts_exec_call(j->e->exec, extract, j);
    if (!j->out) engine_copy_err(&j->err, QTTS_ERR_INTERNAL, err);
    return j->out;
}

qtts_voice *qtts_voice_from_samples(qtts_engine *e, const float *samples, size_t n, int sample_rate,
                                    const char *ref_text, qtts_error *err) {
    extract_job j = {.e = e, .samples = samples, .n = n, .rate = sample_rate, .ref_text = ref_text};
    if (!samples || !n || sample_rate < 1000 || sample_rate > 384000) {
        qtts_fail_as(&j.err, QTTS_ERR_INVALID, "reference audio is empty or its sample rate %d is invalid",
                     sample_rate);
        engine_copy_err(&j.err, QTTS_ERR_INVALID, err);
        return NULL;
    }
    return run_extract(&j, err);
}

qtts_voice *qtts_voice_from_audio_bytes(qtts_engine *e, const void *bytes, size_t size, const char *ref_text,
                                        qtts_error *err) {
    extract_job j = {.e = e, .bytes = bytes, .size = size, .ref_text = ref_text};
    if (!bytes || !size) {
        qtts_fail_as(&j.err, QTTS_ERR_INVALID, "reference audio is empty");
        engine_copy_err(&j.err, QTTS_ERR_INVALID, err);
        return NULL;
    }
    return run_extract(&j, err);
}

/* ---- .spk / .rvq files ---- */

/* QTTS_ERR_NOT_FOUND for a path that names nothing, so a caller can tell a
 * missing file from a corrupt one. */
static int check_exists(const char *path, qtts_err *err) {
    if (access(path, F_OK) == 0) return 0;
    return qtts_fail_as(err, QTTS_ERR_NOT_FOUND, "%s: no such file", path);
}

qtts_voice *qtts_voice_from_files(qtts_engine *e, const char *spk_path, const char *rvq_path, const char *ref_text,
                                  qtts_error *err) {
    qtts_err qe = {0};
    float *x = NULL;
    int32_t *codes = NULL;
    int64_t n_frames = 0;
    qtts_voice *v = NULL;
    if (check_base(e, &qe)) goto done;
    if (!spk_path || !*spk_path) {
        qtts_fail_as(&qe, QTTS_ERR_INVALID, "no .spk file given");
        goto done;
    }
    if (check_exists(spk_path, &qe) || (rvq_path && check_exists(rvq_path, &qe))) goto done;
    /* what these readers refuse is the files' content: the caller's input */
    x = qtts_spk_read(spk_path, e->info.hidden_size, NULL, &qe);
    if (!x) goto done;
    if (rvq_path && qtts_rvq_read(rvq_path, e->talker->cfg.num_code_groups, e->talker->cfg.cp.vocab, &codes,
                                  &n_frames, &qe))
        goto done;
    v = voice_from_parts(e, x, (size_t)e->info.hidden_size, codes, (size_t)n_frames, ref_text, &qe);
done:
    free(x);
    free(codes);
    if (!v) engine_copy_err(&qe, QTTS_ERR_INVALID, err);
    return v;
}

qtts_status qtts_voice_save(const qtts_voice *v, const char *spk_path, const char *rvq_path, qtts_error *err) {
    qtts_err qe = {0};
    if (!v || !spk_path || !*spk_path) qtts_fail_as(&qe, QTTS_ERR_INVALID, "no voice or no .spk file given");
    else if (rvq_path && (!v->codes || !v->n_frames))
        qtts_fail_as(&qe, QTTS_ERR_INVALID, "this voice has no reference codes to write to %s", rvq_path);
    else if (qtts_spk_write(spk_path, v->xvec, (int64_t)v->xvec_len, &qe) == 0 && rvq_path)
        qtts_rvq_write(rvq_path, v->codes, v->n_codebooks, (int64_t)v->n_frames, &qe);
    if (!qe.status) return QTTS_OK;
    engine_copy_err(&qe, QTTS_ERR_INTERNAL, err); /* a write that failed: I/O */
    return qe.status;
}
