/* The talker cases of the golden fixtures (../shared/golden/manifest.json),
 * runnable end to end through the public API (include/qtts.h). */
#ifndef QTTS_TEST_GOLDEN_CASES_H
#define QTTS_TEST_GOLDEN_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "qtts.h"
#include "support/test_util.h"

typedef struct {
    const char *model, *fixture; /* model folder name; fixture path below fixtures/ without .npy */
    const char *text, *speaker, *language, *instruct;
    int non_streaming, max_new_tokens;
    const char *ref_wav, *ref_text; /* Base: fixture of the reference audio, transcript (NULL: x-vector only) */
} golden_case;

extern const golden_case golden_cases[];
extern const size_t golden_case_count;

/* Synthesizes case c greedily on e (a model of folder c->model, wherever it
 * lives) into out. Returns 0, or -1 with err. */
int golden_case_run(qtts_engine *e, const golden_case *c, pcm_buf *out, char *err, size_t err_size);
/* The same with the model's sampling settings and seed (> 0). */
int golden_case_run_sampled(qtts_engine *e, const golden_case *c, uint64_t seed, pcm_buf *out, char *err,
                            size_t err_size);

/* An engine for the model folder at path (2 threads), or NULL with err. */
qtts_engine *golden_engine(const char *path, char *err, size_t err_size);

#endif
