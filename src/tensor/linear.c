#include "tensor/linear.h"

#include "tensor/quant.h"

/* Dot product of weight row r with x, in the row's storage type. */
static float dot_row_scalar(const qtts_mat *w, int64_t r, const float *x) {
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
} linear_job;

static void linear_rows(void *p, int64_t r0, int64_t r1, int tid) {
    (void)tid;
    const linear_job *j = p;
    for (int64_t t = 0; t < j->n; t++) {
        const float *x = j->x + t * j->w->cols;
        float *y = j->y + t * j->w->rows;
        for (int64_t r = r0; r < r1; r++) y[r] = dot_row_scalar(j->w, r, x) + (j->bias ? j->bias[r] : 0.0f);
    }
}

void qtts_linear_ref(const qtts_mat *w, const float *bias, const float *x, int64_t n, float *y) {
    linear_job j = {w, bias, x, n, y};
    linear_rows(&j, 0, w->rows, 0);
}

void qtts_linear(qtts_pool *pool, const qtts_mat *w, const float *bias, const float *x, int64_t n, float *y) {
    linear_job j = {w, bias, x, n, y};
    qtts_parallel_for(pool, w->rows, 16, linear_rows, &j);
}
