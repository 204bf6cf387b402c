/* The response formats of the speech routes: their request names,
 * Content-Types and the encoder (audio/encoder.h) each one uses. The bytes
 * themselves come from the server session (server/session.h). */
#ifndef QTTS_SERVER_AUDIO_OUT_H
#define QTTS_SERVER_AUDIO_OUT_H

#include "audio/encoder.h"

typedef enum { SRV_FMT_WAV, SRV_FMT_PCM, SRV_FMT_FLAC, SRV_FMT_MP3, SRV_FMT_OPUS, SRV_FMT_AAC } srv_format;

/* Parses a response_format name. Returns 0, or -1 with why set ("is not a
 * supported format (...)"). */
int srv_format_parse(const char *name, srv_format *out, const char **why);
const char *srv_format_mime(srv_format f);
const char *srv_format_name(srv_format f);
/* The encoder's format: wav and pcm are 16-bit little-endian mono. */
qtts_audio_format srv_format_codec(srv_format f);

#endif
