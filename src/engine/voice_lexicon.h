/* A registered voice's own pronunciation lexicon, carried by its qtts_voice
 * so that every request with the voice (CLI, HTTP, WebSocket, Wyoming) gets
 * it: at submit the engine applies the voice's entries over the request's
 * lexicon (qtts_lexicon_merge: the voice's entry for a written form wins). */
#ifndef QTTS_ENGINE_VOICE_LEXICON_H
#define QTTS_ENGINE_VOICE_LEXICON_H

#include "qtts.h"

/* Attaches lx (the voice holds a reference; NULL: none). Only before the
 * voice is shared: the field is read without a lock. */
void qtts_voice_set_lexicon(qtts_voice *v, const qtts_lexicon *lx);
const qtts_lexicon *qtts_voice_lexicon(const qtts_voice *v); /* NULL: none */

#endif
