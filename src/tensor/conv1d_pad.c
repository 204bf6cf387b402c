#include "tensor/conv1d_pad.h"

#include <string.h>

/* Output time steps computed per work item: long enough for the inner loops
 * to vectorize, short enough for the accumulator to stay in L1. */
enum { CONV_TBLOCK = 512, CONV_OBLOCK = 4 };

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

static void conv_items(void *ctx, int64_t begin, int64_t end, int tid) {
    (void)tid;
    const conv_job *j = ctx;
    float acc[CONV_OBLOCK][CONV_TBLOCK];
    for (int64_t it = begin; it < end; it++) {
        int64_t ob = it / j->n_tblk, tb = it % j->n_tblk;
        int64_t o0 = ob * CONV_OBLOCK, no = j->c_out - o0 < CONV_OBLOCK ? j->c_out - o0 : CONV_OBLOCK;
        int64_t t0 = tb * CONV_TBLOCK, t1 = t0 + CONV_TBLOCK < j->t_out ? t0 + CONV_TBLOCK : j->t_out;
        int64_t n = t1 - t0;
        /* interior part of this block */
        int64_t a = j->lo > t0 ? j->lo : t0, b = j->hi < t1 ? j->hi : t1;
        if (b < a) b = a;
        for (int64_t q = 0; q < no; q++) {
            float bv = j->bias ? j->bias[o0 + q] : 0.0f;
            for (int64_t t = 0; t < n; t++) acc[q][t] = bv;
        }
        for (int64_t i = 0; i < j->c_in; i++) {
            const float *row = j->x + i * j->t_in;
            for (int64_t kk = 0; kk < j->k; kk++) {
                int64_t off = kk * j->dil - j->pad_left;
                float wv[CONV_OBLOCK];
                for (int64_t q = 0; q < no; q++) wv[q] = j->w[((o0 + q) * j->c_in + i) * j->k + kk];
                /* edges: gather through the padding rule */
                for (int64_t t = t0; t < a; t++) {
                    float v = pad_at(row, j->t_in, t * j->stride + off, j->mode);
                    for (int64_t q = 0; q < no; q++) acc[q][t - t0] += wv[q] * v;
                }
                for (int64_t t = b; t < t1; t++) {
                    float v = pad_at(row, j->t_in, t * j->stride + off, j->mode);
                    for (int64_t q = 0; q < no; q++) acc[q][t - t0] += wv[q] * v;
                }
                if (b <= a) continue;
                const float *src = row + a * j->stride + off;
                int64_t m = b - a, base = a - t0;
                if (j->stride == 1) {
                    if (no == CONV_OBLOCK) {
                        float *a0 = acc[0] + base, *a1 = acc[1] + base, *a2 = acc[2] + base, *a3 = acc[3] + base;
                        float w0 = wv[0], w1 = wv[1], w2 = wv[2], w3 = wv[3];
                        for (int64_t t = 0; t < m; t++) {
                            float v = src[t];
                            a0[t] += w0 * v;
                            a1[t] += w1 * v;
                            a2[t] += w2 * v;
                            a3[t] += w3 * v;
                        }
                    } else {
                        for (int64_t q = 0; q < no; q++) {
                            float *aq = acc[q] + base, wq = wv[q];
                            for (int64_t t = 0; t < m; t++) aq[t] += wq * src[t];
                        }
                    }
                } else {
                    int64_t s = j->stride;
                    for (int64_t q = 0; q < no; q++) {
                        float *aq = acc[q] + base, wq = wv[q];
                        for (int64_t t = 0; t < m; t++) aq[t] += wq * src[t * s];
                    }
                }
            }
        }
        for (int64_t q = 0; q < no; q++) memcpy(j->y + (o0 + q) * j->t_out + t0, acc[q], (size_t)n * sizeof(float));
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
    j->n_oblk = (c_out + CONV_OBLOCK - 1) / CONV_OBLOCK;
    j->n_tblk = (j->t_out + CONV_TBLOCK - 1) / CONV_TBLOCK;
    return 0;
}

int qtts_conv1d_padded(qtts_pool *pool, const float *x, int64_t c_in, int64_t t_in, const float *w,
                       const float *bias, int64_t c_out, int64_t k, int64_t stride, int64_t dil, int64_t pad_left,
                       int64_t pad_right, qtts_pad_mode mode, float *y, int64_t *t_out, qtts_err *err) {
    conv_job j;
    if (conv_setup(&j, x, c_in, t_in, w, bias, c_out, k, stride, dil, pad_left, pad_right, mode, y, err)) return -1;
    if (t_out) *t_out = j.t_out;
    int64_t items = j.n_oblk * j.n_tblk;
    if (items > 0) qtts_parallel_for(pool, items, 1, conv_items, &j);
    return 0;
}

int qtts_conv1d_padded_ref(const float *x, int64_t c_in, int64_t t_in, const float *w, const float *bias,
                           int64_t c_out, int64_t k, int64_t stride, int64_t dil, int64_t pad_left, int64_t pad_right,
                           qtts_pad_mode mode, float *y, int64_t *t_out, qtts_err *err) {
    conv_job j;
    if (conv_setup(&j, x, c_in, t_in, w, bias, c_out, k, stride, dil, pad_left, pad_right, mode, y, err)) return -1;
    if (t_out) *t_out = j.t_out;
    for (int64_t o = 0; o < c_out; o++)
        for (int64_t t = 0; t < j.t_out; t++) {
            float acc = bias ? bias[o] : 0.0f;
            for (int64_t i = 0; i < c_in; i++)
                for (int64_t kk = 0; kk < k; kk++)
                    acc += w[(o * c_in + i) * k + kk] *
                           pad_at(x + i * t_in, t_in, t * stride + kk * dil - pad_left, mode);
            y[o * j.t_out + t] = acc;
        }
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
