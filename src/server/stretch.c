#include "server/stretch.h"

#include <math.h>
#include <rubberband/rubberband-c.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 2048

struct srv_stretch {
    RubberBandState rb;
    double speed;
    size_t to_drop;    /* start delay still to discard from the output */
    size_t n_in;       /* input samples fed (not counting the start pad) */
    size_t n_out;      /* output samples handed out */
    float *out;
    size_t out_cap;
    int done;
};

srv_stretch *srv_stretch_new(int sample_rate, double speed) {
    srv_stretch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->speed = speed;
    /* ThreadingNever: no helper threads (the server's thread count is fixed).
     * EngineFiner (R3) gives the cleaner result on speech. */
    RubberBandOptions opt = RubberBandOptionProcessRealTime | RubberBandOptionThreadingNever |
                            RubberBandOptionEngineFiner | RubberBandOptionFormantPreserved;
    s->rb = rubberband_new((unsigned)sample_rate, 1, opt, 1.0 / speed, 1.0);
    if (!s->rb) {
        free(s);
        return NULL;
    }
    rubberband_set_max_process_size(s->rb, CHUNK);
    unsigned pad = rubberband_get_preferred_start_pad(s->rb);
    s->to_drop = rubberband_get_start_delay(s->rb);
    float zeros[CHUNK];
    memset(zeros, 0, sizeof zeros);
    while (pad) {
        unsigned k = pad < CHUNK ? pad : CHUNK;
        const float *ch[1] = {zeros};
        rubberband_process(s->rb, ch, k, 0);
        pad -= k;
    }
    return s;
}

static int reserve(srv_stretch *s, size_t n) {
    if (n <= s->out_cap) return 0;
    size_t cap = s->out_cap ? s->out_cap : 8192;
    while (cap < n) cap *= 2;
    float *p = realloc(s->out, cap * sizeof *p);
    if (!p) return -1;
    s->out = p;
    s->out_cap = cap;
    return 0;
}

/* Appends everything the stretcher has ready to out[*len...]. */
static int drain(srv_stretch *s, size_t *len) {
    for (;;) {
        int avail = rubberband_available(s->rb);
        if (avail <= 0) return 0;
        if (reserve(s, *len + (size_t)avail)) return -1;
        float *ch[1] = {s->out + *len};
        unsigned got = rubberband_retrieve(s->rb, ch, (unsigned)avail);
        size_t keep = got;
        if (s->to_drop) { /* the start delay is output that precedes the input */
            size_t d = s->to_drop < keep ? s->to_drop : keep;
            memmove(s->out + *len, s->out + *len + d, (keep - d) * sizeof(float));
            keep -= d;
            s->to_drop -= d;
        }
        *len += keep;
        if (got == 0) return 0;
    }
}

long srv_stretch_process(srv_stretch *s, const float *in, size_t n, int final, const float **out) {
    size_t len = 0;
    *out = s->out;
    if (s->done) return 0;
    for (size_t i = 0; i < n || (final && i == n);) {
        size_t k = n - i < CHUNK ? n - i : CHUNK;
        int last = final && i + k == n;
        const float *ch[1] = {in ? in + i : NULL};
        float zero = 0;
        if (!k) ch[0] = &zero;
        rubberband_process(s->rb, ch, (unsigned)k, last);
        if (drain(s, &len)) return -1;
        i += k;
        if (last) break;
    }
    s->n_in += n;
    if (final) {
        /* Flush: in real-time mode the tail comes out after the final block;
         * available() turns -1 once everything has been retrieved. */
        for (int spins = 0; spins < 64 && rubberband_available(s->rb) > 0; spins++)
            if (drain(s, &len)) return -1;
        /* The output is exactly n_in / speed long: trim the tail or pad it. */
        size_t want = (size_t)llround((double)s->n_in / s->speed);
        size_t have = s->n_out + len;
        if (have > want) len -= have - want < len ? have - want : len;
        else if (have < want) {
            if (reserve(s, len + (want - have))) return -1;
            memset(s->out + len, 0, (want - have) * sizeof(float));
            len += want - have;
        }
        s->done = 1;
    }
    s->n_out += len;
    *out = s->out;
    return (long)len;
}

void srv_stretch_free(srv_stretch *s) {
    if (!s) return;
    rubberband_delete(s->rb);
    free(s->out);
    free(s);
}
