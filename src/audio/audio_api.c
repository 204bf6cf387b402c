/* The audio functions of include/qtts.h: encoders into memory or a file and
 * file readers, over the library's own (audio/encoder.h, audio/audio_read.h).
 * Names and rates are checked here so that bad arguments are
 * QTTS_ERR_INVALID; the encoders below classify nothing themselves. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audio/audio_read.h"
#include "audio/encoder.h"
#include "core/err.h"
#include "qtts.h"

/* The encoder's output: a growing buffer the sink writes (and, for a
 * non-streaming encoder, seeks back into to patch headers). */
typedef struct {
    unsigned char *data;
    size_t len, cap, pos;
    size_t taken; /* bytes handed out by qtts_audio_encoder_take */
    int out_of_memory;
} mem_out;

struct qtts_audio_encoder {
    qtts_encoder *enc; /* NULL once finished */
    mem_out out;
    int streaming;
};

static int mem_write(void *user, const void *bytes, size_t n) {
    mem_out *m = user;
    if (n > SIZE_MAX / 2 - m->pos) return m->out_of_memory = 1, -1;
    if (m->pos + n > m->cap) {
        size_t cap = m->cap ? m->cap : 4096;
        while (cap < m->pos + n) cap *= 2;
        unsigned char *p = realloc(m->data, cap);
        if (!p) return m->out_of_memory = 1, -1;
        m->data = p;
        m->cap = cap;
    }
    memcpy(m->data + m->pos, bytes, n);
    m->pos += n;
    if (m->pos > m->len) m->len = m->pos;
    return 0;
}

static int mem_seek(void *user, uint64_t offset) {
    mem_out *m = user;
    if (offset > m->len) return -1;
    m->pos = (size_t)offset;
    return 0;
}

static int lossy(qtts_audio_format f) { return f != QTTS_AUDIO_WAV && f != QTTS_AUDIO_PCM && f != QTTS_AUDIO_FLAC; }

/* The format and sample format by name, and the rate and channel count:
 * QTTS_OK or QTTS_ERR_INVALID with err. */
static qtts_status check_args(qtts_audio_format fmt, const char *sample_format, int sample_rate, int channels,
                              qtts_sample_format *sfmt, qtts_error *err) {
    *sfmt = QTTS_SAMPLE_S16;
    if (sample_format) {
        if (lossy(fmt))
            return qtts_error_set(err, QTTS_ERR_INVALID, "a sample format applies to wav, pcm and flac, not %s",
                                  qtts_audio_format_name(fmt));
        if (qtts_sample_format_parse(sample_format, sfmt))
            return qtts_error_set(err, QTTS_ERR_INVALID, "unknown sample format '%s' (expected s16 or f32)",
                                  sample_format);
    }
    if (sample_rate <= 0 || sample_rate > 768000 || channels < 1 || channels > 64)
        return qtts_error_set(err, QTTS_ERR_INVALID,
                              "invalid sample rate %d Hz or channel count %d (1..768000 Hz, 1..64 channels)",
                              sample_rate, channels);
    if (fmt == QTTS_AUDIO_OPUS && sample_rate != 8000 && sample_rate != 12000 && sample_rate != 16000 &&
        sample_rate != 24000 && sample_rate != 48000)
        return qtts_error_set(err, QTTS_ERR_INVALID, "opus takes 8000, 12000, 16000, 24000 or 48000 Hz, not %d",
                              sample_rate);
    return QTTS_OK;
}

static qtts_status parse_format(const char *name, qtts_audio_format *fmt, qtts_error *err) {
    qtts_err qe = {0};
    if (qtts_audio_format_parse(name, fmt, &qe)) {
        qtts_err_export(&qe, QTTS_ERR_INVALID, err);
        return QTTS_ERR_INVALID;
    }
    return QTTS_OK;
}

qtts_audio_encoder *qtts_audio_encoder_new(const char *format, const char *sample_format, int sample_rate, int channels,
                                           int streaming, qtts_error *err) {
    qtts_audio_format fmt;
    qtts_sample_format sfmt;
    if (parse_format(format, &fmt, err) || check_args(fmt, sample_format, sample_rate, channels, &sfmt, err))
        return NULL;
    qtts_audio_encoder *a = calloc(1, sizeof *a);
    if (!a) {
        qtts_error_set(err, QTTS_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    a->streaming = streaming != 0;
    /* streaming: no seek, so nothing already handed out is ever rewritten */
    qtts_audio_sink sink = {mem_write, a->streaming ? NULL : mem_seek, &a->out};
    qtts_err qe = {0};
    a->enc = qtts_encoder_open(fmt, sfmt, sample_rate, channels, &sink, &qe);
    if (!a->enc) {
        qtts_err_export(&qe, a->out.out_of_memory ? QTTS_ERR_NO_MEMORY : QTTS_ERR_INVALID, err);
        free(a->out.data);
        free(a);
        return NULL;
    }
    return a;
}

/* Drops the bytes already taken, so the buffer holds only what is new. */
static void drop_taken(qtts_audio_encoder *a) {
    mem_out *m = &a->out;
    if (!a->streaming || !m->taken) return;
    memmove(m->data, m->data + m->taken, m->len - m->taken);
    m->len -= m->taken;
    m->pos = m->len;
    m->taken = 0;
}

static qtts_status encoder_failed(const qtts_audio_encoder *a, const qtts_err *qe, qtts_error *err) {
    if (a->out.out_of_memory) return qtts_error_set(err, QTTS_ERR_NO_MEMORY, "audio encoder: out of memory");
    return qtts_error_set(err, QTTS_ERR_INTERNAL, "%s", qe->msg);
}

qtts_status qtts_audio_encoder_write(qtts_audio_encoder *a, const float *samples, size_t n_frames, qtts_error *err) {
    if (!a || !a->enc) return qtts_error_set(err, QTTS_ERR_INVALID, "the audio encoder is finished");
    if (n_frames && !samples) return qtts_error_set(err, QTTS_ERR_INVALID, "no samples");
    drop_taken(a);
    qtts_err qe = {0};
    if (qtts_encoder_write(a->enc, samples, n_frames, &qe)) return encoder_failed(a, &qe, err);
    return QTTS_OK;
}

qtts_status qtts_audio_encoder_finish(qtts_audio_encoder *a, qtts_error *err) {
    if (!a || !a->enc) return qtts_error_set(err, QTTS_ERR_INVALID, "the audio encoder is finished");
    drop_taken(a);
    qtts_err qe = {0};
    int rc = qtts_encoder_close(a->enc, &qe);
    a->enc = NULL;
    return rc ? encoder_failed(a, &qe, err) : QTTS_OK;
}

const void *qtts_audio_encoder_take(qtts_audio_encoder *a, size_t *size) {
    *size = 0;
    if (!a || (!a->streaming && a->enc) || a->out.taken >= a->out.len) return NULL;
    const void *p = a->out.data + a->out.taken;
    *size = a->out.len - a->out.taken;
    a->out.taken = a->out.len;
    return p;
}

void qtts_audio_encoder_free(qtts_audio_encoder *a) {
    if (!a) return;
    qtts_encoder_abort(a->enc);
    free(a->out.data);
    free(a);
}

qtts_status qtts_audio_save(const char *path, const char *format, const char *sample_format, const float *samples,
                            size_t n_frames, int sample_rate, int channels, qtts_error *err) {
    if (!path || !*path) return qtts_error_set(err, QTTS_ERR_INVALID, "no output file given");
    if (n_frames && !samples) return qtts_error_set(err, QTTS_ERR_INVALID, "no samples");
    qtts_audio_format fmt;
    qtts_sample_format sfmt;
    qtts_err qe = {0};
    if (format) {
        if (parse_format(format, &fmt, err)) return QTTS_ERR_INVALID;
    } else if (qtts_audio_format_from_path(path, &fmt, &qe)) {
        qtts_err_export(&qe, QTTS_ERR_INVALID, err);
        return QTTS_ERR_INVALID;
    }
    if (check_args(fmt, sample_format, sample_rate, channels, &sfmt, err)) return QTTS_ERR_INVALID;
    if (qtts_audio_write_file(path, qtts_audio_format_name(fmt), sfmt, samples, n_frames, sample_rate, channels, &qe)) {
        qtts_err_export(&qe, QTTS_ERR_INTERNAL, err);
        return err ? err->status : QTTS_ERR_INTERNAL;
    }
    return QTTS_OK;
}

/* ---- reading ---- */

static qtts_status read_args(int sample_rate, double max_seconds, qtts_audio_data *out, qtts_audio_opts *o,
                             qtts_error *err) {
    if (!out) return qtts_error_set(err, QTTS_ERR_INVALID, "no output given");
    memset(out, 0, sizeof *out);
    if (sample_rate < 0 || sample_rate > 768000 || isnan(max_seconds) || max_seconds < 0)
        return qtts_error_set(err, QTTS_ERR_INVALID,
                              "invalid sample rate %d Hz (0: the file's, else up to 768000) or max_seconds %g",
                              sample_rate, max_seconds);
    qtts_audio_opts_default(o);
    o->target_rate = sample_rate;
    o->max_seconds = max_seconds > 0 ? max_seconds : INFINITY;
    return QTTS_OK;
}

static qtts_status read_done(int rc, const qtts_err *qe, const qtts_audio *a, qtts_audio_data *out, qtts_error *err) {
    if (rc) {
        /* what the reader refuses is the audio given: unreadable, empty, too long or not finite */
        qtts_err_export(qe, QTTS_ERR_INVALID, err);
        return err ? err->status : QTTS_ERR_INVALID;
    }
    out->samples = a->samples;
    out->n = (size_t)a->n;
    out->sample_rate = (int)a->rate;
    out->source_rate = (int)a->source_rate;
    out->source_channels = a->source_channels;
    return QTTS_OK;
}

qtts_status qtts_audio_read(const char *path, int sample_rate, double max_seconds, qtts_audio_data *out,
                            qtts_error *err) {
    qtts_audio_opts o;
    if (read_args(sample_rate, max_seconds, out, &o, err)) return QTTS_ERR_INVALID;
    if (!path || !*path) return qtts_error_set(err, QTTS_ERR_INVALID, "no audio file given");
    struct stat st;
    if (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
        return qtts_error_set(err, QTTS_ERR_NOT_FOUND, "%s: %s", path, strerror(errno));
    qtts_audio a = {0};
    qtts_err qe = {0};
    int rc = qtts_audio_read_file(path, &o, &a, &qe);
    return read_done(rc, &qe, &a, out, err);
}

qtts_status qtts_audio_decode(const void *bytes, size_t size, int sample_rate, double max_seconds, qtts_audio_data *out,
                              qtts_error *err) {
    qtts_audio_opts o;
    if (read_args(sample_rate, max_seconds, out, &o, err)) return QTTS_ERR_INVALID;
    qtts_audio a = {0};
    qtts_err qe = {0};
    int rc = qtts_audio_read_memory(bytes, size, "audio data", &o, &a, &qe);
    return read_done(rc, &qe, &a, out, err);
}

void qtts_audio_data_free(qtts_audio_data *a) {
    if (!a) return;
    free(a->samples);
    memset(a, 0, sizeof *a);
}
