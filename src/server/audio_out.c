#include "server/audio_out.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct srv_audio_out {
    srv_format fmt;
    int sample_rate;
    srv_sink_fn sink;
    void *user;
    int failed;
};

static const struct {
    const char *name;
    srv_format fmt;
    const char *mime;
    int supported;
} k_formats[] = {
    {"wav", SRV_FMT_WAV, "audio/wav", 1},   {"pcm", SRV_FMT_PCM, "audio/pcm", 1},
    {"flac", SRV_FMT_FLAC, "audio/flac", 0}, {"mp3", SRV_FMT_MP3, "audio/mpeg", 0},
    {"opus", SRV_FMT_OPUS, "audio/ogg", 0},  {"aac", SRV_FMT_AAC, "audio/aac", 0},
};
#define N_FORMATS (sizeof k_formats / sizeof k_formats[0])

int srv_format_parse(const char *name, srv_format *out, const char **why) {
    for (size_t i = 0; i < N_FORMATS; i++) {
        if (strcasecmp(name, k_formats[i].name)) continue;
        if (!k_formats[i].supported) {
            *why = "is not supported by this server (supported: wav, pcm)";
            return -1;
        }
        *out = k_formats[i].fmt;
        return 0;
    }
    *why = "is not a known format (mp3, opus, aac, flac, wav, pcm)";
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

srv_audio_out *srv_audio_out_new(srv_format f, int sample_rate, size_t total_samples, srv_sink_fn sink,
                                 void *user, char *err, size_t err_size) {
    if (f != SRV_FMT_WAV && f != SRV_FMT_PCM) {
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
    unsigned char tmp[4096];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        if (!(v == v)) v = 0; /* NaN */
        if (v > 1.f) v = 1.f;
        if (v < -1.f) v = -1.f;
        long s = lrintf(v * 32767.f);
        put_le16(tmp + k, (uint16_t)(int16_t)s);
        k += 2;
        if (k == sizeof tmp) {
            if (emit(o, tmp, k)) return -1;
            k = 0;
        }
    }
    return emit(o, tmp, k);
}

int srv_audio_out_finish(srv_audio_out *o) { return o->failed ? -1 : 0; }

void srv_audio_out_free(srv_audio_out *o) { free(o); }
