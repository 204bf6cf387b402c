/* Winograd form of a channel-major causal conv (tensor/conv.h): F(m, k)
 * computes m outputs of a k-tap dilated conv from n = m + k - 1 inputs with
 * n products instead of m * k, so a conv of c_in -> c_out channels becomes
 *
 *   input transform   U[p][ci][tile] = sum_i BT[p][i] x[ci][base + i*dil]
 *   n products        M[p][co][tile] = sum_ci G[p][co][ci] U[p][ci][tile]
 *   output transform  y[co][base + j*dil] = bias + sum_p AT[j][p] M[p][co][tile]
 *
 * The products are 1-tap convs (the same register tiles as every other conv)
 * over tiles instead of samples: n/m multiply-adds per output and weight
 * instead of k (7 -> 2.5 for F(4, 7)). A dilated conv is dil interleaved
 * undilated ones, so a tile is m outputs dil apart; tiles are numbered
 * g*dil + r for the tile whose first output is g*m*dil + r, which makes the
 * tiles' inputs contiguous in "phase" rows (x[g*m*dil + p*dil + r] for phase
 * p), so the transforms run on whole vectors for any dilation.
 *
 * The transforms are built in double from interpolation points 0, +-1, +-2,
 * +-1/2, +-3/2 (and infinity), and the weights G = (transform of w) are
 * computed in double and rounded once. Against the direct f32 conv the error
 * grows by a small factor (F(4, 7) on 512 channels: 7x, ~100 dB SNR); the
 * decoder offers it as its own precision, never as plain f32. */
#ifndef QTTS_TENSOR_CONV_WINOGRAD_H
#define QTTS_TENSOR_CONV_WINOGRAD_H

#include <stdint.h>

#include "core/err.h"
#include "core/threadpool.h"
#include "tensor/conv.h"

enum { QTTS_WINOGRAD_NMAX = 12 }; /* most points a transform may use (m + k - 1) */

/* The transforms of one F(m, k), in f32, dense (the zeros cost little and
 * keep every path's operations identical): bt8/at8 hold each coefficient 8
 * times over, so a vector kernel multiplies by it straight from memory. */
typedef struct {
    int m, k, n;
    float bt[QTTS_WINOGRAD_NMAX][QTTS_WINOGRAD_NMAX]; /* U[p] = sum_i bt[p][i] x[i] */
    float at[QTTS_WINOGRAD_NMAX][QTTS_WINOGRAD_NMAX]; /* y[j] = sum_p at[j][p] M[p] */
    float bt8[QTTS_WINOGRAD_NMAX][QTTS_WINOGRAD_NMAX][8], at8[QTTS_WINOGRAD_NMAX][QTTS_WINOGRAD_NMAX][8];
    double g[QTTS_WINOGRAD_NMAX][QTTS_WINOGRAD_NMAX]; /* weight transform [n][k] */
} qtts_winograd_plan;

/* Plan for m outputs per tile of a k-tap conv; fails unless 1 <= m, 2 <= k
 * and m + k - 1 <= QTTS_WINOGRAD_NMAX. */
int qtts_winograd_plan_init(qtts_winograd_plan *p, int m, int k, qtts_err *err);

/* The Winograd form of a conv, owned by it (qtts_conv.wg). */
struct qtts_winograd {
    qtts_winograd_plan plan;
    qtts_conv point[QTTS_WINOGRAD_NMAX]; /* the n products: 1-tap convs c_in -> c_out, zero bias */
};

/* Converts cv (f32, not transposed) to F(m, cv->k): its f32 tap weights are
 * freed, and qtts_conv1d_cm runs the Winograd form from then on (so does
 * qtts_conv1d_cm_ref, with the scalar transforms). One-way. */
int qtts_conv_to_winograd(qtts_conv *cv, int m, qtts_err *err);
void qtts_winograd_free(struct qtts_winograd *wg);

/* The conv of qtts_conv1d_cm through cv->wg, on the transforms and tiles of
 * isa, with its work memory from ws (NULL: allocated for the call). -1 when
 * that memory could not be allocated (y untouched). */
int qtts_winograd_conv(qtts_pool *pool, const qtts_conv *cv, const float *x, int64_t ldx, int64_t T, float *y,
                       int64_t ldy, const float *add, int64_t ldadd, qtts_conv_isa isa, qtts_conv_ws *ws);

/* The products read U in panels of QTTS_WINOGRAD_PANEL tiles, each panel
 * [c_in][width]: the tiles then stream one contiguous block per panel instead
 * of c_in rows far apart (the products' speed comes mostly from the tile's
 * flat 1-tap loop; the panels add a little). The last panel may be
 * narrower, a multiple of 8; where it would hold 8 tiles behind a full one,
 * the last 32 tiles form two panels of 16 instead: the AVX2 tile of one
 * vector (8 tiles) keeps 4 accumulators, too few to hide the FMA latency,
 * two vectors keep 8. Every split gives the same bits: each tile sums the
 * channels in the same order. */
enum { QTTS_WINOGRAD_PANEL = 24, QTTS_WINOGRAD_PANEL_TAIL = 16 };

/* First tile of the two tail panels of 16 (ntp when there are none). */
static inline int64_t qtts_winograd_tail_start(int64_t ntp) {
    return ntp > QTTS_WINOGRAD_PANEL && ntp % QTTS_WINOGRAD_PANEL == 8 ? ntp - 2 * QTTS_WINOGRAD_PANEL_TAIL : ntp;
}
static inline int64_t qtts_winograd_n_panels(int64_t ntp) {
    const int64_t s = qtts_winograd_tail_start(ntp);
    return s < ntp ? s / QTTS_WINOGRAD_PANEL + 2 : (ntp + QTTS_WINOGRAD_PANEL - 1) / QTTS_WINOGRAD_PANEL;
}
/* Panel tb's first tile *t0 and width *w. */
static inline void qtts_winograd_panel(int64_t tb, int64_t ntp, int64_t *t0, int64_t *w) {
    const int64_t s = qtts_winograd_tail_start(ntp), full = s / QTTS_WINOGRAD_PANEL;
    if (s < ntp && tb >= full) {
        *t0 = s + (tb - full) * QTTS_WINOGRAD_PANEL_TAIL;
        *w = QTTS_WINOGRAD_PANEL_TAIL;
        return;
    }
    *t0 = tb * QTTS_WINOGRAD_PANEL;
    *w = ntp - *t0 < QTTS_WINOGRAD_PANEL ? ntp - *t0 : QTTS_WINOGRAD_PANEL;
}
/* The first tile *t0 and width *w of the panel holding tile t. */
static inline void qtts_winograd_panel_of(int64_t t, int64_t ntp, int64_t *t0, int64_t *w) {
    const int64_t s = qtts_winograd_tail_start(ntp);
    const int64_t tb = t < s ? t / QTTS_WINOGRAD_PANEL : s / QTTS_WINOGRAD_PANEL + (t - s) / QTTS_WINOGRAD_PANEL_TAIL;
    qtts_winograd_panel(tb, ntp, t0, w);
}
/* Where tile t of channel ci lies in a point's U (t a multiple of 8). */
static inline int64_t qtts_winograd_u_index(int64_t t, int64_t ntp, int64_t c_in, int64_t ci) {
    int64_t p0, w;
    qtts_winograd_panel_of(t, ntp, &p0, &w);
    return p0 * c_in + ci * w + (t - p0);
}

/* The transforms on 8 tiles at a time (ntp a multiple of 8), per ISA; the
 * scalar twins use fmaf in the same order (acc = fma(c, x, acc) from 0 over
 * the whole row), so every path gives the same bits.
 * Input: phase rows X[0..m) (tile t's input i is X[i % m][t + (i / m) * dil])
 * of channel ci; point p's value goes to U[p * ldu + qtts_winograd_u_index(t,
 * ntp, c_in, ci)]. Output: Y[j * ldyp + t] from M[p * ldm + t]. */
void qtts_winograd_input_scalar(const qtts_winograd_plan *p, const float *const *X, int64_t dil, int64_t ntp,
                                float *U, int64_t ldu, int64_t c_in, int64_t ci);
void qtts_winograd_output_scalar(const qtts_winograd_plan *p, const float *M, int64_t ldm, int64_t ntp, float *Y,
                                 int64_t ldyp);
void qtts_winograd_input_avx2(const qtts_winograd_plan *p, const float *const *X, int64_t dil, int64_t ntp,
                                float *U, int64_t ldu, int64_t c_in, int64_t ci);
void qtts_winograd_output_avx2(const qtts_winograd_plan *p, const float *M, int64_t ldm, int64_t ntp, float *Y,
                               int64_t ldyp);
void qtts_winograd_input_neon(const qtts_winograd_plan *p, const float *const *X, int64_t dil, int64_t ntp,
                                float *U, int64_t ldu, int64_t c_in, int64_t ci);
void qtts_winograd_output_neon(const qtts_winograd_plan *p, const float *M, int64_t ldm, int64_t ntp, float *Y,
                               int64_t ldyp);

#endif
