/* Tempo change without pitch change (the `speed` parameter), streaming,
 * through Rubber Band's real-time stretcher. Runs on the request's thread: it
 * is post-processing of decoded audio, not model compute. */
#ifndef QTTS_SERVER_STRETCH_H
#define QTTS_SERVER_STRETCH_H

#include <stddef.h>

typedef struct srv_stretch srv_stretch;

/* speed > 1 is faster (shorter audio). NULL when out of memory. */
srv_stretch *srv_stretch_new(int sample_rate, double speed);
/* Feeds n samples (final=1 on the last call, n may be 0) and returns the
 * stretched samples now available in *out (valid until the next call), or
 * -1 when out of memory. */
long srv_stretch_process(srv_stretch *s, const float *in, size_t n, int final, const float **out);
void srv_stretch_free(srv_stretch *s);

#endif
