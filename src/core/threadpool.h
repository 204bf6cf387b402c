/* Persistent worker pool. Created once by the thread that will own it (the
 * engine thread); n_threads-1 workers are started then and never more. Only
 * the owner may submit work: a call from any other thread aborts, which is how
 * the "request threads never compute" invariant is enforced. No OpenMP. */
#ifndef QTTS_CORE_THREADPOOL_H
#define QTTS_CORE_THREADPOOL_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/err.h"

typedef struct qtts_pool qtts_pool;

/* SPMD body: runs once on each of the pool's threads (tid 0 is the owner). */
typedef void (*qtts_spmd_fn)(void *ctx, int tid, int n_threads);
/* Range body: processes [begin, end) of a parallel-for. */
typedef void (*qtts_range_fn)(void *ctx, int64_t begin, int64_t end, int tid);

qtts_pool *qtts_pool_create(int n_threads, qtts_err *err);
void qtts_pool_free(qtts_pool *pool);
int qtts_pool_size(const qtts_pool *pool);

/* Runs fn on every pool thread and returns when all are done. */
void qtts_pool_run(qtts_pool *pool, qtts_spmd_fn fn, void *ctx);

/* Splits [0, n) into contiguous ranges (multiples of grain, except the last),
 * a few per thread, handed out to whichever pool thread is free; runs fn on
 * each and returns when all are done. fn may thus run several times on one
 * thread (tid is stable within a thread, for per-thread scratch). Runs inline
 * when n <= grain or the pool has one thread. pool may be NULL only where
 * there is no pool at all (unit tests, single-threaded tools). */
void qtts_parallel_for(qtts_pool *pool, int64_t n, int64_t grain, qtts_range_fn fn, void *ctx);

/* The one inline-or-parallel policy. work estimates the job in multiply-adds
 * of a bandwidth-bound kernel (a matrix-vector product; compute-bound tiles
 * count a fraction of a MAC each, see their callers). Below
 * QTTS_POOL_MIN_WORK, waking the workers costs more than the work saves, so
 * the job runs inline on the calling thread. The owner check runs first
 * either way: compute entered from a thread that does not own the pool always
 * aborts, however small. */
#define QTTS_POOL_MIN_WORK 65536.0
void qtts_parallel_for_work(qtts_pool *pool, int64_t n, int64_t grain, double work, qtts_range_fn fn, void *ctx);

/* Lanes: for two jobs at once inside one SPMD body (the engine's overlap:
 * LM steps on the owner beside a decoder step on thread 1), each thread runs
 * its job with its own lane, qtts_pool_lane(pool, tid), in place of the pool.
 * A lane's parallel-fors run on its thread alone until another pool thread,
 * done with its own job, calls qtts_pool_lane_help on it: from then on that
 * thread takes chunks of each of them too. Chunks follow the pool's rules
 * (multiples of grain), so results do not depend on whether anyone helped.
 * Inside a lane's parallel-for, its own thread is tid 0 and a helper is its
 * slot; qtts_pool_size(lane) is the pool's, so per-thread scratch covers
 * every slot. SPMD bodies (qtts_pool_run) on a lane run on its thread alone,
 * as one thread. A lane may only be used by its thread. NULL for a pool of one
 * thread, no pool, or tid out of range. */
qtts_pool *qtts_pool_lane(qtts_pool *pool, int tid);
/* Called inside an SPMD body by a pool thread other than the lane's: takes
 * chunks of the lane's parallel-fors, as tid slot (1..size-1, one per
 * helper), until *done becomes nonzero (the lane's thread sets it once its
 * job is over). Spins meanwhile. */
void qtts_pool_lane_help(qtts_pool *lane, int slot, const atomic_int *done);

/* Barrier for use inside an SPMD body: spins briefly, then yields. */
void qtts_pool_barrier(qtts_pool *pool);

/* Helper for SPMD bodies: this thread's share of [0, n) in multiples of grain. */
void qtts_split_range(int64_t n, int64_t grain, int tid, int n_threads, int64_t *begin, int64_t *end);

/* Kernel thread ids of the pool's threads (owner first); for tests and metrics. */
int qtts_pool_thread_ids(const qtts_pool *pool, pid_t *out, int max);
/* 1 if the calling thread is one of the pool's threads. */
int qtts_pool_is_member(const qtts_pool *pool);

#endif
