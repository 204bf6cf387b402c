/* Optional observer of intermediate stages (speaker encoder, codec encoder):
 * called on the engine thread with a named [d0][d1] float array that is only
 * valid during the call. Tests compare these with the golden fixtures. */
#ifndef QTTS_MODEL_VOICE_TAP_H
#define QTTS_MODEL_VOICE_TAP_H

#include <stdint.h>

typedef void (*qtts_stage_tap)(void *ctx, const char *name, const float *data, int64_t d0, int64_t d1);

#endif
