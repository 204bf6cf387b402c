/* The speech-tokenizer decoder's Vulkan kernels (gpu/gpu_conv.h) against
 * their scalar CPU twins on odd shapes (channels and samples not multiples
 * of the 64-thread workgroup, offsets and row strides), and the streaming
 * form: a signal fed in chunks through the device-side histories gives the
 * samples of one call, bit for bit. Runs on any Vulkan device (CI: Mesa's
 * lavapipe, with QTTS_VULKAN_VALIDATE=1). Without a device it is skipped
 * (exit 77) unless QTTS_REQUIRE_VULKAN=1.
 *
 * Tolerances: the conv, transposed conv and depthwise conv sum in the CPU
 * twin's order, but a shader compiler may fuse a multiply and an add (one
 * rounding instead of two), so they allow float rounding of a dot product
 * (4e-7 * sqrt(terms) * (max|ref| + 1), as test_gpu_kernels). SnakeBeta runs
 * the CPU's own sin^2 polynomial: 1e-6 * (1 + |x|). GELU uses a polynomial
 * erf (absolute error <= 1.5e-7, times |x|/2) and the device's exp: 2e-6 for
 * |x| <= 6. LayerNorm sums in f32 where the CPU sums in double: 2e-5 * (1 +
 * |y|) for rows of ~1000. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"
#include "gpu/gpu_conv.h"
#include "gpu/gpu_ops.h"
#include "support/gpu_device.h"
#include "harness.h"
#include "tensor/conv.h"
#include "tensor/ops.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static float frand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static float *data(qtts_gpu_buf *b) { return qtts_gpu_buf_data(b); }

static qtts_gpu_seq *seq(qtts_gpu *g) {
    qtts_err err = {0};
    qtts_gpu_seq *s = qtts_gpu_seq_new(g, &err);
    if (!s) {
        fprintf(stderr, "sequence: %s\n", err.msg);
        exit(1);
    }
    return s;
}

/* Ends, runs and frees s; rec is 0 when every kernel recorded. */
static void finish(qtts_gpu_seq *s, int rec, const qtts_err *rec_err) {
    qtts_err err = {0};
    TEST_CHECK(rec == 0, "recording: %s", rec_err->msg);
    int rc = rec == 0 ? qtts_gpu_seq_end(s, &err) : -1;
    if (rc == 0) rc = qtts_gpu_seq_run(s, &err);
    TEST_CHECK(rec != 0 || rc == 0, "submission: %s", err.msg);
    qtts_gpu_seq_free(s);
}

static double dot_tol(const float *ref, int64_t n, int64_t terms) {
    double mx = 0;
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, fabs(ref[i]));
    return (mx + 1.0) * 4e-7 * sqrt((double)terms);
}

static const qtts_gpu_rows no_rows = {NULL, 0, 0};

/* Causal dilated conv with SnakeBeta before it and the history on the
 * device: one call, then the same signal in chunks (one shorter than the
 * history), against qtts_conv1d_cm_ref over the CPU's padded rows. */
static void test_conv_stream(qtts_gpu *g, int64_t c_in, int64_t c_out, int64_t k, int64_t dil, const int64_t *chunks,
                             int n_chunks) {
    qtts_err err = {0};
    int64_t T = 0, H = (k - 1) * dil;
    for (int i = 0; i < n_chunks; i++) T += chunks[i];
    float *w = xcalloc((size_t)(c_out * c_in * k), 4), *bias = xcalloc((size_t)c_out, 4);
    float *in = xcalloc((size_t)(c_in * T), 4), *ea = xcalloc((size_t)c_in, 4), *ib = xcalloc((size_t)c_in, 4);
    float *xp = xcalloc((size_t)(c_in * (H + T)), 4), *ref = xcalloc((size_t)(c_out * T), 4);
    for (int64_t i = 0; i < c_out * c_in * k; i++) w[i] = frand();
    for (int64_t i = 0; i < c_out; i++) bias[i] = frand();
    for (int64_t i = 0; i < c_in * T; i++) in[i] = 3.0f * frand();
    for (int64_t c = 0; c < c_in; c++) ea[c] = expf(frand()), ib[c] = 1.0f / (expf(frand()) + 1e-9f);
    /* CPU: zero history, then snake(in); the conv over it */
    for (int64_t c = 0; c < c_in; c++) qtts_snake_row_ref(in + c * T, xp + c * (H + T) + H, T, ea[c], ib[c]);
    qtts_conv cv;
    TEST_CHECK(qtts_conv_init(&cv, w, bias, c_out, c_in, k, dil, &err) == 0, "cpu conv: %s", err.msg);
    qtts_conv1d_cm_ref(&cv, xp, H + T, T, ref, T, NULL, 0);
    qtts_conv_free(&cv);

    qtts_gpu_conv *gc = qtts_gpu_conv_new(g, w, bias, c_out, c_in, k, dil, &err);
    TEST_CHECK(gc && qtts_gpu_conv_history(gc) == H, "gpu conv: %s", err.msg);
    if (!gc) goto done;
    qtts_gpu_buf *bin = test_gpu_upload(g, in, c_in * T), *bea = test_gpu_upload(g, ea, c_in), *bib = test_gpu_upload(g, ib, c_in);
    qtts_gpu_buf *hist = test_gpu_upload(g, NULL, c_in * H + 1), *bxp = test_gpu_upload(g, NULL, c_in * (H + T) + 3);
    qtts_gpu_buf *whole = test_gpu_upload(g, NULL, c_out * T), *parts = test_gpu_upload(g, NULL, c_out * T);
    /* one call: padded rows at offset 3 */
    qtts_gpu_seq *s = seq(g);
    qtts_gpu_rows xr = {bxp, 3, H + T};
    int rc =
        qtts_gpu_conv_pad(s, (qtts_gpu_rows){bin, 0, T}, c_in, T, bea, bib, (qtts_gpu_rows){hist, 0, H}, H, xr, &err);
    if (!rc) rc = qtts_gpu_conv1d(s, gc, xr, T, (qtts_gpu_rows){whole, 0, T}, no_rows, &err);
    finish(s, rc, &err);
    char what[96];
    snprintf(what, sizeof what, "conv %lld->%lld k%lld dil%lld, T %lld", (long long)c_in, (long long)c_out,
             (long long)k, (long long)dil, (long long)T);
    TEST_NEAR(data(whole), ref, (size_t)(c_out * T), dot_tol(ref, c_out * T, c_in * k), what);
    /* the history left: the last H padded samples */
    float *hwant = xcalloc((size_t)(c_in * H), 4);
    for (int64_t c = 0; c < c_in; c++) memcpy(hwant + c * H, xp + c * (H + T) + T, (size_t)H * 4);
    TEST_NEAR(data(hist), hwant, (size_t)(c_in * H), 1e-6 * 4, "history after one call");
    free(hwant);

    /* in chunks: the history restarts at zero; each chunk its own sequence */
    memset(data(hist), 0, (size_t)(c_in * H) * 4);
    int64_t t0 = 0;
    for (int i = 0; i < n_chunks; i++) {
        int64_t n = chunks[i];
        xr.ld = H + n;
        s = seq(g);
        rc = qtts_gpu_conv_pad(s, (qtts_gpu_rows){bin, t0, T}, c_in, n, bea, bib, (qtts_gpu_rows){hist, 0, H}, H, xr,
                               &err);
        if (!rc) rc = qtts_gpu_conv1d(s, gc, xr, n, (qtts_gpu_rows){parts, t0, T}, no_rows, &err);
        finish(s, rc, &err);
        t0 += n;
    }
    snprintf(what, sizeof what, "conv in %d chunks (%lld first) = one call", n_chunks, (long long)chunks[0]);
    TEST_NEAR(data(parts), data(whole), (size_t)(c_out * T), 0.0, what);

    qtts_gpu_buf_free(g, bin), qtts_gpu_buf_free(g, bea), qtts_gpu_buf_free(g, bib), qtts_gpu_buf_free(g, hist);
    qtts_gpu_buf_free(g, bxp), qtts_gpu_buf_free(g, whole), qtts_gpu_buf_free(g, parts);
    qtts_gpu_conv_free(g, gc);
done:
    free(w), free(bias), free(in), free(ea), free(ib), free(xp), free(ref);
}

/* 1x1 conv with the residual added in place (the residual unit's second
 * conv), rows at an offset and a stride wider than T. */
static void test_conv_residual(qtts_gpu *g, int64_t C, int64_t T) {
    qtts_err err = {0};
    const int64_t ld = T + 5, off = 2;
    float *w = xcalloc((size_t)(C * C), 4), *x = xcalloc((size_t)(C * T), 4), *y = xcalloc((size_t)(C * ld + off), 4);
    for (int64_t i = 0; i < C * C; i++) w[i] = frand();
    for (int64_t i = 0; i < C * T; i++) x[i] = frand();
    for (int64_t i = 0; i < C * ld + off; i++) y[i] = frand();
    qtts_gpu_buf *bx = test_gpu_upload(g, x, C * T), *by = test_gpu_upload(g, y, C * ld + off);
    qtts_conv cv;
    TEST_CHECK(qtts_conv_init(&cv, w, NULL, C, C, 1, 1, &err) == 0, "cpu conv: %s", err.msg);
    qtts_conv1d_cm_ref(&cv, x, T, T, y + off, ld, y + off, ld);
    qtts_conv_free(&cv);
    qtts_gpu_conv *gc = qtts_gpu_conv_new(g, w, NULL, C, C, 1, 1, &err);
    TEST_CHECK(gc != NULL, "gpu conv: %s", err.msg);
    if (gc) {
        qtts_gpu_seq *s = seq(g);
        qtts_gpu_rows yr = {by, off, ld};
        finish(s, qtts_gpu_conv1d(s, gc, (qtts_gpu_rows){bx, 0, T}, T, yr, yr, &err), &err);
        TEST_NEAR(data(by), y, (size_t)(C * ld + off), dot_tol(y, C * ld + off, C), "1x1 conv + residual in place");
        /* refusals: a residual on a transposed conv, x past its buffer */
        s = seq(g);
        qtts_err e = {0};
        TEST_CHECK(qtts_gpu_conv1d(s, gc, (qtts_gpu_rows){bx, 1, T}, T, yr, no_rows, &e) == -1 && e.msg[0],
                   "x one float past its buffer refused: %s", e.msg);
        e = (qtts_err){0};
        TEST_CHECK(qtts_gpu_conv1d(s, gc, yr, T, yr, no_rows, &e) == -1 && e.msg[0], "x in y's buffer refused: %s",
                   e.msg);
        qtts_gpu_seq_free(s);
    }
    qtts_gpu_conv_free(g, gc);
    qtts_gpu_buf_free(g, bx), qtts_gpu_buf_free(g, by);
    free(w), free(x), free(y);
}

/* One residual unit, x += conv2(snake2(conv1(snake1(x)))) (conv1 dilated k7,
 * conv2 1x1), recorded once for chunks of n samples and submitted again for
 * each chunk while the host writes the next chunk into the same input rows:
 * the decoder's streaming step. Against the CPU twins over the whole signal.
 * Tolerance: two dot products (7C and C terms) in another order, each off by
 * ~4e-7 * sqrt(terms) * (max|result| + 1); the first's error carried through
 * SnakeBeta (slope <= 1 + ib*ea < 9 here) and the 1x1 conv (C random-sign
 * weights in [-1, 1]: sqrt(C)). */
static void test_residual_unit(qtts_gpu *g, int64_t C, int64_t dil, int64_t n, int steps) {
    qtts_err err = {0};
    const int64_t k = 7, H = (k - 1) * dil, T = n * steps;
    float *w1 = xcalloc((size_t)(C * C * k), 4), *b1 = xcalloc((size_t)C, 4), *w2 = xcalloc((size_t)(C * C), 4);
    float *b2 = xcalloc((size_t)C, 4), *ea = xcalloc((size_t)(2 * C), 4), *ib = xcalloc((size_t)(2 * C), 4);
    float *x = xcalloc((size_t)(C * T), 4), *xp = xcalloc((size_t)(C * (H + T)), 4), *mid = xcalloc((size_t)(C * T), 4);
    float *got = xcalloc((size_t)(C * T), 4);
    for (int64_t i = 0; i < C * C * k; i++) w1[i] = frand();
    for (int64_t i = 0; i < C * C; i++) w2[i] = frand();
    for (int64_t i = 0; i < C; i++) b1[i] = frand(), b2[i] = frand();
    for (int64_t i = 0; i < 2 * C; i++) ea[i] = expf(frand()), ib[i] = 1.0f / (expf(frand()) + 1e-9f);
    for (int64_t i = 0; i < C * T; i++) x[i] = frand();
    /* CPU, whole signal: x is updated in place into the reference */
    qtts_conv c1, c2;
    TEST_CHECK(qtts_conv_init(&c1, w1, b1, C, C, k, dil, &err) == 0 &&
                   qtts_conv_init(&c2, w2, b2, C, C, 1, 1, &err) == 0,
               "cpu convs: %s", err.msg);
    float *ref = xcalloc((size_t)(C * T), 4);
    memcpy(ref, x, (size_t)(C * T) * 4);
    for (int64_t c = 0; c < C; c++) qtts_snake_row_ref(ref + c * T, xp + c * (H + T) + H, T, ea[c], ib[c]);
    qtts_conv1d_cm_ref(&c1, xp, H + T, T, mid, T, NULL, 0);
    double mx_mid = 0;
    for (int64_t i = 0; i < C * T; i++) mx_mid = fmax(mx_mid, fabs(mid[i]));
    for (int64_t c = 0; c < C; c++) qtts_snake_row_ref(mid + c * T, mid + c * T, T, ea[C + c], ib[C + c]);
    qtts_conv1d_cm_ref(&c2, mid, T, T, ref, T, ref, T);
    qtts_conv_free(&c1), qtts_conv_free(&c2);

    qtts_gpu_conv *g1 = qtts_gpu_conv_new(g, w1, b1, C, C, k, dil, &err),
                  *g2 = qtts_gpu_conv_new(g, w2, b2, C, C, 1, 1, &err);
    TEST_CHECK(g1 && g2, "gpu convs: %s", err.msg);
    if (!g1 || !g2) goto done;
    qtts_gpu_buf *cur = test_gpu_upload(g, NULL, C * n), *bea = test_gpu_upload(g, ea, 2 * C), *bib = test_gpu_upload(g, ib, 2 * C);
    qtts_gpu_buf *hist = test_gpu_upload(g, NULL, C * H), *bxp = test_gpu_upload(g, NULL, C * (H + n)), *tmp = test_gpu_upload(g, NULL, C * n);
    qtts_gpu_buf *ea2 = test_gpu_upload(g, ea + C, C), *ib2 = test_gpu_upload(g, ib + C, C);
    qtts_gpu_rows xr = {bxp, 0, H + n}, cr = {cur, 0, n}, tr = {tmp, 0, n};
    qtts_gpu_seq *s = seq(g);
    int rc = qtts_gpu_conv_pad(s, cr, C, n, bea, bib, (qtts_gpu_rows){hist, 0, H}, H, xr, &err);
    if (!rc) rc = qtts_gpu_conv1d(s, g1, xr, n, tr, no_rows, &err);
    if (!rc) rc = qtts_gpu_snake(s, tr, tr, C, n, ea2, ib2, &err);
    if (!rc) rc = qtts_gpu_conv1d(s, g2, tr, n, cr, cr, &err);
    TEST_CHECK(rc == 0, "recording: %s", err.msg);
    if (rc == 0) rc = qtts_gpu_seq_end(s, &err);
    for (int i = 0; rc == 0 && i < steps; i++) {
        for (int64_t c = 0; c < C; c++) memcpy(data(cur) + c * n, x + c * T + i * n, (size_t)n * 4);
        rc = qtts_gpu_seq_run(s, &err);
        for (int64_t c = 0; c < C; c++) memcpy(got + c * T + i * n, data(cur) + c * n, (size_t)n * 4);
    }
    TEST_CHECK(rc == 0, "submission: %s", err.msg);
    qtts_gpu_seq_free(s);
    char what[96];
    snprintf(what, sizeof what, "residual unit C %lld dil %lld, %d steps of %lld", (long long)C, (long long)dil, steps,
             (long long)n);
    double mx = 0;
    for (int64_t i = 0; i < C * T; i++) mx = fmax(mx, fabs(ref[i]));
    double tol = 4e-7 * (sqrt(7.0 * C) * (mx_mid + 1.0) * 9.0 * sqrt((double)C) + sqrt((double)C) * (mx + 1.0));
    TEST_NEAR(got, ref, (size_t)(C * T), tol, what);
    qtts_gpu_buf_free(g, cur), qtts_gpu_buf_free(g, bea), qtts_gpu_buf_free(g, bib), qtts_gpu_buf_free(g, hist);
    qtts_gpu_buf_free(g, bxp), qtts_gpu_buf_free(g, tmp), qtts_gpu_buf_free(g, ea2), qtts_gpu_buf_free(g, ib2);
done:
    qtts_gpu_conv_free(g, g1), qtts_gpu_conv_free(g, g2);
    free(w1), free(b1), free(w2), free(b2), free(ea), free(ib), free(x), free(xp), free(mid), free(got), free(ref);
}

/* Causal transposed conv, in chunks through its device-side input history,
 * against the CPU's phase form (qtts_conv_init_transposed + qtts_conv1d_cm_ref,
 * interleaved) and against ConvTranspose1d's definition trimmed to T*s. */
static void test_tconv(qtts_gpu *g, int64_t c_in, int64_t c_out, int64_t K, int64_t st, const int64_t *chunks,
                       int n_chunks) {
    qtts_err err = {0};
    int64_t T = 0, H = (K + st - 1) / st - 1, To;
    for (int i = 0; i < n_chunks; i++) T += chunks[i];
    To = T * st;
    float *w = xcalloc((size_t)(c_in * c_out * K), 4), *bias = xcalloc((size_t)c_out, 4);
    float *x = xcalloc((size_t)(c_in * T), 4), *xp = xcalloc((size_t)(c_in * (H + T)), 4);
    float *ph = xcalloc((size_t)(st * c_out * T), 4), *ref = xcalloc((size_t)(c_out * To), 4);
    float *def = xcalloc((size_t)(c_out * (T * st + K)), 4);
    for (int64_t i = 0; i < c_in * c_out * K; i++) w[i] = frand();
    for (int64_t i = 0; i < c_out; i++) bias[i] = frand();
    for (int64_t i = 0; i < c_in * T; i++) x[i] = frand();
    for (int64_t c = 0; c < c_in; c++) memcpy(xp + c * (H + T) + H, x + c * T, (size_t)T * 4);
    qtts_conv cv;
    TEST_CHECK(qtts_conv_init_transposed(&cv, w, bias, c_in, c_out, K, st, &err) == 0, "cpu tconv: %s", err.msg);
    qtts_conv1d_cm_ref(&cv, xp, H + T, T, ph, T, NULL, 0);
    qtts_conv_free(&cv);
    for (int64_t co = 0; co < c_out; co++)
        for (int64_t j = 0; j < st; j++)
            for (int64_t t = 0; t < T; t++) ref[co * To + t * st + j] = ph[(j * c_out + co) * T + t];
    /* the definition: every input scatters K taps; the first T*s outputs kept */
    for (int64_t co = 0; co < c_out; co++) {
        double *acc = xcalloc((size_t)(T * st + K), sizeof(double));
        for (int64_t ci = 0; ci < c_in; ci++)
            for (int64_t t = 0; t < T; t++)
                for (int64_t kk = 0; kk < K; kk++)
                    acc[t * st + kk] += (double)w[(ci * c_out + co) * K + kk] * x[ci * T + t];
        for (int64_t u = 0; u < To; u++) def[co * To + u] = (float)(acc[u] + bias[co]);
        free(acc);
    }

    qtts_gpu_conv *gc = qtts_gpu_conv_new_transposed(g, w, bias, c_in, c_out, K, st, &err);
    TEST_CHECK(gc && qtts_gpu_conv_history(gc) == H, "gpu tconv: %s", err.msg);
    if (!gc) goto done;
    qtts_gpu_buf *bx = test_gpu_upload(g, x, c_in * T), *hist = test_gpu_upload(g, NULL, c_in * H + 1);
    qtts_gpu_buf *bxp = test_gpu_upload(g, NULL, c_in * (H + T)), *by = test_gpu_upload(g, NULL, c_out * To);
    int64_t t0 = 0;
    for (int i = 0; i < n_chunks; i++) {
        int64_t n = chunks[i];
        qtts_gpu_rows xr = {bxp, 0, H + n};
        qtts_gpu_seq *s = seq(g);
        int rc = qtts_gpu_conv_pad(s, (qtts_gpu_rows){bx, t0, T}, c_in, n, NULL, NULL, (qtts_gpu_rows){hist, 0, H}, H,
                                   xr, &err);
        if (!rc) rc = qtts_gpu_conv1d(s, gc, xr, n, (qtts_gpu_rows){by, t0 * st, To}, no_rows, &err);
        finish(s, rc, &err);
        t0 += n;
    }
    char what[96];
    snprintf(what, sizeof what, "tconv %lld->%lld K%lld s%lld, T %lld in %d chunks", (long long)c_in, (long long)c_out,
             (long long)K, (long long)st, (long long)T, n_chunks);
    TEST_NEAR(data(by), ref, (size_t)(c_out * To), dot_tol(ref, c_out * To, c_in * (H + 1)), what);
    TEST_NEAR(data(by), def, (size_t)(c_out * To), dot_tol(def, c_out * To, c_in * (H + 1)), "tconv = definition");
    {
        qtts_err e = {0};
        qtts_gpu_seq *s = seq(g);
        qtts_gpu_rows yr = {by, 0, To};
        TEST_CHECK(qtts_gpu_conv1d(s, gc, (qtts_gpu_rows){bxp, 0, H + 1}, 1, yr, yr, &e) == -1 && e.msg[0],
                   "a residual on a transposed conv refused: %s", e.msg);
        qtts_gpu_seq_free(s);
    }
    qtts_gpu_buf_free(g, bx), qtts_gpu_buf_free(g, hist), qtts_gpu_buf_free(g, bxp), qtts_gpu_buf_free(g, by);
    qtts_gpu_conv_free(g, gc);
done:
    free(w), free(bias), free(x), free(xp), free(ph), free(ref), free(def);
}

/* SnakeBeta in place on rows with a stride, arguments up to ~+-60 (several
 * periods, where a loose device sin would be off). */
static void test_snake(qtts_gpu *g, int64_t C, int64_t T) {
    qtts_err err = {0};
    const int64_t ld = T + 3;
    float *x = xcalloc((size_t)(C * ld), 4), *ref = xcalloc((size_t)(C * ld), 4);
    float *ea = xcalloc((size_t)C, 4), *ib = xcalloc((size_t)C, 4);
    for (int64_t i = 0; i < C * ld; i++) ref[i] = x[i] = 20.0f * frand();
    for (int64_t c = 0; c < C; c++) ea[c] = expf(frand()), ib[c] = 1.0f / (expf(frand()) + 1e-9f);
    for (int64_t c = 0; c < C; c++) qtts_snake_row_ref(x + c * ld, ref + c * ld, T, ea[c], ib[c]);
    qtts_gpu_buf *bx = test_gpu_upload(g, x, C * ld), *bea = test_gpu_upload(g, ea, C), *bib = test_gpu_upload(g, ib, C);
    qtts_gpu_seq *s = seq(g);
    qtts_gpu_rows r = {bx, 0, ld};
    finish(s, qtts_gpu_snake(s, r, r, C, T, bea, bib, &err), &err);
    double worst = 0;
    for (int64_t i = 0; i < C * ld; i++) {
        double e = fabs(data(bx)[i] - ref[i]) / (1.0 + fabs(x[i]));
        worst = e > worst ? e : worst;
    }
    TEST_CHECK(worst <= 1e-6, "snake %lldx%lld: relative error %.3g > 1e-6", (long long)C, (long long)T, worst);
    printf("snake %lldx%lld: worst error %.3g * (1 + |x|)\n", (long long)C, (long long)T, worst);
    qtts_gpu_buf_free(g, bx), qtts_gpu_buf_free(g, bea), qtts_gpu_buf_free(g, bib);
    free(x), free(ref), free(ea), free(ib);
}

/* Depthwise conv, time-major, in chunks with its history rows on the device
 * (copied as one row of (k-1)*C floats), against qtts_dwconv_tm in one call. */
static void test_dwconv(qtts_gpu *g, int64_t C, int64_t k, const int64_t *chunks, int n_chunks) {
    qtts_err err = {0};
    int64_t T = 0, H = k - 1;
    for (int i = 0; i < n_chunks; i++) T += chunks[i];
    float *xh = xcalloc((size_t)((H + T) * C), 4), *wt = xcalloc((size_t)(k * C), 4), *b = xcalloc((size_t)C, 4);
    float *ref = xcalloc((size_t)(T * C), 4);
    for (int64_t i = H * C; i < (H + T) * C; i++) xh[i] = frand();
    for (int64_t i = 0; i < k * C; i++) wt[i] = frand();
    for (int64_t i = 0; i < C; i++) b[i] = frand();
    qtts_dwconv_tm(xh, C, T, wt, k, b, ref);
    qtts_gpu_buf *bin = test_gpu_upload(g, xh + H * C, T * C), *bw = test_gpu_upload(g, wt, k * C), *bb = test_gpu_upload(g, b, C);
    qtts_gpu_buf *hist = test_gpu_upload(g, NULL, H * C), *tmp = test_gpu_upload(g, NULL, (H + T) * C), *by = test_gpu_upload(g, NULL, T * C);
    int64_t t0 = 0;
    for (int i = 0; i < n_chunks; i++) {
        int64_t n = chunks[i];
        qtts_gpu_seq *s = seq(g);
        int rc = qtts_gpu_copy_rows(s, (qtts_gpu_rows){hist, 0, 0}, (qtts_gpu_rows){tmp, 0, 0}, 1, H * C, &err);
        if (!rc)
            rc = qtts_gpu_copy_rows(s, (qtts_gpu_rows){bin, t0 * C, 0}, (qtts_gpu_rows){tmp, H * C, 0}, 1, n * C, &err);
        if (!rc) rc = qtts_gpu_dwconv(s, tmp, 0, C, n, bw, k, bb, by, t0 * C, &err);
        if (!rc)
            rc = qtts_gpu_copy_rows(s, (qtts_gpu_rows){tmp, n * C, 0}, (qtts_gpu_rows){hist, 0, 0}, 1, H * C, &err);
        finish(s, rc, &err);
        t0 += n;
    }
    char what[96];
    snprintf(what, sizeof what, "dwconv C %lld k %lld, T %lld in %d chunks", (long long)C, (long long)k, (long long)T,
             n_chunks);
    TEST_NEAR(data(by), ref, (size_t)(T * C), dot_tol(ref, T * C, k), what);
    qtts_gpu_buf_free(g, bin), qtts_gpu_buf_free(g, bw), qtts_gpu_buf_free(g, bb);
    qtts_gpu_buf_free(g, hist), qtts_gpu_buf_free(g, tmp), qtts_gpu_buf_free(g, by);
    free(xh), free(wt), free(b), free(ref);
}

/* LayerNorm then GELU then a LayerScale residual: the ConvNeXt block's
 * elementwise part, each against its CPU twin. */
static void test_convnext_ops(qtts_gpu *g, int64_t rows, int64_t dim) {
    qtts_err err = {0};
    const int64_t off = 5, n = rows * dim;
    float *x = xcalloc((size_t)(n + off), 4), *w = xcalloc((size_t)dim, 4), *b = xcalloc((size_t)dim, 4);
    float *ref = xcalloc((size_t)n, 4), *gam = xcalloc((size_t)dim, 4), *res = xcalloc((size_t)n, 4);
    for (int64_t i = 0; i < n + off; i++) x[i] = 3.0f + 2.0f * frand();
    for (int64_t i = 0; i < dim; i++) w[i] = frand(), b[i] = frand(), gam[i] = 0.1f * frand();
    for (int64_t i = 0; i < n; i++) res[i] = frand();
    qtts_layernorm(NULL, x + off, w, b, rows, dim, 1e-6f, ref);
    qtts_gpu_buf *bx = test_gpu_upload(g, x, n + off), *bw = test_gpu_upload(g, w, dim), *bb = test_gpu_upload(g, b, dim);
    qtts_gpu_buf *by = test_gpu_upload(g, NULL, n), *bg = test_gpu_upload(g, gam, dim), *br = test_gpu_upload(g, res, n);
    qtts_gpu_seq *s = seq(g);
    finish(s, qtts_gpu_layernorm(s, bx, off, bw, bb, by, 0, rows, dim, 1e-6f, &err), &err);
    double worst = 0;
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(data(by)[i] - ref[i]) / (1.0 + fabs(ref[i])));
    TEST_CHECK(worst <= 2e-5, "layernorm %lldx%lld: error %.3g > 2e-5 (1 + |y|)", (long long)rows, (long long)dim,
               worst);
    printf("layernorm %lldx%lld: worst error %.3g * (1 + |y|)\n", (long long)rows, (long long)dim, worst);

    /* GELU over inputs spread on [-6, 6], rows with a stride (the last dim-7 floats of each row) */
    for (int64_t i = 0; i < n; i++) data(by)[i] = ref[i] = 6.0f * frand();
    for (int64_t r = 0; r < rows; r++) qtts_gelu_erf(ref + r * dim + 7, dim - 7);
    s = seq(g);
    finish(s, qtts_gpu_gelu(s, (qtts_gpu_rows){by, 7, dim}, rows, dim - 7, &err), &err);
    TEST_NEAR(data(by), ref, (size_t)n, 2e-6, "erf GELU");

    /* x += gamma * v, then x += gamma (bias form) */
    for (int64_t i = 0; i < n; i++) ref[i] += gam[i % dim] * res[i];
    s = seq(g);
    int rc = qtts_gpu_scale_add(s, (qtts_gpu_rows){by, 0, dim}, bg, (qtts_gpu_rows){br, 0, dim}, rows, dim, &err);
    if (!rc) rc = qtts_gpu_scale_add(s, (qtts_gpu_rows){by, 0, dim}, bg, no_rows, rows, dim, &err);
    finish(s, rc, &err);
    for (int64_t i = 0; i < n; i++) ref[i] += gam[i % dim];
    TEST_NEAR(data(by), ref, (size_t)n, 1e-5, "LayerScale residual and bias");
    qtts_gpu_buf_free(g, bx), qtts_gpu_buf_free(g, bw), qtts_gpu_buf_free(g, bb);
    qtts_gpu_buf_free(g, by), qtts_gpu_buf_free(g, bg), qtts_gpu_buf_free(g, br);
    free(x), free(w), free(b), free(ref), free(gam), free(res);
}

/* Time-major rows of C channels to channel-major rows of T samples and back
 * (offsets, strides wider than the rows), then the output clamp: exact. */
static void test_layout(qtts_gpu *g, int64_t C, int64_t T) {
    qtts_err err = {0};
    const int64_t ldt = C + 3, ldc = T + 2, offt = 1, offc = 4;
    float *tm = xcalloc((size_t)(T * ldt + offt), 4), *cm = xcalloc((size_t)(C * ldc + offc), 4);
    for (int64_t i = 0; i < T * ldt + offt; i++) tm[i] = 3.0f * frand();
    for (int64_t t = 0; t < T; t++)
        for (int64_t c = 0; c < C; c++) cm[offc + c * ldc + t] = tm[offt + t * ldt + c];
    qtts_gpu_buf *bt = test_gpu_upload(g, tm, T * ldt + offt), *bc = test_gpu_upload(g, NULL, C * ldc + offc);
    qtts_gpu_buf *back = test_gpu_upload(g, tm, T * ldt + offt);
    for (int64_t t = 0; t < T; t++)
        for (int64_t c = 0; c < C; c++) data(back)[offt + t * ldt + c] = 0.0f;
    qtts_gpu_seq *s = seq(g);
    int rc = qtts_gpu_transpose(s, (qtts_gpu_rows){bt, offt, ldt}, (qtts_gpu_rows){bc, offc, ldc}, T, C, &err);
    if (!rc) rc = qtts_gpu_transpose(s, (qtts_gpu_rows){bc, offc, ldc}, (qtts_gpu_rows){back, offt, ldt}, C, T, &err);
    finish(s, rc, &err);
    TEST_NEAR(data(bc), cm, (size_t)(C * ldc + offc), 0.0, "time-major -> channel-major");
    TEST_NEAR(data(back), tm, (size_t)(T * ldt + offt), 0.0, "and back");
    /* the decoder's output clamp (its loop, rows of T at stride ldc) */
    s = seq(g);
    finish(s, qtts_gpu_clamp(s, (qtts_gpu_rows){bc, offc, ldc}, C, T, -1.0f, 1.0f, &err), &err);
    for (int64_t c = 0; c < C; c++)
        for (int64_t t = 0; t < T; t++) {
            float *o = cm + offc + c * ldc + t;
            *o = *o > 1.0f ? 1.0f : *o < -1.0f ? -1.0f : *o;
        }
    TEST_NEAR(data(bc), cm, (size_t)(C * ldc + offc), 0.0, "clamp to [-1, 1]");
    qtts_gpu_buf_free(g, bt), qtts_gpu_buf_free(g, bc), qtts_gpu_buf_free(g, back);
    free(tm), free(cm);
}

/* Shapes and buffers the kernels cannot take: one clear error, nothing
 * recorded or left allocated. */
static void test_refusals(qtts_gpu *g) {
    float w[4 * 3 * 5] = {0};
    qtts_err e = {0};
    size_t used = qtts_gpu_memory_used(g);
    /* a weight past the storage-buffer range (lowered here to 100 bytes) */
    qtts_gpu_set_buffer_limit(g, 100);
    qtts_gpu_conv *cv = qtts_gpu_conv_new(g, w, w, 4, 3, 5, 1, &e);
    qtts_gpu_set_buffer_limit(g, 0);
    TEST_CHECK(!cv && e.msg[0] && qtts_gpu_memory_used(g) == used, "a 240-byte weight over a 100-byte limit: %s",
               e.msg);
    qtts_gpu_conv_free(g, cv);
    e = (qtts_err){0};
    TEST_CHECK(!qtts_gpu_conv_new(g, w, NULL, 4, 3, 0, 1, &e) && e.status == QTTS_ERR_INVALID, "0 taps: %s", e.msg);
    e = (qtts_err){0};
    TEST_CHECK(!qtts_gpu_conv_new_transposed(g, w, NULL, 3, 4, 5, 0, &e) && e.status == QTTS_ERR_INVALID,
               "stride 0: %s", e.msg);
    /* the padded rows may not be the input or the history */
    qtts_gpu_buf *a = test_gpu_upload(g, NULL, 64), *b = test_gpu_upload(g, NULL, 64);
    qtts_gpu_seq *s = seq(g);
    e = (qtts_err){0};
    TEST_CHECK(qtts_gpu_conv_pad(s, (qtts_gpu_rows){a, 0, 4}, 2, 4, NULL, NULL, (qtts_gpu_rows){b, 0, 2}, 2,
                                 (qtts_gpu_rows){b, 8, 6}, &e) == -1 &&
                   e.msg[0],
               "padded rows in the history's buffer: %s", e.msg);
    e = (qtts_err){0};
    TEST_CHECK(qtts_gpu_snake(s, (qtts_gpu_rows){a, 0, 40}, (qtts_gpu_rows){a, 0, 40}, 2, 30, b, b, &e) == -1 &&
                   e.msg[0],
               "snake rows past their buffer: %s", e.msg);
    e = (qtts_err){0};
    TEST_CHECK(qtts_gpu_dwconv(s, a, 0, 8, 4, b, 7, NULL, b, 0, &e) == -1 && e.msg[0],
               "dwconv without room for its history rows: %s", e.msg);
    qtts_gpu_seq_free(s);
    qtts_gpu_buf_free(g, a), qtts_gpu_buf_free(g, b);
}

int main(void) {
    int skip;
    qtts_gpu *g = test_gpu_open(&skip);
    if (!g) return skip;
    /* the residual unit's dilated convs (k 7, dilations 1, 3, 9) and the output conv's shape */
    const int64_t c1[] = {37, 1, 93}, c2[] = {5, 64, 2, 60}, c3[] = {130};
    test_conv_stream(g, 13, 11, 7, 3, c1, 3);
    test_conv_stream(g, 9, 70, 7, 9, c2, 4);
    test_conv_stream(g, 5, 1, 7, 1, c3, 1);
    test_conv_residual(g, 19, 67);
    test_residual_unit(g, 11, 9, 13, 6); /* chunks of 13 against a 54-sample history */
    test_residual_unit(g, 70, 3, 65, 3);
    /* the upsampling convs: K = 2s (one history sample) and K not a multiple of s */
    const int64_t t1[] = {1, 20, 12}, t2[] = {7, 1, 1, 30};
    test_tconv(g, 9, 5, 10, 5, t1, 3);
    test_tconv(g, 6, 13, 10, 4, t2, 4);
    /* the decoder's largest weight (block 0: 1536 -> 768, K 16, s 8; 75.5 MB) in one buffer */
    const int64_t t3[] = {2, 1};
    test_tconv(g, 1536, 768, 16, 8, t3, 2);
    test_snake(g, 7, 133);
    const int64_t d1[] = {3, 1, 5};
    test_dwconv(g, 77, 7, d1, 3);
    test_convnext_ops(g, 5, 1027);
    test_layout(g, 77, 133);
    test_refusals(g);
    TEST_CHECK(qtts_gpu_validation_errors(g) == 0, "%d validation errors", qtts_gpu_validation_errors(g));
    qtts_gpu_close(g);
    return test_finish("test_gpu_decoder_kernels");
}
