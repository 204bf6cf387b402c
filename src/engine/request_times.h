/* Where one request's compute went, stage by stage, with the engine
 * thread's CPU time beside the wall time (CPU time is what the stage takes
 * on a machine nobody else uses). A batched step's time is shared equally
 * among the requests in it, so over a batch the shares add up to the steps'
 * times. Kept with the stream at its end; `qtts bench` reads it. */
#ifndef QTTS_ENGINE_REQUEST_TIMES_H
#define QTTS_ENGINE_REQUEST_TIMES_H

#include <stdint.h>

typedef struct {
    double wall_ms, cpu_ms;
    int64_t calls; /* steps the request took part in (decoder: frames decoded) */
} engine_stage;

typedef struct {
    engine_stage prompt;               /* prompt build (once) */
    engine_stage prefill;              /* its share of the prefill step */
    engine_stage talker, cp;           /* its share of each later LM step */
    engine_stage first_decode;         /* the decoder step that gave its first audio */
    engine_stage decoder;              /* the later decoder steps */
    int64_t prompt_rows;               /* talker prefill rows */
    int64_t decoder_steps;             /* decoder steps it took part in (the first included) */
    int64_t overlapped_decoder_steps;  /* of those, the ones run beside LM steps */
    double first_audio_cpu_ms, cpu_ms; /* engine-thread CPU from its start to its first audio, to its end */
} engine_request_times;

static inline void engine_stage_add(engine_stage *s, double wall_ms, double cpu_ms, int64_t calls) {
    s->wall_ms += wall_ms;
    s->cpu_ms += cpu_ms;
    s->calls += calls;
}

#endif
