#include "core/threadpool.h"

#include "core/clock.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define cpu_relax() _mm_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

/* Spin this many relax iterations (tens of microseconds) before sleeping:
 * frame loops submit jobs back to back, and a wake-up through the kernel
 * costs more than the spin. */
enum { SPIN_ITERS = 20000, BARRIER_SPIN_ITERS = 4000 };

typedef struct {
    qtts_pool *pool;
    int tid;
} worker_arg;

struct qtts_pool {
    int n_threads;
    pthread_t owner;
    pthread_t *workers;
    worker_arg *args;
    pid_t *kernel_tids;

    qtts_spmd_fn fn;
    void *ctx;
    atomic_uint_fast64_t generation;
    atomic_int finished;
    atomic_int stop;

    pthread_mutex_t mu;
    pthread_cond_t wake;
    atomic_int ready;

    atomic_int barrier_count;
    atomic_uint barrier_phase;

    /* Owner-only state of the parallel-for policy (see parallel_for_work). */
    int alone_streak;   /* consecutive parallel-fors whose chunks the owner ran all by itself */
    double own_ms, wait_ms; /* this window: the owner's own shares, and its waits for the workers after them */
    int inline_budget;  /* parallel-fors still to run inline before probing the workers again */
    int inline_runs;    /* the next inline stretch: doubles while the probes keep failing */
    int probing;        /* the current window is a probe after an inline stretch */

    /* Lanes (qtts_pool_lane): in a pool, one view per thread (NULL with one
     * thread); in a view, the pool it belongs to and (owner) its thread. */
    struct qtts_pool *lanes, *parent;
    /* A lane's open parallel-for, if any. An odd lane_seq means lane_job is
     * open to helpers; each new one adds 2. Helpers announce themselves in
     * lane_inside before reading lane_job, and the owner closes a job by
     * making lane_seq even and then waiting for lane_inside to drop to 0, so
     * the job (on the owner's stack) outlives every reader. */
    struct range_job *lane_job;
    atomic_uint_fast64_t lane_seq;
    atomic_int lane_inside;
    atomic_int lane_helpers; /* threads inside qtts_pool_lane_help on this lane */
};

/* The kernel's id of the calling thread (Linux: what /proc/<pid>/task lists);
 * 0 where the system has no such number. */
static pid_t current_tid(void) {
#if defined(__linux__)
    return (pid_t)syscall(SYS_gettid);
#else
    return 0;
#endif
}

static void *worker_main(void *p) {
    worker_arg *arg = p;
    qtts_pool *pool = arg->pool;
    pool->kernel_tids[arg->tid] = current_tid();
    atomic_fetch_add(&pool->ready, 1);
    uint_fast64_t seen = 0;
    for (;;) {
        int spins = 0;
        while (atomic_load_explicit(&pool->generation, memory_order_acquire) == seen &&
               !atomic_load(&pool->stop) && spins < SPIN_ITERS) {
            cpu_relax();
            spins++;
        }
        if (atomic_load_explicit(&pool->generation, memory_order_acquire) == seen &&
            !atomic_load(&pool->stop)) {
            pthread_mutex_lock(&pool->mu);
            while (atomic_load(&pool->generation) == seen && !atomic_load(&pool->stop))
                pthread_cond_wait(&pool->wake, &pool->mu);
            pthread_mutex_unlock(&pool->mu);
        }
        if (atomic_load(&pool->stop)) break;
        seen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        pool->fn(pool->ctx, arg->tid, pool->n_threads);
        atomic_fetch_add_explicit(&pool->finished, 1, memory_order_release);
    }
    return NULL;
}

qtts_pool *qtts_pool_create(int n_threads, qtts_err *err) {
    if (n_threads < 1) n_threads = 1;
    if (n_threads > 512) {
        qtts_fail(err, "thread count %d is out of range (1..512)", n_threads);
        return NULL;
    }
    qtts_pool *pool = qtts_calloc(1, sizeof *pool, err);
    if (!pool) return NULL;
    pool->n_threads = n_threads;
    pool->owner = pthread_self();
    pool->workers = qtts_calloc((size_t)n_threads, sizeof *pool->workers, err);
    pool->args = qtts_calloc((size_t)n_threads, sizeof *pool->args, err);
    pool->kernel_tids = qtts_calloc((size_t)n_threads, sizeof *pool->kernel_tids, err);
    if (!pool->workers || !pool->args || !pool->kernel_tids) {
        free(pool->workers); free(pool->args); free(pool->kernel_tids); free(pool);
        return NULL;
    }
    pool->kernel_tids[0] = current_tid();
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->wake, NULL);
    int started = 0;
    for (int i = 1; i < n_threads; i++) {
        pool->args[i].pool = pool;
        pool->args[i].tid = i;
        if (pthread_create(&pool->workers[i], NULL, worker_main, &pool->args[i]) != 0) {
            qtts_fail(err, "could not start worker thread %d of %d", i, n_threads);
            break;
        }
        started++;
    }
    if (started != n_threads - 1) {
        pool->n_threads = started + 1;
        qtts_pool_free(pool);
        return NULL;
    }
    while (atomic_load(&pool->ready) != n_threads - 1) sched_yield();
    if (n_threads > 1) {
        pool->lanes = qtts_calloc((size_t)n_threads, sizeof *pool->lanes, err);
        if (!pool->lanes) {
            qtts_pool_free(pool);
            return NULL;
        }
        for (int i = 0; i < n_threads; i++) {
            pool->lanes[i].n_threads = n_threads;
            pool->lanes[i].owner = i ? pool->workers[i] : pool->owner;
            pool->lanes[i].parent = pool;
        }
    }
    return pool;
}

void qtts_pool_free(qtts_pool *pool) {
    if (!pool) return;
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->stop, 1);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 1; i < pool->n_threads; i++) pthread_join(pool->workers[i], NULL);
    pthread_mutex_destroy(&pool->mu);
    pthread_cond_destroy(&pool->wake);
    free(pool->workers);
    free(pool->args);
    free(pool->kernel_tids);
    free(pool->lanes);
    free(pool);
}

int qtts_pool_size(const qtts_pool *pool) { return pool ? pool->n_threads : 1; }

/* A request thread tried to compute: that would break the thread invariant
 * (see README), so fail loudly rather than run degraded. */
static void check_owner(const qtts_pool *pool) {
    if (pool && !pthread_equal(pthread_self(), pool->owner)) {
        fprintf(stderr, "qtts: internal error: compute submitted from a thread that does not own the pool\n");
        abort();
    }
}

/* Runs fn on every thread; *owner_ms / *wait_ms (optional): the owner's own
 * share and its wait for the workers after it. */
static void run_all(qtts_pool *pool, qtts_spmd_fn fn, void *ctx, double *owner_ms, double *wait_ms) {
    pool->fn = fn;
    pool->ctx = ctx;
    atomic_store_explicit(&pool->finished, 0, memory_order_relaxed);
    pthread_mutex_lock(&pool->mu);
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
    const double t0 = owner_ms ? qtts_now_ms() : 0;
    fn(ctx, 0, pool->n_threads);
    const double t1 = owner_ms ? qtts_now_ms() : 0;
    int spins = 0;
    while (atomic_load_explicit(&pool->finished, memory_order_acquire) != pool->n_threads - 1) {
        if (++spins < SPIN_ITERS) cpu_relax();
        else sched_yield();
    }
    if (owner_ms) {
        *owner_ms = t1 - t0;
        *wait_ms = qtts_now_ms() - t1;
    }
}

void qtts_pool_run(qtts_pool *pool, qtts_spmd_fn fn, void *ctx) {
    check_owner(pool);
    if (pool->n_threads == 1 || pool->parent) {
        fn(ctx, 0, 1);
        return;
    }
    run_all(pool, fn, ctx, NULL, NULL);
}

void qtts_split_range(int64_t n, int64_t grain, int tid, int n_threads, int64_t *begin, int64_t *end) {
    if (grain < 1) grain = 1;
    int64_t units = (n + grain - 1) / grain;
    int64_t per = units / n_threads, extra = units % n_threads;
    int64_t u0 = tid * per + (tid < extra ? tid : extra);
    int64_t u1 = u0 + per + (tid < extra ? 1 : 0);
    int64_t b = u0 * grain, e = u1 * grain;
    if (b > n) b = n;
    if (e > n) e = n;
    *begin = b;
    *end = e;
}

/* A parallel-for hands out its range in chunks (several per thread) from an
 * atomic counter instead of one fixed share per thread: when a core is busy
 * with another process and one of our threads is descheduled, the others
 * take over its chunks, so a loaded machine costs at most about one chunk of
 * waiting instead of a whole share (with fixed shares, 2 threads on 2 busy
 * cores ran slower than 1). Bodies only see [begin, end) ranges in multiples
 * of grain, so results do not depend on which thread ran which chunk.
 *
 * That one chunk is still a scheduler time slice (milliseconds) when a worker
 * is descheduled holding it: with one of 2 cores busy elsewhere, 2 threads can
 * run slower than one, the owner waiting longer for its workers than it works
 * itself, where on an idle machine it waits a small share of its working
 * time. So the owner adds up both over windows of
 * WINDOW_MS: waiting more than WASTE_RATIO of its work, or ALONE_STREAK_LIMIT
 * parallel-fors in a row in which no worker took a chunk at all, and the next
 * parallel-fors run inline; then one window of probing, and the stretch
 * doubles (up to MAX_INLINE_RUNS) while the probes keep failing. */
enum { CHUNKS_PER_THREAD = 4, ALONE_STREAK_LIMIT = 4, INLINE_RUNS = 64, MAX_INLINE_RUNS = 8192 };
#define WINDOW_MS 20.0
#define WASTE_RATIO 0.5

typedef struct range_job {
    qtts_range_fn fn;
    void *ctx;
    int64_t n, grain, chunk; /* chunk: elements per hand-out, a multiple of grain */
    atomic_int_fast64_t next;
    int64_t owner_elems; /* elements the owner (tid 0) ran */
} range_job;

static void range_body(void *p, int tid, int n_threads) {
    range_job *job = p;
    (void)n_threads;
    for (;;) {
        int64_t b = atomic_fetch_add_explicit(&job->next, job->chunk, memory_order_relaxed);
        if (b >= job->n) return;
        int64_t e = b + job->chunk < job->n ? b + job->chunk : job->n;
        job->fn(job->ctx, b, e, tid);
        if (tid == 0) job->owner_elems += e - b;
    }
}

static int64_t chunk_elems(int64_t n, int64_t grain, int n_threads) {
    int64_t units = (n + grain - 1) / grain;
    return (units + CHUNKS_PER_THREAD * n_threads - 1) / (CHUNKS_PER_THREAD * n_threads) * grain;
}

/* A parallel-for on a lane: its thread runs it alone while no helper is
 * there (no hand-out at all), else opens it to the helpers and takes chunks
 * beside them. */
static void lane_parallel_for(qtts_pool *lane, int64_t n, int64_t grain, qtts_range_fn fn, void *ctx) {
    if (!atomic_load(&lane->lane_helpers)) {
        fn(ctx, 0, n, 0);
        return;
    }
    range_job job = {.fn = fn, .ctx = ctx, .n = n, .grain = grain, .chunk = chunk_elems(n, grain, lane->n_threads)};
    atomic_init(&job.next, 0);
    lane->lane_job = &job;
    const uint_fast64_t seq = atomic_load(&lane->lane_seq) + 1;
    atomic_store(&lane->lane_seq, seq); /* open */
    range_body(&job, 0, lane->n_threads);
    atomic_store(&lane->lane_seq, seq + 1); /* closed: no helper starts on it now */
    while (atomic_load(&lane->lane_inside)) cpu_relax();
}

void qtts_parallel_for_work(qtts_pool *pool, int64_t n, int64_t grain, double work, qtts_range_fn fn, void *ctx) {
    check_owner(pool);
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (!pool || pool->n_threads == 1 || n <= grain || work < QTTS_POOL_MIN_WORK) {
        fn(ctx, 0, n, 0);
        return;
    }
    if (pool->parent) {
        lane_parallel_for(pool, n, grain, fn, ctx);
        return;
    }
    if (pool->inline_budget > 0) { /* the workers did not pull their weight lately */
        if (--pool->inline_budget == 0) {
            pool->probing = 1;
            pool->own_ms = pool->wait_ms = 0;
        }
        fn(ctx, 0, n, 0);
        return;
    }
    range_job job = {.fn = fn, .ctx = ctx, .n = n, .grain = grain, .chunk = chunk_elems(n, grain, pool->n_threads)};
    atomic_init(&job.next, 0);
    double owner_ms = 0, wait_ms = 0;
    run_all(pool, range_body, &job, &owner_ms, &wait_ms);
    pool->alone_streak = job.owner_elems == n ? pool->alone_streak + 1 : 0;
    pool->own_ms += owner_ms;
    pool->wait_ms += wait_ms;
    const int late = pool->alone_streak >= ALONE_STREAK_LIMIT;
    if (!late && pool->own_ms + pool->wait_ms < WINDOW_MS) return;
    const int bad = late || pool->wait_ms > WASTE_RATIO * pool->own_ms;
    if (!bad) {
        if (pool->probing) pool->inline_runs = INLINE_RUNS;
    } else {
        if (!pool->inline_runs) pool->inline_runs = INLINE_RUNS;
        else if (pool->probing && pool->inline_runs < MAX_INLINE_RUNS) pool->inline_runs *= 2;
        pool->inline_budget = pool->inline_runs;
        pool->alone_streak = 0;
    }
    pool->probing = 0;
    pool->own_ms = pool->wait_ms = 0;
}

void qtts_parallel_for(qtts_pool *pool, int64_t n, int64_t grain, qtts_range_fn fn, void *ctx) {
    qtts_parallel_for_work(pool, n, grain, HUGE_VAL, fn, ctx);
}

qtts_pool *qtts_pool_lane(qtts_pool *pool, int tid) {
    return pool && pool->lanes && tid >= 0 && tid < pool->n_threads ? &pool->lanes[tid] : NULL;
}

void qtts_pool_lane_help(qtts_pool *lane, int slot, const atomic_int *done) {
    atomic_fetch_add(&lane->lane_helpers, 1);
    uint_fast64_t last = 0;
    int spins = 0;
    while (!atomic_load_explicit(done, memory_order_acquire)) {
        const uint_fast64_t seq = atomic_load(&lane->lane_seq);
        if (!(seq & 1) || seq == last) {
            if (++spins < BARRIER_SPIN_ITERS) cpu_relax();
            else sched_yield();
            continue;
        }
        atomic_fetch_add(&lane->lane_inside, 1);
        if (atomic_load(&lane->lane_seq) == seq) range_body(lane->lane_job, slot, lane->n_threads);
        atomic_fetch_sub(&lane->lane_inside, 1);
        last = seq;
        spins = 0;
    }
    atomic_fetch_sub(&lane->lane_helpers, 1);
}

void qtts_pool_barrier(qtts_pool *pool) {
    if (pool->n_threads == 1 || pool->parent) return;
    unsigned phase = atomic_load_explicit(&pool->barrier_phase, memory_order_acquire);
    if (atomic_fetch_add_explicit(&pool->barrier_count, 1, memory_order_acq_rel) == pool->n_threads - 1) {
        atomic_store_explicit(&pool->barrier_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&pool->barrier_phase, 1, memory_order_release);
        return;
    }
    int spins = 0;
    while (atomic_load_explicit(&pool->barrier_phase, memory_order_acquire) == phase) {
        if (++spins < BARRIER_SPIN_ITERS) cpu_relax();
        else sched_yield();
    }
}

int qtts_pool_thread_ids(const qtts_pool *pool, pid_t *out, int max) {
    if (pool->parent) pool = pool->parent;
    int n = pool->n_threads < max ? pool->n_threads : max;
    for (int i = 0; i < n; i++) out[i] = pool->kernel_tids[i];
    return n;
}

int qtts_pool_is_member(const qtts_pool *pool) {
    if (pool->parent) pool = pool->parent;
    pid_t me = current_tid();
    for (int i = 0; i < pool->n_threads; i++)
        if (pool->kernel_tids[i] == me) return 1;
    return 0;
}
