/* The one monotonic clock of the code base (CLOCK_MONOTONIC: never jumps
 * with the wall clock, so deadlines and timings survive NTP steps). */
#ifndef QTTS_CORE_CLOCK_H
#define QTTS_CORE_CLOCK_H

/* Seconds / milliseconds since an arbitrary fixed point. */
double qtts_now_s(void);
double qtts_now_ms(void);
/* CPU time of the calling thread, in milliseconds (what a step costs on an undisturbed machine). */
double qtts_thread_cpu_ms(void);

#endif
