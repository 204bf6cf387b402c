/* qtts Wyoming server: the Wyoming protocol (rhasspy/wyoming, what Home
 * Assistant's "Wyoming Protocol" integration speaks) over TCP, in front of
 * one engine. docs/wyoming.md describes the events, voices and extensions.
 *
 * Threads: one accept thread and max_connections connection threads, all
 * started with the server (the thread count does not change with
 * connections); each connection thread serves the connections of its slot,
 * one at a time. A connection thread parses events, validates and
 * enqueues requests through the server session (server/session.h: 16-bit
 * PCM, the conversion every output uses) and writes bytes, sleeping in
 * poll() on the socket and the engine's notifier; every model computation
 * is an engine job. The engine
 * may be shared with the HTTP server (qtts_server) in the same process. */
#ifndef QTTS_SERVER_WYOMING_H
#define QTTS_SERVER_WYOMING_H

#include <stddef.h>
#include <stdint.h>

#include "qtts.h"

typedef struct {
    const char *host;         /* bind address; default 127.0.0.1 (Wyoming has no authentication) */
    int port;                 /* default 10200; 0: an ephemeral port (see qtts_wyoming_port) */
    const char *voices_dir;   /* Base models: the registered voices (voices/voice_store.h); NULL: none */
    const char *voice;        /* the voice of requests that name none; NULL: the first one listed */
    const char *instruct;     /* VoiceDesign: the designed voice's description (required); CustomVoice:
                               * a style instruction for every request; NULL: none */
    const char *language;     /* the language of requests that name none (Home Assistant sends none): a
                               * code or name as requests give it; NULL: auto */
    int max_connections;      /* concurrent connections (default 16); more get an error event */
    int idle_timeout_s;       /* close a connection that sends nothing this long (default 60; it also bounds
                               * the wait for the next synthesize-chunk) */
    int request_timeout_s;    /* one synthesis at most (default 600) */
    int max_input_chars;      /* text of one synthesis, in characters (default 4096) */
    int chunk_ms;             /* audio-chunk events carry at most this much audio (default 200) */
    float guard_frames_per_token; /* runaway guard (qtts_request's fields): 0 auto, < 0 off */
    int no_repetition_guard;
    int max_request_frames;   /* the most codec frames one synthesis may ask for (qtts.max_frames) or get
                               * (default 4096, server/frame_limit.h); <= 0 = none */
    const qtts_lexicon *lexicon; /* pronunciation lexicon for every synthesis (must outlive the server); NULL: none */
    int zeroconf;             /* announce _wyoming._tcp through the Avahi daemon */
    const char *zeroconf_name; /* the announced service name; NULL: "qtts" */
    int verbose;              /* log connections, requests and ignored events on stderr */
} qtts_wyoming_params;

typedef struct qtts_wyoming qtts_wyoming;

void qtts_wyoming_params_default(qtts_wyoming_params *p);
/* Starts listening (and announcing, with zeroconf); the engine must outlive
 * the server. NULL with one line in err on failure (address in use, a
 * VoiceDesign model without instruct, an unreadable voices_dir). */
qtts_wyoming *qtts_wyoming_start(qtts_engine *e, const qtts_wyoming_params *p, char *err, size_t err_size);
int qtts_wyoming_port(const qtts_wyoming *w);
/* How often the connection threads woke up. Each wake-up follows an event
 * (client bytes, engine audio, a stop, a deadline), never a timer: a test
 * counts them across an idle synthesis. */
uint64_t qtts_wyoming_stream_wakeups(qtts_wyoming *w);
/* Stops accepting, lets running syntheses finish for up to deadline_ms
 * (idle connections close at once), cuts the rest, joins every thread and
 * frees the server (not the engine). Returns the number of connections cut. */
int qtts_wyoming_stop(qtts_wyoming *w, int deadline_ms);

/* ---- zeroconf (wyoming_zeroconf.c; used by wyoming.c) ---- */
typedef struct wy_zeroconf wy_zeroconf;
/* Publishes service name (a collision picks "name #2"...) of type
 * _wyoming._tcp on port, on every interface. NULL with why filled when the
 * Avahi daemon cannot be reached: the caller warns and goes on. */
wy_zeroconf *wy_zeroconf_start(const char *name, int port, int verbose, char *why, size_t why_size);
void wy_zeroconf_stop(wy_zeroconf *z);

#endif
