#include "tensor/conv1d_pad.h"

#include <stdlib.h>
#include <string.h>

/* Work item: CONV_OB output channels x CONV_TB output steps. Inside, the
 * stride-1 interior is computed in register tiles of CONV_OB x CONV_TT
 * (accumulators stay in registers; each input load feeds CONV_OB FMAs), the
 * few outputs whose taps reach into the padding go through pad_at. Strided
 * convs are turned into stride-1 ones first (polyphase split, see below). */
enum { CONV_TB = 256, CONV_OB = 4, CONV_TT = 8 };

/* Value of the padded signal row at logical position p (p < 0: left pad). */
static inline float pad_at(const float *row, int64_t t_in, int64_t p, qtts_pad_mode mode) {
    if (p >= 0 && p < t_in) return row[p];
    switch (mode) {
    case QTTS_PAD_REPLICATE: return row[p < 0 ? 0 : t_in - 1];
    case QTTS_PAD_REFLECT: return row[p < 0 ? -p : 2 * (t_in - 1) - p];
    default: return 0.0f;
    }
}

typedef struct {
    const float *x, *w, *bias;
    float *y;
    int64_t c_in, t_in, c_out, k, stride, dil, pad_left, t_out;
    int64_t n_oblk, n_tblk;
    int64_t lo, hi; /* outputs in [lo, hi) read only real samples */
    qtts_pad_mode mode;
} conv_job;

/* One output through the padding rule (edges, tails, any stride). */
static float conv_point(const conv_job *j, int64_t o, int64_t t) {
    float acc = j->bias ? j->bias[o] : 0.0f;
    const float *w = j->w + o * j->c_in * j->k;
    for (int64_t i = 0; i < j->c_in; i++) {
        const float *row = j->x + i * j->t_in;
        for (int64_t kk = 0; kk < j->k; kk++)
            acc += w[i * j->k + kk] * pad_at(row, j->t_in, t * j->stride + kk * j->dil - j->pad_left, j->mode);
    }
    return acc;
}

/* 8 floats; GCC/Clang vector extension (SSE2 pairs on baseline x86-64, one
 * register with AVX, NEON pairs on arm64). */
typedef float conv_v8 __attribute__((vector_size(32)));

/* Macros rather than functions: passing 32-byte vectors by value changes the
 * ABI between AVX and non-AVX code (GCC -Wpsabi). */
#define V8_LOAD(dst, p) memcpy(&(dst), (p), sizeof(conv_v8))
#define V8_SPLAT(a) ((conv_v8){(a), (a), (a), (a), (a), (a), (a), (a)})

/* Full register tile: CONV_OB outputs (o0..) x CONV_TT steps from t, stride 1, interior. */
static void conv_tile(const conv_job *j, int64_t o0, int64_t t) {
    const int64_t k = j->k, cin = j->c_in, kk_stride = j->dil;
    const float *w0 = j->w + (o0 + 0) * cin * k, *w1 = j->w + (o0 + 1) * cin * k;
    const float *w2 = j->w + (o0 + 2) * cin * k, *w3 = j->w + (o0 + 3) * cin * k;
    conv_v8 acc0 = V8_SPLAT(j->bias ? j->bias[o0 + 0] : 0.0f), acc1 = V8_SPLAT(j->bias ? j->bias[o0 + 1] : 0.0f);
    conv_v8 acc2 = V8_SPLAT(j->bias ? j->bias[o0 + 2] : 0.0f), acc3 = V8_SPLAT(j->bias ? j->bias[o0 + 3] : 0.0f);
    for (int64_t i = 0; i < cin; i++) {
        const float *row = j->x + i * j->t_in + t - j->pad_left;
        const int64_t wi = i * k;
        for (int64_t kk = 0; kk < k; kk++) {
            conv_v8 v;
            V8_LOAD(v, row + kk * kk_stride);
            acc0 += V8_SPLAT(w0[wi + kk]) * v;
            acc1 += V8_SPLAT(w1[wi + kk]) * v;
            acc2 += V8_SPLAT(w2[wi + kk]) * v;
            acc3 += V8_SPLAT(w3[wi + kk]) * v;
        }
    }
    memcpy(j->y + (o0 + 0) * j->t_out + t, &acc0, sizeof acc0);
    memcpy(j->y + (o0 + 1) * j->t_out + t, &acc1, sizeof acc1);
    memcpy(j->y + (o0 + 2) * j->t_out + t, &acc2, sizeof acc2);
    memcpy(j->y + (o0 + 3) * j->t_out + t, &acc3, sizeof acc3);
}

/* Single-output tile (when fewer than CONV_OB outputs remain). */
static void conv_tile1(const conv_job *j, int64_t o, int64_t t) {
    const float *w = j->w + o * j->c_in * j->k;
    conv_v8 acc = V8_SPLAT(j->bias ? j->bias[o] : 0.0f);
    for (int64_t i = 0; i < j->c_in; i++) {
        const float *row = j->x + i * j->t_in + t - j->pad_left;
        for (int64_t kk = 0; kk < j->k; kk++) {
            conv_v8 v;
            V8_LOAD(v, row + kk * j->dil);
            acc += V8_SPLAT(w[i * j->k + kk]) * v;
        }
    }
    memcpy(j->y + o * j->t_out + t, &acc, sizeof acc);
}

static void conv_items(void *ctx, int64_t begin, int64_t end, int tid) {
    (void)tid;
    const conv_job *j = ctx;
    for (int64_t it = begin; it < end; it++) {
        int64_t ob = it / j->n_tblk, tb = it % j->n_tblk;
        int64_t o0 = ob * CONV_OB, no = j->c_out - o0 < CONV_OB ? j->c_out - o0 : CONV_OB;
        int64_t t0 = tb * CONV_TB, t1 = t0 + CONV_TB < j->t_out ? t0 + CONV_TB : j->t_out;
        /* tiled part: stride 1, all taps inside the signal */
        int64_t a = t1, b = t1;
        if (j->stride == 1) {
            a = j->lo > t0 ? j->lo : t0;
            b = j->hi < t1 ? j->hi : t1;
            if (b < a) b = a;
            b = a + (b - a) / CONV_TT * CONV_TT;
        }
        for (int64_t t = a; t < b; t += CONV_TT) {
            if (no == CONV_OB)
                conv_tile(j, o0, t);
            else
                for (int64_t q = 0; q < no; q++) conv_tile1(j, o0 + q, t);
        }
        for (int64_t q = 0; q < no; q++) {
            float *y = j->y + (o0 + q) * j->t_out;
            for (int64_t t = t0; t < a; t++) y[t] = conv_point(j, o0 + q, t);
            for (int64_t t = b; t < t1; t++) y[t] = conv_point(j, o0 + q, t);
        }
    }
}

typedef struct {
    const float *x;
    float *ph;
    int64_t t_in, s, up, pad_left;
    qtts_pad_mode mode;
} phase_job;

/* Phase row r = i*s + m: ph[r][u] = padded x[i][u*s + m]. */
static void phase_rows(void *ctx, int64_t r0, int64_t r1, int tid) {
    (void)tid;
    const phase_job *p = ctx;
    for (int64_t r = r0; r < r1; r++) {
        int64_t i = r / p->s, m = r % p->s;
        const float *row = p->x + i * p->t_in;
        float *dst = p->ph + r * p->up;
        for (int64_t u = 0; u < p->up; u++) dst[u] = pad_at(row, p->t_in, u * p->s + m - p->pad_left, p->mode);
    }
}

static int conv_setup(conv_job *j, const float *x, int64_t c_in, int64_t t_in, const float *w, const float *bias,
                      int64_t c_out, int64_t k, int64_t stride, int64_t dil, int64_t pad_left, int64_t pad_right,
                      qtts_pad_mode mode, float *y, qtts_err *err) {
    memset(j, 0, sizeof *j);
    if (c_in <= 0 || c_out <= 0 || k <= 0 || stride <= 0 || dil <= 0 || pad_left < 0 || pad_right < 0 || t_in < 0)
        return qtts_fail(err, "conv1d: bad geometry (c_in %lld, c_out %lld, k %lld, stride %lld, dilation %lld)",
                         (long long)c_in, (long long)c_out, (long long)k, (long long)stride, (long long)dil);
    if (mode != QTTS_PAD_ZERO && (pad_left > 0 || pad_right > 0)) {
        if (t_in == 0) return qtts_fail(err, "conv1d: cannot pad an empty signal");
        if (mode == QTTS_PAD_REFLECT && (pad_left >= t_in || pad_right >= t_in))
            return qtts_fail(err, "conv1d: reflect padding %lld/%lld needs more than %lld time steps",
                             (long long)pad_left, (long long)pad_right, (long long)t_in);
    }
    int64_t span = (k - 1) * dil + 1, total = t_in + pad_left + pad_right;
    j->x = x;
    j->w = w;
    j->bias = bias;
    j->y = y;
    j->c_in = c_in;
    j->t_in = t_in;
    j->c_out = c_out;
    j->k = k;
    j->stride = stride;
    j->dil = dil;
    j->pad_left = pad_left;
    j->mode = mode;
    j->t_out = total >= span ? (total - span) / stride + 1 : 0;
    /* first t with t*stride - pad_left >= 0, and first t whose last tap passes t_in-1 */
    j->lo = (pad_left + stride - 1) / stride;
    int64_t last_ok = t_in - 1 - (span - 1) + pad_left; /* t*stride <= last_ok */
    j->hi = last_ok >= 0 ? last_ok / stride + 1 : 0;
    if (j->hi > j->t_out) j->hi = j->t_out;
    if (j->lo > j->hi) j->lo = j->hi;
    j->n_oblk = (c_out + CONV_OB - 1) / CONV_OB;
    j->n_tblk = (j->t_out + CONV_TB - 1) / CONV_TB;
    return 0;
}

int qtts_conv1d_padded(qtts_pool *pool, const float *x, int64_t c_in, int64_t t_in, const float *w,
                       const float *bias, int64_t c_out, int64_t k, int64_t stride, int64_t dil, int64_t pad_left,
                       int64_t pad_right, qtts_pad_mode mode, float *y, int64_t *t_out, qtts_err *err) {
    conv_job j;
    if (conv_setup(&j, x, c_in, t_in, w, bias, c_out, k, stride, dil, pad_left, pad_right, mode, y, err)) return -1;
    if (t_out) *t_out = j.t_out;
    if (j.t_out == 0) return 0;
    /* tiles are compute-bound: 1/16 of a matrix-vector MAC each (see threadpool.h) */
    double work = (double)c_out * (double)c_in * (double)k * (double)j.t_out / 16.0;
    if (stride == 1) {
        qtts_parallel_for_work(pool, j.n_oblk * j.n_tblk, 1, work, conv_items, &j);
        return 0;
    }
    /* Polyphase: with tap offset kk*dil = q*stride + m, input sample
     * t*stride + kk*dil of the padded signal is phase m at index t + q, so the
     * strided conv is a stride-1, unpadded conv over c_in*stride phase
     * channels with kernel (k-1)*dil/stride + 1. The tiled kernel then applies. */
    int64_t s = stride, kq = (k - 1) * dil / s + 1, up = j.t_out + kq - 1, cp = c_in * s;
    float *ph = qtts_malloc((size_t)(cp * up) * sizeof(float), err);
    float *wp = ph ? qtts_calloc((size_t)(c_out * cp * kq), sizeof(float), err) : NULL;
    if (!wp) {
        free(ph);
        return -1;
    }
    phase_job pj = {x, ph, t_in, s, up, pad_left, mode};
    qtts_parallel_for_work(pool, cp, 1, (double)cp * (double)up / 4, phase_rows, &pj); /* copies */
    for (int64_t o = 0; o < c_out; o++)
        for (int64_t i = 0; i < c_in; i++)
            for (int64_t kk = 0; kk < k; kk++) {
                int64_t pos = kk * dil;
                wp[(o * cp + i * s + pos % s) * kq + pos / s] = w[(o * c_in + i) * k + kk];
            }
    conv_job jp;
    int rc = conv_setup(&jp, ph, cp, up, wp, bias, c_out, kq, 1, 1, 0, 0, QTTS_PAD_ZERO, y, err);
    if (!rc && jp.t_out != j.t_out) rc = qtts_fail(err, "conv1d: internal polyphase length mismatch");
    if (!rc) qtts_parallel_for_work(pool, jp.n_oblk * jp.n_tblk, 1, work, conv_items, &jp);
    free(ph);
    free(wp);
    return rc;
}

int qtts_conv1d_padded_ref(const float *x, int64_t c_in, int64_t t_in, const float *w, const float *bias,
                           int64_t c_out, int64_t k, int64_t stride, int64_t dil, int64_t pad_left, int64_t pad_right,
                           qtts_pad_mode mode, float *y, int64_t *t_out, qtts_err *err) {
    conv_job j;
    if (conv_setup(&j, x, c_in, t_in, w, bias, c_out, k, stride, dil, pad_left, pad_right, mode, y, err)) return -1;
    if (t_out) *t_out = j.t_out;
    for (int64_t o = 0; o < c_out; o++)
        for (int64_t t = 0; t < j.t_out; t++) y[o * j.t_out + t] = conv_point(&j, o, t);
    return 0;
}

int qtts_conv1d_same_reflect(qtts_pool *pool, const float *x, int64_t c_in, int64_t t, const float *w,
                             const float *bias, int64_t c_out, int64_t k, int64_t dil, float *y, qtts_err *err) {
    int64_t total = (k - 1) * dil, left = total / 2;
    return qtts_conv1d_padded(pool, x, c_in, t, w, bias, c_out, k, 1, dil, left, total - left, QTTS_PAD_REFLECT, y,
                              NULL, err);
}

int64_t qtts_conv1d_causal_len(int64_t t_in, int64_t stride) { return (t_in + stride - 1) / stride; }

int qtts_conv1d_causal(qtts_pool *pool, const float *x, int64_t c_in, int64_t t_in, const float *w,
                       const float *bias, int64_t c_out, int64_t k, int64_t stride, int64_t dil, qtts_pad_mode mode,
                       float *y, qtts_err *err) {
    /* MimiConv1d: padding_total = effective kernel - stride; the extra right
     * pad makes the padded length a whole number of strides, which gives
     * exactly ceil(t_in / stride) outputs. */
    int64_t span = (k - 1) * dil + 1;
    int64_t pad_total = span - stride;
    if (pad_total < 0) return qtts_fail(err, "conv1d: stride %lld larger than kernel span %lld", (long long)stride,
                                        (long long)span);
    int64_t n_frames = qtts_conv1d_causal_len(t_in, stride);
    int64_t extra = n_frames * stride - t_in;
    int64_t t_out = 0;
    if (qtts_conv1d_padded(pool, x, c_in, t_in, w, bias, c_out, k, stride, dil, pad_total, extra, mode, y, &t_out,
                           err))
        return -1;
    if (t_out != n_frames)
        return qtts_fail(err, "conv1d: internal length mismatch (%lld != %lld)", (long long)t_out,
                         (long long)n_frames);
    return 0;
}
