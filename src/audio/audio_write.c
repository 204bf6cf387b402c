#include "audio/audio_write.h"

#include "audio/encoder.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The WAV writer is the streaming encoder's (audio/encoder.c): one WAV
 * writer in the program, seeking back to patch the sizes at close. */
struct qtts_wav_writer {
    qtts_encoder *enc;
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
    qtts_wav_writer *w = qtts_calloc(1, sizeof *w, err);
    if (!w) return NULL;
    if (!(w->enc = qtts_encoder_open_file(path, "wav", fmt, sample_rate, 1, err))) {
        free(w);
        return NULL;
    }
    return w;
}

int qtts_wav_append(qtts_wav_writer *w, const float *samples, int64_t n, qtts_err *err) {
    return n > 0 ? qtts_encoder_write(w->enc, samples, (size_t)n, err) : 0;
}

int64_t qtts_wav_frames_written(const qtts_wav_writer *w) { return (int64_t)qtts_encoder_frames(w->enc); }

int qtts_wav_close(qtts_wav_writer *w, qtts_err *err) {
    if (!w) return 0;
    int rc = qtts_encoder_close(w->enc, err);
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
