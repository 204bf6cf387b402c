#include "audio/audio_write.h"

#include <math.h>
#include <sndfile.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct qtts_wav_writer {
    SNDFILE *sf;
    char *path;
    int64_t frames;
    qtts_sample_format fmt;
};

short qtts_f32_to_s16(float v) {
    float s = v * 32768.0f;
    if (!(s > -32768.0f)) return s != s ? 0 : -32768; /* NaN -> 0 */
    if (s >= 32767.0f) return 32767;
    return (short)lrintf(s);
}

int qtts_sample_format_parse(const char *name, qtts_sample_format *out) {
    if (!name) return -1;
    if (!strcasecmp(name, "s16") || !strcasecmp(name, "pcm16") || !strcasecmp(name, "int16")) {
        *out = QTTS_SAMPLE_S16;
        return 0;
    }
    if (!strcasecmp(name, "f32") || !strcasecmp(name, "float") || !strcasecmp(name, "float32")) {
        *out = QTTS_SAMPLE_F32;
        return 0;
    }
    return -1;
}

qtts_wav_writer *qtts_wav_open(const char *path, int sample_rate, qtts_sample_format fmt, qtts_err *err) {
    if (sample_rate <= 0) {
        qtts_fail(err, "%s: bad sample rate %d", path, sample_rate);
        return NULL;
    }
    SF_INFO info;
    memset(&info, 0, sizeof info);
    info.samplerate = sample_rate;
    info.channels = 1;
    info.format = SF_FORMAT_WAV | (fmt == QTTS_SAMPLE_F32 ? SF_FORMAT_FLOAT : SF_FORMAT_PCM_16);
    qtts_wav_writer *w = qtts_calloc(1, sizeof *w, err);
    if (!w) return NULL;
    w->path = strdup(path);
    if (!w->path) {
        free(w);
        qtts_fail(err, "%s: out of memory", path);
        return NULL;
    }
    w->sf = sf_open(path, SFM_WRITE, &info);
    if (!w->sf) {
        qtts_fail(err, "%s: cannot create WAV file: %s", path, sf_strerror(NULL));
        free(w->path);
        free(w);
        return NULL;
    }
    w->fmt = fmt;
    return w;
}

int qtts_wav_append(qtts_wav_writer *w, const float *samples, int64_t n, qtts_err *err) {
    short buf[4096];
    while (n > 0) {
        sf_count_t chunk, got;
        if (w->fmt == QTTS_SAMPLE_S16) {
            chunk = n > 4096 ? 4096 : (sf_count_t)n;
            for (sf_count_t i = 0; i < chunk; i++) buf[i] = qtts_f32_to_s16(samples[i]);
            got = sf_writef_short(w->sf, buf, chunk);
        } else {
            chunk = n > (1 << 20) ? (1 << 20) : (sf_count_t)n;
            got = sf_writef_float(w->sf, samples, chunk);
        }
        if (got != chunk) return qtts_fail(err, "%s: write failed: %s", w->path, sf_strerror(w->sf));
        w->frames += got;
        samples += got;
        n -= got;
    }
    return 0;
}

int64_t qtts_wav_frames_written(const qtts_wav_writer *w) { return w->frames; }

int qtts_wav_close(qtts_wav_writer *w, qtts_err *err) {
    if (!w) return 0;
    int rc = 0;
    if (sf_close(w->sf) != 0) rc = qtts_fail(err, "%s: closing the WAV file failed", w->path);
    free(w->path);
    free(w);
    return rc;
}

int qtts_wav_write(const char *path, const float *samples, int64_t n, int sample_rate, qtts_sample_format fmt,
                   qtts_err *err) {
    qtts_wav_writer *w = qtts_wav_open(path, sample_rate, fmt, err);
    if (!w) return -1;
    if (qtts_wav_append(w, samples, n, err)) {
        qtts_wav_close(w, NULL);
        return -1;
    }
    return qtts_wav_close(w, err);
}
