/* The ranges of the request settings, one table for every front end: qtts
 * say's options, the HTTP and WebSocket fields and Wyoming's qtts extension
 * accept the same values. */
#ifndef QTTS_CORE_SAMPLING_RANGES_H
#define QTTS_CORE_SAMPLING_RANGES_H

#define QTTS_TEMPERATURE_MAX 10.0 /* 0 = greedy */
#define QTTS_TOP_K_MAX 100000     /* 0 = the model's */
#define QTTS_TOP_P_MIN 1e-6       /* top_p is in (0, 1]; below this it is greedy in all but name */
#define QTTS_REPETITION_PENALTY_MIN 0.01
#define QTTS_REPETITION_PENALTY_MAX 10.0
#define QTTS_MAX_FRAMES_MAX (1 << 20)
/* Drawn seeds stay below 2^53 so that every JSON client (JavaScript's
 * numbers included) reads and sends them back exactly; larger seeds are
 * accepted as decimal strings. */
#define QTTS_SEED_EXACT_MAX 9007199254740991ull

#endif
