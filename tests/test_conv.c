/* Conv kernels: every SIMD path vs. the scalar twin, the packed layouts vs.
 * naive PyTorch-semantics formulas (causal Conv1d, trimmed ConvTranspose1d),
 * and SnakeBeta's polynomial sine vs. libm. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "tensor/conv.h"
#include "tensor/ops.h"
#include "tensor/conv_kernels.h"
#include "tensor/conv_winograd.h"
#include "tensor/cpu.h"
#include "tensor/tensor.h"
#include "tensor/linear.h"

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return ((*s >> 8) / 16777216.0f) * 2.0f - 1.0f;
}

static float *rand_buf(int64_t n, unsigned *seed, float scale) {
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; i < n; i++) p[i] = frand(seed) * scale;
    return p;
}

static const qtts_conv_isa k_isas[] = {QTTS_CONV_ISA_SCALAR, QTTS_CONV_ISA_AVX2, QTTS_CONV_ISA_AVX512,
                                       QTTS_CONV_ISA_NEON};

int main(void) {
    unsigned seed = 99;
    qtts_err err = {0};
    qtts_pool *pool = qtts_pool_create(2, &err);
    TEST_CHECK(pool != NULL, "pool: %s", err.msg);
    printf("best conv ISA here: %s\n", qtts_conv_isa_name(QTTS_CONV_ISA_AUTO));

    /* causal conv: odd row counts, time tails, dilations */
    int64_t cases[][5] = {/* c_out, c_in, k, dil, T */
                          {8, 8, 7, 1, 48},  {5, 3, 3, 1, 1},   {13, 9, 7, 3, 47}, {16, 16, 7, 9, 100},
                          {1, 12, 7, 1, 49}, {24, 32, 1, 1, 17}, {9, 4, 2, 1, 200}, {64, 48, 7, 3, 150},
                          {12, 5, 3, 2, 60}, {3, 7, 7, 1, 33},
                          /* 1-tap, several row blocks, T past one 24-sample panel: AVX2 packs x into panels */
                          {20, 40, 1, 1, 77}, {16, 9, 1, 1, 48}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t co = cases[c][0], ci = cases[c][1], k = cases[c][2], dil = cases[c][3], T = cases[c][4];
        int64_t H = (k - 1) * dil, ldx = H + T + 3, ldy = T + 5;
        float *w = rand_buf(co * ci * k, &seed, 0.5f), *b = rand_buf(co, &seed, 0.1f);
        float *x = rand_buf(ci * ldx, &seed, 1.0f), *add = rand_buf(co * ldy, &seed, 1.0f);
        float *want = calloc((size_t)(co * ldy), sizeof(float)), *got = calloc((size_t)(co * ldy), sizeof(float));
        for (int64_t o = 0; o < co; o++)
            for (int64_t t = 0; t < T; t++) {
                double acc = b[o] + add[o * ldy + t];
                for (int64_t i = 0; i < ci; i++)
                    for (int64_t kk = 0; kk < k; kk++) acc += (double)w[(o * ci + i) * k + kk] * x[i * ldx + t + kk * dil];
                want[o * ldy + t] = (float)acc;
            }
        qtts_conv cv;
        TEST_CHECK(qtts_conv_init(&cv, w, b, co, ci, k, dil, &err) == 0, "init: %s", err.msg);
        char what[128];
        qtts_conv1d_cm_ref(&cv, x, ldx, T, got, ldy, add, ldy);
        snprintf(what, sizeof what, "conv ref %lldx%lldx%lld d%lld T%lld", (long long)co, (long long)ci,
                 (long long)k, (long long)dil, (long long)T);
        TEST_NEAR(got, want, (size_t)(co * ldy), 1e-5, what);
        for (size_t s = 0; s < sizeof k_isas / sizeof k_isas[0]; s++) {
            if (!qtts_conv_isa_supported(k_isas[s])) continue;
            memset(got, 0, sizeof(float) * (size_t)(co * ldy));
            qtts_conv1d_cm_isa(pool, &cv, x, ldx, T, got, ldy, add, ldy, k_isas[s]);
            snprintf(what, sizeof what, "conv %s %lldx%lldx%lld d%lld T%lld", qtts_conv_isa_name(k_isas[s]),
                     (long long)co, (long long)ci, (long long)k, (long long)dil, (long long)T);
            TEST_NEAR(got, want, (size_t)(co * ldy), 1e-5, what);
            /* padding columns untouched */
            int clean = 1;
            for (int64_t o = 0; o < co; o++)
                for (int64_t t = T; t < ldy; t++) clean &= got[o * ldy + t] == 0.0f;
            TEST_CHECK(clean, "%s wrote past T", what);
        }
        /* bf16 form: against a double reference on the bf16-rounded operands
         * (products of bf16 values are exact in f32: only the f32 sums differ) */
        if (qtts_conv_bf16_supported()) {
            TEST_CHECK(qtts_conv_to_bf16(&cv, &err) == 0 && cv.wbf && !cv.w, "to bf16: %s", err.msg);
            float *want_bf = calloc((size_t)(co * ldy), sizeof(float));
            double rel = 0, scale = 0;
            for (int64_t o = 0; o < co; o++)
                for (int64_t t = 0; t < T; t++) {
                    double acc = b[o] + add[o * ldy + t];
                    for (int64_t i = 0; i < ci; i++)
                        for (int64_t kk = 0; kk < k; kk++)
                            acc += (double)qtts_bf16_to_f32(qtts_f32_to_bf16(w[(o * ci + i) * k + kk])) *
                                   qtts_bf16_to_f32(qtts_f32_to_bf16(x[i * ldx + t + kk * dil]));
                    want_bf[o * ldy + t] = (float)acc;
                    rel = fmax(rel, fabs(acc - want[o * ldy + t]));
                    scale = fmax(scale, fabs(want[o * ldy + t]));
                }
            for (int pass = 0; pass < 2; pass++) {
                memset(got, 0, sizeof(float) * (size_t)(co * ldy));
                if (pass) qtts_conv1d_cm_isa(pool, &cv, x, ldx, T, got, ldy, add, ldy, qtts_conv_isa_best());
                else qtts_conv1d_cm_ref(&cv, x, ldx, T, got, ldy, add, ldy);
                snprintf(what, sizeof what, "conv bf16 %s %lldx%lldx%lld d%lld T%lld",
                         pass ? qtts_conv_isa_name(qtts_conv_isa_best()) : "ref",
                         (long long)co, (long long)ci, (long long)k, (long long)dil, (long long)T);
                TEST_NEAR(got, want_bf, (size_t)(co * ldy), 1e-4, what);
            }
            /* rounding both operands to 8 significant bits: a few parts in 1e3 of the output scale */
            TEST_CHECK(rel <= 1e-2 * scale, "bf16 conv %lldx%lld: off the f32 result by %.3g (scale %.3g)",
                       (long long)co, (long long)ci, rel, scale);
            free(want_bf);
        } else {
            TEST_CHECK(qtts_conv_to_bf16(&cv, &err) == -1 && strstr(err.msg, "BF16"), "bf16 refused clearly");
        }
        qtts_conv_free(&cv);
        free(w);
        free(b);
        free(x);
        free(add);
        free(want);
        free(got);
    }

    /* bf16 channel-pair packing: the SIMD packers equal the scalar one bit for bit, NaN, infinities,
     * ties and odd lengths included */
    {
        enum { NP = 67 };
        float x0[NP], x1[NP];
        for (int i = 0; i < NP; i++) {
            x0[i] = frand(&seed) * 100.0f;
            x1[i] = frand(&seed) * 1e-3f;
        }
        x0[3] = NAN, x0[4] = INFINITY, x1[5] = -INFINITY, x0[6] = 1.00390625f /* a tie: 1 + 2^-8 */;
        x1[7] = -0.0f, x0[8] = 1e-40f /* subnormal */;
        uint32_t want_p[NP], got_p[NP];
        for (int odd = 0; odd < 2; odd++) {
            qtts_bf16_pairs_row_scalar(x0, odd ? NULL : x1, want_p, NP);
            int simd = 0;
#if defined(__x86_64__)
            if (qtts_conv_bf16_supported()) qtts_bf16_pairs_row_avx512(x0, odd ? NULL : x1, got_p, NP), simd = 1;
#elif defined(__aarch64__)
            if (qtts_isa_supported(qtts_cpu_features_get(), QTTS_ISA_NEON))
                qtts_bf16_pairs_row_neon(x0, odd ? NULL : x1, got_p, NP), simd = 1;
#endif
            /* vcvtneps2bf16 flushes subnormal inputs to zero: there a signed zero is also right */
            int same = 1;
            for (int i = 0; i < NP && simd; i++)
                for (int h = 0; h < 2; h++) {
                    uint16_t g = (uint16_t)(got_p[i] >> (16 * h)), w = (uint16_t)(want_p[i] >> (16 * h));
                    float in = h ? (odd ? 0.0f : x1[i]) : x0[i];
                    int sub = fpclassify(in) == FP_SUBNORMAL;
                    if (g != w && !(sub && (g & 0x7fff) == 0)) {
                        if (same) fprintf(stderr, "pairs[%d] half %d: %04x vs scalar %04x (in %g)\n", i, h, g, w, in);
                        same = 0;
                    }
                }
            if (simd)
                TEST_CHECK(same, "bf16 pairs (%s): SIMD packer differs from scalar", odd ? "odd channel" : "two channels");
        }
    }

    /* transposed conv (kernel k, stride s, output trimmed to L*s): channel-major phases and time-major matrix */
    int64_t tcases[][5] = {/* c_in, c_out, k, s, L */ {16, 8, 16, 8, 5}, {8, 5, 10, 5, 7}, {6, 3, 6, 3, 33},
                           {4, 4, 2, 2, 9}, {5, 7, 5, 2, 6}};
    for (size_t c = 0; c < sizeof tcases / sizeof tcases[0]; c++) {
        int64_t ci = tcases[c][0], co = tcases[c][1], k = tcases[c][2], s = tcases[c][3], L = tcases[c][4];
        float *w = rand_buf(ci * co * k, &seed, 0.5f), *b = rand_buf(co, &seed, 0.1f);
        float *x = rand_buf(ci * L, &seed, 1.0f);
        int64_t full = (L - 1) * s + k, Tout = L * s;
        double *ref = calloc((size_t)(co * full), sizeof(double));
        for (int64_t i = 0; i < ci; i++)
            for (int64_t t = 0; t < L; t++)
                for (int64_t o = 0; o < co; o++)
                    for (int64_t kk = 0; kk < k; kk++) ref[o * full + t * s + kk] += (double)x[i * L + t] * w[(i * co + o) * k + kk];
        float *want = malloc(sizeof(float) * (size_t)(co * Tout));
        for (int64_t o = 0; o < co; o++)
            for (int64_t t = 0; t < Tout; t++) want[o * Tout + t] = (float)(ref[o * full + t] + b[o]);
        qtts_conv cv;
        TEST_CHECK(qtts_conv_init_transposed(&cv, w, b, ci, co, k, s, &err) == 0, "init T: %s", err.msg);
        int64_t H = qtts_conv_history(&cv);
        float *xp = calloc((size_t)(ci * (H + L)), sizeof(float));
        for (int64_t i = 0; i < ci; i++) memcpy(xp + i * (H + L) + H, x + i * L, sizeof(float) * (size_t)L);
        float *ph = malloc(sizeof(float) * (size_t)(s * co * L)), *got = malloc(sizeof(float) * (size_t)(co * Tout));
        qtts_conv1d_cm(pool, &cv, xp, H + L, L, ph, L, NULL, 0);
        qtts_conv_interleave(pool, ph, L, co, s, L, got, Tout);
        char what[96];
        snprintf(what, sizeof what, "convT cm %lld->%lld k%lld s%lld", (long long)ci, (long long)co, (long long)k,
                 (long long)s);
        TEST_NEAR(got, want, (size_t)(co * Tout), 1e-5, what);
        /* time-major: im2col over [H + L][ci] rows, linear, output rows of co = consecutive samples */
        int64_t taps = 0;
        float *m = qtts_conv_tm_transposed_matrix(w, ci, co, k, s, &taps, &err);
        TEST_CHECK(m && taps == H + 1, "tm matrix: %s", err.msg);
        float *xh = calloc((size_t)((H + L) * ci), sizeof(float));
        for (int64_t t = 0; t < L; t++)
            for (int64_t i = 0; i < ci; i++) xh[(H + t) * ci + i] = x[i * L + t];
        float *col = malloc(sizeof(float) * (size_t)(L * ci * taps)), *yt = malloc(sizeof(float) * (size_t)(Tout * co));
        qtts_im2col_tm(xh, ci, ci, L, taps, 1, col);
        float *bt = malloc(sizeof(float) * (size_t)(s * co));
        for (int64_t j = 0; j < s; j++) memcpy(bt + j * co, b, sizeof(float) * (size_t)co);
        qtts_mat mm = {.type = QTTS_F32, .rows = s * co, .cols = ci * taps, .row_bytes = sizeof(float) * (size_t)(ci * taps),
                       .data = m};
        qtts_linear_ref(&mm, bt, col, L, yt);
        for (int64_t t = 0; t < Tout; t++)
            for (int64_t o = 0; o < co; o++) got[o * Tout + t] = yt[t * co + o];
        snprintf(what, sizeof what, "convT tm %lld->%lld k%lld s%lld", (long long)ci, (long long)co, (long long)k,
                 (long long)s);
        TEST_NEAR(got, want, (size_t)(co * Tout), 1e-5, what);
        qtts_conv_free(&cv);
        free(w); free(b); free(x); free(ref); free(want); free(xp); free(ph); free(got);
        free(m); free(xh); free(col); free(yt); free(bt);
    }

    /* packed gemm (time-major layers): odd M, N not a multiple of the panel, bias row and full add */
    {
        /* N = 20 and 120: the int16 panels (16 columns) reach past the f32 ones (24 on AVX2) */
        int64_t shapes[][3] = {{1, 5, 3}, {4, 100, 64}, {9, 48, 7}, {16, 97, 130}, {3, 1, 1}, {2, 20, 9}, {5, 120, 33}};
        for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
            int64_t M = shapes[c][0], N = shapes[c][1], K = shapes[c][2], lda = K + 2;
            float *A = rand_buf(M * lda, &seed, 1), *W = rand_buf(N * K, &seed, 1), *bias = rand_buf(N, &seed, 1);
            float *want = malloc(sizeof(float) * (size_t)(M * N)), *got = malloc(sizeof(float) * (size_t)(M * N));
            float *pack = malloc(sizeof(float) * qtts_gemm_pack_size(M, K));
            qtts_gemm_b B;
            TEST_CHECK(qtts_gemm_b_init(&B, W, N, K, &err) == 0, "gemm b: %s", err.msg);
            qtts_gemm_ref(M, N, K, A, lda, W, want, N, bias, 0);
            qtts_gemm(pool, M, A, lda, &B, got, N, bias, 0, pack);
            char what[64];
            snprintf(what, sizeof what, "gemm %lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
            TEST_NEAR(got, want, (size_t)(M * N), 1e-5 * (1 + sqrt((double)K)), what);
            qtts_gemm_ref(M, N, K, A, lda, W, want, N, NULL, 0);
            qtts_gemm(pool, M, A, lda, &B, got, N, NULL, 0, pack);
            TEST_NEAR(got, want, (size_t)(M * N), 1e-5 * (1 + sqrt((double)K)), what);
            /* f16 form: the bits of the f32 product over the f16-rounded weights (the same tiles run on
             * each panel widened exactly), on 2 threads, inline and on a pool of 1 */
            {
                float *Wr = malloc(sizeof(float) * (size_t)(N * K)), *want16 = malloc(sizeof(float) * (size_t)(M * N));
                uint16_t *h = malloc(sizeof(uint16_t) * (size_t)(N * K));
                qtts_f32_to_f16_row(W, h, N * K);
                qtts_f16_to_f32_row(h, Wr, N * K);
                qtts_gemm_b Br, B16 = B;
                TEST_CHECK(qtts_gemm_b_init(&Br, Wr, N, K, &err) == 0, "gemm b: %s", err.msg);
                float *pack16 = malloc(sizeof(float) * qtts_gemm_work_size(M, &B, pool));
                B16.ph = qtts_gemm_b_f16_panels(&B, &err);
                B16.p = NULL;
                TEST_CHECK(B16.ph != NULL && qtts_gemm_work_size(M, &B16, pool) > qtts_gemm_pack_size(M, K),
                           "gemm f16 panels: %s", err.msg);
                free(pack16);
                pack16 = malloc(sizeof(float) * qtts_gemm_work_size(M, &B16, pool));
                qtts_gemm(pool, M, A, lda, &Br, want16, N, bias, 0, pack);
                for (int pass = 0; pass < 2; pass++) {
                    memset(got, 0, sizeof(float) * (size_t)(M * N));
                    qtts_gemm(pass ? NULL : pool, M, A, lda, &B16, got, N, bias, 0, pack16);
                    TEST_CHECK(!memcmp(got, want16, sizeof(float) * (size_t)(M * N)),
                               "gemm f16 %lldx%lldx%lld (%s): not the bits of f32 on rounded weights", (long long)M,
                               (long long)N, (long long)K, pass ? "inline" : "2 threads");
                }
                qtts_gemm_ref(M, N, K, A, lda, W, want, N, bias, 0); /* f16 weights: within their rounding */
                TEST_NEAR(got, want, (size_t)(M * N), 1e-3 * (1 + sqrt((double)K)), "gemm f16 near f32");
                free(B16.ph);
                qtts_gemm_b_free(&Br);
                free(Wr); free(want16); free(h); free(pack16);
            }
            /* int16 form: against the exact integer products (A quantized per row, B per column) scaled in
             * double, and within the 14-bit quantization of the f32 result; 2 threads and inline agree */
            if (qtts_conv_i16_supported()) {
                qtts_gemm_b Bi = B;
                TEST_CHECK(qtts_gemm_b_i16_panels(&B, &Bi.pi16, &Bi.si16, &err) == 0, "gemm i16 panels: %s", err.msg);
                Bi.p = NULL;
                const int64_t mp = (M + QTTS_CONV_MR - 1) / QTTS_CONV_MR * QTTS_CONV_MR, c2n = (K + 1) / 2;
                float *packi = malloc(sizeof(float) * qtts_gemm_work_size(M, &Bi, pool)), *sa = malloc(sizeof(float) * (size_t)mp);
                uint32_t *qa = malloc(sizeof(uint32_t) * (size_t)(mp * c2n));
                float *inl = malloc(sizeof(float) * (size_t)(M * N));
                qtts_i16_quantize_rows(A, lda, M, K, mp, qa, sa);
                double worst = 0, num = 0, den = 0;
                qtts_gemm(pool, M, A, lda, &Bi, got, N, bias, 0, packi);
                qtts_gemm(NULL, M, A, lda, &Bi, inl, N, bias, 0, packi);
                qtts_gemm_ref(M, N, K, A, lda, W, want, N, bias, 0);
                const int64_t P = QTTS_CONV_I16_PANEL;
                for (int64_t m = 0; m < M; m++)
                    for (int64_t n = 0; n < N; n++) {
                        int64_t isum = 0;
                        for (int64_t c2 = 0; c2 < c2n; c2++) {
                            const uint32_t a = qa[(m / QTTS_CONV_MR * c2n + c2) * QTTS_CONV_MR + m % QTTS_CONV_MR];
                            const uint32_t w = Bi.pi16[((n / P) * c2n + c2) * P + n % P];
                            isum += (int64_t)(int16_t)(a & 0xFFFF) * (int16_t)(w & 0xFFFF) +
                                    (int64_t)(int16_t)(a >> 16) * (int16_t)(w >> 16);
                        }
                        const double exact = (double)isum * sa[m] * Bi.si16[n] + bias[n];
                        worst = fmax(worst, fabs(got[m * N + n] - exact) / (1 + fabs(exact)));
                        const double e = (double)got[m * N + n] - want[m * N + n], v = (double)want[m * N + n] - bias[n];
                        num += e * e;
                        den += v * v;
                    }
                const double snr = 10 * log10((den + 1e-30) / (num + 1e-30));
                TEST_CHECK(worst <= 1e-5 && snr >= 60 && !memcmp(got, inl, sizeof(float) * (size_t)(M * N)),
                           "gemm i16 %lldx%lldx%lld: %.3g off the integer products, SNR %.1f dB against f32 (floor 60), "
                           "pool and inline %s", (long long)M, (long long)N, (long long)K, worst, snr,
                           memcmp(got, inl, sizeof(float) * (size_t)(M * N)) ? "differ" : "agree");
                free(Bi.pi16); free(Bi.si16); free(packi); free(sa); free(qa); free(inl);
            } else {
                uint32_t *pi;
                float *si;
                TEST_CHECK(qtts_gemm_b_i16_panels(&B, &pi, &si, &err) == -1 && strstr(err.msg, "AVX2"),
                           "i16 gemm refused clearly: %s", err.msg);
            }
            /* bf16 form: against a double reference on the bf16-rounded operands (their products are exact
             * in f32: only the sums' rounding differs) */
            if (qtts_conv_bf16_supported()) {
                uint32_t *pbf = qtts_gemm_b_bf16_panels(&B, &err);
                TEST_CHECK(pbf != NULL, "gemm bf16 panels: %s", err.msg);
                free(B.p);
                B.p = NULL;
                B.pbf = pbf;
                for (int64_t m = 0; m < M; m++)
                    for (int64_t n = 0; n < N; n++) {
                        double acc = bias[n];
                        for (int64_t k = 0; k < K; k++)
                            acc += (double)qtts_bf16_to_f32(qtts_f32_to_bf16(A[m * lda + k])) *
                                   qtts_bf16_to_f32(qtts_f32_to_bf16(W[n * K + k]));
                        want[m * N + n] = (float)acc;
                    }
                if (pbf) qtts_gemm(pool, M, A, lda, &B, got, N, bias, 0, pack);
                snprintf(what, sizeof what, "gemm bf16 %lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
                TEST_NEAR(got, want, (size_t)(M * N), 1e-5 * (1 + sqrt((double)K)), what);
            } else {
                TEST_CHECK(qtts_gemm_b_bf16_panels(&B, &err) == NULL && strstr(err.msg, "BF16"),
                           "bf16 gemm refused clearly: %s", err.msg);
            }
            qtts_gemm_b_free(&B);
            free(A); free(W); free(bias); free(want); free(got); free(pack);
        }
    }

    /* depthwise time-major conv */
    {
        int64_t C = 10, T = 9, k = 7;
        float *wt = rand_buf(k * C, &seed, 1), *b = rand_buf(C, &seed, 1), *xh = rand_buf((T + k - 1) * C, &seed, 1);
        float *y = malloc(sizeof(float) * (size_t)(T * C)), *want = malloc(sizeof(float) * (size_t)(T * C));
        for (int64_t t = 0; t < T; t++)
            for (int64_t c = 0; c < C; c++) {
                double a = b[c];
                for (int64_t kk = 0; kk < k; kk++) a += (double)wt[kk * C + c] * xh[(t + kk) * C + c];
                want[t * C + c] = (float)a;
            }
        qtts_dwconv_tm(xh, C, T, wt, k, b, y);
        TEST_NEAR(y, want, (size_t)(T * C), 1e-5, "depthwise tm");
        free(wt); free(b); free(xh); free(y); free(want);
    }

    /* SnakeBeta: polynomial sin^2 vs libm, all ISAs, tails, large arguments */
    {
        int64_t n = 1000;
        float *x = rand_buf(n, &seed, 40.0f), *want = malloc(sizeof(float) * (size_t)n), *got = malloc(sizeof(float) * (size_t)n);
        x[0] = 0; x[1] = 1e6f; x[2] = -3e4f; x[3] = 1.5707964f; x[4] = -3.1415927f;
        float eas[] = {1.0f, 0.37f, 2.9f}, ibs[] = {1.0f, 0.8f, 2.5f};
        for (int p = 0; p < 3; p++) {
            qtts_snake_row_libm(x, want, n, eas[p], ibs[p]);
            for (size_t s = 0; s < sizeof k_isas / sizeof k_isas[0]; s++) {
                if (!qtts_conv_isa_supported(k_isas[s])) continue;
                for (int64_t len = n; len > n - 20; len -= 7) {
                    memset(got, 0, sizeof(float) * (size_t)n);
                    qtts_snake_row_isa(x + 5, got + 5, len - 5, eas[p], ibs[p], k_isas[s]);
                    char what[64];
                    snprintf(what, sizeof what, "snake %s n=%lld", qtts_conv_isa_name(k_isas[s]), (long long)len);
                    /* |x| <= 40: one ulp of x (3.8e-6) plus the sine error times inv_b */
                    TEST_NEAR(got + 5, want + 5, (size_t)(len - 5), 4e-6 + 1e-6 * ibs[p], what);
                    TEST_CHECK(len == n || got[len] == 0.0f, "%s wrote past n", what);
                }
                qtts_snake_row_isa(x, got, 5, eas[p], ibs[p], k_isas[s]);
                for (int i = 0; i < 5; i++)
                    TEST_CHECK(isfinite(got[i]) && got[i] >= x[i] - 1e-6f * fabsf(x[i]) &&
                                   got[i] <= x[i] + ibs[p] * 1.0001f + 1e-6f * fabsf(x[i]),
                               "snake %s special x=%g -> %g", qtts_conv_isa_name(k_isas[s]), x[i], got[i]);
            }
        }
        free(x); free(want); free(got);
    }

    /* Winograd form: against the double reference of the direct conv, at a
     * bound scaled by the output's size (its transforms add rounding: F(4, 7)
     * ~7x the direct conv's error); the in-place residual add, tails shorter
     * than a tile period, and every ISA's transforms (bit-identical to the
     * scalar twins by construction: same fused multiply-adds in the same order). */
    {
        int64_t wcases[][5] = {/* c_out, c_in, k, dil, T */
                               {16, 16, 7, 9, 1},  {16, 16, 7, 9, 5},   {13, 9, 7, 3, 47}, {64, 48, 7, 1, 150},
                               {24, 40, 7, 9, 100}, {8, 8, 3, 1, 48},   {5, 3, 2, 2, 33},  {96, 96, 7, 3, 385},
                               /* 32 tiles at F(1, 7): two tail panels of 16 (conv_winograd.h) */
                               {16, 9, 7, 1, 32}};
        const int ms[] = {1, 2, 3, 4};
        for (size_t c = 0; c < sizeof wcases / sizeof wcases[0]; c++)
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                int64_t co = wcases[c][0], ci = wcases[c][1], k = wcases[c][2], dil = wcases[c][3], T = wcases[c][4];
                int64_t H = (k - 1) * dil, ldx = H + T + 3, ldy = T + 5;
                float *w = rand_buf(co * ci * k, &seed, 0.5f), *b = rand_buf(co, &seed, 0.1f);
                float *x = rand_buf(ci * ldx, &seed, 1.0f), *add = rand_buf(co * ldy, &seed, 1.0f);
                float *want = calloc((size_t)(co * ldy), sizeof(float)), *got = malloc(sizeof(float) * (size_t)(co * ldy));
                float *ref = malloc(sizeof(float) * (size_t)(co * ldy));
                double scale = 1.0;
                for (int64_t o = 0; o < co; o++)
                    for (int64_t t = 0; t < T; t++) {
                        double acc = b[o] + add[o * ldy + t];
                        for (int64_t i = 0; i < ci; i++)
                            for (int64_t kk = 0; kk < k; kk++)
                                acc += (double)w[(o * ci + i) * k + kk] * x[i * ldx + t + kk * dil];
                        want[o * ldy + t] = (float)acc;
                        scale = fmax(scale, fabs(acc));
                    }
                for (int64_t i = 0; i < co * ldy; i++)
                    if (i % ldy >= T) want[i] = 7.0f; /* padding sentinel: must stay */
                qtts_conv cv;
                TEST_CHECK(qtts_conv_init(&cv, w, b, co, ci, k, dil, &err) == 0, "init: %s", err.msg);
                TEST_CHECK(qtts_conv_to_winograd(&cv, ms[mi], &err) == 0 && cv.wg && !cv.w, "to winograd: %s",
                           err.msg);
                char what[128];
                snprintf(what, sizeof what, "winograd F(%d,%lld) ref %lldx%lld d%lld T%lld", ms[mi], (long long)k,
                         (long long)co, (long long)ci, (long long)dil, (long long)T);
                for (int64_t i = 0; i < co * ldy; i++) ref[i] = i % ldy < T ? 0.0f : 7.0f; /* padding sentinel */
                qtts_conv1d_cm_ref(&cv, x, ldx, T, ref, ldy, add, ldy);
                const double tol = 1e-6 * scale * sqrt((double)(ci * k));
                TEST_NEAR(ref, want, (size_t)(co * ldy), tol, what);
                for (size_t s = 0; s < sizeof k_isas / sizeof k_isas[0]; s++) {
                    if (!qtts_conv_isa_supported(k_isas[s])) continue;
                    memcpy(got, add, sizeof(float) * (size_t)(co * ldy)); /* add aliasing y: the residual form */
                    for (int64_t i = 0; i < co * ldy; i++)
                        if (i % ldy >= T) got[i] = 7.0f;
                    qtts_conv1d_cm_isa(pool, &cv, x, ldx, T, got, ldy, got, ldy, k_isas[s]);
                    snprintf(what, sizeof what, "winograd F(%d,%lld) %s %lldx%lld d%lld T%lld in place", ms[mi],
                             (long long)k, qtts_conv_isa_name(k_isas[s]), (long long)co, (long long)ci, (long long)dil,
                             (long long)T);
                    TEST_NEAR(got, want, (size_t)(co * ldy), tol, what);
                }
                qtts_conv_free(&cv);
                free(w), free(b), free(x), free(add), free(want), free(got), free(ref);
            }
        /* the transforms' SIMD twins give the scalar twins' bits: the unrolled bodies (F(4, 7), F(2, 7),
         * F(4, 2)) and the generic loop (F(3, 3)) */
        qtts_winograd_plan pl;
        TEST_CHECK(qtts_winograd_plan_init(&pl, 8, 7, &err) == -1 && strstr(err.msg, "points"), "F(8,7) refused");
        const int plans[][2] = {{4, 7}, {2, 7}, {4, 2}, {3, 3}};
        for (size_t pi = 0; pi < sizeof plans / sizeof plans[0]; pi++) {
            TEST_CHECK(qtts_winograd_plan_init(&pl, plans[pi][0], plans[pi][1], &err) == 0, "plan F(%d,%d): %s",
                       plans[pi][0], plans[pi][1], err.msg);
            const int64_t d = 3, ntp = 24, L = ntp + ((pl.n - 1) / pl.m) * d;
            float *ph = rand_buf(pl.m * L, &seed, 1.0f), *u0 = calloc(pl.n * ntp, sizeof(float));
            float *u1 = calloc(pl.n * ntp, sizeof(float)), *y0 = calloc(pl.m * ntp, sizeof(float));
            float *y1 = calloc(pl.m * ntp, sizeof(float));
            const float *X[QTTS_WINOGRAD_NMAX];
            for (int q = 0; q < pl.m; q++) X[q] = ph + q * L;
            qtts_winograd_input_scalar(&pl, X, d, ntp, u0, ntp, 1, 0);
            qtts_winograd_output_scalar(&pl, u0, ntp, ntp, y0, ntp);
#if defined(__x86_64__) || defined(_M_X64)
            if (qtts_conv_isa_supported(QTTS_CONV_ISA_AVX2)) {
                qtts_winograd_input_avx2(&pl, X, d, ntp, u1, ntp, 1, 0);
                qtts_winograd_output_avx2(&pl, u1, ntp, ntp, y1, ntp);
                TEST_CHECK(!memcmp(u0, u1, sizeof(float) * pl.n * ntp) && !memcmp(y0, y1, sizeof(float) * pl.m * ntp),
                           "winograd F(%d,%d) transforms: AVX2 differs from the scalar twin", pl.m, pl.k);
            }
#elif defined(__aarch64__)
            qtts_winograd_input_neon(&pl, X, d, ntp, u1, ntp, 1, 0);
            qtts_winograd_output_neon(&pl, u1, ntp, ntp, y1, ntp);
            TEST_CHECK(!memcmp(u0, u1, sizeof(float) * pl.n * ntp) && !memcmp(y0, y1, sizeof(float) * pl.m * ntp),
                       "winograd F(%d,%d) transforms: NEON differs from the scalar twin", pl.m, pl.k);
#endif
            free(ph), free(u0), free(u1), free(y0), free(y1);
        }
    }

    /* One work memory kept across calls of different convs and lengths (as the decoder keeps it) gives the
     * bits of memory allocated per call: Winograd tiles, 1x1 input panels, a direct conv (none), bf16 pairs. */
    {
        qtts_conv cvs[4];
        const int64_t shapes[4][4] = {/* c, k, dil, winograd m */
                                      {48, 7, 3, 4},
                                      {40, 1, 1, 0},
                                      {24, 7, 9, 0},
                                      {32, 2, 1, 4}};
        int ok = 1;
        for (int i = 0; i < 4; i++) {
            const int64_t c = shapes[i][0], k = shapes[i][1];
            float *w = rand_buf(c * c * k, &seed, 0.5f), *b = rand_buf(c, &seed, 0.1f);
            ok &= qtts_conv_init(&cvs[i], w, b, c, c, k, shapes[i][2], &err) == 0;
            if (ok && shapes[i][3]) ok &= qtts_conv_to_winograd(&cvs[i], (int)shapes[i][3], &err) == 0;
            free(w), free(b);
        }
        TEST_CHECK(ok, "work memory convs: %s", err.msg);
        qtts_conv_ws ws = {0};
        const int64_t lens[] = {200, 9, 64, 333, 30};
        for (int round = 0; ok && round < 2; round++)
            for (int i = 0; i < 4; i++)
                for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
                    const int64_t c = cvs[i].c_in, T = lens[(li + (size_t)round) % 5];
                    const int64_t ldx = T + qtts_conv_history(&cvs[i]);
                    float *x = rand_buf(c * ldx, &seed, 1.0f), *a = malloc(sizeof(float) * (size_t)(c * T)),
                          *g = malloc(sizeof(float) * (size_t)(c * T));
                    TEST_CHECK(qtts_conv1d_cm(pool, &cvs[i], x, ldx, T, a, T, NULL, 0) == 0 &&
                                   qtts_conv1d_cm_ws(pool, &cvs[i], x, ldx, T, g, T, NULL, 0, &ws) == 0,
                               "conv with and without work memory");
                    TEST_CHECK(!memcmp(a, g, sizeof(float) * (size_t)(c * T)),
                               "kept work memory changes the result (conv %d, T %lld)", i, (long long)T);
                    free(x), free(a), free(g);
                }
        TEST_CHECK(ws.cap > 0, "the work memory was used");
#if defined(__x86_64__) || defined(_M_X64) || defined(__aarch64__)
        if (qtts_conv_bf16_supported()) {
            float *w = rand_buf(16 * 16 * 3, &seed, 0.5f), *b = rand_buf(16, &seed, 0.1f);
            float *x = rand_buf(16 * 104, &seed, 1.0f);
            float *a = malloc(sizeof(float) * 16 * 100), *g = malloc(sizeof(float) * 16 * 100);
            qtts_conv bf;
            TEST_CHECK(qtts_conv_init(&bf, w, b, 16, 16, 3, 2, &err) == 0 && qtts_conv_to_bf16(&bf, &err) == 0, "bf16");
            qtts_conv1d_cm(pool, &bf, x, 104, 100, a, 100, NULL, 0);
            qtts_conv1d_cm_ws(pool, &bf, x, 104, 100, g, 100, NULL, 0, &ws);
            TEST_CHECK(!memcmp(a, g, sizeof(float) * 16 * 100), "bf16 conv: kept work memory changes the result");
            qtts_conv_free(&bf);
            free(w), free(b), free(x), free(a), free(g);
        }
#endif
        qtts_conv_ws_free(&ws);
        for (int i = 0; i < 4; i++) qtts_conv_free(&cvs[i]);
    }

    /* int16 convs (1-tap and Winograd points): every path gives the scalar twin's bits, the scalar twin is
     * within the 12-bit quantization of the f32 result, the sums cannot overflow, and other CPUs refuse */
    if (qtts_conv_i16_supported()) {
        const int64_t icases[][5] = {/* c_out, c_in, k, dil, T (k = 1: a 1x1 conv, else Winograd F(4, k)) */
                                     {20, 40, 1, 1, 77}, {16, 9, 1, 1, 48}, {5, 3, 1, 1, 1},  {24, 600, 1, 1, 33},
                                     {13, 9, 7, 3, 47},  {16, 16, 7, 9, 100}, {64, 48, 7, 1, 150}, {12, 7, 2, 1, 61}};
        for (size_t c = 0; c < sizeof icases / sizeof icases[0]; c++) {
            const int64_t co = icases[c][0], ci = icases[c][1], k = icases[c][2], dil = icases[c][3], T = icases[c][4];
            const int64_t H = (k - 1) * dil, ldx = H + T + 3, ldy = T + 5;
            float *w = rand_buf(co * ci * k, &seed, 0.5f), *b = rand_buf(co, &seed, 0.1f);
            float *x = rand_buf(ci * ldx, &seed, 1.0f), *add = rand_buf(co * ldy, &seed, 1.0f);
            for (int64_t i = 0; i < ci * ldx; i += 5) x[i] *= 0.01f; /* a spread of magnitudes within a sample */
            float *ref = malloc(sizeof(float) * (size_t)(co * ldy)), *got = malloc(sizeof(float) * (size_t)(co * ldy));
            float *f32 = calloc((size_t)(co * ldy), sizeof(float));
            qtts_conv cf, cv;
            TEST_CHECK(qtts_conv_init(&cf, w, b, co, ci, k, dil, &err) == 0 &&
                           qtts_conv_init(&cv, w, b, co, ci, k, dil, &err) == 0 &&
                           (k == 1 || qtts_conv_to_winograd(&cv, 4, &err) == 0) && qtts_conv_to_i16(&cv, &err) == 0,
                       "to i16: %s", err.msg);
            TEST_CHECK(k == 1 ? cv.wi16 && !cv.w : cv.wg && cv.wg->point[0].wi16 != NULL, "i16 weights set");
            qtts_conv1d_cm_ref(&cf, x, ldx, T, f32, ldy, add, ldy);
            for (int64_t i = 0; i < co * ldy; i++) ref[i] = i % ldy < T ? 0.0f : 7.0f; /* padding sentinel */
            qtts_conv1d_cm_ref(&cv, x, ldx, T, ref, ldy, add, ldy);
            double num = 0, den = 0;
            int pad_ok = 1;
            for (int64_t o = 0; o < co; o++)
                for (int64_t t = 0; t < ldy; t++) {
                    if (t >= T) {
                        pad_ok &= ref[o * ldy + t] == 7.0f;
                        continue;
                    }
                    const double e = (double)ref[o * ldy + t] - f32[o * ldy + t], v = (double)f32[o * ldy + t] - add[o * ldy + t];
                    num += e * e;
                    den += v * v;
                }
            const double snr = 10 * log10(den / (num > 0 ? num : 1e-300));
            char what[160];
            snprintf(what, sizeof what, "i16 %s %lldx%lld k%lld d%lld T%lld", k == 1 ? "1x1" : "winograd", (long long)co,
                     (long long)ci, (long long)k, (long long)dil, (long long)T);
            /* 12-bit weights and inputs: ~60 dB on random data, less with the spread of magnitudes above */
            TEST_CHECK(snr >= 45 && pad_ok, "%s: SNR %.1f dB against f32 (floor 45), padding kept %d", what, snr, pad_ok);
            printf("%s: SNR %.1f dB against f32\n", what, snr);
            for (size_t s = 0; s < sizeof k_isas / sizeof k_isas[0]; s++) {
                if (!qtts_conv_isa_supported(k_isas[s])) continue;
                memcpy(got, add, sizeof(float) * (size_t)(co * ldy)); /* add aliasing y: the residual form */
                for (int64_t i = 0; i < co * ldy; i++)
                    if (i % ldy >= T) got[i] = 7.0f;
                TEST_CHECK(qtts_conv1d_cm_isa(pool, &cv, x, ldx, T, got, ldy, got, ldy, k_isas[s]) == 0, "%s runs", what);
                TEST_CHECK(!memcmp(got, ref, sizeof(float) * (size_t)(co * ldy)), "%s: %s differs from the scalar twin",
                           what, qtts_conv_isa_name(k_isas[s]));
            }
            qtts_conv_free(&cf);
            qtts_conv_free(&cv);
            free(w), free(b), free(x), free(add), free(ref), free(got), free(f32);
        }
        { /* worst case for the int32 sums: every weight and input at full scale, 1100 channels (5 flushes) */
            const int64_t co = 8, ci = 1100, T = 16;
            float *w = malloc(sizeof(float) * (size_t)(co * ci)), *x = malloc(sizeof(float) * (size_t)(ci * T));
            float *y = malloc(sizeof(float) * (size_t)(co * T));
            for (int64_t i = 0; i < co * ci; i++) w[i] = i % 8 == 3 ? -1.0f : 1.0f;
            for (int64_t i = 0; i < ci * T; i++) x[i] = (i / T) % 8 == 3 ? -2.0f : 2.0f;
            qtts_conv cv;
            TEST_CHECK(qtts_conv_init(&cv, w, NULL, co, ci, 1, 1, &err) == 0 && qtts_conv_to_i16(&cv, &err) == 0,
                       "full-scale i16: %s", err.msg);
            for (size_t s = 0; s < sizeof k_isas / sizeof k_isas[0]; s++) {
                if (!qtts_conv_isa_supported(k_isas[s])) continue;
                qtts_conv1d_cm_isa(pool, &cv, x, T, T, y, T, NULL, 0, k_isas[s]);
                int ok = 1;
                for (int64_t o = 0; o < co; o++)
                    for (int64_t t = 0; t < T; t++) {
                        double want = 0;
                        for (int64_t i = 0; i < ci; i++) want += (double)w[o * ci + i] * x[i * T + t];
                        ok &= fabs(y[o * T + t] - want) <= 1e-5 * ci * 2;
                    }
                TEST_CHECK(ok, "full-scale i16 (%s): the int32 sums overflowed", qtts_conv_isa_name(k_isas[s]));
            }
            /* non-finite inputs: defined (if meaningless) outputs, no trap */
            x[5] = NAN;
            x[T + 2] = INFINITY;
            TEST_CHECK(qtts_conv1d_cm(pool, &cv, x, T, T, y, T, NULL, 0) == 0, "i16 with NaN input runs");
            TEST_CHECK(qtts_conv_to_i16(&cv, &err) == 0, "converting twice is a no-op");
            qtts_conv_free(&cv);
            free(w), free(x), free(y);
        }
        qtts_conv c3;
        float w3[8 * 4 * 3] = {0};
        TEST_CHECK(qtts_conv_init(&c3, w3, NULL, 8, 4, 3, 1, &err) == 0, "init");
        TEST_CHECK(qtts_conv_to_i16(&c3, &err) == -1 && strstr(err.msg, "1-tap"), "a 3-tap conv refused clearly");
        qtts_conv_free(&c3);
    } else {
        qtts_conv c1;
        float w1[8 * 4] = {0};
        TEST_CHECK(qtts_conv_init(&c1, w1, NULL, 8, 4, 1, 1, &err) == 0, "init");
        TEST_CHECK(qtts_conv_to_i16(&c1, &err) == -1 && strstr(err.msg, "AVX2"), "i16 refused clearly here");
        qtts_conv_free(&c1);
    }

    /* the load-time packings on the pool: the same bits as on one thread, at sizes the pool splits */
    {
        const int64_t co = 96, ci = 128, k = 7, s = 4, kt = 8, N = 200, K = 512;
        float *w = rand_buf(co * ci * k, &seed, 0.5f), *wt = rand_buf(ci * co * kt, &seed, 0.5f);
        float *wb = rand_buf(N * K, &seed, 0.5f), *b = rand_buf(co, &seed, 0.1f);
        qtts_conv a, c;
        TEST_CHECK(qtts_conv_init(&a, w, b, co, ci, k, 3, &err) == 0 &&
                       qtts_conv_init_pool(&c, w, b, co, ci, k, 3, 0, pool, &err) == 0,
                   "conv init: %s", err.msg);
        TEST_CHECK(!memcmp(a.w, c.w, sizeof(float) * (size_t)(a.rows_pad * ci * k)) &&
                       !memcmp(a.bias, c.bias, sizeof(float) * (size_t)a.rows_pad),
                   "conv packed on the pool differs from one thread's");
        qtts_conv_free(&a);
        qtts_conv_free(&c);
        TEST_CHECK(qtts_conv_init_transposed(&a, wt, b, ci, co, kt, s, &err) == 0 &&
                       qtts_conv_init_transposed_pool(&c, wt, b, ci, co, kt, s, 0, pool, &err) == 0,
                   "transposed init: %s", err.msg);
        TEST_CHECK(!memcmp(a.w, c.w, sizeof(float) * (size_t)(a.rows_pad * ci * a.k)) &&
                       !memcmp(a.bias, c.bias, sizeof(float) * (size_t)a.rows_pad),
                   "transposed conv packed on the pool differs from one thread's");
        qtts_conv_free(&a);
        qtts_conv_free(&c);
        int64_t ta = 0, tc = 0;
        float *ma = qtts_conv_tm_transposed_matrix(wt, ci, co, kt, s, &ta, &err);
        tc = qtts_conv_tm_transposed_taps(kt, s);
        /* into a buffer of garbage: every entry, the zero taps too, is written */
        float *mc = malloc(sizeof(float) * (size_t)(s * co * ci * tc));
        if (mc) {
            memset(mc, 0xff, sizeof(float) * (size_t)(s * co * ci * tc));
            qtts_conv_tm_transposed_matrix_into(wt, ci, co, kt, s, mc, pool);
        }
        TEST_CHECK(ma && mc && ta == tc && !memcmp(ma, mc, sizeof(float) * (size_t)(s * co * ci * ta)),
                   "time-major transposed matrix on the pool differs from one thread's");
        /* and the one thread's matrix is the definition: row j*co+o, column i*taps+kk, tap j+(H-kk)*s */
        int ok = ma != NULL;
        for (int64_t j = 0; ok && j < s; j++)
            for (int64_t o = 0; o < co; o++)
                for (int64_t i = 0; i < ci; i++)
                    for (int64_t kk = 0; kk < ta; kk++) {
                        const int64_t tap = j + (ta - 1 - kk) * s;
                        ok &= ma[(j * co + o) * ci * ta + i * ta + kk] == (tap < kt ? wt[(i * co + o) * kt + tap] : 0.0f);
                    }
        TEST_CHECK(ok, "time-major transposed matrix: wrong taps");
        free(ma);
        free(mc);
        qtts_gemm_b ga, gc;
        TEST_CHECK(qtts_gemm_b_init(&ga, wb, N, K, &err) == 0 && qtts_gemm_b_init_pool(&gc, wb, N, K, 0, pool, &err) == 0,
                   "gemm b: %s", err.msg);
        TEST_CHECK(ga.panel == gc.panel &&
                       !memcmp(ga.p, gc.p, sizeof(float) * (size_t)((N + ga.panel - 1) / ga.panel * ga.panel * K)),
                   "gemm panels packed on the pool differ from one thread's");
        qtts_gemm_b_free(&ga);
        qtts_gemm_b_free(&gc);
        /* packed straight into bf16 (odd channel and row counts leave half pairs and padding): the bytes of the
           f32 packing converted afterwards */
        if (qtts_conv_bf16_supported()) {
            const int64_t co2 = 37, ci2 = 65, N2 = 77, K2 = 129;
            TEST_CHECK(qtts_conv_init(&a, w, b, co2, ci2, k, 3, &err) == 0 && qtts_conv_to_bf16(&a, &err) == 0 &&
                           qtts_conv_init_pool(&c, w, b, co2, ci2, k, 3, 1, pool, &err) == 0 && !c.w,
                       "bf16 conv init: %s", err.msg);
            const size_t nbf = (size_t)(a.rows_pad * ((ci2 + 1) / 2) * k);
            TEST_CHECK(!memcmp(a.wbf, c.wbf, sizeof(uint32_t) * nbf) &&
                           !memcmp(a.bias, c.bias, sizeof(float) * (size_t)a.rows_pad),
                       "conv packed straight into bf16 differs from the converted f32 packing");
            qtts_conv_free(&a);
            qtts_conv_free(&c);
            TEST_CHECK(qtts_conv_init_transposed(&a, wt, b, ci2, co2, kt, s, &err) == 0 &&
                           qtts_conv_to_bf16(&a, &err) == 0 &&
                           qtts_conv_init_transposed_pool(&c, wt, b, ci2, co2, kt, s, 1, pool, &err) == 0,
                       "bf16 transposed init: %s", err.msg);
            TEST_CHECK(!memcmp(a.wbf, c.wbf, sizeof(uint32_t) * (size_t)(a.rows_pad * ((ci2 + 1) / 2) * a.k)),
                       "transposed conv packed straight into bf16 differs from the converted f32 packing");
            qtts_conv_free(&a);
            qtts_conv_free(&c);
            uint32_t *pbf = NULL;
            TEST_CHECK(qtts_gemm_b_init(&ga, wb, N2, K2, &err) == 0 && (pbf = qtts_gemm_b_bf16_panels(&ga, &err)) &&
                           qtts_gemm_b_init_pool(&gc, wb, N2, K2, 1, pool, &err) == 0 && !gc.p,
                       "bf16 gemm b: %s", err.msg);
            const size_t npbf = (size_t)((N2 + ga.panel - 1) / ga.panel * ga.panel * ((K2 + 1) / 2));
            TEST_CHECK(pbf && gc.pbf && !memcmp(pbf, gc.pbf, sizeof(uint32_t) * npbf),
                       "gemm panels packed straight into bf16 differ from the converted f32 panels");
            free(pbf);
            qtts_gemm_b_free(&ga);
            qtts_gemm_b_free(&gc);
        } else {
            qtts_conv c1;
            TEST_CHECK(qtts_conv_init_pool(&c1, w, b, co, ci, k, 3, 1, pool, &err) == -1 && strstr(err.msg, "bf16"),
                       "bf16 packing refused clearly here: %s", err.msg);
        }
        free(w);
        free(wt);
        free(wb);
        free(b);
    }
    qtts_pool_free(pool);
    return test_finish("test_conv");
}
