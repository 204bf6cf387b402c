/* POST /v1/audio/speech with "script": true: 'input' is a dialogue
 * (text/dialogue.h: "[Name] text" or "Name: text" turns, "(style)" after a
 * tag), spoken as one recording, each turn with its name's voice.
 *
 *   "cast":     {"Name": "VOICE", ...}  a name's voice: a built-in speaker
 *               (CustomVoice), a registered voice (Base) or the voice's
 *               description (VoiceDesign); names not in it are taken as the
 *               voice's own name (aliases included)
 *   "pause_ms": silence between turns, 0-60000 (default 400)
 *
 * Every other field (format, streaming, speed, language, sampling, seed)
 * applies to each turn, validated by speech_request.c exactly as for a
 * single-voice request: each turn is parsed as that request with its own
 * 'input', 'voice' and 'instructions'. A seed S gives turn i the seed S + i.
 * 'voice' is ignored (OpenAI clients always send one); 'instructions' and
 * 'ref_audio' are refused: the voices come from the tags. Errors name the
 * script line. */
#ifndef QTTS_SERVER_SPEECH_SCRIPT_H
#define QTTS_SERVER_SPEECH_SCRIPT_H

#include <cjson/cJSON.h>

#include "server/session.h"
#include "server/speech_request.h"

#define SRV_SCRIPT_DEFAULT_PAUSE_MS 400

typedef struct srv_speech_script srv_speech_script;

/* 1 when root asks for a script ("script": true), 0 when not, -1 with b
 * filled when 'script' is not a boolean. */
int srv_speech_script_wanted(const cJSON *root, srv_bad_req *b);

/* Parses a script request. Returns 0 with *out (the turns, owning their
 * strings and voices) and *common (the fields every turn shares: format,
 * mode, speed; it holds no voice), or -1 with b filled. */
int srv_speech_script_parse(const srv_speech_ctx *ctx, const cJSON *root, srv_speech_script **out,
                            srv_speech_request *common, srv_bad_req *b);

size_t srv_speech_script_turns(const srv_speech_script *sc);
const qtts_request *srv_speech_script_request(const srv_speech_script *sc, size_t i);
int srv_speech_script_pause_ms(const srv_speech_script *sc);

/* Starts the session of all turns; it takes sc (freed with it, or here on
 * failure). */
srv_session *srv_speech_script_start(qtts_engine *e, srv_speech_script *sc, const srv_session_opts *o,
                                     qtts_error *err);

void srv_speech_script_free(srv_speech_script *sc);

#endif
