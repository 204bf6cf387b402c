/* The time-major GEMM of the decoder's transformer and pointwise layers
 * (Y[M x N] = A[M x K] * B^T, B packed in column panels once at load, in
 * f32, bf16, f16 or int16 forms): a kernel family of its own beside the
 * channel-major convolutions of conv.c. Declared in tensor/conv.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/conv.h"
#include "tensor/conv_kernels.h"
#include "tensor/conv_winograd.h"
#include "tensor/cpu.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"

/* Columns per B panel: what one pass of this CPU's tile covers, so the tile
 * streams its panel front to back once (a panel wider than a pass is swept
 * twice, reading half of every line each time). The AVX2 tile takes 24
 * samples per pass, AVX-512 48; NEON (12 per pass) keeps 48 until measured. */
static int64_t gemm_panel(void) {
    return qtts_conv_isa_resolve(QTTS_CONV_ISA_AUTO) == QTTS_CONV_ISA_AVX2 ? 24 : QTTS_CONV_NT;
}

/* Panels [begin, end) of a packing: each reads its P rows of W side by side. */
typedef struct {
    float *p;      /* f32 panels, or */
    uint32_t *pbf; /* bf16 pair panels */
    const float *w;
    int64_t N, K, P;
} pack_b_job;

static void pack_b_panels(void *ctx, int64_t begin, int64_t end, int tid) {
    const pack_b_job *j = ctx;
    (void)tid;
    const int64_t c2n = qtts_conv_pairs(j->K);
    for (int64_t pb = begin; pb < end; pb++) {
        const int64_t n0 = pb * j->P, nn = j->N - n0 < j->P ? j->N - n0 : j->P;
        if (j->p) {
            float *dst = j->p + pb * j->K * j->P;
            for (int64_t k = 0; k < j->K; k++)
                for (int64_t n = 0; n < nn; n++) dst[k * j->P + n] = j->w[(n0 + n) * j->K + k];
            continue;
        }
        /* as qtts_gemm_b_bf16_panels rounds the f32 panel (its padding columns stay 0),
         * each pair word written once */
        uint32_t *dst = j->pbf + pb * c2n * j->P;
        for (int64_t kp = 0; kp < c2n; kp++) {
            const int64_t k = 2 * kp;
            for (int64_t n = 0; n < nn; n++) {
                const float *src = j->w + (n0 + n) * j->K + k;
                const uint32_t hi = k + 1 < j->K ? qtts_f32_to_bf16(src[1]) : 0;
                dst[kp * j->P + n] = qtts_f32_to_bf16(src[0]) | hi << 16;
            }
        }
    }
}

int qtts_gemm_b_init(qtts_gemm_b *b, const float *w, int64_t N, int64_t K, qtts_err *err) {
    return qtts_gemm_b_init_pool(b, w, N, K, 0, NULL, err);
}

int qtts_gemm_b_init_pool(qtts_gemm_b *b, const float *w, int64_t N, int64_t K, int bf16, qtts_pool *pool,
                          qtts_err *err) {
    memset(b, 0, sizeof *b);
    if (N <= 0 || K <= 0) return qtts_fail(err, "gemm: bad weight shape %lld x %lld", (long long)N, (long long)K);
    if (bf16 && qtts_conv_bf16_require(err)) return -1;
    int64_t P = gemm_panel(), nb = (N + P - 1) / P;
    const size_t n = (size_t)(nb * (bf16 ? qtts_conv_pairs(K) : K) * P); /* floats or pair words: 4 bytes each */
    void *panels = bf16 ? (void *)(b->pbf = qtts_calloc(n, sizeof(uint32_t), err))
                        : (void *)(b->p = qtts_calloc(n, sizeof(float), err));
    if (!panels) return -1;
    qtts_advise_huge(panels, n * sizeof(float)); /* fewer page faults to fill it */
    pack_b_job j = {.p = b->p, .pbf = b->pbf, .w = w, .N = N, .K = K, .P = P};
    /* a copy: about a matrix-vector product's work per weight */
    qtts_parallel_for_work(pool, nb, 1, (double)N * (double)K, pack_b_panels, &j);
    b->K = K;
    b->N = N;
    b->panel = P;
    return 0;
}

void qtts_gemm_b_free(qtts_gemm_b *b) {
    if (!b) return;
    free(b->p);
    free(b->pbf);
    free(b->ph);
    free(b->pi16);
    free(b->si16);
    memset(b, 0, sizeof *b);
}

uint32_t *qtts_gemm_b_bf16_panels(const qtts_gemm_b *b, qtts_err *err) {
    if (qtts_conv_bf16_require(err)) return NULL;
    if (!b->p) {
        qtts_fail(err, "gemm: no f32 panels to convert");
        return NULL;
    }
    const int64_t P = b->panel, nb = (b->N + P - 1) / P, c2n = qtts_conv_pairs(b->K);
    uint32_t *pbf = qtts_calloc((size_t)(nb * c2n * P), sizeof *pbf, err);
    if (!pbf) return NULL;
    for (int64_t pb = 0; pb < nb; pb++)
        for (int64_t k = 0; k < b->K; k++)
            for (int64_t n = 0; n < P; n++) {
                uint32_t h = qtts_f32_to_bf16(b->p[(pb * b->K + k) * P + n]);
                pbf[(pb * c2n + k / 2) * P + n] |= k % 2 ? h << 16 : h;
            }
    return pbf;
}

uint16_t *qtts_gemm_b_f16_panels(const qtts_gemm_b *b, qtts_err *err) {
    if (!b->p) {
        qtts_fail(err, "gemm: no f32 panels to convert");
        return NULL;
    }
    const size_t n = (size_t)((b->N + b->panel - 1) / b->panel * b->K * b->panel);
    uint16_t *ph = qtts_malloc(n * sizeof *ph, err);
    if (ph) qtts_f32_to_f16_row(b->p, ph, (int64_t)n);
    return ph;
}

/* Column panels of the int16 form: the int16 tile's panel (QTTS_CONV_I16_PANEL), whatever b->panel is. */
static int64_t gemm_i16_panels(const qtts_gemm_b *b) { return qtts_i16_panels_len(b->N) / QTTS_CONV_I16_PANEL; }

int qtts_gemm_b_i16_panels(const qtts_gemm_b *b, uint32_t **pairs, float **scales, qtts_err *err) {
    *pairs = NULL;
    *scales = NULL;
    if (qtts_conv_i16_require(err)) return -1;
    if (!b->p) return qtts_fail(err, "gemm: no f32 panels to convert");
    const int64_t P = b->panel, W = QTTS_CONV_I16_PANEL, nb = gemm_i16_panels(b), c2n = qtts_conv_pairs(b->K);
    uint32_t *pi = qtts_calloc((size_t)(nb * c2n * W), sizeof *pi, err);
    float *si = qtts_calloc((size_t)(nb * W), sizeof *si, err);
    if (!pi || !si) {
        free(pi);
        free(si);
        return -1;
    }
    /* a panel is the "input" of the int16 conv tile, whose "samples" are B's columns: one scale per column.
     * Converted 8 columns at a time, which never straddle an f32 panel (P and W are multiples of 8); columns
     * past the f32 panels stay zero with scale 0. */
    for (int64_t n0 = 0; n0 < nb * W && n0 < (b->N + P - 1) / P * P; n0 += 8)
        qtts_i16_quantize_weights(b->p + (n0 / P) * b->K * P + n0 % P, P, b->K, 8, pi + (n0 / W) * c2n * W + n0 % W, W,
                                  si + n0);
    *pairs = pi;
    *scales = si;
    return 0;
}

size_t qtts_gemm_pack_size(int64_t M, int64_t K) {
    int64_t mp = (M + QTTS_CONV_MR - 1) / QTTS_CONV_MR * QTTS_CONV_MR;
    return (size_t)(mp * K + mp);
}

/* apack with f16 panels: the packed A and its bias row, then (from a 64-byte
 * multiple) one widened panel per thread, then each thread's panel index. */
static size_t gemm_wide_offset(int64_t M, int64_t K) { return (qtts_gemm_pack_size(M, K) + 15) / 16 * 16; }

size_t qtts_gemm_work_size(int64_t M, const qtts_gemm_b *B, const qtts_pool *pool) {
    if (B->pi16) { /* A's int16 pairs, its row scales and a zero bias */
        const int64_t mp = (M + QTTS_CONV_MR - 1) / QTTS_CONV_MR * QTTS_CONV_MR;
        return (size_t)(mp * qtts_conv_pairs(B->K) + 2 * mp);
    }
    if (!B->ph) return qtts_gemm_pack_size(M, B->K);
    const size_t threads = (size_t)(pool ? qtts_pool_size(pool) : 1);
    return gemm_wide_offset(M, B->K) + threads * (size_t)(B->K * B->panel) + 2 * threads; /* + int64 indices */
}

typedef struct {
    const qtts_conv *va; /* A as the "weights" of a 1-tap conv */
    const qtts_gemm_b *B;
    float *y;
    const float *add;
    int64_t ldy, ldadd, n_rb;
    qtts_conv_tile_fn tile;
    qtts_conv_tile_bf16_fn tile_bf16; /* B->pbf */
    qtts_conv_tile_i16_fn tile_i16;   /* B->pi16 */
    float *wide;      /* B->ph: [thread][K][panel] widened panels */
    int64_t *wide_pb; /* B->ph: the panel each thread's copy holds (-1: none) */
} gemm_job;

/* Items (column panel, row block), row block fastest: each B panel is
 * streamed from memory once and reused from cache for the other rows. */
static void gemm_items(void *p, int64_t i0, int64_t i1, int tid) {
    (void)tid;
    const gemm_job *j = p;
    const int64_t P = j->B->pi16 ? QTTS_CONV_I16_PANEL : j->B->panel;
    for (int64_t i = i0; i < i1; i++) {
        int64_t pb = i / j->n_rb, rb = i % j->n_rb, n0 = pb * P;
        int64_t nt = j->B->N - n0 < P ? j->B->N - n0 : P;
        const float *add = j->add ? j->add + n0 : NULL;
        if (j->B->pi16) {
            j->tile_i16(j->va, j->B->pi16 + pb * qtts_conv_pairs(j->B->K) * P, j->B->si16 + n0, P, nt, rb, j->y + n0, j->ldy,
                        add, j->ldadd);
        } else if (j->B->pbf) {
            j->tile_bf16(j->va, j->B->pbf + pb * qtts_conv_pairs(j->B->K) * P, P, nt, rb, j->y + n0, j->ldy, add, j->ldadd);
        } else if (j->B->ph) { /* items run row block fastest: a thread widens each panel once */
            float *w = j->wide + (size_t)tid * (size_t)(j->B->K * P);
            if (j->wide_pb[tid] != pb) {
                qtts_f16_to_f32_row(j->B->ph + pb * j->B->K * P, w, j->B->K * P);
                j->wide_pb[tid] = pb;
            }
            j->tile(j->va, w, P, nt, rb, j->y + n0, j->ldy, add, j->ldadd);
        } else {
            j->tile(j->va, j->B->p + pb * j->B->K * P, P, nt, rb, j->y + n0, j->ldy, add, j->ldadd);
        }
    }
}

/* A rounded into bf16 channel pairs in the layout of qtts_conv.wbf (1 tap). */
static void gemm_pack_a_bf16(int64_t M, const float *A, int64_t lda, int64_t K, int64_t rows_pad, uint32_t *dst) {
    const int64_t c2n = qtts_conv_pairs(K);
    for (int64_t rb = 0; rb < rows_pad / QTTS_CONV_MR; rb++)
        for (int rr = 0; rr < QTTS_CONV_MR; rr++) {
            int64_t m = rb * QTTS_CONV_MR + rr;
            uint32_t *d = dst + rb * c2n * QTTS_CONV_MR + rr;
            if (m >= M) {
                for (int64_t c2 = 0; c2 < c2n; c2++) d[c2 * QTTS_CONV_MR] = 0;
                continue;
            }
            const float *src = A + m * lda;
            for (int64_t c2 = 0; c2 < c2n; c2++) {
                uint32_t lo = qtts_f32_to_bf16(src[2 * c2]), hi = 2 * c2 + 1 < K ? qtts_f32_to_bf16(src[2 * c2 + 1]) : 0;
                d[c2 * QTTS_CONV_MR] = lo | hi << 16;
            }
        }
}

static qtts_conv_tile_bf16_fn gemm_tile_bf16(void) {
#if defined(__x86_64__) || defined(_M_X64)
    if (qtts_conv_bf16_supported()) return qtts_conv_tile_bf16_avx512;
#elif defined(__aarch64__)
    if (qtts_conv_bf16_supported()) return qtts_conv_tile_bf16_neon;
#endif
    return qtts_conv_tile_bf16_scalar;
}

void qtts_gemm(qtts_pool *pool, int64_t M, const float *A, int64_t lda, const qtts_gemm_b *B, float *Y, int64_t ldy,
               const float *add, int64_t ldadd, float *apack) {
    if (M <= 0) return;
    int64_t K = B->K;
    qtts_conv v = {.c_in = K, .c_out = M, .k = 1, .dil = 1};
    v.rows_pad = (M + QTTS_CONV_MR - 1) / QTTS_CONV_MR * QTTS_CONV_MR;
    gemm_job j = {&v, B, Y, add, ldy, ldadd, v.rows_pad / QTTS_CONV_MR, qtts_conv_tile_for(QTTS_CONV_ISA_AUTO), NULL,
                  NULL, NULL, NULL};
    if (B->ph) {
        const int threads = pool ? qtts_pool_size(pool) : 1;
        j.wide = apack + gemm_wide_offset(M, K);
        j.wide_pb = (int64_t *)(void *)(j.wide + (size_t)threads * (size_t)(K * B->panel));
        for (int t = 0; t < threads; t++) j.wide_pb[t] = -1;
    }
    const int64_t items = (B->pi16 ? gemm_i16_panels(B) : (B->N + B->panel - 1) / B->panel) * j.n_rb;
    const double work = qtts_tile_work((double)M * (double)K * (double)B->N, (double)K * (double)B->N);
    if (B->pi16) { /* A per row (time step) in 14-bit int16 pairs: the int16 conv's weights */
        v.wi16 = (uint32_t *)(void *)apack;
        v.wscale = apack + v.rows_pad * qtts_conv_pairs(K);
        v.bias = v.wscale + v.rows_pad;
        qtts_i16_quantize_rows(A, lda, M, K, v.rows_pad, v.wi16, v.wscale);
        memset(v.bias, 0, sizeof(float) * (size_t)v.rows_pad);
        j.tile_i16 = qtts_conv_tile_i16_for(QTTS_CONV_ISA_AUTO);
        qtts_parallel_for_work(pool, items, 1, work, gemm_items, &j);
        return;
    }
    if (B->pbf) { /* pairs need ceil(K/2) of the K floats per row that apack has */
        v.wbf = (uint32_t *)(void *)apack;
        v.bias = apack + v.rows_pad * qtts_conv_pairs(K);
        gemm_pack_a_bf16(M, A, lda, K, v.rows_pad, v.wbf);
        memset(v.bias, 0, sizeof(float) * (size_t)v.rows_pad);
        j.tile_bf16 = gemm_tile_bf16();
        qtts_parallel_for_work(pool, items, 1, work, gemm_items, &j);
        return;
    }
    v.w = apack;
    v.bias = apack + v.rows_pad * K;
    for (int64_t rb = 0; rb < v.rows_pad / QTTS_CONV_MR; rb++) {
        float *dst = apack + rb * K * QTTS_CONV_MR;
        for (int rr = 0; rr < QTTS_CONV_MR; rr++) {
            int64_t m = rb * QTTS_CONV_MR + rr;
            if (m < M) {
                const float *src = A + m * lda;
                for (int64_t k = 0; k < K; k++) dst[k * QTTS_CONV_MR + rr] = src[k];
            } else {
                for (int64_t k = 0; k < K; k++) dst[k * QTTS_CONV_MR + rr] = 0.0f;
            }
        }
    }
    memset(v.bias, 0, sizeof(float) * (size_t)v.rows_pad);
    qtts_parallel_for_work(pool, items, 1, work, gemm_items, &j);
}

void qtts_gemm_ref(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, const float *w, float *Y,
                   int64_t ldy, const float *add, int64_t ldadd) {
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            float acc = 0.0f;
            for (int64_t k = 0; k < K; k++) acc += A[m * lda + k] * w[n * K + k];
            Y[m * ldy + n] = acc + (add ? add[m * ldadd + n] : 0.0f);
        }
}
