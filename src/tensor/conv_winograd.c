#include "tensor/conv_winograd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/conv_kernels.h"

/* ---- the transforms ------------------------------------------------------ */

/* Finite interpolation points in the order they are taken: small and
 * symmetric, which keeps the transforms' condition low (and with them the
 * rounding error: F(4, 7) on these is ~7x the direct conv's). */
static const double k_points[QTTS_WINOGRAD_NMAX - 1] = {0, 1, -1, 2, -2, 0.5, -0.5, 1.5, -1.5, 3, -3};

static int invert(int n, double a[QTTS_WINOGRAD_NMAX][QTTS_WINOGRAD_NMAX],
                  double out[QTTS_WINOGRAD_NMAX][QTTS_WINOGRAD_NMAX]) {
    double m[QTTS_WINOGRAD_NMAX][2 * QTTS_WINOGRAD_NMAX];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < 2 * n; j++) m[i][j] = j < n ? a[i][j] : (j - n == i);
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int i = c + 1; i < n; i++)
            if (fabs(m[i][c]) > fabs(m[piv][c])) piv = i;
        if (fabs(m[piv][c]) < 1e-12) return -1;
        for (int j = 0; j < 2 * n; j++) {
            double t = m[c][j];
            m[c][j] = m[piv][j];
            m[piv][j] = t;
        }
        const double dv = m[c][c];
        for (int j = 0; j < 2 * n; j++) m[c][j] /= dv;
        for (int i = 0; i < n; i++) {
            if (i == c) continue;
            const double f = m[i][c];
            for (int j = 0; j < 2 * n; j++) m[i][j] -= f * m[c][j];
        }
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) out[i][j] = m[i][n + j];
    return 0;
}

/* Point p's row of powers 0..len-1; the point at infinity (p = n-1) keeps
 * only the highest power (the product's leading coefficient). */
static double power_row(int p, int n, int e, int len) {
    if (p == n - 1) return e == len - 1;
    return pow(k_points[p], e);
}

/* Toom-Cook for the linear convolution s = h * g (h of m, g of k
 * coefficients): s = V^-1 ((E_h h) . (E_g g)), V the n x n evaluation matrix.
 * Its transpose maps n inputs d to the m correlations y[j] = sum g[kk]
 * d[j+kk], which is the conv: y = E_h^T ((E_g g) . (V^-T d)). So AT = E_h^T,
 * G = E_g, BT = V^-T; row p of BT is scaled by a power of two to max |1| and
 * row p of G by its inverse (the product is unchanged). */
int qtts_winograd_plan_init(qtts_winograd_plan *p, int m, int k, qtts_err *err) {
    memset(p, 0, sizeof *p);
    const int n = m + k - 1;
    if (m < 1 || k < 2 || n > QTTS_WINOGRAD_NMAX)
        return qtts_fail(err, "winograd: no transform for %d outputs of a %d-tap conv (at most %d points)", m, k,
                         QTTS_WINOGRAD_NMAX);
    double v[QTTS_WINOGRAD_NMAX][QTTS_WINOGRAD_NMAX], vi[QTTS_WINOGRAD_NMAX][QTTS_WINOGRAD_NMAX];
    for (int q = 0; q < n; q++)
        for (int e = 0; e < n; e++) v[q][e] = power_row(q, n, e, n);
    if (invert(n, v, vi)) return qtts_fail(err, "winograd: singular evaluation matrix for F(%d, %d)", m, k);
    p->m = m;
    p->k = k;
    p->n = n;
    for (int q = 0; q < n; q++) {
        double mx = 0;
        for (int i = 0; i < n; i++)
            if (fabs(vi[i][q]) > mx) mx = fabs(vi[i][q]);
        const double s = exp2(-round(log2(mx)));
        for (int i = 0; i < n; i++) {
            const double c = vi[i][q] * s; /* BT = V^-T */
            p->bt[q][i] = fabs(c) < 1e-12 ? 0.0f : (float)c;
        }
        for (int kk = 0; kk < k; kk++) p->g[q][kk] = power_row(q, n, kk, k) / s;
    }
    for (int j = 0; j < m; j++)
        for (int q = 0; q < n; q++) p->at[j][q] = (float)power_row(q, n, j, m);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            for (int v = 0; v < 8; v++) {
                p->bt8[a][b][v] = p->bt[a][b];
                p->at8[a][b][v] = p->at[a][b];
            }
    return 0;
}

void qtts_winograd_input_scalar(const qtts_winograd_plan *p, const float *const *X, int64_t dil, int64_t ntp,
                                float *U, int64_t ldu, int64_t c_in, int64_t ci) {
    for (int64_t t = 0; t < ntp; t++) {
        float x[QTTS_WINOGRAD_NMAX];
        for (int i = 0; i < p->n; i++) x[i] = X[i % p->m][t + (i / p->m) * dil];
        for (int q = 0; q < p->n; q++) {
            float acc = 0.0f;
            for (int i = 0; i < p->n; i++) acc = fmaf(p->bt[q][i], x[i], acc);
            U[q * ldu + qtts_winograd_u_index(t, ntp, c_in, ci)] = acc;
        }
    }
}

void qtts_winograd_output_scalar(const qtts_winograd_plan *p, const float *M, int64_t ldm, int64_t ntp, float *Y,
                                 int64_t ldyp) {
    for (int64_t t = 0; t < ntp; t++)
        for (int j = 0; j < p->m; j++) {
            float acc = 0.0f;
            for (int q = 0; q < p->n; q++) acc = fmaf(p->at[j][q], M[q * ldm + t], acc);
            Y[j * ldyp + t] = acc;
        }
}

/* ---- conversion ------------------------------------------------------------ */

void qtts_winograd_free(struct qtts_winograd *wg) {
    if (!wg) return;
    for (int q = 0; q < QTTS_WINOGRAD_NMAX; q++) qtts_conv_free(&wg->point[q]);
    free(wg);
}

int qtts_conv_to_winograd(qtts_conv *cv, int m, qtts_err *err) {
    if (cv->wg) return 0;
    if (!cv->w) return qtts_fail(err, "winograd: the conv has no f32 tap weights (already bf16?)");
    struct qtts_winograd *wg = qtts_calloc(1, sizeof *wg, err);
    if (!wg) return -1;
    const int64_t ci_n = cv->c_in, co_n = cv->c_out, K = cv->k;
    float *wp = NULL;
    if (qtts_winograd_plan_init(&wg->plan, m, (int)K, err)) goto fail;
    wp = qtts_malloc((size_t)(co_n * ci_n) * sizeof(float), err);
    if (!wp) goto fail;
    for (int q = 0; q < wg->plan.n; q++) {
        for (int64_t co = 0; co < co_n; co++) {
            const int64_t rb = co / QTTS_CONV_MR, rr = co % QTTS_CONV_MR;
            for (int64_t ci = 0; ci < ci_n; ci++) {
                double s = 0;
                for (int64_t kk = 0; kk < K; kk++)
                    s += wg->plan.g[q][kk] * cv->w[((rb * ci_n + ci) * K + kk) * QTTS_CONV_MR + rr];
                wp[co * ci_n + ci] = (float)s;
            }
        }
        if (qtts_conv_init(&wg->point[q], wp, NULL, co_n, ci_n, 1, 1, err)) goto fail;
    }
    free(wp);
    free(cv->w);
    cv->w = NULL;
    cv->wg = wg;
    return 0;
fail:
    free(wp);
    qtts_winograd_free(wg);
    return -1;
}

/* ---- one conv call ----------------------------------------------------------- */

typedef void (*input_fn)(const qtts_winograd_plan *, const float *const *, int64_t, int64_t, float *, int64_t,
                         int64_t, int64_t);
typedef void (*output_fn)(const qtts_winograd_plan *, const float *, int64_t, int64_t, float *, int64_t);

typedef struct {
    const qtts_conv *cv;
    const qtts_winograd_plan *plan;
    const float *x, *add;
    float *y, *U, *M, *scratch; /* scratch: per_thread floats for each pool thread (its phase rows or outputs) */
    uint32_t *Ui16;             /* int16 points: U quantized, [n][len16] in int16 panels (qtts_i16_panels_len) */
    float *Us;                  /* and its scales, [n][len16] */
    int64_t len16, n16;         /* tiles in whole int16 panels, and those panels */
    int64_t ldx, ldy, ldadd, T, len;   /* len: history + T input samples */
    int64_t d, P, ntp, L, per_thread; /* dilation, period m*d, tiles (padded), phase row length */
    int64_t n_rb, n_tb;
    int rows_outer;
    input_fn in;
    output_fn out;
    qtts_conv_tile_fn tile;
    qtts_conv_tile_i16_fn tile_i16;
    qtts_i16_quantize_fn quantize;
} wg_job;

/* Per input channel: its phase rows, then the n transformed rows. */
static void input_rows(void *p, int64_t c0, int64_t c1, int tid) {
    const wg_job *j = p;
    const int m = j->plan->m;
    const int64_t d = j->d, P = j->P;
    /* groups copied without a bound check: all in the input and in the row */
    const int64_t whole = j->len / P < j->L / d ? j->len / P : j->L / d;
    float *ph = j->scratch + tid * j->per_thread;
    const float *X[QTTS_WINOGRAD_NMAX];
    for (int q = 0; q < m; q++) X[q] = ph + q * j->L;
    for (int64_t ci = c0; ci < c1; ci++) {
        const float *xr = j->x + ci * j->ldx;
        /* phase rows: row q holds x[g*P + q*d + r] at g*d + r (zero past the input); at dilation 1 with
         * m = 4 in one pass that de-interleaves 4 ways, cheaper than m strided passes */
        if (d == 1 && m == 4) {
            float *r0 = ph, *r1 = ph + j->L, *r2 = ph + 2 * j->L, *r3 = ph + 3 * j->L;
            for (int64_t g = 0; g < whole; g++) {
                r0[g] = xr[4 * g];
                r1[g] = xr[4 * g + 1];
                r2[g] = xr[4 * g + 2];
                r3[g] = xr[4 * g + 3];
            }
        } else {
            for (int q = 0; q < m; q++)
                for (int64_t g = 0; g < whole; g++)
                    for (int64_t r = 0; r < d; r++) ph[q * j->L + g * d + r] = xr[g * P + q * d + r];
        }
        /* the rest of each row, bounds-checked */
        for (int q = 0; q < m; q++) {
            float *row = ph + q * j->L;
            for (int64_t o = whole * d; o < j->L; o++) {
                const int64_t at = (o / d) * P + q * d + o % d;
                row[o] = at < j->len ? xr[at] : 0.0f;
            }
        }
        j->in(j->plan, X, d, j->ntp, j->U, j->cv->c_in * j->ntp, j->cv->c_in, ci);
    }
}

/* Items (point, panel, row block) of the n products; within a point in
 * qtts_conv_item_blocks order, as a conv's tiles. */
static void product_items(void *p, int64_t i0, int64_t i1, int tid) {
    (void)tid;
    const wg_job *j = p;
    const struct qtts_winograd *wg = j->cv->wg;
    const int64_t per_point = j->n_rb * j->n_tb, c_in = j->cv->c_in;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t q = i / per_point, e = i % per_point;
        int64_t tb, rb;
        qtts_conv_item_blocks(e, j->n_tb, j->n_rb, j->rows_outer, &tb, &rb);
        int64_t t0, nt;
        qtts_winograd_panel(tb, j->ntp, &t0, &nt);
        j->tile(&wg->point[q], j->U + q * c_in * j->ntp + t0 * c_in, nt, nt, rb, j->M + q * j->cv->c_out * j->ntp + t0,
                j->ntp, NULL, 0);
    }
}

/* The same over int16 points, whose panels are QTTS_CONV_I16_PANEL tiles wide. */
static void product_items_i16(void *p, int64_t i0, int64_t i1, int tid) {
    (void)tid;
    const wg_job *j = p;
    const struct qtts_winograd *wg = j->cv->wg;
    const int64_t per_point = j->n_rb * j->n16, c2n = (j->cv->c_in + 1) / 2, W = QTTS_CONV_I16_PANEL;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t q = i / per_point, e = i % per_point;
        int64_t pb, rb;
        qtts_conv_item_blocks(e, j->n16, j->n_rb, j->rows_outer, &pb, &rb);
        const int64_t t0 = pb * W, nt = j->ntp - t0 < W ? j->ntp - t0 : W;
        j->tile_i16(&wg->point[q], j->Ui16 + q * c2n * j->len16 + pb * c2n * W, j->Us + q * j->len16 + t0, W, nt, rb,
                    j->M + q * j->cv->c_out * j->ntp + t0, j->ntp, NULL, 0);
    }
}

/* int16 points: each (point, int16 panel) of U quantized with its own per-tile scales, 8 tiles at a time
 * (ntp is a multiple of 8, and so is every U panel: 8 tiles never straddle two). */
static void quantize_items(void *p, int64_t i0, int64_t i1, int tid) {
    (void)tid;
    const wg_job *j = p;
    const int64_t c_in = j->cv->c_in, c2n = (c_in + 1) / 2, W = QTTS_CONV_I16_PANEL;
    for (int64_t i = i0; i < i1; i++) {
        const int64_t q = i / j->n16, pb = i % j->n16;
        for (int64_t t = pb * W; t < (pb + 1) * W && t < j->ntp; t += 8) {
            int64_t u0, uw;
            qtts_winograd_panel_of(t, j->ntp, &u0, &uw);
            qtts_i16_quantize_range(j->quantize, j->U + q * c_in * j->ntp + u0 * c_in + (t - u0), uw, c_in, 0, 8, 8,
                                    j->Ui16 + q * c2n * j->len16 + pb * c2n * W + (t - pb * W), W,
                                    j->Us + q * j->len16 + t);
        }
    }
}

/* y[g*P + q*d + r] = ys[q][g*d + r] + b (+ add), the phase rows of one
 * output channel (row stride ntp) back in time order: every whole period
 * without bounds checks, the last one with them: a branchy 1-9 float copy
 * per run costs a visible share of the Winograd decoder's time. */
static void scatter_row(const float *ys, int64_t ntp, int m, int64_t d, int64_t T, float b, float *yr,
                        const float *ar) {
    const int64_t P = m * d, whole = T / P, G = (T + P - 1) / P;
    if (d == 1 && m == 4) { /* the common case, unrolled so the compiler can vectorize the 4-way interleave */
        const float *y0 = ys, *y1 = ys + ntp, *y2 = ys + 2 * ntp, *y3 = ys + 3 * ntp;
        if (ar)
            for (int64_t g = 0; g < whole; g++) {
                yr[4 * g] = y0[g] + b + ar[4 * g];
                yr[4 * g + 1] = y1[g] + b + ar[4 * g + 1];
                yr[4 * g + 2] = y2[g] + b + ar[4 * g + 2];
                yr[4 * g + 3] = y3[g] + b + ar[4 * g + 3];
            }
        else
            for (int64_t g = 0; g < whole; g++) {
                yr[4 * g] = y0[g] + b;
                yr[4 * g + 1] = y1[g] + b;
                yr[4 * g + 2] = y2[g] + b;
                yr[4 * g + 3] = y3[g] + b;
            }
    } else {
        for (int64_t g = 0; g < whole; g++)
            for (int q = 0; q < m; q++) {
                const float *src = ys + q * ntp + g * d;
                float *o = yr + g * P + q * d;
                if (ar) {
                    const float *a = ar + g * P + q * d;
                    for (int64_t r = 0; r < d; r++) o[r] = src[r] + b + a[r];
                } else {
                    for (int64_t r = 0; r < d; r++) o[r] = src[r] + b;
                }
            }
    }
    for (int64_t g = whole; g < G; g++)
        for (int q = 0; q < m; q++) {
            const int64_t t0 = g * P + q * d;
            if (t0 >= T) break;
            const int64_t cnt = T - t0 < d ? T - t0 : d;
            const float *src = ys + q * ntp + g * d;
            if (ar)
                for (int64_t r = 0; r < cnt; r++) yr[t0 + r] = src[r] + b + ar[t0 + r];
            else
                for (int64_t r = 0; r < cnt; r++) yr[t0 + r] = src[r] + b;
        }
}

/* Per output channel: the m output phase rows, then bias (+ add) into y. */
static void output_rows(void *p, int64_t c0, int64_t c1, int tid) {
    const wg_job *j = p;
    float *ys = j->scratch + tid * j->per_thread;
    for (int64_t co = c0; co < c1; co++) {
        j->out(j->plan, j->M + co * j->ntp, j->cv->c_out * j->ntp, j->ntp, ys, j->ntp);
        scatter_row(ys, j->ntp, j->plan->m, j->d, j->T, j->cv->bias[co], j->y + co * j->ldy,
                    j->add ? j->add + co * j->ldadd : NULL);
    }
}

int qtts_winograd_conv(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                       int64_t ldy, const float *add, int64_t ldadd, qtts_conv_isa isa, qtts_conv_ws *ws) {
    if (T <= 0) return 0;
    const qtts_winograd_plan *pl = &cv->wg->plan;
    const int m = pl->m, n = pl->n;
    wg_job j = {.cv = cv, .plan = pl, .x = x, .add = add, .y = y, .ldx = ldx, .ldy = ldy, .ldadd = ldadd, .T = T};
    j.len = T + qtts_conv_history(cv);
    j.d = cv->dil;
    j.P = m * j.d;
    const int64_t groups = (T + j.P - 1) / j.P;
    j.ntp = (groups * j.d + 7) / 8 * 8;
    j.L = j.ntp + (int64_t)((n - 1) / m) * j.d; /* the last tile's last input */
    j.per_thread = m * (j.L > j.ntp ? j.L : j.ntp);
    const int threads = pool ? qtts_pool_size(pool) : 1;
    const int i16 = cv->wg->point[0].wi16 != NULL;
    j.len16 = qtts_i16_panels_len(j.ntp);
    j.n16 = j.len16 / QTTS_CONV_I16_PANEL;
    const size_t i16_words = i16 ? (size_t)n * (size_t)((cv->c_in + 1) / 2 + 1) * (size_t)j.len16 : 0;
    const size_t floats = (size_t)n * (size_t)(cv->c_in + cv->c_out) * (size_t)j.ntp +
                          (size_t)threads * (size_t)j.per_thread + i16_words;
    int owned;
    float *buf = qtts_conv_ws_get(ws, floats * sizeof(float), &owned);
    if (!buf) return -1;
    j.U = buf;
    j.M = j.U + (size_t)n * cv->c_in * j.ntp;
    j.scratch = j.M + (size_t)n * cv->c_out * j.ntp;
    if (i16) {
        j.Ui16 = (uint32_t *)(j.scratch + (size_t)threads * (size_t)j.per_thread);
        j.Us = (float *)(j.Ui16 + (size_t)n * (size_t)((cv->c_in + 1) / 2) * (size_t)j.len16);
        j.tile_i16 = qtts_conv_tile_i16_for(isa);
        j.quantize = qtts_i16_quantize_for(isa);
    }
    j.tile = qtts_conv_tile_for(isa);
    j.in = qtts_winograd_input_scalar;
    j.out = qtts_winograd_output_scalar;
    switch (qtts_conv_isa_resolve(isa)) {
#if defined(__x86_64__) || defined(_M_X64)
    case QTTS_CONV_ISA_AVX512: /* the transforms are a small share: AVX2 serves both */
    case QTTS_CONV_ISA_AVX2:
        j.in = qtts_winograd_input_avx2;
        j.out = qtts_winograd_output_avx2;
        break;
#elif defined(__aarch64__)
    case QTTS_CONV_ISA_NEON:
        j.in = qtts_winograd_input_neon;
        j.out = qtts_winograd_output_neon;
        break;
#endif
    default: break;
    }
    const qtts_conv *pt = &cv->wg->point[0];
    j.n_rb = pt->rows_pad / QTTS_CONV_MR;
    j.n_tb = qtts_winograd_n_panels(j.ntp);
    j.rows_outer = pt->rows_pad > j.ntp;
    const double tiles = (double)j.ntp;
    qtts_parallel_for_work(pool, cv->c_in, 1, cv->c_in * tiles * n * n * QTTS_TILE_MAC_WORK, input_rows, &j);
    const double point_weights = (double)n * (double)cv->c_in * (double)cv->c_out;
    if (i16) {
        qtts_parallel_for_work(pool, n * j.n16, 1, (double)n * (double)cv->c_in * tiles, quantize_items, &j);
        qtts_parallel_for_work(pool, n * j.n16 * j.n_rb, 1, qtts_tile_work(point_weights * tiles, point_weights),
                               product_items_i16, &j);
    } else {
        qtts_parallel_for_work(pool, n * j.n_tb * j.n_rb, 1, qtts_tile_work(point_weights * tiles, point_weights),
                               product_items, &j);
    }
    qtts_parallel_for_work(pool, cv->c_out, 1, cv->c_out * tiles * n * m * QTTS_TILE_MAC_WORK, output_rows, &j);
    if (owned) free(buf);
    return 0;
}
