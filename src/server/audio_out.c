#include "server/audio_out.h"

#include <stddef.h>
#include <strings.h>

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
    qtts_audio_format codec;
} k_formats[] = {
    {"wav", SRV_FMT_WAV, "audio/wav", QTTS_AUDIO_WAV},     {"pcm", SRV_FMT_PCM, "audio/pcm", QTTS_AUDIO_PCM},
    {"flac", SRV_FMT_FLAC, "audio/flac", QTTS_AUDIO_FLAC}, {"mp3", SRV_FMT_MP3, "audio/mpeg", QTTS_AUDIO_MP3},
    {"opus", SRV_FMT_OPUS, "audio/ogg", QTTS_AUDIO_OPUS},  {"aac", SRV_FMT_AAC, "audio/aac", QTTS_AUDIO_AAC /* ADTS */},
};
#define N_FORMATS (sizeof k_formats / sizeof k_formats[0])

int srv_format_parse(const char *name, srv_format *out, const char **why) {
    for (size_t i = 0; i < N_FORMATS; i++) {
        if (strcasecmp(name, k_formats[i].name)) continue;
        *out = k_formats[i].fmt;
        return 0;
    }
    *why = "is not a supported format (supported: mp3, opus, aac, flac, wav, pcm)";
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

qtts_audio_format srv_format_codec(srv_format f) {
    for (size_t i = 0; i < N_FORMATS; i++)
        if (k_formats[i].fmt == f) return k_formats[i].codec;
    return QTTS_AUDIO_PCM;
}
