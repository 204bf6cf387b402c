/* The engine thread: owns the worker pool and runs every model computation as
 * a job from its queue. Any thread may submit; only the engine thread (and its
 * pool workers) ever compute. */
#ifndef QTTS_ENGINE_EXECUTOR_H
#define QTTS_ENGINE_EXECUTOR_H

#include "core/err.h"
#include "core/threadpool.h"

typedef struct qtts_exec qtts_exec;
typedef void (*qtts_job_fn)(qtts_pool *pool, void *ctx);

/* Starts the engine thread, which creates a pool of n_threads threads
 * (itself + n_threads-1 workers). */
qtts_exec *qtts_exec_create(int n_threads, qtts_err *err);
/* Drains the queue, stops the engine thread and the pool. */
void qtts_exec_free(qtts_exec *exec);

/* Queues fn(pool, ctx) and blocks until it has run. Called from the engine
 * thread itself (a job submitting a sub-job), it runs inline. */
void qtts_exec_call(qtts_exec *exec, qtts_job_fn fn, void *ctx);

/* The engine's frame loop. When no job is queued, the engine thread calls
 * idle(pool, ctx) repeatedly while it returns non-zero (one frame step per
 * call, so queued jobs interleave between frames), then sleeps until a job
 * arrives or qtts_exec_wake is called. Set once, before work is submitted. */
typedef int (*qtts_idle_fn)(qtts_pool *pool, void *ctx);
void qtts_exec_set_idle(qtts_exec *exec, qtts_idle_fn idle, void *ctx);
/* Tells the engine thread that idle() has new work. Any thread may call it. */
void qtts_exec_wake(qtts_exec *exec);

int qtts_exec_on_engine_thread(const qtts_exec *exec);
/* Kernel thread ids of the engine thread and its workers (engine first); for
 * tests and metrics. Reading them computes nothing. */
int qtts_exec_thread_ids(const qtts_exec *exec, pid_t *out, int max);

#endif
