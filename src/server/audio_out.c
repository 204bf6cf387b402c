#include "server/audio_out.h"

#include "audio/audio_write.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* flac, mp3, opus and aac (ADTS) come from the shared streaming encoder
 * (src/audio) when the tree has it; wav and pcm are written here,
 * sample-exact. */
#if defined(__has_include)
#if __has_include("audio/encoder.h")
#include "audio/encoder.h"
#define SRV_HAVE_ENCODER 1
#endif
#endif
#ifndef SRV_HAVE_ENCODER
#define SRV_HAVE_ENCODER 0
#endif

struct srv_audio_out {
    srv_format fmt;
    int sample_rate;
    srv_sink_fn sink;
    void *user;
    int failed;
#if SRV_HAVE_ENCODER
    qtts_encoder *enc;
    srv_buf *seek_buf; /* buffered responses: the encoder may patch headers */
    size_t seek_pos;
#endif
};

/* Content-Types: what clients of OpenAI's API (and browsers) key on.
 * audio/mpeg and audio/aac (ADTS) are what api.openai.com sends for mp3 and
 * aac (openai/openai-openapi#141); audio/flac and audio/wav the common names;
 * audio/pcm for OpenAI's raw s16le 24 kHz mono (audio/L16 would claim
 * big-endian). opus departs on purpose: OpenAI is reported to send
 * audio/opus, a type registered for RTP payloads (RFC 7587), whereas an Ogg
 * Opus stream is audio/ogg (RFC 7845 section 9), the type browsers and
 * players map to a decoder; the OpenAI SDKs return the bytes whatever the
 * header says. */
static const struct {
    const char *name;
    srv_format fmt;
    const char *mime;
    int supported;
} k_formats[] = {
    {"wav", SRV_FMT_WAV, "audio/wav", 1},   {"pcm", SRV_FMT_PCM, "audio/pcm", 1},
    {"flac", SRV_FMT_FLAC, "audio/flac", SRV_HAVE_ENCODER}, {"mp3", SRV_FMT_MP3, "audio/mpeg", SRV_HAVE_ENCODER},
    {"opus", SRV_FMT_OPUS, "audio/ogg", SRV_HAVE_ENCODER},  {"aac", SRV_FMT_AAC, "audio/aac", SRV_HAVE_ENCODER},
};
#define N_FORMATS (sizeof k_formats / sizeof k_formats[0])

int srv_format_parse(const char *name, srv_format *out, const char **why) {
    for (size_t i = 0; i < N_FORMATS; i++) {
        if (strcasecmp(name, k_formats[i].name)) continue;
        if (!k_formats[i].supported) {
            *why = SRV_HAVE_ENCODER ? "is not supported by this server (supported: mp3, opus, aac, flac, wav, pcm)"
                                    : "is not supported by this server (supported: wav, pcm)";
            return -1;
        }
        *out = k_formats[i].fmt;
        return 0;
    }
    *why = SRV_HAVE_ENCODER ? "is not a supported format (supported: mp3, opus, aac, flac, wav, pcm)"
                            : "is not a supported format (supported: wav, pcm)";
    return -1;
}

const char *srv_format_mime(srv_format f) {
    for (size_t i = 0; i < N_FORMATS; i++)
        if (k_formats[i].fmt == f) return k_formats[i].mime;
    return "application/octet-stream";
}

const char *srv_format_name(srv_format f) {
    for (size_t i = 0; i < N_FORMATS; i++)
        if (k_formats[i].fmt == f) return k_formats[i].name;
    return "?";
}

static void put_le32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static void put_le16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static int emit(srv_audio_out *o, const void *data, size_t n) {
    if (o->failed) return -1;
    if (n && o->sink(o->user, data, n)) o->failed = 1;
    return o->failed ? -1 : 0;
}

#if SRV_HAVE_ENCODER
static int enc_write(void *user, const void *bytes, size_t n) {
    srv_audio_out *o = user;
    if (!o->seek_buf) return o->sink(o->user, bytes, n);
    /* Seekable: overwrite in place, append past the end. */
    srv_buf *b = o->seek_buf;
    size_t over = o->seek_pos < b->len ? b->len - o->seek_pos : 0;
    if (over > n) over = n;
    if (over) memcpy(b->data + o->seek_pos, bytes, over);
    if (n > over && srv_buf_append(b, (const char *)bytes + over, n - over)) return -1;
    o->seek_pos += n;
    return 0;
}

static int enc_seek(void *user, uint64_t offset) {
    srv_audio_out *o = user;
    if (!o->seek_buf || offset > o->seek_buf->len) return -1;
    o->seek_pos = (size_t)offset;
    return 0;
}
#endif

srv_audio_out *srv_audio_out_new(srv_format f, int sample_rate, size_t total_samples, srv_sink_fn sink,
                                 void *user, srv_buf *seekable, char *err, size_t err_size) {
    int by_hand = f == SRV_FMT_WAV || f == SRV_FMT_PCM;
    if (!by_hand && !SRV_HAVE_ENCODER) {
        snprintf(err, err_size, "response format '%s' is not supported", srv_format_name(f));
        return NULL;
    }
    srv_audio_out *o = calloc(1, sizeof *o);
    if (!o) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    o->fmt = f;
    o->sample_rate = sample_rate;
    o->sink = sink;
    o->user = user;
#if SRV_HAVE_ENCODER
    if (!by_hand) {
        qtts_audio_format af = f == SRV_FMT_FLAC ? QTTS_AUDIO_FLAC
                               : f == SRV_FMT_MP3 ? QTTS_AUDIO_MP3
                               : f == SRV_FMT_AAC ? QTTS_AUDIO_AAC /* ADTS: streams, never seeks */
                                                  : QTTS_AUDIO_OPUS;
        if (seekable && seekable->off == 0 && seekable->len == 0) o->seek_buf = seekable;
        qtts_audio_sink s = {enc_write, o->seek_buf ? enc_seek : NULL, o};
        qtts_err e;
        o->enc = qtts_encoder_open(af, QTTS_SAMPLE_S16, sample_rate, 1, &s, &e);
        if (!o->enc) {
            snprintf(err, err_size, "%s", e.msg);
            free(o);
            return NULL;
        }
        return o;
    }
#else
    (void)seekable;
#endif
    if (f == SRV_FMT_WAV) {
        /* RIFF PCM s16 mono. Unknown length (streaming): sizes 0xFFFFFFFF. */
        unsigned char h[44];
        uint64_t data_bytes = (uint64_t)total_samples * 2;
        int known = total_samples > 0 && data_bytes + 36 <= 0xFFFFFFFFu;
        memcpy(h, "RIFF", 4);
        put_le32(h + 4, known ? (uint32_t)(36 + data_bytes) : 0xFFFFFFFFu);
        memcpy(h + 8, "WAVEfmt ", 8);
        put_le32(h + 16, 16);
        put_le16(h + 20, 1);
        put_le16(h + 22, 1);
        put_le32(h + 24, (uint32_t)sample_rate);
        put_le32(h + 28, (uint32_t)sample_rate * 2);
        put_le16(h + 32, 2);
        put_le16(h + 34, 16);
        memcpy(h + 36, "data", 4);
        put_le32(h + 40, known ? (uint32_t)data_bytes : 0xFFFFFFFFu);
        if (emit(o, h, sizeof h)) {
            snprintf(err, err_size, "out of memory");
            free(o);
            return NULL;
        }
    }
    return o;
}

int srv_audio_out_write(srv_audio_out *o, const float *x, size_t n) {
#if SRV_HAVE_ENCODER
    if (o->enc) {
        qtts_err e;
        if (o->failed || qtts_encoder_write(o->enc, x, n, &e)) o->failed = 1;
        return o->failed ? -1 : 0;
    }
#endif
    unsigned char tmp[4096];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        put_le16(tmp + k, (uint16_t)qtts_f32_to_s16(x[i]));
        k += 2;
        if (k == sizeof tmp) {
            if (emit(o, tmp, k)) return -1;
            k = 0;
        }
    }
    return emit(o, tmp, k);
}

int srv_audio_out_finish(srv_audio_out *o) {
#if SRV_HAVE_ENCODER
    if (o->enc) {
        qtts_err e;
        if (qtts_encoder_close(o->enc, &e)) o->failed = 1;
        o->enc = NULL;
    }
#endif
    return o->failed ? -1 : 0;
}

void srv_audio_out_free(srv_audio_out *o) {
    if (!o) return;
#if SRV_HAVE_ENCODER
    if (o->enc) qtts_encoder_abort(o->enc);
#endif
    free(o);
}
