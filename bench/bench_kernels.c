/* Dense-layer throughput: GB/s of weight bytes read by qtts_linear for each
 * weight type at the MLP shapes of the 0.6B talker and code predictor
 * (1024x3072, 3072x1024) and of the 1.7B talker (2048x6144, 6144x2048),
 * n = 1 and n = 8 tokens, on 1 and 2 threads; "cache" reuses one matrix
 * (L2/L3-resident), "dram" cycles through distinct copies totalling > 64 MB
 * so every call streams from memory. "rd GB/s" is the probe's read loop
 * (src/bench/probe.h) over the same matrices on the same pool, timed in turns
 * with the layer (best of 15 each), and "%rd" the layer's rate against it:
 * a figure other load on a shared machine disturbs about equally ("cpu%rd":
 * the same per second of CPU time, 1 thread). "%bw" compares a dram row with
 * the probe's 512 MiB read bandwidth measured at the start of the run.
 * Usage: bench_kernels [seconds-per-case [type [threads [ROWSxCOLS]]]]
 * (QTTS_ISA caps the kernel family; Q8_0/Q4_K are interleaved unless
 * QTTS_INTERLEAVE=0; "x16" marks them in the table). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "bench/probe.h"
#include "io/store.h"
#include "tensor/cpu.h"
#include "tensor/interleave.h"
#include "tensor/linear.h"
#include "tensor/quant.h"

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }

static int make_copies(qtts_dtype type, int64_t rows, int64_t cols, int copies, qtts_mat *mats) {
    size_t rb = qtts_dtype_row_bytes(type, cols);
    size_t bytes = rb * (size_t)rows;
    float *row = malloc((size_t)cols * sizeof(float));
    char *first = malloc(bytes);
    if (!row || !first) return -1;
    uint64_t s = 88172645463325252ull;
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < cols; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            row[i] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5) * 0.2f;
        }
        char *d = first + (size_t)r * rb;
        if (type == QTTS_F32) memcpy(d, row, (size_t)cols * 4);
        else if (type == QTTS_BF16)
            for (int64_t i = 0; i < cols; i++) ((uint16_t *)d)[i] = qtts_f32_to_bf16(row[i]);
        else if (type == QTTS_F16)
            for (int64_t i = 0; i < cols; i++) ((uint16_t *)d)[i] = qtts_f32_to_f16(row[i]);
        else qtts_quantize_row(type, row, d, cols);
    }
    free(row);
    for (int c = copies - 1; c >= 0; c--) { /* first last: it is the source of the others */
        char *buf = c ? malloc(bytes) : first;
        if (!buf) return -1;
        if (c) memcpy(buf, first, bytes);
        mats[c] = (qtts_mat){.type = type, .rows = rows, .cols = cols, .row_bytes = rb, .data = buf, .owned = buf};
        qtts_err err = {0};
        const char *env = getenv("QTTS_INTERLEAVE");
        const int il = !(env && !strcmp(env, "0"));
        const qtts_weight_layout layout = {{il, 0, 0}, {il, 0, 0}};
        if (qtts_mat_interleave(&mats[c], &layout, &err)) return -1;
    }
    return 0;
}

/* QTTS_BENCH_SMALL_PAGES=1: every copy moved to 4 KiB pages (no transparent
 * huge pages), as weights used in place from a mapped model file are. */
static int small_pages(void) {
    const char *e = getenv("QTTS_BENCH_SMALL_PAGES");
    return e && !strcmp(e, "1");
}

/* QTTS_BENCH_DRAM_MIB: MiB of distinct copies for the "dram" rows (default
 * 160; a whole model's layers, e.g. 900, also exceed what the TLBs map). */
static int dram_mib(void) {
    const char *e = getenv("QTTS_BENCH_DRAM_MIB");
    int v = e ? atoi(e) : 0;
    return v >= 64 && v <= 65536 ? v : 160;
}

static int move_to_small_pages(qtts_mat *m, size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1;
#ifdef MADV_NOHUGEPAGE
    madvise(p, bytes, MADV_NOHUGEPAGE);
#endif
    memcpy(p, m->data, bytes);
    free(m->owned);
    m->owned = NULL;
    m->data = p;
    return 0;
}

/* The probe's read loop over one matrix's bytes, split over the pool in
 * 8 KiB blocks. */
enum { READ_BLOCK_FLOATS = 2048 };
typedef struct {
    const float *p;
    size_t n;
    float sink[64];
} read_job;

static void read_blocks(void *ctx, int64_t b0, int64_t b1, int tid) {
    read_job *j = ctx;
    size_t e = (size_t)b1 * READ_BLOCK_FLOATS < j->n ? (size_t)b1 * READ_BLOCK_FLOATS : j->n;
    float s = qtts_probe_read_pass(j->p + (size_t)b0 * READ_BLOCK_FLOATS, e - (size_t)b0 * READ_BLOCK_FLOATS);
    if (tid < 64) j->sink[tid] += s;
}

static void read_mat(qtts_pool *pool, const qtts_mat *m, size_t bytes, read_job *j) {
    j->p = (const float *)m->data;
    j->n = bytes / sizeof(float);
    qtts_parallel_for(pool, (int64_t)((j->n + READ_BLOCK_FLOATS - 1) / READ_BLOCK_FLOATS), 1, read_blocks, j);
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 0.25;
    if (!(secs > 0)) secs = 0.25;
    const char *only_type = argc > 2 ? argv[2] : NULL;
    int only_threads = argc > 3 ? atoi(argv[3]) : 0;
    long long only_rows = 0, only_cols = 0;
    if (argc > 4 && (sscanf(argv[4], "%lldx%lld", &only_rows, &only_cols) != 2 || only_rows <= 0 || only_cols <= 0)) {
        fprintf(stderr, "bench_kernels: shape '%s' is not ROWSxCOLS\n", argv[4]);
        return 2;
    }
    const qtts_dtype types[] = {QTTS_F32, QTTS_BF16, QTTS_F16, QTTS_Q8_0, QTTS_Q4_K};
    const int64_t shapes[4][2] = {{1024, 3072}, {3072, 1024}, {2048, 6144}, {6144, 2048}};
    const int nshapes = only_rows ? 1 : 4;
    qtts_probe_result probe = {0};
    {
        qtts_err err = {0};
        qtts_pool *pool = qtts_pool_create(only_threads ? only_threads : 2, &err);
        if (!pool || qtts_probe_run(pool, 0, &probe, &err)) {
            fprintf(stderr, "bench_kernels: probe: %s\n", err.msg);
            return 1;
        }
        qtts_pool_free(pool);
    }
    printf("kernel family: %s; probe read bandwidth %.1f GB/s (1 thread), %.1f GB/s (%d threads)\n",
           qtts_isa_name(qtts_cpu_isa()), probe.read_gbs_1, probe.read_gbs_all, probe.threads);
    printf("%-8s %-10s %3s %2s %-5s %9s %8s %8s %8s %8s %5s %6s %5s\n", "type", "shape", "thr", "n", "mem", "MB/mat",
           "GB/s", "cpuGB/s", "GFLOP/s", "rd GB/s", "%rd", "cpu%rd", "%bw");
    for (int th = 1; th <= 2; th++) {
        if (only_threads && th != only_threads) continue;
        qtts_err err = {0};
        qtts_pool *pool = qtts_pool_create(th, &err);
        if (!pool) {
            fprintf(stderr, "bench_kernels: %s\n", err.msg);
            return 1;
        }
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
            if (only_type && qtts_dtype_from_name(only_type) != types[ti]) continue;
            for (int si = 0; si < nshapes; si++) {
                int64_t rows = only_rows ? only_rows : shapes[si][0], cols = only_rows ? only_cols : shapes[si][1];
                size_t bytes = qtts_dtype_row_bytes(types[ti], cols) * (size_t)rows;
                int copies = (int)(((size_t)dram_mib() << 20) / bytes) + 1; /* > 64 MB of distinct weights, well past L3 */
                qtts_mat *mats = calloc((size_t)copies, sizeof *mats);
                float *x = malloc((size_t)(8 * cols) * sizeof(float)), *y = malloc((size_t)(8 * rows) * sizeof(float));
                if (!mats || !x || !y || make_copies(types[ti], rows, cols, copies, mats)) {
                    fprintf(stderr, "bench_kernels: out of memory\n");
                    return 1;
                }
                const size_t mat_bytes = mats[0].row_bytes * (size_t)rows;
                for (int c = 0; c < copies && small_pages(); c++)
                    if (move_to_small_pages(&mats[c], mat_bytes)) {
                        fprintf(stderr, "bench_kernels: out of memory\n");
                        return 1;
                    }
                for (int64_t i = 0; i < 8 * cols; i++) x[i] = sinf((float)i);
                for (int n = 1; n <= 8; n += 7) {
                    for (int mem = 0; mem < 2; mem++) {
                        int use = mem ? copies : 1;
                        qtts_linear(pool, &mats[0], NULL, x, n, y); /* warm-up */
                        /* best of 15 short timed runs: the machine is shared, take the least disturbed */
                        double per = 1e30, cpu_per = 1e30, rd_per = 1e30, rd_cpu_per = 1e30;
                        read_job rj = {0};
                        for (int rep = 0; rep < 30; rep++) { /* even reps: the layer; odd: reading its bytes */
                            long iters = 0;
                            double t0 = now(), t1, c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
                            do {
                                for (int k = 0; k < 8; k++, iters++)
                                    if (rep & 1) read_mat(pool, &mats[iters % use], mat_bytes, &rj);
                                    else qtts_linear(pool, &mats[iters % use], NULL, x, n, y);
                                t1 = now();
                            } while (t1 - t0 < secs / 15);
                            double w = (t1 - t0) / (double)iters;
                            double c = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / (double)iters;
                            double *bw_per = rep & 1 ? &rd_per : &per, *bc_per = rep & 1 ? &rd_cpu_per : &cpu_per;
                            if (w < *bw_per) *bw_per = w;
                            if (c < *bc_per) *bc_per = c;
                        }
                        /* cpu: per second of CPU time (1 thread only: less disturbed by other load) */
                        const double gbs = (double)bytes / per / 1e9;
                        const double bw = th == 1 ? probe.read_gbs_1 : th == probe.threads ? probe.read_gbs_all : 0;
                        printf("%-5s%s %4lldx%-5lld %3d %2d %-5s %9.2f %8.1f %8.1f %8.1f %8.1f %4.0f%%",
                               qtts_dtype_name(types[ti]), mats[0].interleave ? "x16" : "   ", (long long)rows,
                               (long long)cols, th, n, mem ? "dram" : "cache", (double)bytes / 1e6, gbs,
                               th == 1 ? (double)bytes / cpu_per / 1e9 : 0.0,
                               2.0 * (double)rows * (double)cols * n / per / 1e9, (double)bytes / rd_per / 1e9,
                               100.0 * rd_per / per);
                        if (th == 1) printf(" %5.0f%%", 100.0 * rd_cpu_per / cpu_per);
                        else printf(" %6s", "");
                        if (mem && bw > 0) printf(" %4.0f%%", 100.0 * gbs / bw);
                        printf("\n");
                        fflush(stdout);
                    }
                }
                for (int c = 0; c < copies; c++) {
                    if (!mats[c].owned) munmap((void *)mats[c].data, mat_bytes);
                    qtts_mat_free(&mats[c]);
                }
                free(mats);
                free(x);
                free(y);
            }
        }
        qtts_pool_free(pool);
    }
    return 0;
}
