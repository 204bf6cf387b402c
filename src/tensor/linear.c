/* Dense layers: dispatch to the best kernel family for this CPU, the portable
 * f32 path otherwise; out of memory is an error (-1), never a switch to
 * another path. The SIMD paths for Q8_0/Q4_K quantize the activations
 * to int8 once per call (shared by every output row and thread) and use
 * integer dot products; F32/F16/BF16 paths are exact up to f32 summation
 * order (bf16 x bf16 dot products only when QTTS_LINEAR_BF16_DOT is asked). */
#include "tensor/linear.h"

#include <math.h>
#include <stdlib.h>

#include "tensor/cpu.h"
#include "tensor/interleave.h"
#include "tensor/linear_impl.h"
#include "tensor/quant.h"

/* Dot product of weight row r with x, in the row's storage type. Interleaved
 * rows are rebuilt from their lanes into `rowbuf` (w->cols floats). */
static float dot_row_scalar(const qtts_mat *w, int64_t r, const float *x, float *rowbuf) {
    if (w->interleave) {
        float acc = 0.0f;
        qtts_mat_row_f32(w, r, rowbuf);
        for (int64_t i = 0; i < w->cols; i++) acc += rowbuf[i] * x[i];
        return acc;
    }
    const char *row = (const char *)w->data + (size_t)r * w->row_bytes;
    float acc = 0.0f;
    switch (w->type) {
    case QTTS_F32: {
        const float *p = (const float *)row;
        for (int64_t i = 0; i < w->cols; i++) acc += p[i] * x[i];
        break;
    }
    case QTTS_BF16: {
        const uint16_t *p = (const uint16_t *)row;
        for (int64_t i = 0; i < w->cols; i++) acc += qtts_bf16_to_f32(p[i]) * x[i];
        break;
    }
    case QTTS_F16: {
        const uint16_t *p = (const uint16_t *)row;
        for (int64_t i = 0; i < w->cols; i++) acc += qtts_f16_to_f32(p[i]) * x[i];
        break;
    }
    default: {
        float tmp[256];
        int64_t be = qtts_dtype_block_elems(w->type);
        size_t bb = qtts_dtype_block_bytes(w->type);
        for (int64_t b = 0; b < w->cols / be; b++) {
            qtts_dequantize_row(w->type, row + (size_t)b * bb, tmp, be);
            for (int64_t i = 0; i < be; i++) acc += tmp[i] * x[b * be + i];
        }
        break;
    }
    }
    return acc;
}

typedef struct {
    const qtts_mat *w;
    const float *bias, *x;
    int64_t n;
    float *y;
    qtts_isa isa;
    int bf16_dot;
    int pack_scalar; /* QTTS_LINEAR_SCALAR_PACK: the scalar activation packers (tests) */
    qtts_act act;
    float *scratch; /* scalar path: one dequantized row per thread */
} linear_job;

/* Portable path (no SIMD kernels for this CPU): each weight row is converted
 * to f32 once and used for all n tokens. */
static void linear_rows_portable(const linear_job *j, int64_t r0, int64_t r1, float *row) {
    const qtts_mat *w = j->w;
    for (int64_t r = r0; r < r1; r++) {
        qtts_mat_row_f32(w, r, row);
        float bv = j->bias ? j->bias[r] : 0.0f;
        for (int64_t t = 0; t < j->n; t++) {
            const float *x = j->x + t * w->cols;
            float acc[4] = {0, 0, 0, 0};
            int64_t i = 0;
            for (; i + 4 <= w->cols; i += 4)
                for (int k = 0; k < 4; k++) acc[k] += row[i + k] * x[i + k];
            for (; i < w->cols; i++) acc[0] += row[i] * x[i];
            j->y[t * w->rows + r] = (acc[0] + acc[1]) + (acc[2] + acc[3]) + bv;
        }
    }
}

static void linear_rows(void *p, int64_t r0, int64_t r1, int tid) {
    const linear_job *j = p;
#if defined(__x86_64__)
    if (j->isa == QTTS_ISA_AVX512) {
        qtts_linear_rows_avx512(j->w, &j->act, j->bias, j->y, r0, r1, j->bf16_dot);
        return;
    }
    if (j->isa == QTTS_ISA_AVX2) {
        qtts_linear_rows_avx2(j->w, &j->act, j->bias, j->y, r0, r1);
        return;
    }
#elif defined(__aarch64__)
    if (j->isa == QTTS_ISA_NEON_DOTPROD || j->isa == QTTS_ISA_NEON_BF16) {
        qtts_linear_rows_neon_dotprod(j->w, &j->act, j->bias, j->y, r0, r1);
        return;
    }
    if (j->isa == QTTS_ISA_NEON) {
        qtts_linear_rows_neon(j->w, &j->act, j->bias, j->y, r0, r1);
        return;
    }
#endif
    linear_rows_portable(j, r0, r1, j->scratch + (size_t)tid * (size_t)j->w->cols); /* QTTS_ISA_SCALAR */
}

int qtts_linear_ref(const qtts_mat *w, const float *bias, const float *x, int64_t n, float *y) {
    float *row = NULL;
    if (w->interleave && !(row = malloc((size_t)w->cols * sizeof(float)))) return -1;
    for (int64_t t = 0; t < n; t++) {
        const float *xt = x + t * w->cols;
        float *yt = y + t * w->rows;
        for (int64_t r = 0; r < w->rows; r++) yt[r] = dot_row_scalar(w, r, xt, row) + (bias ? bias[r] : 0.0f);
    }
    free(row);
    return 0;
}

/* ---- activation packing ---- */

static int8_t quant_i8(float v, float id) {
    int q = (int)lrintf(v * id);
    return (int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
}

/* One row: per 32 values (Q8_0 weights). */
static void pack_q8_0(const float *x, int64_t cols, int8_t *q, float *qd) {
    for (int64_t b = 0; b < cols / 32; b++, x += 32, q += 32) {
        float amax = 0.0f;
        for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
        float d = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
        qd[b] = d;
        for (int i = 0; i < 32; i++) q[i] = quant_i8(x[i], id);
    }
}

/* Interleaved Q8_0 weights also need 128 * (sum of each block's int8 x):
 * their kernel feeds the weights as unsigned (w + 128). */
static void pack_xsum128(const int8_t *q, int64_t cols, int32_t *xsum) {
    for (int64_t b = 0; b < cols / 32; b++) {
        int32_t s = 0;
        for (int i = 0; i < 32; i++) s += q[32 * b + i];
        xsum[b] = 128 * s;
    }
}

/* One row: per 256 values, in the Q4_K nibble order (see linear_impl.h), or
 * in natural order for interleaved weights. */
static void pack_q8_k(const float *x, int64_t cols, int8_t *q, float *qd, int16_t *bsum, int natural) {
    for (int64_t b = 0; b < cols / 256; b++, x += 256, q += 256) {
        float amax = 0.0f;
        for (int i = 0; i < 256; i++) amax = fmaxf(amax, fabsf(x[i]));
        float d = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
        qd[b] = d;
        for (int j = 0; j < 8; j++) {
            const int s = qtts_q8_k_slot(j, natural);
            int sum = 0;
            for (int i = 0; i < 32; i++) {
                int8_t v = quant_i8(x[32 * j + i], id);
                q[32 * s + i] = v;
                sum += v;
            }
            bsum[8 * b + j] = (int16_t)sum;
        }
    }
}

static void pack_rows(void *p, int64_t t0, int64_t t1, int tid) {
    (void)tid;
    linear_job *j = p;
    qtts_act *a = &j->act;
    int64_t cols = a->cols;
#if defined(__x86_64__)
    /* the SIMD packers: AVX-512 where it has one, else AVX2 (also on AVX-512 machines) */
    const int avx512 = j->isa == QTTS_ISA_AVX512 && !j->pack_scalar,
              avx2 = (j->isa == QTTS_ISA_AVX512 || j->isa == QTTS_ISA_AVX2) && !j->pack_scalar;
#elif defined(__aarch64__)
    const int neon = j->isa != QTTS_ISA_SCALAR && !j->pack_scalar; /* every AArch64 kernel family */
#endif
    for (int64_t t = t0; t < t1; t++) {
        const float *x = j->x + t * cols;
        int8_t *q = (int8_t *)a->q + t * cols;
        float *qd = (float *)a->qd + t * a->nb;
        if (a->xbf) {
            for (int64_t i = 0; i < cols; i++) ((uint16_t *)a->xbf)[t * cols + i] = qtts_f32_to_bf16(x[i]);
        } else if (j->w->type == QTTS_Q8_0) {
            int32_t *xsum = a->xsum ? (int32_t *)a->xsum + t * a->nb : NULL;
#if defined(__x86_64__)
            if (avx512 && !xsum) {
                qtts_pack_q8_0_avx512(x, cols, q, qd);
                continue;
            }
            if (avx2) {
                qtts_pack_q8_0_avx2(x, cols, q, qd, xsum);
                continue;
            }
#elif defined(__aarch64__)
            if (neon) {
                qtts_pack_q8_0_neon(x, cols, q, qd, xsum);
                continue;
            }
#endif
            pack_q8_0(x, cols, q, qd);
            if (xsum) pack_xsum128(q, cols, xsum);
        } else if (j->w->type == QTTS_Q4_K) {
            int16_t *bsum = (int16_t *)a->bsum + t * a->nsub;
            const int natural = j->w->interleave != 0;
#if defined(__x86_64__)
            if (avx512 && natural) {
                qtts_pack_q8_k_natural_avx512(x, cols, q, qd, bsum);
                continue;
            }
            if (avx2) {
                qtts_pack_q8_k_avx2(x, cols, q, qd, bsum, natural);
                continue;
            }
#elif defined(__aarch64__)
            if (neon) {
                qtts_pack_q8_k_neon(x, cols, q, qd, bsum, natural);
                continue;
            }
#endif
            pack_q8_k(x, cols, q, qd, bsum, natural);
        }
    }
}

/* Allocates and fills the activation pack; *out = the buffer to free (NULL
 * if none was needed). -1 if out of memory. */
static int pack_activations(qtts_pool *pool, linear_job *j, void **out) {
    qtts_act *a = &j->act;
    a->n = j->n;
    a->cols = j->w->cols;
    a->x = j->x;
    a->prefetch = j->w->prefetch;
    a->lockstep = j->w->lockstep;
    *out = NULL;
    size_t n = (size_t)j->n, cols = (size_t)j->w->cols;
    size_t bytes = 0;
    int xsum = j->w->type == QTTS_Q8_0 && j->w->interleave;
    if (j->w->type == QTTS_Q8_0) {
        a->nb = (int64_t)cols / 32;
        bytes = n * cols + n * (size_t)a->nb * sizeof(float) * (xsum ? 2 : 1) + 64;
    } else if (j->w->type == QTTS_Q4_K) {
        a->nb = (int64_t)cols / 256;
        a->nsub = (int64_t)cols / 32;
        bytes = n * cols + n * (size_t)a->nb * sizeof(float) + n * (size_t)a->nsub * sizeof(int16_t) + 64;
    } else if (j->w->type == QTTS_BF16 && j->bf16_dot) {
        bytes = n * cols * sizeof(uint16_t);
    } else {
        return 0;
    }
    char *buf = malloc(bytes);
    if (!buf) return -1;
    if (j->w->type == QTTS_BF16) {
        a->xbf = (const uint16_t *)buf;
    } else {
        size_t off = n * (size_t)a->nb * sizeof(float);
        a->qd = (const float *)buf;
        if (xsum) {
            a->xsum = (const int32_t *)(buf + off);
            off += n * (size_t)a->nb * sizeof(int32_t);
        }
        if (a->nsub) {
            a->bsum = (const int16_t *)(buf + off);
            off += n * (size_t)a->nsub * sizeof(int16_t);
        }
        a->q = (const int8_t *)(buf + off);
    }
    qtts_parallel_for_work(pool, j->n, 4, (double)j->n * (double)j->w->cols, pack_rows, j);
    *out = buf;
    return 0;
}

int qtts_linear_isa(qtts_pool *pool, const qtts_mat *w, const float *bias, const float *x, int64_t n, float *y,
                    qtts_isa isa, unsigned flags) {
    if (n <= 0 || w->rows <= 0) return 0;
    const qtts_cpu_features *f = qtts_cpu_features_get();
    isa = qtts_isa_usable(isa);
    linear_job j = {.w = w, .bias = bias, .x = x, .n = n, .y = y, .isa = isa};
    j.bf16_dot = (flags & QTTS_LINEAR_BF16_DOT) && isa == QTTS_ISA_AVX512 && f->avx512bf16;
    j.pack_scalar = (flags & QTTS_LINEAR_SCALAR_PACK) != 0;
    void *buf = NULL;
    if (w->interleave && isa != QTTS_ISA_AVX512 && isa != QTTS_ISA_AVX2)
        j.isa = isa = QTTS_ISA_SCALAR; /* only the x86 kernels read the lanes */
    if (isa != QTTS_ISA_SCALAR) {
        if (pack_activations(pool, &j, &buf)) return -1;
    } else {
        size_t nt = pool ? (size_t)qtts_pool_size(pool) : 1;
        buf = j.scratch = malloc(nt * (size_t)w->cols * sizeof(float));
        if (!buf) return -1;
    }
    qtts_parallel_for_work(pool, w->rows, QTTS_TILE_ROWS, (double)w->rows * (double)w->cols * (double)n, linear_rows,
                           &j);
    free(buf);
    return 0;
}

int qtts_linear(qtts_pool *pool, const qtts_mat *w, const float *bias, const float *x, int64_t n, float *y) {
    return qtts_linear_isa(pool, w, bias, x, n, y, qtts_cpu_isa(), 0);
}
