/* GET /v1/audio/speech/stream upgraded to a WebSocket: speech from text that
 * arrives in pieces, one incremental engine request per utterance
 * (request.text_incomplete).
 *
 * Client -> server, JSON text messages:
 *   {"type":"session.config", ...}   the fields of POST /v1/audio/speech
 *                                    except input (voice, response_format
 *                                    (default pcm), language, instructions,
 *                                    speed, seed, temperature, ...); may be
 *                                    sent again between utterances
 *   {"type":"input.text","text":"..."}  a piece of the utterance's text; the
 *                                    first piece starts the utterance
 *   {"type":"input.done"}            the utterance's text is complete
 *   {"type":"session.close"}         finish the current utterance, then close
 * Server -> client:
 *   {"type":"audio.start","format":"pcm","sample_rate":24000}
 *   binary messages: the utterance's audio in response_format, as decoded
 *   {"type":"audio.done","finished_by":"eos","usage":{...},"audio_seconds":..}
 *   {"type":"session.done"}          before the server closes
 *   {"type":"error","error":{"message","type","code"}}  a bad message or a
 *                                    failed utterance; the session stays open
 *
 * Threads: a fixed pool of session threads made when the server starts (the
 * process's thread count never changes); each runs one session at a time and
 * only parses, calls the engine API and moves bytes, never model compute; it
 * sleeps in poll() on the socket, the engine's notifier and the pool's stop
 * descriptor. A disconnect cancels the utterance at the next frame. */
#ifndef QTTS_SERVER_WS_SPEECH_H
#define QTTS_SERVER_WS_SPEECH_H

#include <stddef.h>

#include "server/server.h"

typedef struct srv_ws_pool srv_ws_pool;

/* n_threads sessions at once. */
srv_ws_pool *srv_ws_pool_new(qtts_server *s, int n_threads);
/* Cancels the sessions, closes their sockets and joins the threads; the
 * pool stays valid (an upgrade that completes later is closed at once), so
 * the HTTP daemon can be stopped after it. Idempotent. */
void srv_ws_pool_stop(srv_ws_pool *p);
/* Wakes every session to look at the server's flags (it started aborting). */
void srv_ws_pool_kick(srv_ws_pool *p);
/* srv_ws_pool_stop, then frees the pool (after the HTTP daemon stopped). */
void srv_ws_pool_free(srv_ws_pool *p);
/* Reserves a session thread for a connection about to be upgraded; 0 when
 * all are busy (the caller answers 503). */
int srv_ws_pool_reserve(srv_ws_pool *p);
/* Undoes a reservation whose upgrade did not happen. */
void srv_ws_pool_unreserve(srv_ws_pool *p);
/* Hands an upgraded socket (and the bytes read past the HTTP request) to a
 * reserved session thread; urh is libmicrohttpd's upgrade handle, closed
 * through done(urh) when the session ends. */
void srv_ws_pool_run(srv_ws_pool *p, int sock, const void *extra, size_t extra_len, void *urh,
                     void (*done)(void *urh));

#endif
