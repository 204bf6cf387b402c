#include "tensor/conv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/conv_kernels.h"
#include "tensor/conv_winograd.h"
#include "tensor/cpu.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

/* ---- weights ------------------------------------------------------------ */

/* The weights in f32 (cv->w), or in the bf16 form straight away (cv->wbf). */
static int conv_alloc(qtts_conv *cv, int64_t rows, int64_t c_in, int64_t k, int64_t dil, int bf16, qtts_err *err) {
    memset(cv, 0, sizeof *cv);
    if (rows <= 0 || c_in <= 0 || k <= 0 || dil <= 0)
        return qtts_fail(err, "conv: bad geometry (rows %lld, c_in %lld, k %lld, dilation %lld)", (long long)rows,
                         (long long)c_in, (long long)k, (long long)dil);
    if (bf16 && qtts_conv_bf16_require(err)) return -1;
    cv->c_in = c_in;
    cv->c_out = rows;
    cv->k = k;
    cv->dil = dil;
    cv->rows_pad = (rows + QTTS_CONV_MR - 1) / QTTS_CONV_MR * QTTS_CONV_MR;
    const size_t n = bf16 ? (size_t)(cv->rows_pad * qtts_conv_pairs(c_in) * k) : (size_t)(cv->rows_pad * c_in * k);
    void *w = bf16 ? (void *)(cv->wbf = qtts_calloc(n, sizeof(uint32_t), err))
                   : (void *)(cv->w = qtts_calloc(n, sizeof(float), err));
    cv->bias = qtts_calloc((size_t)cv->rows_pad, sizeof(float), err);
    if (!w || !cv->bias) {
        qtts_conv_free(cv);
        return -1;
    }
    qtts_advise_huge(w, n * sizeof(float)); /* fewer page faults to fill it */
    return 0;
}

/* Row blocks [begin, end) of a packing. A transposed conv's packed row r is
 * phase j = r / c_out of output co = r % c_out: its tap kk reads input t-(H-kk)
 * through weight tap j+(H-kk)*stride (zero past the kernel's end). */
typedef struct {
    qtts_conv *cv;
    const float *w, *bias;
    int64_t c_out;  /* of the weight (the conv's rows are c_out * stride) */
    int64_t k_src;  /* taps of the weight */
    int64_t stride; /* 0: a plain conv */
} pack_conv_job;

/* Where a packed row's weights are in the source, worked out once per row. */
typedef struct {
    int64_t base; /* source index of (input 0, tap 0 of the kernel), or -1 */
    int64_t ph;   /* its phase (a transposed conv), else 0 */
} pack_row;

/* Weight (input ci, packed tap kk) of row pr; 0 past the inputs or the kernel. */
static inline float pack_source(const pack_conv_job *j, const pack_row *pr, int64_t ci, int64_t kk) {
    const qtts_conv *cv = j->cv;
    if (pr->base < 0 || ci >= cv->c_in) return 0.0f;
    if (!j->stride) return j->w[pr->base + ci * cv->k + kk];
    const int64_t tap = pr->ph + (cv->k - 1 - kk) * j->stride;
    return tap < j->k_src ? j->w[pr->base + ci * j->c_out * j->k_src + tap] : 0.0f;
}

/* Written in the packed order, front to back, so every word is stored once:
 * the bf16 form rounds each weight into its half of the channel pair's word,
 * as qtts_conv_to_bf16 does from the f32 form. */
static void pack_conv_rows(void *ctx, int64_t begin, int64_t end, int tid) {
    const pack_conv_job *j = ctx;
    qtts_conv *cv = j->cv;
    (void)tid;
    for (int64_t rb = begin; rb < end; rb++) {
        pack_row pr[QTTS_CONV_MR];
        for (int rr = 0; rr < QTTS_CONV_MR; rr++) {
            const int64_t r = rb * QTTS_CONV_MR + rr;
            const int64_t co = j->stride ? r % j->c_out : r;
            pr[rr].ph = j->stride ? r / j->c_out : 0;
            pr[rr].base = r >= cv->c_out ? -1 : j->stride ? co * j->k_src : co * cv->c_in * cv->k;
            if (r < cv->c_out) cv->bias[r] = j->bias ? j->bias[co] : 0.0f;
        }
        if (cv->w) {
            float *dst = cv->w + rb * cv->c_in * cv->k * QTTS_CONV_MR;
            for (int64_t ci = 0; ci < cv->c_in; ci++)
                for (int64_t kk = 0; kk < cv->k; kk++)
                    for (int rr = 0; rr < QTTS_CONV_MR; rr++) *dst++ = pack_source(j, &pr[rr], ci, kk);
            continue;
        }
        const int64_t c2n = qtts_conv_pairs(cv->c_in);
        uint32_t *dst = cv->wbf + rb * c2n * cv->k * QTTS_CONV_MR;
        for (int64_t cp = 0; cp < c2n; cp++)
            for (int64_t kk = 0; kk < cv->k; kk++)
                for (int rr = 0; rr < QTTS_CONV_MR; rr++) {
                    const uint32_t lo = qtts_f32_to_bf16(pack_source(j, &pr[rr], 2 * cp, kk));
                    const uint32_t hi = qtts_f32_to_bf16(pack_source(j, &pr[rr], 2 * cp + 1, kk));
                    *dst++ = lo | hi << 16;
                }
    }
}

static void pack_conv(qtts_conv *cv, pack_conv_job *j, qtts_pool *pool) {
    j->cv = cv;
    /* a copy: about a matrix-vector product's work per weight */
    qtts_parallel_for_work(pool, cv->rows_pad / QTTS_CONV_MR, 1, (double)cv->rows_pad * (double)(cv->c_in * cv->k),
                           pack_conv_rows, j);
}

int qtts_conv_init(qtts_conv *cv, const float *w, const float *bias, int64_t c_out, int64_t c_in, int64_t k,
                   int64_t dil, qtts_err *err) {
    return qtts_conv_init_pool(cv, w, bias, c_out, c_in, k, dil, 0, NULL, err);
}

int qtts_conv_init_pool(qtts_conv *cv, const float *w, const float *bias, int64_t c_out, int64_t c_in, int64_t k,
                        int64_t dil, int bf16, qtts_pool *pool, qtts_err *err) {
    if (conv_alloc(cv, c_out, c_in, k, dil, bf16, err)) return -1;
    pack_conv_job j = {.w = w, .bias = bias, .c_out = c_out, .k_src = k};
    pack_conv(cv, &j, pool);
    return 0;
}

int qtts_conv_init_transposed(qtts_conv *cv, const float *w, const float *bias, int64_t c_in, int64_t c_out,
                              int64_t k, int64_t stride, qtts_err *err) {
    return qtts_conv_init_transposed_pool(cv, w, bias, c_in, c_out, k, stride, 0, NULL, err);
}

int qtts_conv_init_transposed_pool(qtts_conv *cv, const float *w, const float *bias, int64_t c_in, int64_t c_out,
                                   int64_t k, int64_t stride, int bf16, qtts_pool *pool, qtts_err *err) {
    if (stride <= 0 || k <= 0) return qtts_fail(err, "conv transpose: bad kernel %lld / stride %lld", (long long)k,
                                                (long long)stride);
    int64_t H = (k + stride - 1) / stride - 1;
    if (conv_alloc(cv, c_out * stride, c_in, H + 1, 1, bf16, err)) return -1;
    pack_conv_job j = {.w = w, .bias = bias, .c_out = c_out, .k_src = k, .stride = stride};
    pack_conv(cv, &j, pool);
    return 0;
}

void qtts_conv_free(qtts_conv *cv) {
    if (!cv) return;
    free(cv->w);
    free(cv->wbf);
    free(cv->wi16);
    free(cv->wscale);
    free(cv->bias);
    qtts_winograd_free(cv->wg);
    memset(cv, 0, sizeof *cv);
}

/* ---- bf16 form ------------------------------------------------------------ */

int qtts_conv_bf16_supported(void) {
    return (qtts_cpu_isa() == QTTS_ISA_AVX512 && qtts_cpu_features_get()->avx512bf16) ||
           qtts_cpu_isa() == QTTS_ISA_NEON_BF16;
}

int qtts_conv_bf16_require(qtts_err *err) {
    if (qtts_conv_bf16_supported()) return 0;
    return qtts_fail(err, "bf16 convolutions need a CPU with AVX-512 BF16 or Arm BF16 (this one: %s kernels)",
                     qtts_isa_name(qtts_cpu_isa()));
}


int qtts_conv_to_bf16(qtts_conv *cv, qtts_err *err) {
    if (cv->wbf) return 0;
    if (cv->wg) return qtts_fail(err, "bf16: this conv is already in its Winograd form");
    if (qtts_conv_bf16_require(err)) return -1;
    const int64_t c2n = qtts_conv_pairs(cv->c_in), nrb = cv->rows_pad / QTTS_CONV_MR;
    uint32_t *wbf = qtts_calloc((size_t)(nrb * c2n * cv->k * QTTS_CONV_MR), sizeof *wbf, err);
    if (!wbf) return -1;
    for (int64_t rb = 0; rb < nrb; rb++)
        for (int64_t ci = 0; ci < cv->c_in; ci++)
            for (int64_t kk = 0; kk < cv->k; kk++)
                for (int rr = 0; rr < QTTS_CONV_MR; rr++) {
                    uint32_t h = qtts_f32_to_bf16(cv->w[((rb * cv->c_in + ci) * cv->k + kk) * QTTS_CONV_MR + rr]);
                    wbf[((rb * c2n + ci / 2) * cv->k + kk) * QTTS_CONV_MR + rr] |= ci % 2 ? h << 16 : h;
                }
    free(cv->w);
    cv->w = NULL;
    cv->wbf = wbf;
    return 0;
}

void qtts_bf16_pairs_row_scalar(const float *x0, const float *x1, uint32_t *pairs, int64_t n) {
    for (int64_t t = 0; t < n; t++)
        pairs[t] = (uint32_t)qtts_f32_to_bf16(x0[t]) | (x1 ? (uint32_t)qtts_f32_to_bf16(x1[t]) << 16 : 0u);
}

static inline float bf16_lo(uint32_t p) { return qtts_bf16_to_f32((uint16_t)(p & 0xFFFFu)); }
static inline float bf16_hi(uint32_t p) { return qtts_bf16_to_f32((uint16_t)(p >> 16)); }

void qtts_conv_tile_bf16_scalar(const qtts_conv *cv, const uint32_t *x, int64_t ldx, int64_t nt, int64_t rb,
                                float *y, int64_t ldy, const float *add, int64_t ldadd) {
    const int64_t K = cv->k, dil = cv->dil, c2n = qtts_conv_pairs(cv->c_in);
    const uint32_t *wb = cv->wbf + (size_t)rb * c2n * K * QTTS_CONV_MR;
    float acc[QTTS_CONV_MR][QTTS_CONV_NT];
    memset(acc, 0, sizeof acc);
    for (int64_t c2 = 0; c2 < c2n; c2++)
        for (int64_t kk = 0; kk < K; kk++) {
            const uint32_t *wp = wb + (c2 * K + kk) * QTTS_CONV_MR, *xp = x + c2 * ldx + kk * dil;
            for (int r = 0; r < QTTS_CONV_MR; r++)
                for (int64_t t = 0; t < nt; t++)
                    acc[r][t] += bf16_lo(wp[r]) * bf16_lo(xp[t]) + bf16_hi(wp[r]) * bf16_hi(xp[t]);
        }
    for (int r = 0; r < QTTS_CONV_MR; r++) {
        int64_t row = rb * QTTS_CONV_MR + r;
        if (row >= cv->c_out) break;
        float *yr = y + row * ldy;
        const float *ar = add ? add + row * ldadd : NULL;
        for (int64_t t = 0; t < nt; t++) yr[t] = acc[r][t] + cv->bias[row] + (ar ? ar[t] : 0.0f);
    }
}

/* Output channels [begin, end) of a time-major transposed-conv matrix: each
 * reads its weights [ci][co][0..k) in place, front to back per input channel. */
typedef struct {
    float *m;
    const float *w;
    int64_t c_in, c_out, k, stride, nk;
} tm_transposed_job;

/* For each output channel, input by input: the source's taps of (ci, co) are
 * one run, read once, and each phase's row is written front to back (with
 * the input channel outside, every store went to another cache line). */
static void tm_transposed_rows(void *ctx, int64_t begin, int64_t end, int tid) {
    const tm_transposed_job *j = ctx;
    (void)tid;
    const int64_t H = j->nk - 1;
    for (int64_t co = begin; co < end; co++)
        for (int64_t ci = 0; ci < j->c_in; ci++) {
            const float *src = j->w + (ci * j->c_out + co) * j->k;
            for (int64_t ph = 0; ph < j->stride; ph++) {
                float *dst = j->m + (ph * j->c_out + co) * j->c_in * j->nk + ci * j->nk;
                for (int64_t kk = 0; kk < j->nk; kk++) {
                    const int64_t tap = ph + (H - kk) * j->stride;
                    dst[kk] = tap < j->k ? src[tap] : 0.0f;
                }
            }
        }
}

int64_t qtts_conv_tm_transposed_taps(int64_t k, int64_t stride) {
    return (k + stride - 1) / stride;
}

void qtts_conv_tm_transposed_matrix_into(const float *w, int64_t c_in, int64_t c_out, int64_t k, int64_t stride,
                                         float *m, qtts_pool *pool) {
    const int64_t nk = qtts_conv_tm_transposed_taps(k, stride);
    tm_transposed_job j = {.m = m, .w = w, .c_in = c_in, .c_out = c_out, .k = k, .stride = stride, .nk = nk};
    /* a copy: about a matrix-vector product's work per weight */
    qtts_parallel_for_work(pool, c_out, 16, (double)(stride * c_out) * (double)(c_in * nk), tm_transposed_rows, &j);
}

float *qtts_conv_tm_transposed_matrix(const float *w, int64_t c_in, int64_t c_out, int64_t k, int64_t stride,
                                      int64_t *taps, qtts_err *err) {
    if (stride <= 0 || k <= 0) {
        qtts_fail(err, "conv transpose: bad kernel %lld / stride %lld", (long long)k, (long long)stride);
        return NULL;
    }
    const int64_t nk = qtts_conv_tm_transposed_taps(k, stride);
    float *m = qtts_malloc((size_t)(stride * c_out * c_in * nk) * sizeof(float), err);
    if (!m) return NULL;
    qtts_conv_tm_transposed_matrix_into(w, c_in, c_out, k, stride, m, NULL);
    *taps = nk;
    return m;
}

/* ---- ISA selection ------------------------------------------------------ */

int qtts_conv_isa_supported(qtts_conv_isa isa) {
    const qtts_cpu_features *f = qtts_cpu_features_get();
    switch (isa) {
    case QTTS_CONV_ISA_AUTO:
    case QTTS_CONV_ISA_SCALAR: return 1;
#if defined(__x86_64__) || defined(_M_X64)
    case QTTS_CONV_ISA_AVX2: return qtts_isa_supported(f, QTTS_ISA_AVX2);
    case QTTS_CONV_ISA_AVX512: return qtts_isa_supported(f, QTTS_ISA_AVX512);
#elif defined(__aarch64__)
    case QTTS_CONV_ISA_NEON: return qtts_isa_supported(f, QTTS_ISA_NEON);
#endif
    default: return 0;
    }
}

qtts_conv_isa qtts_conv_isa_best(void) {
    switch (qtts_cpu_isa()) {
    case QTTS_ISA_AVX512: return QTTS_CONV_ISA_AVX512;
    case QTTS_ISA_AVX2: return QTTS_CONV_ISA_AVX2;
    case QTTS_ISA_NEON:
    case QTTS_ISA_NEON_DOTPROD:
    case QTTS_ISA_NEON_BF16: return QTTS_CONV_ISA_NEON;
    default: return QTTS_CONV_ISA_SCALAR;
    }
}

const char *qtts_conv_isa_name(qtts_conv_isa isa) {
    switch (isa) {
    case QTTS_CONV_ISA_AUTO: return qtts_conv_isa_name(qtts_conv_isa_best());
    case QTTS_CONV_ISA_AVX2: return "avx2";
    case QTTS_CONV_ISA_AVX512: return "avx512";
    case QTTS_CONV_ISA_NEON: return "neon";
    default: return "scalar";
    }
}

qtts_conv_isa qtts_conv_isa_resolve(qtts_conv_isa isa) {
    if (isa == QTTS_CONV_ISA_AUTO) return qtts_conv_isa_best();
    return qtts_conv_isa_supported(isa) ? isa : QTTS_CONV_ISA_SCALAR;
}

/* ---- channel-major conv ------------------------------------------------- */

qtts_conv_tile_fn qtts_conv_tile_for(qtts_conv_isa isa) {
    switch (qtts_conv_isa_resolve(isa)) {
#if defined(__x86_64__) || defined(_M_X64)
    case QTTS_CONV_ISA_AVX512: return qtts_conv_tile_avx512;
    case QTTS_CONV_ISA_AVX2: return qtts_conv_tile_avx2;
#elif defined(__aarch64__)
    case QTTS_CONV_ISA_NEON: return qtts_conv_tile_neon;
#endif
    default: return qtts_conv_tile_scalar;
    }
}

void qtts_conv_tile_scalar(const qtts_conv *cv, const float *x, int64_t ldx, int64_t nt, int64_t rb, float *y,
                           int64_t ldy, const float *add, int64_t ldadd) {
    const int64_t K = cv->k, dil = cv->dil;
    const float *wb = cv->w + (size_t)rb * cv->c_in * K * QTTS_CONV_MR;
    float acc[QTTS_CONV_MR][QTTS_CONV_NT];
    memset(acc, 0, sizeof acc);
    for (int64_t ci = 0; ci < cv->c_in; ci++) {
        const float *xr = x + ci * ldx;
        for (int64_t kk = 0; kk < K; kk++) {
            const float *wp = wb + (ci * K + kk) * QTTS_CONV_MR;
            const float *xp = xr + kk * dil;
            for (int r = 0; r < QTTS_CONV_MR; r++)
                for (int64_t t = 0; t < nt; t++) acc[r][t] += wp[r] * xp[t];
        }
    }
    for (int r = 0; r < QTTS_CONV_MR; r++) {
        int64_t row = rb * QTTS_CONV_MR + r;
        if (row >= cv->c_out) break;
        float *yr = y + row * ldy;
        const float *ar = add ? add + row * ldadd : NULL;
        for (int64_t t = 0; t < nt; t++) yr[t] = acc[r][t] + cv->bias[row] + (ar ? ar[t] : 0.0f);
    }
}

/* The AVX2 tile sweeps 24 samples per pass (see gemm_panel below). Reading
 * them out of long channel rows, every pass over c_in rows strides through
 * memory, and every row block repeats it: x is copied once into panels of 24
 * samples per channel, contiguous per panel, so each pass reads one stream.
 * The 2-tap convs (transposed, as phases) measured no gain, so only 1-tap
 * convs are packed. The arithmetic is the same either way. */
enum { PANEL_AVX2 = 24 };

/* One conv call: an f32 conv reads x through tile, a bf16 conv its channel
 * pairs xbf through tile_bf16; everything else is shared. */
typedef struct {
    const qtts_conv *cv;
    const float *x, *add;
    const uint32_t *xbf;
    int64_t ldx, ldy, ldadd, T, n_rb, n_tb;
    int64_t nt;          /* samples per time block: QTTS_CONV_NT, or PANEL_AVX2 where x is packed */
    const float *panels; /* x packed (pack_panels), or NULL: block tb at panels + tb*c_in*ldx */
    int rows_outer;
    float *y;
    qtts_conv_tile_fn tile;
    qtts_conv_tile_bf16_fn tile_bf16;
} conv_job;

/* Items are (time block, row block), in qtts_conv_item_blocks order. */
static void conv_items(void *p, int64_t i0, int64_t i1, int tid) {
    (void)tid;
    const conv_job *j = p;
    for (int64_t i = i0; i < i1; i++) {
        int64_t tb, rb;
        qtts_conv_item_blocks(i, j->n_tb, j->n_rb, j->rows_outer, &tb, &rb);
        int64_t t0 = tb * j->nt, nt = j->T - t0 < j->nt ? j->T - t0 : j->nt;
        const float *add = j->add ? j->add + t0 : NULL;
        if (j->xbf) j->tile_bf16(j->cv, j->xbf + t0, j->ldx, nt, rb, j->y + t0, j->ldy, add, j->ldadd);
        else if (j->panels)
            j->tile(j->cv, j->panels + tb * j->cv->c_in * j->ldx, j->ldx, nt, rb, j->y + t0, j->ldy, add, j->ldadd);
        else j->tile(j->cv, j->x + t0, j->ldx, nt, rb, j->y + t0, j->ldy, add, j->ldadd);
    }
}

static double conv_work(const qtts_conv *cv, int64_t T) {
    const double weights = (double)cv->c_out * (double)cv->c_in * (double)cv->k;
    return qtts_tile_work(weights * (double)T, weights);
}

static void run_tiles(qtts_pool *pool, conv_job *j) {
    const qtts_conv *cv = j->cv;
    j->n_rb = cv->rows_pad / QTTS_CONV_MR;
    j->n_tb = (j->T + j->nt - 1) / j->nt;
    j->rows_outer = cv->rows_pad * cv->k > j->T + qtts_conv_history(cv);
    qtts_parallel_for_work(pool, j->n_tb * j->n_rb, 1, conv_work(cv, j->T), conv_items, j);
}

/* bf16 convs: the input is first rounded into channel pairs (one pass over
 * it, parallel over pairs), then the tiles run as for f32. */
typedef struct {
    const qtts_conv *cv;
    const float *x;
    int64_t ldx, len;
    uint32_t *pairs;
    int simd; /* the AVX-512 or NEON packer */
} pairs_job;

static void pairs_rows(void *p, int64_t c0, int64_t c1, int tid) {
    (void)tid;
    const pairs_job *j = p;
    for (int64_t c2 = c0; c2 < c1; c2++) {
        const float *x0 = j->x + 2 * c2 * j->ldx, *x1 = 2 * c2 + 1 < j->cv->c_in ? x0 + j->ldx : NULL;
        uint32_t *dst = j->pairs + c2 * j->len;
#if defined(__x86_64__) || defined(_M_X64)
        if (j->simd) {
            qtts_bf16_pairs_row_avx512(x0, x1, dst, j->len);
            continue;
        }
#elif defined(__aarch64__)
        if (j->simd) {
            qtts_bf16_pairs_row_neon(x0, x1, dst, j->len);
            continue;
        }
#endif
        qtts_bf16_pairs_row_scalar(x0, x1, dst, j->len);
    }
}

static int conv1d_cm_bf16(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                          int64_t ldy, const float *add, int64_t ldadd, qtts_conv_isa isa, qtts_conv_ws *ws) {
    const int64_t len = T + qtts_conv_history(cv), c2n = qtts_conv_pairs(cv->c_in);
    int owned;
    uint32_t *pairs = qtts_conv_ws_get(ws, (size_t)(c2n * len) * sizeof *pairs, &owned);
    if (!pairs) return -1;
    /* the SIMD bf16 tile where the CPU has it and isa asks for SIMD */
    const qtts_conv_isa path = qtts_conv_isa_resolve(isa);
    const int simd = path != QTTS_CONV_ISA_SCALAR && path != QTTS_CONV_ISA_AVX2 && qtts_conv_bf16_supported();
    pairs_job pj = {cv, x, ldx, len, pairs, simd};
    qtts_parallel_for_work(pool, c2n, 8, conv_work(cv, T), pairs_rows, &pj);
    conv_job j = {.cv = cv, .xbf = pairs, .add = add, .ldx = len, .ldy = ldy, .ldadd = ldadd, .T = T, .y = y,
                  .nt = QTTS_CONV_NT, .tile_bf16 = qtts_conv_tile_bf16_scalar};
#if defined(__x86_64__) || defined(_M_X64)
    if (simd) j.tile_bf16 = qtts_conv_tile_bf16_avx512;
#elif defined(__aarch64__)
    if (simd) j.tile_bf16 = qtts_conv_tile_bf16_neon;
#endif
    run_tiles(pool, &j);
    if (owned) free(pairs);
    return 0;
}

typedef struct {
    const float *x;
    int64_t ldx, c_in, T;
    float *dst;
} pack_job;

static void pack_rows(void *p, int64_t c0, int64_t c1, int tid) {
    (void)tid;
    const pack_job *j = p;
    for (int64_t ci = c0; ci < c1; ci++)
        for (int64_t t0 = 0, tb = 0; t0 < j->T; t0 += PANEL_AVX2, tb++) {
            const int64_t n = j->T - t0 < PANEL_AVX2 ? j->T - t0 : PANEL_AVX2;
            memcpy(j->dst + (tb * j->c_in + ci) * PANEL_AVX2, j->x + ci * j->ldx + t0, (size_t)n * sizeof(float));
        }
}

/* x in panels for the AVX2 tile where several row blocks read it; NULL
 * (the tiles then read x in place) where that does not pay or on OOM. */
static float *pack_panels(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T,
                          qtts_conv_isa isa, qtts_conv_ws *ws, int *owned) {
    if (qtts_conv_isa_resolve(isa) != QTTS_CONV_ISA_AVX2 || cv->k != 1 || cv->rows_pad <= QTTS_CONV_MR ||
        T <= PANEL_AVX2)
        return NULL;
    pack_job pj = {x, ldx, cv->c_in, T, NULL};
    const int64_t n_tb = (T + PANEL_AVX2 - 1) / PANEL_AVX2;
    if (!(pj.dst = qtts_conv_ws_get(ws, (size_t)(n_tb * cv->c_in * PANEL_AVX2) * sizeof(float), owned))) return NULL;
    qtts_parallel_for_work(pool, cv->c_in, 1, (double)cv->c_in * (double)T, pack_rows, &pj);
    return pj.dst;
}

void *qtts_conv_ws_get(qtts_conv_ws *ws, size_t bytes, int *owned) {
    *owned = !ws;
    if (!ws) return malloc(bytes ? bytes : 1);
    if (bytes > ws->cap) {
        free(ws->buf); /* contents need not survive: one call's scratch */
        ws->buf = malloc(bytes);
        ws->cap = ws->buf ? bytes : 0;
    }
    return ws->buf;
}

void qtts_conv_ws_free(qtts_conv_ws *ws) {
    if (!ws) return;
    free(ws->buf);
    ws->buf = NULL;
    ws->cap = 0;
}

static int conv1d_cm(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                     int64_t ldy, const float *add, int64_t ldadd, qtts_conv_isa isa, qtts_conv_ws *ws) {
    if (T <= 0) return 0;
    if (cv->wbf) return conv1d_cm_bf16(pool, cv, x, ldx, T, y, ldy, add, ldadd, isa, ws);
    if (cv->wi16) return qtts_conv1d_cm_i16(pool, cv, x, ldx, T, y, ldy, add, ldadd, isa, ws);
    if (cv->wg) return qtts_winograd_conv(pool, cv, x, ldx, T, y, ldy, add, ldadd, isa, ws);
    conv_job j = {.cv = cv, .x = x, .add = add, .ldx = ldx, .ldy = ldy, .ldadd = ldadd, .T = T, .y = y,
                  .nt = QTTS_CONV_NT, .tile = qtts_conv_tile_for(isa)};
    int owned = 0;
    float *panels = pack_panels(pool, cv, x, ldx, T, isa, ws, &owned);
    if (panels) { /* each block's rows are PANEL_AVX2 apart */
        j.panels = panels;
        j.ldx = j.nt = PANEL_AVX2;
    }
    run_tiles(pool, &j);
    if (owned) free(panels);
    return 0;
}

int qtts_conv1d_cm_isa(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                       int64_t ldy, const float *add, int64_t ldadd, qtts_conv_isa isa) {
    return conv1d_cm(pool, cv, x, ldx, T, y, ldy, add, ldadd, isa, NULL);
}

int qtts_conv1d_cm(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                   int64_t ldy, const float *add, int64_t ldadd) {
    return conv1d_cm(pool, cv, x, ldx, T, y, ldy, add, ldadd, QTTS_CONV_ISA_AUTO, NULL);
}

int qtts_conv1d_cm_ws(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                      int64_t ldy, const float *add, int64_t ldadd, qtts_conv_ws *ws) {
    return conv1d_cm(pool, cv, x, ldx, T, y, ldy, add, ldadd, QTTS_CONV_ISA_AUTO, ws);
}

int qtts_conv1d_cm_ref(const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y, int64_t ldy,
                       const float *add, int64_t ldadd) {
    if (cv->wbf) return conv1d_cm_bf16(NULL, cv, x, ldx, T, y, ldy, add, ldadd, QTTS_CONV_ISA_SCALAR, NULL);
    if (cv->wi16) return T > 0 ? qtts_conv1d_cm_i16(NULL, cv, x, ldx, T, y, ldy, add, ldadd, QTTS_CONV_ISA_SCALAR, NULL) : 0;
    if (cv->wg) return qtts_winograd_conv(NULL, cv, x, ldx, T, y, ldy, add, ldadd, QTTS_CONV_ISA_SCALAR, NULL);
    for (int64_t row = 0; row < cv->c_out; row++) {
        int64_t rb = row / QTTS_CONV_MR, rr = row % QTTS_CONV_MR;
        for (int64_t t = 0; t < T; t++) {
            float acc = 0.0f;
            for (int64_t ci = 0; ci < cv->c_in; ci++)
                for (int64_t kk = 0; kk < cv->k; kk++)
                    acc += cv->w[((rb * cv->c_in + ci) * cv->k + kk) * QTTS_CONV_MR + rr] *
                           x[ci * ldx + t + kk * cv->dil];
            y[row * ldy + t] = acc + cv->bias[row] + (add ? add[row * ldadd + t] : 0.0f);
        }
    }
    return 0;
}

typedef struct {
    const float *ph;
    int64_t ldph, c_out, s, T, ldo;
    float *out;
} ilv_job;

static void ilv_rows(void *p, int64_t c0, int64_t c1, int tid) {
    (void)tid;
    const ilv_job *j = p;
    for (int64_t co = c0; co < c1; co++) {
        float *o = j->out + co * j->ldo;
        for (int64_t ph = 0; ph < j->s; ph++) {
            const float *src = j->ph + (ph * j->c_out + co) * j->ldph;
            for (int64_t t = 0; t < j->T; t++) o[t * j->s + ph] = src[t];
        }
    }
}

void qtts_conv_interleave(qtts_pool *pool, const float *ph, int64_t ldph, int64_t c_out, int64_t s, int64_t T,
                          float *out, int64_t ldo) {
    ilv_job j = {ph, ldph, c_out, s, T, ldo, out};
    qtts_parallel_for_work(pool, c_out, 8, (double)c_out * (double)s * (double)T / 4, ilv_rows, &j); /* copies */
}

/* ---- time-major helpers ------------------------------------------------- */

void qtts_im2col_tm(const float *xh, int64_t ldx, int64_t c_in, int64_t T, int64_t k, int64_t dil, float *col) {
    for (int64_t t = 0; t < T; t++) {
        float *c = col + t * c_in * k;
        for (int64_t kk = 0; kk < k; kk++) {
            const float *xr = xh + (t + kk * dil) * ldx;
            for (int64_t ci = 0; ci < c_in; ci++) c[ci * k + kk] = xr[ci];
        }
    }
}

void qtts_dwconv_tm(const float *xh, int64_t C, int64_t T, const float *wt, int64_t k, const float *b, float *y) {
    for (int64_t t = 0; t < T; t++) {
        float *yr = y + t * C;
        for (int64_t c = 0; c < C; c++) yr[c] = 0.0f;
        for (int64_t kk = 0; kk < k; kk++) {
            const float *xr = xh + (t + kk) * C, *wr = wt + kk * C;
            for (int64_t c = 0; c < C; c++) yr[c] += wr[c] * xr[c];
        }
        for (int64_t c = 0; c < C; c++) yr[c] += b ? b[c] : 0.0f;
    }
}

/* ---- SnakeBeta ---------------------------------------------------------- */

static inline float sin2_poly(float v) {
    float q = nearbyintf(v * QTTS_SIN_2_OVER_PI);
    float r = ((v - q * QTTS_SIN_DP1) - q * QTTS_SIN_DP2) - q * QTTS_SIN_DP3;
    r = r > QTTS_SIN_PI_4 ? QTTS_SIN_PI_4 : r < -QTTS_SIN_PI_4 ? -QTTS_SIN_PI_4 : r;
    float z = r * r;
    float s = r + r * z * (QTTS_SIN_S1 + z * (QTTS_SIN_S2 + z * QTTS_SIN_S3));
    float c = 1.0f - 0.5f * z + z * z * (QTTS_COS_C1 + z * (QTTS_COS_C2 + z * QTTS_COS_C3));
    /* odd multiple of pi/2: sin^2 = cos^2 of the remainder (no int conversion: no UB for huge q) */
    float odd = q - 2.0f * floorf(q * 0.5f);
    float m = odd != 0.0f ? c : s;
    return m * m;
}

void qtts_snake_row_ref(const float *x, float *y, int64_t n, float ea, float inv_b) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] + inv_b * sin2_poly(ea * x[i]);
}

void qtts_snake_row_libm(const float *x, float *y, int64_t n, float ea, float inv_b) {
    for (int64_t i = 0; i < n; i++) {
        float s = sinf(ea * x[i]);
        y[i] = x[i] + inv_b * (s * s);
    }
}

void qtts_snake_row_isa(const float *x, float *y, int64_t n, float ea, float inv_b, qtts_conv_isa isa) {
    switch (qtts_conv_isa_resolve(isa)) {
#if defined(__x86_64__) || defined(_M_X64)
    case QTTS_CONV_ISA_AVX512: qtts_snake_row_avx512(x, y, n, ea, inv_b); return;
    case QTTS_CONV_ISA_AVX2: qtts_snake_row_avx2(x, y, n, ea, inv_b); return;
#elif defined(__aarch64__)
    case QTTS_CONV_ISA_NEON: qtts_snake_row_neon(x, y, n, ea, inv_b); return;
#endif
    default: qtts_snake_row_ref(x, y, n, ea, inv_b); return;
    }
}

void qtts_snake_row(const float *x, float *y, int64_t n, float ea, float inv_b) {
    qtts_snake_row_isa(x, y, n, ea, inv_b, QTTS_CONV_ISA_AUTO);
}

typedef struct {
    const float *x, *ea, *ib;
    float *y;
    int64_t ldx, ldy, T;
} snake_job;

static void snake_rows(void *p, int64_t c0, int64_t c1, int tid) {
    (void)tid;
    const snake_job *j = p;
    for (int64_t c = c0; c < c1; c++) qtts_snake_row(j->x + c * j->ldx, j->y + c * j->ldy, j->T, j->ea[c], j->ib[c]);
}

void qtts_snake_cm(qtts_pool *pool, const float *x, int64_t ldx, float *y, int64_t ldy, int64_t C, int64_t T,
                   const float *ea, const float *inv_b) {
    snake_job j = {x, ea, inv_b, y, ldx, ldy, T};
    qtts_parallel_for_work(pool, C, 1, (double)C * (double)T / 2, snake_rows, &j); /* vectorized sines */
}

void qtts_snake_tm(float *x, int64_t ld, int64_t C, int64_t T, const float *ea, const float *inv_b) {
    for (int64_t t = 0; t < T; t++) {
        float *r = x + t * ld;
        for (int64_t c = 0; c < C; c++) r[c] = r[c] + inv_b[c] * sin2_poly(ea[c] * r[c]);
    }
}
