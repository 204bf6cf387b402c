#include "model/voice.h"

#include <stdlib.h>
#include <string.h>

void qtts_voice_free(qtts_voice_data *v) {
    if (!v) return;
    free(v->xvec);
    free(v->codes);
    free(v->ref_text);
    memset(v, 0, sizeof *v);
}

int64_t qtts_voice_min_samples(const qtts_spk_encoder *spk, const qtts_codec_encoder *codec) {
    int64_t m = qtts_spk_encoder_min_samples(spk);
    if (codec && qtts_codec_encoder_hop(codec) > m) m = qtts_codec_encoder_hop(codec);
    return m;
}

int qtts_voice_extract(qtts_voice_data *v, qtts_pool *pool, const qtts_spk_encoder *spk, const qtts_codec_encoder *codec,
                       const float *wav, int64_t n, const char *ref_text, int64_t n_q, qtts_err *err) {
    memset(v, 0, sizeof *v);
    if (!spk) return qtts_fail(err, "voice: no speaker encoder (voice cloning needs a Base model)");
    if (codec && qtts_codec_encoder_sample_rate(codec) != qtts_spk_encoder_sample_rate(spk))
        return qtts_fail(err, "voice: speaker encoder rate %lld differs from the speech tokenizer rate %lld",
                         (long long)qtts_spk_encoder_sample_rate(spk),
                         (long long)qtts_codec_encoder_sample_rate(codec));
    int64_t min = qtts_voice_min_samples(spk, codec);
    if (n < min)
        return qtts_fail(err, "voice: reference audio too short: %lld samples, need at least %lld (%.3f s)",
                         (long long)n, (long long)min, (double)min / (double)qtts_spk_encoder_sample_rate(spk));
    v->dim = qtts_spk_encoder_dim(spk);
    v->xvec = qtts_malloc((size_t)v->dim * sizeof(float), err);
    if (!v->xvec) goto fail;
    if (qtts_spk_encoder_embed(spk, pool, wav, n, v->xvec, NULL, NULL, err)) goto fail;
    if (codec) {
        v->n_q = n_q > 0 ? n_q : qtts_codec_encoder_valid_quantizers(codec);
        v->n_frames = qtts_codec_encoder_frames(codec, n);
        v->codes = qtts_malloc((size_t)(v->n_frames * v->n_q) * sizeof(int32_t), err);
        if (!v->codes) goto fail;
        if (qtts_codec_encoder_encode(codec, pool, wav, n, v->n_q, v->codes, NULL, NULL, err)) goto fail;
    }
    if (ref_text) {
        v->ref_text = strdup(ref_text);
        if (!v->ref_text) {
            qtts_fail(err, "voice: out of memory");
            goto fail;
        }
    }
    return 0;
fail:
    qtts_voice_free(v);
    return -1;
}

static void voice_opts(qtts_audio_opts *o, const qtts_spk_encoder *spk, const qtts_codec_encoder *codec,
                       double max_seconds) {
    qtts_audio_opts_default(o);
    if (spk) {
        o->target_rate = qtts_spk_encoder_sample_rate(spk);
        o->min_samples = qtts_voice_min_samples(spk, codec);
    }
    if (max_seconds > 0) o->max_seconds = max_seconds;
}

int qtts_voice_extract_file(qtts_voice_data *v, qtts_pool *pool, const qtts_spk_encoder *spk,
                            const qtts_codec_encoder *codec, const char *path, const char *ref_text,
                            double max_seconds, qtts_err *err) {
    memset(v, 0, sizeof *v);
    if (!spk) return qtts_fail(err, "voice: no speaker encoder (voice cloning needs a Base model)");
    qtts_audio_opts o;
    voice_opts(&o, spk, codec, max_seconds);
    qtts_audio a;
    if (qtts_audio_read_file(path, &o, &a, err)) return -1;
    int rc = qtts_voice_extract(v, pool, spk, codec, a.samples, a.n, ref_text, 0, err);
    qtts_audio_free(&a);
    return rc;
}

int qtts_voice_extract_memory(qtts_voice_data *v, qtts_pool *pool, const qtts_spk_encoder *spk,
                              const qtts_codec_encoder *codec, const void *data, size_t size, const char *label,
                              const char *ref_text, double max_seconds, qtts_err *err) {
    memset(v, 0, sizeof *v);
    if (!spk) return qtts_fail(err, "voice: no speaker encoder (voice cloning needs a Base model)");
    qtts_audio_opts o;
    voice_opts(&o, spk, codec, max_seconds);
    qtts_audio a;
    if (qtts_audio_read_memory(data, size, label, &o, &a, err)) return -1;
    int rc = qtts_voice_extract(v, pool, spk, codec, a.samples, a.n, ref_text, 0, err);
    qtts_audio_free(&a);
    return rc;
}
