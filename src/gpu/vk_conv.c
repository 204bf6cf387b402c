/* The decoder kernels' host side (gpu_conv.h): weights on the device, shape
 * and bounds checks, push constants, grids. */
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_conv.h"
#include "gpu/vk_internal.h"

enum { WG = 64, MAX_GROUPS = 65535 }; /* the shaders' workgroup size; every device's minimum group count */

struct qtts_gpu_conv {
    qtts_gpu_buf *w, *bias; /* bias NULL: none */
    int64_t c_in, c_out, k, dil, stride; /* stride 0: a plain conv */
};

/* 1 if elements [off, off + count) lie inside b and fit 32-bit indices. */
static int fits(const qtts_gpu_buf *b, int64_t off, int64_t count) {
    return b && off >= 0 && count >= 0 && (uint64_t)(off + count) <= b->size / 4 && off + count <= UINT32_MAX;
}

/* 1 if rows r < rows, elements i < n of v lie inside its buffer. */
static int rows_fit(qtts_gpu_rows v, int64_t rows, int64_t n) {
    return v.ld >= 0 && v.ld <= UINT32_MAX && fits(v.buf, v.off, (rows - 1) * v.ld + n);
}

static int bad(qtts_err *err, const char *kernel, const char *what) {
    return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU %s: %s", kernel, what);
}

static uint32_t groups(int64_t n) { return (uint32_t)((n + WG - 1) / WG); }

static qtts_gpu_buf *upload(qtts_gpu *g, const float *x, int64_t n, qtts_err *err) {
    qtts_gpu_buf *b = qtts_gpu_buf_new(g, (size_t)n * sizeof(float), err);
    if (b) memcpy(qtts_gpu_buf_data(b), x, (size_t)n * sizeof(float));
    return b;
}

static qtts_gpu_conv *conv_new(qtts_gpu *g, const float *w, const float *bias, int64_t c_in, int64_t c_out, int64_t k,
                               int64_t dil, int64_t stride, qtts_err *err) {
    if (c_in <= 0 || c_out <= 0 || k <= 0 || dil <= 0 || stride < 0 || c_out > MAX_GROUPS ||
        c_in * c_out * k > UINT32_MAX) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "GPU conv: bad shape %lld -> %lld channels, %lld taps", (long long)c_in,
                     (long long)c_out, (long long)k);
        return NULL;
    }
    qtts_gpu_conv *cv = calloc(1, sizeof *cv);
    if (!cv) {
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "GPU conv: out of memory");
        return NULL;
    }
    *cv = (qtts_gpu_conv){.c_in = c_in, .c_out = c_out, .k = k, .dil = dil, .stride = stride};
    if (!(cv->w = upload(g, w, c_in * c_out * k, err)) || (bias && !(cv->bias = upload(g, bias, c_out, err)))) {
        qtts_gpu_conv_free(g, cv);
        return NULL;
    }
    return cv;
}

qtts_gpu_conv *qtts_gpu_conv_new(qtts_gpu *g, const float *w, const float *bias, int64_t c_out, int64_t c_in, int64_t k,
                                 int64_t dil, qtts_err *err) {
    return conv_new(g, w, bias, c_in, c_out, k, dil, 0, err);
}

qtts_gpu_conv *qtts_gpu_conv_new_transposed(qtts_gpu *g, const float *w, const float *bias, int64_t c_in, int64_t c_out,
                                            int64_t k, int64_t stride, qtts_err *err) {
    if (stride <= 0) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "GPU conv transpose: stride %lld", (long long)stride);
        return NULL;
    }
    return conv_new(g, w, bias, c_in, c_out, k, 1, stride, err);
}

void qtts_gpu_conv_free(qtts_gpu *g, qtts_gpu_conv *cv) {
    if (!cv) return;
    if (cv->w) qtts_gpu_buf_free(g, cv->w);
    if (cv->bias) qtts_gpu_buf_free(g, cv->bias);
    free(cv);
}

int64_t qtts_gpu_conv_history(const qtts_gpu_conv *cv) {
    return cv->stride ? (cv->k + cv->stride - 1) / cv->stride - 1 : (cv->k - 1) * cv->dil;
}

int qtts_gpu_conv1d(qtts_gpu_seq *s, const qtts_gpu_conv *cv, qtts_gpu_rows x, int64_t T, qtts_gpu_rows y,
                    qtts_gpu_rows add, qtts_err *err) {
    if (T <= 0) return 0;
    const int64_t H = qtts_gpu_conv_history(cv), out = cv->stride ? T * cv->stride : T;
    if (out > (int64_t)WG * MAX_GROUPS) return bad(err, "conv", "too many samples in one call");
    if (!rows_fit(x, cv->c_in, H + T)) return bad(err, "conv", "x lies outside its buffer");
    if (!rows_fit(y, cv->c_out, out)) return bad(err, "conv", "y lies outside its buffer");
    if (x.buf == y.buf) return bad(err, "conv", "x and y must be separate buffers");
    if (cv->stride) {
        if (add.buf) return bad(err, "conv transpose", "no residual input");
        struct {
            uint32_t c_in, c_out, K, s, H, T, x_off, ldx, y_off, ldy, has_bias;
        } pc = {(uint32_t)cv->c_in, (uint32_t)cv->c_out, (uint32_t)cv->k, (uint32_t)cv->stride,
                (uint32_t)H,        (uint32_t)T,         (uint32_t)x.off, (uint32_t)x.ld,
                (uint32_t)y.off,    (uint32_t)y.ld,      cv->bias != NULL};
        qtts_gpu_buf *b[] = {cv->w, cv->bias ? cv->bias : cv->w, x.buf, y.buf};
        return qtts_vk_dispatch(s, QTTS_SHADER_tconv, b, &pc, sizeof pc, groups(out), (uint32_t)cv->c_out, 1, err);
    }
    if (add.buf && !rows_fit(add, cv->c_out, T)) return bad(err, "conv", "add lies outside its buffer");
    struct {
        uint32_t c_in, k, dil, T, x_off, ldx, y_off, ldy, a_off, lda, has_bias, has_add;
    } pc = {(uint32_t)cv->c_in, (uint32_t)cv->k,  (uint32_t)cv->dil, (uint32_t)T,
            (uint32_t)x.off,    (uint32_t)x.ld,   (uint32_t)y.off,   (uint32_t)y.ld,
            (uint32_t)add.off,  (uint32_t)add.ld, cv->bias != NULL,  add.buf != NULL};
    qtts_gpu_buf *b[] = {cv->w, cv->bias ? cv->bias : cv->w, x.buf, y.buf, add.buf ? add.buf : y.buf};
    return qtts_vk_dispatch(s, QTTS_SHADER_conv1d, b, &pc, sizeof pc, groups(T), (uint32_t)cv->c_out, 1, err);
}

int qtts_gpu_copy_rows(qtts_gpu_seq *s, qtts_gpu_rows src, qtts_gpu_rows dst, int64_t rows, int64_t n, qtts_err *err) {
    if (rows <= 0 || n <= 0) return 0;
    if (rows > MAX_GROUPS || n > (int64_t)WG * MAX_GROUPS) return bad(err, "copy", "bad shape");
    if (!rows_fit(src, rows, n) || !rows_fit(dst, rows, n)) return bad(err, "copy", "rows lie outside their buffer");
    struct {
        uint32_t n, s_off, lds, d_off, ldd;
    } pc = {(uint32_t)n, (uint32_t)src.off, (uint32_t)src.ld, (uint32_t)dst.off, (uint32_t)dst.ld};
    qtts_gpu_buf *b[] = {src.buf, dst.buf};
    return qtts_vk_dispatch(s, QTTS_SHADER_copy_rows, b, &pc, sizeof pc, groups(n), (uint32_t)rows, 1, err);
}

int qtts_gpu_transpose(qtts_gpu_seq *s, qtts_gpu_rows src, qtts_gpu_rows dst, int64_t rows, int64_t n, qtts_err *err) {
    if (rows <= 0 || n <= 0) return 0;
    if (rows > MAX_GROUPS || n > (int64_t)WG * MAX_GROUPS) return bad(err, "transpose", "bad shape");
    if (!rows_fit(src, rows, n) || !rows_fit(dst, n, rows))
        return bad(err, "transpose", "rows lie outside their buffer");
    if (src.buf == dst.buf) return bad(err, "transpose", "not in place");
    struct {
        uint32_t n, s_off, lds, d_off, ldd;
    } pc = {(uint32_t)n, (uint32_t)src.off, (uint32_t)src.ld, (uint32_t)dst.off, (uint32_t)dst.ld};
    qtts_gpu_buf *b[] = {src.buf, dst.buf};
    return qtts_vk_dispatch(s, QTTS_SHADER_transpose, b, &pc, sizeof pc, groups(n), (uint32_t)rows, 1, err);
}

int qtts_gpu_clamp(qtts_gpu_seq *s, qtts_gpu_rows x, int64_t rows, int64_t n, float lo, float hi, qtts_err *err) {
    if (rows <= 0 || n <= 0) return 0;
    if (rows > MAX_GROUPS || n > (int64_t)WG * MAX_GROUPS || !(lo <= hi)) return bad(err, "clamp", "bad shape");
    if (!rows_fit(x, rows, n)) return bad(err, "clamp", "rows lie outside their buffer");
    struct {
        uint32_t n, off, ld;
        float lo, hi;
    } pc = {(uint32_t)n, (uint32_t)x.off, (uint32_t)x.ld, lo, hi};
    qtts_gpu_buf *b[] = {x.buf};
    return qtts_vk_dispatch(s, QTTS_SHADER_clamp, b, &pc, sizeof pc, groups(n), (uint32_t)rows, 1, err);
}

int qtts_gpu_snake(qtts_gpu_seq *s, qtts_gpu_rows x, qtts_gpu_rows y, int64_t C, int64_t T, qtts_gpu_buf *ea,
                   qtts_gpu_buf *ib, qtts_err *err) {
    if (C <= 0 || T <= 0) return 0;
    if (C > MAX_GROUPS || T > (int64_t)WG * MAX_GROUPS) return bad(err, "snake", "bad shape");
    if (!rows_fit(x, C, T) || !rows_fit(y, C, T)) return bad(err, "snake", "rows lie outside their buffer");
    if (!fits(ea, 0, C) || !fits(ib, 0, C)) return bad(err, "snake", "fewer parameters than channels");
    struct {
        uint32_t T, x_off, ldx, y_off, ldy;
    } pc = {(uint32_t)T, (uint32_t)x.off, (uint32_t)x.ld, (uint32_t)y.off, (uint32_t)y.ld};
    qtts_gpu_buf *b[] = {x.buf, ea, ib, y.buf};
    return qtts_vk_dispatch(s, QTTS_SHADER_snake, b, &pc, sizeof pc, groups(T), (uint32_t)C, 1, err);
}

int qtts_gpu_conv_pad(qtts_gpu_seq *s, qtts_gpu_rows in, int64_t C, int64_t T, qtts_gpu_buf *ea, qtts_gpu_buf *ib,
                      qtts_gpu_rows hist, int64_t H, qtts_gpu_rows xp, qtts_err *err) {
    if (C <= 0 || T <= 0) return 0;
    if (H < 0 || (H > 0 && !rows_fit(hist, C, H))) return bad(err, "conv pad", "the history lies outside its buffer");
    if (xp.buf == in.buf || (H > 0 && (xp.buf == hist.buf || in.buf == hist.buf)))
        return bad(err, "conv pad", "the input, history and padded rows must be separate buffers");
    qtts_gpu_rows body = {xp.buf, xp.off + H, xp.ld};
    if (!rows_fit(xp, C, H + T)) return bad(err, "conv pad", "the padded rows lie outside their buffer");
    if (qtts_gpu_copy_rows(s, hist, xp, C, H, err)) return -1;
    if (ea ? qtts_gpu_snake(s, in, body, C, T, ea, ib, err) : qtts_gpu_copy_rows(s, in, body, C, T, err)) return -1;
    /* the last H samples of the padded rows: history, or history and input when T < H */
    qtts_gpu_rows tail = {xp.buf, xp.off + T, xp.ld};
    return qtts_gpu_copy_rows(s, tail, hist, C, H, err);
}

int qtts_gpu_dwconv(qtts_gpu_seq *s, qtts_gpu_buf *xh, int64_t xh_off, int64_t C, int64_t T, qtts_gpu_buf *wt,
                    int64_t k, qtts_gpu_buf *b, qtts_gpu_buf *y, int64_t y_off, qtts_err *err) {
    if (C <= 0 || T <= 0) return 0;
    if (k <= 0 || T > MAX_GROUPS) return bad(err, "dwconv", "bad shape");
    if (!fits(xh, xh_off, (k - 1 + T) * C)) return bad(err, "dwconv", "the input lies outside its buffer");
    if (!fits(y, y_off, T * C)) return bad(err, "dwconv", "y lies outside its buffer");
    if (xh == y) return bad(err, "dwconv", "the input and y must be separate buffers");
    if (!fits(wt, 0, k * C) || (b && !fits(b, 0, C))) return bad(err, "dwconv", "the weights are too small");
    struct {
        uint32_t C, k, x_off, y_off, has_bias;
    } pc = {(uint32_t)C, (uint32_t)k, (uint32_t)xh_off, (uint32_t)y_off, b != NULL};
    qtts_gpu_buf *bufs[] = {xh, wt, b ? b : wt, y};
    return qtts_vk_dispatch(s, QTTS_SHADER_dwconv, bufs, &pc, sizeof pc, groups(C), (uint32_t)T, 1, err);
}

int qtts_gpu_layernorm(qtts_gpu_seq *s, qtts_gpu_buf *x, int64_t x_off, qtts_gpu_buf *w, qtts_gpu_buf *b,
                       qtts_gpu_buf *y, int64_t y_off, int64_t rows, int64_t dim, float eps, qtts_err *err) {
    if (rows <= 0) return 0;
    if (dim <= 0 || rows > MAX_GROUPS) return bad(err, "layernorm", "bad shape");
    if (!fits(x, x_off, rows * dim) || !fits(y, y_off, rows * dim)) return bad(err, "layernorm", "rows lie outside");
    if ((w && !fits(w, 0, dim)) || (b && !fits(b, 0, dim))) return bad(err, "layernorm", "the weights are too small");
    struct {
        uint32_t dim, x_off, y_off, has_w, has_b;
        float eps;
    } pc = {(uint32_t)dim, (uint32_t)x_off, (uint32_t)y_off, w != NULL, b != NULL, eps};
    qtts_gpu_buf *bufs[] = {x, w ? w : x, b ? b : x, y};
    return qtts_vk_dispatch(s, QTTS_SHADER_layernorm, bufs, &pc, sizeof pc, (uint32_t)rows, 1, 1, err);
}

int qtts_gpu_gelu(qtts_gpu_seq *s, qtts_gpu_rows x, int64_t rows, int64_t n, qtts_err *err) {
    if (rows <= 0 || n <= 0) return 0;
    if (rows > MAX_GROUPS || n > (int64_t)WG * MAX_GROUPS) return bad(err, "gelu", "bad shape");
    if (!rows_fit(x, rows, n)) return bad(err, "gelu", "rows lie outside their buffer");
    struct {
        uint32_t n, off, ld;
    } pc = {(uint32_t)n, (uint32_t)x.off, (uint32_t)x.ld};
    qtts_gpu_buf *b[] = {x.buf};
    return qtts_vk_dispatch(s, QTTS_SHADER_gelu, b, &pc, sizeof pc, groups(n), (uint32_t)rows, 1, err);
}

int qtts_gpu_scale_add(qtts_gpu_seq *s, qtts_gpu_rows x, qtts_gpu_buf *g, qtts_gpu_rows v, int64_t rows, int64_t n,
                       qtts_err *err) {
    if (rows <= 0 || n <= 0) return 0;
    if (rows > MAX_GROUPS || n > (int64_t)WG * MAX_GROUPS) return bad(err, "scale_add", "bad shape");
    if (!rows_fit(x, rows, n) || (v.buf && !rows_fit(v, rows, n))) return bad(err, "scale_add", "rows lie outside");
    if (g ? !fits(g, 0, n) : !v.buf) return bad(err, "scale_add", "neither a scale nor a v");
    struct {
        uint32_t n, x_off, ldx, v_off, ldv, has_g, has_v;
    } pc = {(uint32_t)n, (uint32_t)x.off, (uint32_t)x.ld, (uint32_t)v.off, (uint32_t)v.ld, g != NULL, v.buf != NULL};
    qtts_gpu_buf *b[] = {x.buf, g ? g : x.buf, v.buf ? v.buf : x.buf};
    return qtts_vk_dispatch(s, QTTS_SHADER_scale_add, b, &pc, sizeof pc, groups(n), (uint32_t)rows, 1, err);
}
