#include "audio/audio_read.h"

#include <math.h>
#include <sndfile.h>
#include <soxr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { READ_CHUNK_FRAMES = 8192, MAX_CHANNELS = 256 };

void qtts_audio_opts_default(qtts_audio_opts *o) {
    o->target_rate = 24000;
    o->min_samples = 1;
    o->max_seconds = 60.0;
}

void qtts_audio_free(qtts_audio *a) {
    if (!a) return;
    free(a->samples);
    memset(a, 0, sizeof *a);
}

/* librosa.resample: n_out = ceil(n * (out/in)) evaluated in double. */
static int64_t resampled_len(int64_t n, int64_t in_rate, int64_t out_rate) {
    return (int64_t)ceil((double)n * ((double)out_rate / (double)in_rate));
}

int qtts_audio_resample(const float *in, int64_t n, int64_t in_rate, int64_t out_rate, float **out, int64_t *n_out,
                        qtts_err *err) {
    *out = NULL;
    *n_out = 0;
    if (in_rate <= 0 || out_rate <= 0) return qtts_fail(err, "resample: bad rates %lld -> %lld", (long long)in_rate,
                                                        (long long)out_rate);
    int64_t want = in_rate == out_rate ? n : resampled_len(n, in_rate, out_rate);
    float *y = qtts_calloc((size_t)(want > 0 ? want : 1), sizeof(float), err);
    if (!y) return -1;
    if (in_rate == out_rate) {
        if (n > 0) memcpy(y, in, (size_t)n * sizeof(float));
        *out = y;
        *n_out = n;
        return 0;
    }
    /* soxr HQ (20-bit, linear phase), float32 in/out: python-soxr's 'HQ' as
     * called by librosa.resample(res_type='soxr_hq'). */
    soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
    soxr_quality_spec_t q = soxr_quality_spec(SOXR_HQ, 0);
    soxr_error_t serr = NULL;
    soxr_t s = soxr_create((double)in_rate, (double)out_rate, 1, &serr, &io, &q, NULL);
    if (!s || serr) {
        free(y);
        if (s) soxr_delete(s);
        return qtts_fail(err, "resample %lld -> %lld Hz: %s", (long long)in_rate, (long long)out_rate,
                         serr ? serr : "soxr_create failed");
    }
    size_t cap = (size_t)want + 256, got = 0;
    float *buf = qtts_malloc(cap * sizeof(float), err);
    if (!buf) {
        soxr_delete(s);
        free(y);
        return -1;
    }
    size_t idone = 0, odone = 0;
    serr = soxr_process(s, in, (size_t)n, &idone, buf, cap, &odone);
    got += odone;
    /* flush: the filter delay comes out with NULL input */
    while (!serr && got < cap) {
        odone = 0;
        serr = soxr_process(s, NULL, 0, NULL, buf + got, cap - got, &odone);
        if (odone == 0) break;
        got += odone;
    }
    soxr_delete(s);
    if (serr) {
        free(buf);
        free(y);
        return qtts_fail(err, "resample %lld -> %lld Hz: %s", (long long)in_rate, (long long)out_rate, serr);
    }
    /* librosa's fix_length: truncate or zero-pad to the expected length */
    memcpy(y, buf, (size_t)(got < (size_t)want ? got : (size_t)want) * sizeof(float));
    free(buf);
    *out = y;
    *n_out = want;
    return 0;
}

/* Downmixed samples collected so far at the source rate. */
typedef struct {
    float *mono;
    int64_t n, cap;
} mono_buf;

static int mono_append(mono_buf *b, const float *frames, int64_t count, int channels, qtts_err *err) {
    if (b->n + count > b->cap) {
        int64_t nc = b->cap ? b->cap * 2 : 65536;
        while (nc < b->n + count) nc *= 2;
        float *p = realloc(b->mono, (size_t)nc * sizeof(float));
        if (!p) return qtts_fail(err, "out of memory reading audio (%lld samples)", (long long)nc);
        b->mono = p;
        b->cap = nc;
    }
    for (int64_t i = 0; i < count; i++) {
        float acc = 0.0f;
        for (int c = 0; c < channels; c++) acc += frames[i * channels + c];
        b->mono[b->n + i] = channels == 1 ? acc : acc / (float)channels;
    }
    b->n += count;
    return 0;
}

static int check_finite(const float *x, int64_t n, int channels, const char *label, int64_t frame0, qtts_err *err) {
    for (int64_t i = 0; i < n * channels; i++)
        if (!isfinite(x[i]))
            return qtts_fail(err, "%s: sample %lld is %s (the audio must be finite)", label,
                             (long long)(frame0 + i / channels), isnan(x[i]) ? "NaN" : "infinite");
    return 0;
}

/* Final steps shared by every source: length checks, resampling. */
static int finish(mono_buf *b, int64_t rate, int channels, const char *label, const qtts_audio_opts *o,
                  qtts_audio *out, qtts_err *err) {
    if (b->n == 0) {
        free(b->mono);
        return qtts_fail(err, "%s: contains no audio samples", label);
    }
    int64_t target = o->target_rate > 0 ? o->target_rate : rate;
    float *y = NULL;
    int64_t ny = 0;
    int rc = qtts_audio_resample(b->mono, b->n, rate, target, &y, &ny, err);
    free(b->mono);
    b->mono = NULL;
    if (rc) return qtts_fail_prefix(err, "%s", label);
    if (ny < o->min_samples) {
        free(y);
        return qtts_fail(err, "%s: too short: %.3f s (%lld samples at %lld Hz), need at least %.3f s", label,
                         (double)ny / (double)target, (long long)ny, (long long)target,
                         (double)o->min_samples / (double)target);
    }
    out->samples = y;
    out->n = ny;
    out->rate = target;
    out->source_rate = rate;
    out->source_channels = channels;
    return 0;
}

static int64_t max_frames_for(const qtts_audio_opts *o, int64_t rate) {
    double m = o->max_seconds * (double)rate;
    return m >= 9e18 ? INT64_MAX : (int64_t)m;
}

static int read_sndfile(SNDFILE *sf, const SF_INFO *info, const char *label, const qtts_audio_opts *o,
                        qtts_audio *out, qtts_err *err) {
    memset(out, 0, sizeof *out);
    if (info->channels < 1 || info->channels > MAX_CHANNELS)
        return qtts_fail(err, "%s: unsupported channel count %d", label, info->channels);
    /* 768 kHz is above any real recording; a header claiming more only makes
     * the resampler spend long building a filter */
    if (info->samplerate <= 0 || info->samplerate > 768000)
        return qtts_fail(err, "%s: bad sample rate %d Hz (1..768000)", label, info->samplerate);
    int64_t limit = max_frames_for(o, info->samplerate);
    /* A header that already declares more than the limit is refused before
     * reading (libsndfile clamps lengths to the real file size, so this is
     * the true length for the formats that declare one). */
    if (info->frames > limit && info->frames != SF_COUNT_MAX)
        return qtts_fail(err, "%s: too long: %.1f s, the limit is %.1f s", label,
                         (double)info->frames / info->samplerate, o->max_seconds);
    /* Normalised float reads (ints scaled by 1/32768 etc.), as soundfile's dtype='float32'. */
    sf_command(sf, SFC_SET_NORM_FLOAT, NULL, SF_TRUE);
    float *chunk = qtts_malloc((size_t)READ_CHUNK_FRAMES * (size_t)info->channels * sizeof(float), err);
    if (!chunk) return -1;
    mono_buf b = {0};
    for (;;) {
        sf_count_t got = sf_readf_float(sf, chunk, READ_CHUNK_FRAMES);
        if (got <= 0) break;
        if (check_finite(chunk, got, info->channels, label, b.n, err)) goto fail;
        if (b.n + got > limit) {
            qtts_fail(err, "%s: too long: more than the %.1f s limit", label, o->max_seconds);
            goto fail;
        }
        if (mono_append(&b, chunk, got, info->channels, err)) goto fail;
    }
    if (sf_error(sf) != SF_ERR_NO_ERROR) {
        qtts_fail(err, "%s: decode error: %s", label, sf_strerror(sf));
        goto fail;
    }
    free(chunk);
    return finish(&b, info->samplerate, info->channels, label, o, out, err);
fail:
    free(chunk);
    free(b.mono);
    return -1;
}

int qtts_audio_read_file(const char *path, const qtts_audio_opts *o, qtts_audio *out, qtts_err *err) {
    SF_INFO info;
    memset(&info, 0, sizeof info);
    memset(out, 0, sizeof *out);
    SNDFILE *sf = sf_open(path, SFM_READ, &info);
    if (!sf) return qtts_fail(err, "%s: cannot read audio: %s", path, sf_strerror(NULL));
    int rc = read_sndfile(sf, &info, path, o, out, err);
    sf_close(sf);
    return rc;
}

/* libsndfile virtual I/O over a read-only memory buffer. */
typedef struct {
    const unsigned char *data;
    sf_count_t size, pos;
} mem_io;

static sf_count_t mem_len(void *u) { return ((mem_io *)u)->size; }
static sf_count_t mem_seek(sf_count_t off, int whence, void *u) {
    mem_io *m = u;
    sf_count_t p = whence == SEEK_SET ? off : whence == SEEK_CUR ? m->pos + off : m->size + off;
    if (p < 0 || p > m->size) return -1;
    m->pos = p;
    return p;
}
static sf_count_t mem_read(void *dst, sf_count_t count, void *u) {
    mem_io *m = u;
    sf_count_t left = m->size - m->pos;
    if (count > left) count = left;
    if (count <= 0) return 0;
    memcpy(dst, m->data + m->pos, (size_t)count);
    m->pos += count;
    return count;
}
static sf_count_t mem_write(const void *src, sf_count_t count, void *u) {
    (void)src;
    (void)count;
    (void)u;
    return 0;
}
static sf_count_t mem_tell(void *u) { return ((mem_io *)u)->pos; }

int qtts_audio_read_memory(const void *data, size_t size, const char *label, const qtts_audio_opts *o,
                           qtts_audio *out, qtts_err *err) {
    memset(out, 0, sizeof *out);
    if (!label) label = "audio buffer";
    if (!data || size == 0) return qtts_fail(err, "%s: empty audio data", label);
    mem_io m = {data, (sf_count_t)size, 0};
    SF_VIRTUAL_IO vio = {mem_len, mem_seek, mem_read, mem_write, mem_tell};
    SF_INFO info;
    memset(&info, 0, sizeof info);
    SNDFILE *sf = sf_open_virtual(&vio, SFM_READ, &info, &m);
    if (!sf) return qtts_fail(err, "%s: cannot read audio: %s", label, sf_strerror(NULL));
    int rc = read_sndfile(sf, &info, label, o, out, err);
    sf_close(sf);
    return rc;
}

int qtts_audio_from_samples(const float *x, int64_t frames, int channels, int64_t rate, const char *label,
                            const qtts_audio_opts *o, qtts_audio *out, qtts_err *err) {
    memset(out, 0, sizeof *out);
    if (!label) label = "audio samples";
    if (channels < 1 || channels > MAX_CHANNELS) return qtts_fail(err, "%s: bad channel count %d", label, channels);
    if (rate <= 0) return qtts_fail(err, "%s: bad sample rate %lld", label, (long long)rate);
    if (frames < 0 || (frames > 0 && !x)) return qtts_fail(err, "%s: no sample data", label);
    if (frames > max_frames_for(o, rate))
        return qtts_fail(err, "%s: too long: %.1f s, the limit is %.1f s", label, (double)frames / (double)rate,
                         o->max_seconds);
    if (check_finite(x, frames, channels, label, 0, err)) return -1;
    mono_buf b = {0};
    if (frames > 0 && mono_append(&b, x, frames, channels, err)) return -1;
    return finish(&b, rate, channels, label, o, out, err);
}
