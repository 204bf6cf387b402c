/* The loader's kernel decisions: which Q8_0/Q4_K layout and kernel flags
 * the LM matrices get, and the measurement the decoder precision "auto"
 * follows. Measured on the engine's own pool (as its kernels will run), or
 * read from the per-CPU calibration cache (engine/calibration_cache.h);
 * the A/B overrides QTTS_INTERLEAVE, QTTS_PREFETCH and QTTS_LOCKSTEP are
 * read here, once per load, and nowhere else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "engine/engine_internal.h"

/* 0 or 1 where the variable forces a choice, else -1 (measure). */
static int forced(const char *var) {
    const char *env = getenv(var);
    if (env && !strcmp(env, "0")) return 0;
    if (env && !strcmp(env, "1")) return 1;
    return -1;
}

void engine_tuning_begin(qtts_engine *e, qtts_pool *pool, int verbose) {
    engine_tuning *t = &e->tuning;
    memset(t, 0, sizeof *t);
    t->verbose = verbose;
    qtts_calibration_key_here(&t->key, qtts_pool_size(pool));
    qtts_err err = {0};
    if (qtts_calibration_cache_path(t->path, sizeof t->path, t->key.threads, &err)) {
        t->path[0] = 0; /* no cache dir: measured every time */
        return;
    }
    char why[600];
    if (qtts_calibration_cache_read(t->path, &t->key, &t->cal, why, sizeof why) < 0)
        fprintf(stderr, "qtts: warning: ignoring the calibration cache (%s); measuring again\n", why);
}

void engine_tuning_end(qtts_engine *e) {
    engine_tuning *t = &e->tuning;
    if (!t->dirty || !t->path[0]) return;
    qtts_err err = {0};
    /* a read-only cache dir only costs the next start its measurement */
    if (qtts_calibration_cache_write(t->path, &t->key, &t->cal, &err) && t->verbose)
        fprintf(stderr, "qtts: calibration cache not written: %s\n", err.msg);
}

const qtts_weight_layout *engine_tuning_layout(qtts_engine *e, qtts_pool *pool, qtts_dtype type) {
    engine_tuning *t = &e->tuning;
    if (type != QTTS_Q8_0 && type != QTTS_Q4_K) return &t->layout;
    const int fi = forced("QTTS_INTERLEAVE"), fp = forced("QTTS_PREFETCH"), fl = forced("QTTS_LOCKSTEP");
    qtts_interleave_choice c = {0, 0, 0};
    if (qtts_interleave_kernels() && (fi < 0 || fp < 0 || fl < 0)) {
        int *have = type == QTTS_Q8_0 ? &t->cal.have_q8_0 : &t->cal.have_q4_k;
        qtts_interleave_calibration *cal = type == QTTS_Q8_0 ? &t->cal.q8_0 : &t->cal.q4_k;
        if (!*have) {
            const double t0 = qtts_now_ms();
            qtts_interleave_measure(pool, type, cal);
            t->measure_ms += qtts_now_ms() - t0;
            t->n_measured++;
            *have = t->dirty = 1;
        }
        c = qtts_interleave_calibration_choice(cal);
    }
    if (fi >= 0) c.interleave = fi;
    if (fp >= 0) c.prefetch = fp;
    if (fl >= 0) c.lockstep = fl;
    *(type == QTTS_Q8_0 ? &t->layout.q8_0 : &t->layout.q4_k) = c;
    return &t->layout;
}

const qtts_conv_calibration *engine_tuning_conv(qtts_engine *e) {
    engine_tuning *t = &e->tuning;
    if (!t->cal.have_conv) {
        const double t0 = qtts_now_ms();
        qtts_conv_measure(&t->cal.conv); /* one thread: the engine thread, inside the load job */
        t->measure_ms += qtts_now_ms() - t0;
        t->n_measured++;
        t->cal.have_conv = t->dirty = 1;
    }
    return &t->cal.conv;
}
