/* Encodes float PCM into the response formats, pushing bytes into a sink as
 * they are produced (so streaming responses can send them at once). */
#ifndef QTTS_SERVER_AUDIO_OUT_H
#define QTTS_SERVER_AUDIO_OUT_H

#include <stddef.h>

#include "server/buf.h"

typedef enum { SRV_FMT_WAV, SRV_FMT_PCM, SRV_FMT_FLAC, SRV_FMT_MP3, SRV_FMT_OPUS, SRV_FMT_AAC } srv_format;

/* Bytes out; returns 0, or non-zero to fail the encoder (out of memory). */
typedef int (*srv_sink_fn)(void *user, const void *data, size_t n);
typedef struct srv_audio_out srv_audio_out;

/* Parses a response_format name. Returns 0, or -1 with why set ("not a
 * format" / "not supported by this build"). */
int srv_format_parse(const char *name, srv_format *out, const char **why);
const char *srv_format_mime(srv_format f);
const char *srv_format_name(srv_format f);

/* total_samples: the exact sample count when known up front (a buffered
 * response: the WAV header then carries real sizes), 0 when streaming (the
 * WAV header then says "unknown length", as streaming WAV readers expect).
 * seekable: for a buffered response, the empty buffer the sink appends to;
 * formats whose header is final only at the end (FLAC totals, the MP3
 * Xing tag) then patch it in place. NULL when streaming. */
srv_audio_out *srv_audio_out_new(srv_format f, int sample_rate, size_t total_samples, srv_sink_fn sink,
                                 void *user, srv_buf *seekable, char *err, size_t err_size);
int srv_audio_out_write(srv_audio_out *o, const float *x, size_t n);
/* Flushes whatever the format keeps back. */
int srv_audio_out_finish(srv_audio_out *o);
void srv_audio_out_free(srv_audio_out *o);

#endif
