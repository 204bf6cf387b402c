/* Dense-layer kernels: every kernel family this CPU supports (and forced
 * scalar) against qtts_linear_ref, for each weight type, odd shapes and
 * n = 1, 2, 3, 7, 16 tokens, through a 2-thread pool.
 *
 * Tolerances, per output, with A = sum_i |w_i x_i| (w = the stored weights,
 * dequantized):
 *  - F32/F16/BF16 (f32 products): |err| <= 1e-5 A + 1e-6 (summation order only).
 *  - BF16 with QTTS_LINEAR_BF16_DOT: x rounded to bf16, |err| <= 2^-8 A + 1e-6.
 *  - Q8_0/Q4_K (x quantized to int8 per 32/256 values, step s = amax/127):
 *    |err| <= 1.01 * sum_i |w_i| s_i / 2 + 1e-5 A + 1e-6, the provable bound of
 *    the activation rounding; the typical relative error is printed too.
 * Interleaved Q8_0/Q4_K (tensor/interleave.h): every row read back from the
 * lanes equals the GGML row exactly, and every ISA on the interleaved copy
 * meets the same bound against qtts_linear_ref on the GGML original. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "io/store.h"
#include "tensor/cpu.h"
#include "tensor/interleave.h"
#include "tensor/interleave_calibrate.h"
#include "tensor/linear.h"
#include "tensor/quant.h"

/* ASan builds: the out-of-memory checks below ask for impossible sizes and
 * must get NULL back, not a report. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double urand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static float gauss(void) {
    double u = urand() + 1e-12, v = urand();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

/* Builds a rows x cols matrix of `type` from Gaussian values; *deq gets the
 * dequantized weights (what the kernels effectively multiply by). */
static void make_mat(qtts_mat *m, qtts_dtype type, int64_t rows, int64_t cols, float **deq) {
    float *src = malloc((size_t)(rows * cols) * sizeof(float));
    for (int64_t i = 0; i < rows * cols; i++) src[i] = gauss() * 0.1f;
    memset(m, 0, sizeof *m);
    m->type = type;
    m->rows = rows;
    m->cols = cols;
    m->row_bytes = qtts_dtype_row_bytes(type, cols);
    char *buf = malloc(m->row_bytes * (size_t)rows);
    *deq = malloc((size_t)(rows * cols) * sizeof(float));
    for (int64_t r = 0; r < rows; r++) {
        const float *s = src + r * cols;
        char *d = buf + (size_t)r * m->row_bytes;
        switch (type) {
        case QTTS_F32: memcpy(d, s, (size_t)cols * 4); break;
        case QTTS_BF16:
            for (int64_t i = 0; i < cols; i++) ((uint16_t *)d)[i] = qtts_f32_to_bf16(s[i]);
            break;
        case QTTS_F16:
            for (int64_t i = 0; i < cols; i++) ((uint16_t *)d)[i] = qtts_f32_to_f16(s[i]);
            break;
        default: qtts_quantize_row(type, s, d, cols); break;
        }
        /* GGML allows -128 in Q8_0 (our quantizer never writes it): the sign tricks must handle it */
        if (type == QTTS_Q8_0) ((qtts_block_q8_0 *)d)[0].qs[r % 32] = -128;
        qtts_err err;
        qtts_convert_to_f32(type, d, *deq + r * cols, cols, &err);
    }
    m->data = buf;
    m->owned = buf;
    free(src);
}

typedef struct {
    double max_ratio; /* max |err| / bound */
    double rel_rms;   /* rms(err) / rms(y) */
} errstat;

static errstat check(const qtts_mat *m, const float *deq, const float *x, int64_t n, const float *got,
                     const float *want, int quant_act, int bf16_act) {
    int64_t blk = m->type == QTTS_Q4_K ? 256 : 32;
    double worst = 0, e2 = 0, y2 = 0;
    for (int64_t t = 0; t < n; t++) {
        const float *xt = x + t * m->cols;
        for (int64_t r = 0; r < m->rows; r++) {
            const float *w = deq + r * m->cols;
            double A = 0, Q = 0;
            for (int64_t i = 0; i < m->cols; i++) A += fabs((double)w[i] * xt[i]);
            if (quant_act) {
                for (int64_t b = 0; b < m->cols / blk; b++) {
                    double amax = 0, sw = 0;
                    for (int64_t i = b * blk; i < (b + 1) * blk; i++) {
                        amax = fmax(amax, fabs(xt[i]));
                        sw += fabs(w[i]);
                    }
                    Q += sw * amax / 127.0 / 2.0;
                }
            }
            double bound = 1.01 * Q + (bf16_act ? A / 256.0 : 0) + 1e-5 * A + 1e-6;
            double e = fabs((double)got[t * m->rows + r] - want[t * m->rows + r]);
            double ratio = isnan(e) ? INFINITY : e / bound;
            if (ratio > worst) worst = ratio;
            e2 += e * e;
            y2 += (double)want[t * m->rows + r] * want[t * m->rows + r];
        }
    }
    errstat s = {worst, sqrt(e2 / (y2 + 1e-30))};
    return s;
}

/* The SIMD activation packers agree with the scalar ones bit for bit: the
 * same product got again with the scalar packers must be identical. */
/* One token against an interleaved matrix of several 16-row groups: with
 * the groups read in lockstep or one after the other, the result has the
 * bits of each 16-row group computed on its own (which takes neither path). */
static void same_as_groups_alone(qtts_pool *pool, qtts_mat *x16, const float *bias, const float *x, qtts_isa isa) {
    const int64_t rows = x16->rows;
    float *all = malloc((size_t)rows * sizeof(float)), *one = malloc((size_t)rows * sizeof(float));
    TEST_CHECK(all && one, "out of memory");
    for (int64_t r = 0; one && r < rows; r += 16) {
        qtts_mat v = *x16;
        v.owned = NULL;
        v.rows = 16;
        v.data = (const uint8_t *)x16->data + (size_t)r * x16->row_bytes;
        TEST_CHECK(qtts_linear_isa(pool, &v, bias ? bias + r : NULL, x, 1, one + r, isa, 0) == 0,
                   "qtts_linear_isa failed");
    }
    const int keep = x16->lockstep;
    for (int ls = 0; all && one && ls < 2; ls++) {
        x16->lockstep = ls;
        TEST_CHECK(qtts_linear_isa(pool, x16, bias, x, 1, all, isa, 0) == 0, "qtts_linear_isa failed");
        TEST_CHECK(!memcmp(one, all, (size_t)rows * sizeof(float)),
                   "%s %s x16 %lldx%lld n=1%s: 16-row groups alone give other bits", qtts_isa_name(isa),
                   qtts_dtype_name(x16->type), (long long)rows, (long long)x16->cols, ls ? " (lockstep)" : "");
    }
    x16->lockstep = keep;
    free(all);
    free(one);
}

/* Each token of a batched call gives the bits of a call with that token
 * alone: the interleaved kernels' token tiles (1, 2, 3 or 4 wide) sum the
 * same integers and apply the same float steps, and the engine relies on it
 * (a request's audio must not depend on how many others share its step). */
static void same_as_tokens_alone(qtts_pool *pool, const qtts_mat *x16, const float *bias, const float *x, int64_t n,
                                 const float *got, qtts_isa isa) {
    const int64_t rows = x16->rows, cols = x16->cols;
    float *one = malloc((size_t)rows * sizeof(float));
    TEST_CHECK(one != NULL, "out of memory");
    int same = 1;
    for (int64_t t = 0; one && t < n; t++) {
        TEST_CHECK(qtts_linear_isa(pool, x16, bias, x + t * cols, 1, one, isa, 0) == 0, "qtts_linear_isa failed");
        same &= !memcmp(one, got + t * rows, (size_t)rows * sizeof(float));
    }
    TEST_CHECK(same, "%s %s x16 %lldx%lld n=%lld: a token alone gives other bits than in the batch",
               qtts_isa_name(isa), qtts_dtype_name(x16->type), (long long)rows, (long long)cols, (long long)n);
    free(one);
}

static void same_with_scalar_pack(qtts_pool *pool, const qtts_mat *m, const float *bias, const float *x, int64_t n,
                                  const float *got, qtts_isa isa) {
    float *again = malloc((size_t)(n * m->rows) * sizeof(float));
    TEST_CHECK(again && qtts_linear_isa(pool, m, bias, x, n, again, isa, QTTS_LINEAR_SCALAR_PACK) == 0,
               "qtts_linear_isa failed");
    TEST_CHECK(again && !memcmp(again, got, (size_t)(n * m->rows) * sizeof(float)),
               "%s %s%s %lldx%lld n=%lld: SIMD activation packing differs from the scalar packer",
               qtts_isa_name(isa), qtts_dtype_name(m->type), m->interleave ? " x16" : "", (long long)m->rows,
               (long long)m->cols, (long long)n);
    free(again);
}

/* Activations the packers must round alike: a zero block, values exactly
 * half-way between two steps (round to even), the clamp at +-127. */
static void edge_activations(qtts_pool *pool, const qtts_cpu_features *f) {
    const qtts_dtype types[] = {QTTS_Q8_0, QTTS_Q4_K};
    for (int ti = 0; ti < 2; ti++)
        for (int il = 0; il < 2; il++) {
            const int64_t rows = 32, cols = 512, n = 3;
            qtts_mat m;
            float *deq;
            make_mat(&m, types[ti], rows, cols, &deq);
            qtts_err err = {0};
            if (il) TEST_CHECK(qtts_mat_interleave_force(&m, &err) == 0, "interleave: %s", err.msg);
            float *x = malloc((size_t)(n * cols) * sizeof(float)), *y = malloc((size_t)(n * rows) * sizeof(float));
            for (int64_t i = 0; i < n * cols; i++) {
                int64_t blk = i / 32;
                x[i] = blk % 4 == 0   ? 0.0f                                        /* all-zero block */
                       : blk % 4 == 1 ? (float)((int)(i % 32) - 16) * 0.5f           /* halves: ties */
                       : blk % 4 == 2 ? (i % 32 == 5 ? 127.0f : (float)(i % 7) + 0.5f) /* .5 steps at amax 127 */
                                      : gauss() * 1e3f;
            }
            for (int isa = QTTS_ISA_SCALAR + 1; isa < QTTS_ISA_COUNT; isa++) {
                if (!qtts_isa_supported(f, (qtts_isa)isa)) continue;
                if (il && isa != QTTS_ISA_AVX2 && isa != QTTS_ISA_AVX512) continue;
                TEST_CHECK(qtts_linear_isa(pool, &m, NULL, x, n, y, (qtts_isa)isa, 0) == 0, "qtts_linear_isa failed");
                same_with_scalar_pack(pool, &m, NULL, x, n, y, (qtts_isa)isa);
            }
            free(x);
            free(y);
            free(deq);
            qtts_mat_free(&m);
        }
}

int main(void) {
    const qtts_cpu_features *f = qtts_cpu_features_get();
    char feat[256];
    qtts_cpu_features_describe(f, feat, sizeof feat);
    printf("cpu: %s; selected %s\n", feat, qtts_isa_name(qtts_cpu_isa()));
    /* ISA selection honours the cap and never exceeds the hardware. */
    TEST_CHECK(qtts_isa_select(f, "scalar") == QTTS_ISA_SCALAR, "QTTS_ISA=scalar not honoured");
    if (qtts_isa_supported(f, QTTS_ISA_AVX2))
        TEST_CHECK(qtts_isa_select(f, "avx2") == QTTS_ISA_AVX2, "QTTS_ISA=avx2 not honoured");
    if (qtts_isa_supported(f, QTTS_ISA_NEON))
        TEST_CHECK(qtts_isa_select(f, "neon") == QTTS_ISA_NEON, "QTTS_ISA=neon not honoured");
    qtts_cpu_features none;
    memset(&none, 0, sizeof none);
    TEST_CHECK(qtts_isa_select(&none, "avx512") == QTTS_ISA_SCALAR, "cap selected an unsupported ISA");
    TEST_CHECK(qtts_isa_select(&none, "dotprod") == QTTS_ISA_SCALAR, "cap selected an unsupported ISA");
    TEST_CHECK(qtts_isa_select(f, NULL) == qtts_isa_select(f, "bogus"), "unknown cap changed the choice");
    /* the AArch64 ladder on made-up CPUs (pure, so it runs on any host): a Cortex-A53, a Pi 5 (A76), a
     * Graviton3, and caps from another family ignored */
    qtts_cpu_features a53 = none, a76 = none, v1 = none;
    a53.neon = true;
    a76 = a53, a76.dotprod = a76.fp16 = true;
    v1 = a76, v1.bf16 = v1.i8mm = true;
    TEST_CHECK(qtts_isa_select(&a53, NULL) == QTTS_ISA_NEON, "A53: %s", qtts_isa_name(qtts_isa_select(&a53, NULL)));
    TEST_CHECK(qtts_isa_select(&a76, NULL) == QTTS_ISA_NEON_DOTPROD, "A76: %s",
               qtts_isa_name(qtts_isa_select(&a76, NULL)));
    TEST_CHECK(qtts_isa_select(&v1, NULL) == QTTS_ISA_NEON_BF16, "V1: %s", qtts_isa_name(qtts_isa_select(&v1, NULL)));
    TEST_CHECK(qtts_isa_select(&v1, "dotprod") == QTTS_ISA_NEON_DOTPROD, "V1 capped at dotprod");
    TEST_CHECK(qtts_isa_select(&a53, "dotprod") == QTTS_ISA_NEON, "a cap above the hardware keeps the hardware's");
    TEST_CHECK(qtts_isa_select(&v1, "avx2") == QTTS_ISA_NEON_BF16, "an x86 cap on an Arm CPU is ignored");
    TEST_CHECK(!strcmp(qtts_isa_name(QTTS_ISA_NEON_DOTPROD), "dotprod"), "ISA names");

    qtts_err err = {0};
    qtts_pool *pool = qtts_pool_create(2, &err);
    TEST_CHECK(pool != NULL, "pool: %s", err.msg);
    if (!pool) return test_finish("test_linear");
    edge_activations(pool, f);

    const qtts_dtype types[] = {QTTS_F32, QTTS_F16, QTTS_BF16, QTTS_Q8_0, QTTS_Q4_K};
    const int64_t ns[] = {1, 2, 3, 7, 16};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        qtts_dtype type = types[ti];
        int64_t blk = qtts_dtype_block_elems(type);
        /* shapes: (rows, cols); plain types get odd cols, block types multiples of the block */
        int64_t shapes[3][2] = {{37, blk > 1 ? blk * 3 : 77}, {100, blk > 1 ? blk * 5 : 301}, {16, blk > 1 ? blk : 64}};
        for (int si = 0; si < 3; si++) {
            int64_t rows = shapes[si][0], cols = shapes[si][1];
            qtts_mat m;
            float *deq;
            make_mat(&m, type, rows, cols, &deq);
            float *bias = malloc((size_t)rows * sizeof(float));
            for (int64_t r = 0; r < rows; r++) bias[r] = gauss();
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                int64_t n = ns[ni];
                float *x = malloc((size_t)(n * cols) * sizeof(float));
                for (int64_t i = 0; i < n * cols; i++) x[i] = gauss() * (i % 5 == 0 ? 3.0f : 1.0f);
                float *want = malloc((size_t)(n * rows) * sizeof(float));
                float *got = malloc((size_t)(n * rows) * sizeof(float));
                TEST_CHECK(qtts_linear_ref(&m, si == 1 ? NULL : bias, x, n, want) == 0, "ref failed");
                for (int isa = QTTS_ISA_SCALAR; isa < QTTS_ISA_COUNT; isa++) {
                    if (!qtts_isa_supported(f, (qtts_isa)isa)) continue;
                    for (int fast = 0; fast < 2; fast++) {
                        int bf16_act = fast && type == QTTS_BF16 && isa == QTTS_ISA_AVX512 && f->avx512bf16;
                        if (fast && !bf16_act) continue;
                        memset(got, 0xff, (size_t)(n * rows) * sizeof(float)); /* NaN: unwritten outputs fail */
                        TEST_CHECK(qtts_linear_isa(pool, &m, si == 1 ? NULL : bias, x, n, got, (qtts_isa)isa,
                                                   fast ? QTTS_LINEAR_BF16_DOT : 0) == 0,
                                   "qtts_linear_isa failed");
                        int quant_act = isa != QTTS_ISA_SCALAR && blk > 1;
                        errstat s = check(&m, deq, x, n, got, want, quant_act, bf16_act);
                        TEST_CHECK(s.max_ratio <= 1.0,
                                   "%s %s%s %lldx%lld n=%lld: error %.3g x the bound (rel rms %.3g)",
                                   qtts_isa_name((qtts_isa)isa), qtts_dtype_name(type), fast ? " bf16dot" : "",
                                   (long long)rows, (long long)cols, (long long)n, s.max_ratio, s.rel_rms);
                        if (quant_act && !fast && isa != QTTS_ISA_SCALAR) /* the SIMD packers match the scalar ones */
                            same_with_scalar_pack(pool, &m, si == 1 ? NULL : bias, x, n, got, (qtts_isa)isa);
                        if (si == 1 && n == 7)
                            printf("  %-6s %-5s%-8s %lldx%lld n=%lld: max err/bound %.3f, rel rms err %.2e\n",
                                   qtts_isa_name((qtts_isa)isa), qtts_dtype_name(type), fast ? " bf16dot" : "",
                                   (long long)rows, (long long)cols, (long long)n, s.max_ratio, s.rel_rms);
                    }
                }
                /* the public entry point (auto ISA) agrees too */
                TEST_CHECK(qtts_linear(pool, &m, si == 1 ? NULL : bias, x, n, got) == 0, "qtts_linear failed");
                errstat s = check(&m, deq, x, n, got, want, qtts_cpu_isa() != QTTS_ISA_SCALAR && blk > 1, 0);
                TEST_CHECK(s.max_ratio <= 1.0, "qtts_linear %s n=%lld: error %.3g x bound", qtts_dtype_name(type),
                           (long long)n, s.max_ratio);
                free(x);
                free(want);
                free(got);
            }
            free(bias);
            free(deq);
            qtts_mat_free(&m);
        }
    }
    /* prefill-sized batch: the activation pack itself runs on the pool */
    const qtts_dtype big_types[] = {QTTS_Q8_0, QTTS_Q4_K, QTTS_BF16};
    for (size_t ti = 0; ti < 3; ti++) {
        int64_t rows = 40, cols = 1280, n = 64;
        qtts_mat m;
        float *deq;
        make_mat(&m, big_types[ti], rows, cols, &deq);
        float *x = malloc((size_t)(n * cols) * sizeof(float));
        float *want = malloc((size_t)(n * rows) * sizeof(float)), *got = malloc((size_t)(n * rows) * sizeof(float));
        for (int64_t i = 0; i < n * cols; i++) x[i] = gauss();
        TEST_CHECK(qtts_linear_ref(&m, NULL, x, n, want) == 0, "ref failed");
        for (int isa = QTTS_ISA_SCALAR; isa < QTTS_ISA_COUNT; isa++) {
            if (!qtts_isa_supported(f, (qtts_isa)isa)) continue;
            memset(got, 0xff, (size_t)(n * rows) * sizeof(float));
            TEST_CHECK(qtts_linear_isa(pool, &m, NULL, x, n, got, (qtts_isa)isa, 0) == 0, "qtts_linear_isa failed");
            errstat st = check(&m, deq, x, n, got, want, isa != QTTS_ISA_SCALAR && big_types[ti] != QTTS_BF16, 0);
            TEST_CHECK(st.max_ratio <= 1.0, "%s %s n=64: error %.3g x the bound", qtts_isa_name((qtts_isa)isa),
                       qtts_dtype_name(big_types[ti]), st.max_ratio);
        }
        free(x);
        free(want);
        free(got);
        free(deq);
        qtts_mat_free(&m);
    }
    /* interleaved weights */
    const qtts_dtype x16_types[] = {QTTS_Q8_0, QTTS_Q4_K};
    for (size_t ti = 0; ti < 2; ti++) {
        qtts_dtype type = x16_types[ti];
        int64_t blk = qtts_dtype_block_elems(type);
        const int64_t shapes[4][3] = {{16, blk, 0}, {48, blk * 3, 0}, {160, blk * 5, 0}, {48, blk * 5, 64}};
        for (int si = 0; si < 4; si++) {
            int64_t rows = shapes[si][0], cols = shapes[si][1];
            qtts_mat m, x16;
            float *deq;
            make_mat(&m, type, rows, cols, &deq);
            x16 = m;
            x16.owned = malloc(m.row_bytes * (size_t)rows);
            memcpy(x16.owned, m.data, m.row_bytes * (size_t)rows);
            x16.data = x16.owned;
            TEST_CHECK(qtts_mat_interleave_force(&x16, &err) == 0, "interleave: %s", err.msg);
            float *row = malloc((size_t)cols * sizeof(float));
            int same = 1;
            for (int64_t r = 0; r < rows; r++) {
                qtts_mat_row_f32(&x16, r, row);
                same &= !memcmp(row, deq + r * cols, (size_t)cols * sizeof(float));
            }
            TEST_CHECK(same, "%s x16 %lldx%lld: rows read back differ from the GGML rows", qtts_dtype_name(type),
                       (long long)rows, (long long)cols);
            /* the GGML bytes back from the interleaved layout, bit for bit (the GPU upload reads them) */
            unsigned char *ggml = malloc(m.row_bytes);
            int same_bytes = ggml != NULL;
            for (int64_t r = 0; ggml && r < rows; r++) {
                qtts_mat_row_ggml(&x16, r, ggml);
                same_bytes &= !memcmp(ggml, (const char *)m.data + (size_t)r * m.row_bytes, m.row_bytes);
            }
            TEST_CHECK(same_bytes, "%s x16 %lldx%lld: GGML rows from the interleaved layout differ from the originals",
                       qtts_dtype_name(type), (long long)rows, (long long)cols);
            free(ggml);
            float *bias = malloc((size_t)rows * sizeof(float));
            for (int64_t r = 0; r < rows; r++) bias[r] = gauss();
            const int64_t n_list[] = {1, 2, 3, 4, 5, 9, shapes[si][2]};
            for (size_t ni = 0; ni < sizeof n_list / sizeof n_list[0]; ni++) {
                int64_t n = n_list[ni];
                if (n <= 0) continue;
                float *x = malloc((size_t)(n * cols) * sizeof(float));
                float *want = malloc((size_t)(n * rows) * sizeof(float)), *got = malloc((size_t)(n * rows) * sizeof(float));
                for (int64_t i = 0; i < n * cols; i++) x[i] = gauss() * (i % 5 == 0 ? 3.0f : 1.0f);
                const float *b = ni % 2 ? NULL : bias;
                TEST_CHECK(qtts_linear_ref(&m, b, x, n, want) == 0, "ref failed");
                /* the reference reads interleaved rows back exactly: the same result bit for bit */
                TEST_CHECK(qtts_linear_ref(&x16, b, x, n, got) == 0 &&
                               !memcmp(got, want, (size_t)(n * rows) * sizeof(float)),
                           "%s x16 n=%lld: the reference differs on the interleaved copy", qtts_dtype_name(type),
                           (long long)n);
                for (int isa = QTTS_ISA_SCALAR; isa < QTTS_ISA_COUNT; isa++) {
                    if (!qtts_isa_supported(f, (qtts_isa)isa)) continue;
                    memset(got, 0xff, (size_t)(n * rows) * sizeof(float));
                    TEST_CHECK(qtts_linear_isa(pool, &x16, b, x, n, got, (qtts_isa)isa, 0) == 0,
                               "qtts_linear_isa failed");
                    errstat st = check(&m, deq, x, n, got, want, isa != QTTS_ISA_SCALAR, 0);
                    TEST_CHECK(st.max_ratio <= 1.0, "%s %s x16 %lldx%lld n=%lld: error %.3g x the bound",
                               qtts_isa_name((qtts_isa)isa), qtts_dtype_name(type), (long long)rows, (long long)cols,
                               (long long)n, st.max_ratio);
                    if (isa != QTTS_ISA_SCALAR) same_with_scalar_pack(pool, &x16, b, x, n, got, (qtts_isa)isa);
                    if (n == 1 && rows > 16) same_as_groups_alone(pool, &x16, b, x, (qtts_isa)isa);
                    if (n > 1 && isa != QTTS_ISA_SCALAR) same_as_tokens_alone(pool, &x16, b, x, n, got, (qtts_isa)isa);
                    if (si == 2 && n == 5)
                        printf("  %-6s %-5s x16 %lldx%lld n=%lld: max err/bound %.3f, rel rms err %.2e\n",
                               qtts_isa_name((qtts_isa)isa), qtts_dtype_name(type), (long long)rows, (long long)cols,
                               (long long)n, st.max_ratio, st.rel_rms);
                }
                free(x);
                free(want);
                free(got);
            }
            free(bias);
            free(row);
            free(deq);
            qtts_mat_free(&x16);
            qtts_mat_free(&m);
        }
        qtts_mat odd;
        float *odd_deq;
        make_mat(&odd, type, 37, blk, &odd_deq);
        TEST_CHECK(qtts_mat_interleave_force(&odd, &err) == -1, "37 rows were interleaved");
        free(odd_deq);
        qtts_mat_free(&odd);
    }
    /* Out of memory is an error, never a silent switch to another path. The
     * sizes below exceed the address space, so each allocation fails before
     * any weight, x or y is read (the pointers are dummies). */
    static const char dummy[64];
    float xy[1];
    const int64_t huge = (int64_t)1 << 52;
    qtts_mat q8 = {.type = QTTS_Q8_0, .rows = 16, .cols = 32, .row_bytes = 34, .data = dummy};
    for (int isa = QTTS_ISA_AVX2; isa < QTTS_ISA_COUNT; isa++) /* activation pack of `huge` tokens */
        if (qtts_isa_supported(f, (qtts_isa)isa))
            TEST_CHECK(qtts_linear_isa(pool, &q8, NULL, xy, huge, xy, (qtts_isa)isa, 0) == -1,
                       "%s: an impossible activation pack did not fail", qtts_isa_name((qtts_isa)isa));
    qtts_mat wide = {.type = QTTS_F32, .rows = 16, .cols = huge, .row_bytes = 0, .data = dummy};
    TEST_CHECK(qtts_linear_isa(pool, &wide, NULL, xy, 1, xy, QTTS_ISA_SCALAR, 0) == -1,
               "scalar: an impossible row scratch did not fail");
    wide.type = QTTS_Q8_0;
    wide.interleave = QTTS_INTERLEAVE;
    TEST_CHECK(qtts_linear_ref(&wide, NULL, xy, 1, xy) == -1, "ref: an impossible row buffer did not fail");
    /* the measurement's choice is what the loader passes down, and a matrix takes exactly that */
    {
        for (int i = 0; i < 2; i++) {
            const qtts_dtype t = i ? QTTS_Q4_K : QTTS_Q8_0;
            qtts_interleave_calibration cal;
            qtts_interleave_measure(pool, t, &cal);
            const qtts_interleave_calibration *ic = &cal;
            TEST_CHECK(!ic->measured || ic->threads == qtts_pool_size(pool), "%s: measured on the pool given (%d threads)",
                       qtts_dtype_name(t), ic->threads);
            TEST_CHECK(ic->measured == qtts_interleave_kernels(), "%s: measured exactly where x86 kernels run",
                       qtts_dtype_name(t));
            const int row_pf = ic->row_pf_gbs >= 1.03 * ic->row_gbs, x16_pf = ic->x16_pf_gbs >= 1.03 * ic->x16_gbs;
            const int avx2 = qtts_cpu_isa() == QTTS_ISA_AVX2;
            const double x16_step = x16_pf ? ic->x16_pf_gbs : ic->x16_gbs;
            const int step = avx2 && x16_step >= 1.03 * ic->x16_blocks_gbs;
            const double rows_best = row_pf ? ic->row_pf_gbs : ic->row_gbs,
                         x16_best = step || !avx2 ? x16_step : ic->x16_blocks_gbs;
            const int batch_win = 1.03 * x16_best >= rows_best && ic->x16_batch_gflops >= 1.15 * ic->row_batch_gflops;
            TEST_CHECK(ic->faster == (ic->measured && (x16_best >= 1.03 * rows_best || batch_win)),
                       "%s: choice follows the measurement", qtts_dtype_name(t));
            TEST_CHECK(!ic->measured || (ic->x16_batch_gflops > 0 && ic->row_batch_gflops > 0),
                       "%s: batches measured with both layouts", qtts_dtype_name(t));
            TEST_CHECK(ic->prefetch == (qtts_cpu_isa() == QTTS_ISA_AVX2 && ic->measured && (ic->faster ? x16_pf : row_pf)),
                       "%s: the prefetch choice follows the measurement", qtts_dtype_name(t));
            TEST_CHECK(qtts_cpu_isa() == QTTS_ISA_AVX2 || (ic->row_pf_gbs == 0 && ic->x16_pf_gbs == 0),
                       "%s: prefetching measured only where AVX2 kernels run", qtts_dtype_name(t));
            TEST_CHECK(ic->lockstep == (step && ic->faster) && (avx2 || (ic->x16_blocks_gbs == 0 && !ic->lockstep)),
                       "%s: the lockstep choice follows the measurement (AVX2 only)", qtts_dtype_name(t));
            qtts_mat m;
            float *deq;
            make_mat(&m, t, 32, 256, &deq);
            qtts_weight_layout layout = {{0, 0, 0}, {0, 0, 0}};
            *(t == QTTS_Q8_0 ? &layout.q8_0 : &layout.q4_k) = qtts_interleave_calibration_choice(ic);
            TEST_CHECK(qtts_mat_interleave(&m, &layout, &err) == 0 && (m.interleave != 0) == (ic->faster != 0),
                       "%s: a loaded matrix is interleaved iff measured faster", qtts_dtype_name(t));
            TEST_CHECK((m.prefetch != 0) == (ic->prefetch != 0),
                       "%s: a loaded matrix prefetches iff measured faster", qtts_dtype_name(t));
            TEST_CHECK((m.lockstep != 0) == (ic->lockstep != 0),
                       "%s: a loaded matrix reads in lockstep iff measured faster", qtts_dtype_name(t));
            printf("interleave %s: x16 %.1f GB/s (prefetching %.1f; groups by super-block %.1f), rows %.1f GB/s "
                   "(prefetching %.1f) (%.0f MB); 8 tokens %.0f vs %.0f GFLOP/s (%.0f ms) -> %s%s%s\n",
                   qtts_dtype_name(t), ic->x16_gbs, ic->x16_pf_gbs, ic->x16_blocks_gbs, ic->row_gbs, ic->row_pf_gbs,
                   ic->buffer_mb, ic->x16_batch_gflops, ic->row_batch_gflops, ic->ms,
                   ic->faster ? "interleaved" : "rows", ic->prefetch ? ", prefetching" : "",
                   ic->lockstep ? ", groups in lockstep" : "");
            qtts_mat_free(&m);
            free(deq);
        }
    }
    qtts_pool_free(pool);
    return test_finish("test_linear");
}
