/* The Q4_K quantizer of tensor/quant.c with the 8 sub-blocks of a
 * super-block in the 8 lanes of AVX2 vectors. Each lane runs the scalar
 * twin's IEEE operations in the same order (the same partial sums, the
 * double-precision fit lane by lane in C), and this file is built without
 * fused multiply-adds (-ffp-contract=off), so the bytes are the twin's; what changes is that
 * one instruction serves 8 sub-blocks, where the twin's 32-value loops and
 * serial sums ran one at a time (0.6B's 520 M LM weights: quantizing at
 * load was ~20 M values per second and thread). */
#include <math.h>
#include <string.h>

#include "tensor/quant_kernels.h"
#include "tensor/x86_simd.h"

enum { LANES = 8, SUB = 32 };

/* level() of quant.c in each lane: round half up by truncation after clamping to [0, 15] */
static inline __m256i level8(__m256 x, __m256 is, __m256 m) {
    __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(x, m), is), _mm256_set1_ps(0.5f));
    v = _mm256_max_ps(v, _mm256_setzero_ps()); /* v > 0 ? v : 0 */
    const __m256 lt = _mm256_cmp_ps(v, _mm256_set1_ps(15.5f), _CMP_LT_OQ);
    v = _mm256_blendv_ps(_mm256_set1_ps(15.0f), v, lt); /* v < 15.5 ? v : 15 */
    return _mm256_cvttps_epi32(v);
}

/* s > 0 ? 1 / s : 0 in each lane */
static inline __m256 inverse_or_zero(__m256 s) {
    const __m256 pos = _mm256_cmp_ps(s, _mm256_setzero_ps(), _CMP_GT_OQ);
    return _mm256_and_ps(pos, _mm256_div_ps(_mm256_set1_ps(1.0f), s));
}

/* grid_err_scalar of each lane's sub-block on its grid s*q + m: four partial sums over i % 4, then (0+1)+(2+3) */
static __m256 grid_err8(const __m256 *x, __m256 s, __m256 m) {
    const __m256 is = inverse_or_zero(s);
    __m256 e[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int i = 0; i < SUB; i += 4)
        for (int k = 0; k < 4; k++) {
            const __m256 q = _mm256_cvtepi32_ps(level8(x[i + k], is, m));
            const __m256 d = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(s, q), m), x[i + k]);
            e[k] = _mm256_add_ps(e[k], _mm256_mul_ps(d, d));
        }
    return _mm256_add_ps(_mm256_add_ps(e[0], e[1]), _mm256_add_ps(e[2], e[3]));
}

/* fit_subblock of quant.c, lane j fitting sub-block j (x[i] holds value i of each) */
static void fit8(const __m256 *x, float *scale, float *min) {
    __m256 lo = x[0], hi = x[0];
    for (int i = 1; i < SUB; i++) {
        lo = _mm256_min_ps(x[i], lo); /* x < lo ? x : lo */
        hi = _mm256_max_ps(x[i], hi); /* x > hi ? x : hi */
    }
    lo = _mm256_andnot_ps(_mm256_cmp_ps(lo, _mm256_setzero_ps(), _CMP_GT_OQ), lo); /* lo > 0 ? 0 : lo */
    const __m256 range = _mm256_sub_ps(hi, lo);
    __m256 best_s = _mm256_div_ps(range, _mm256_set1_ps(15.0f)), best_m = lo;
    __m256 best_e = grid_err8(x, best_s, best_m);
    __m256 sxv = _mm256_setzero_ps();
    for (int i = 0; i < SUB; i++) sxv = _mm256_add_ps(sxv, x[i]);
    float sx[LANES];
    _mm256_storeu_ps(sx, sxv);
    for (int step = -6; step <= 6; step += 2) {
        const float c = 15.0f + 0.1f * (float)step;
        const __m256 is = _mm256_div_ps(_mm256_set1_ps(c), range);
        __m256i sq = _mm256_setzero_si256(), sqq = _mm256_setzero_si256();
        __m256 sxq0 = _mm256_setzero_ps(), sxq1 = _mm256_setzero_ps();
        for (int i = 0; i < SUB; i += 2) {
            const __m256i q0 = level8(x[i], is, lo), q1 = level8(x[i + 1], is, lo);
            sq = _mm256_add_epi32(sq, _mm256_add_epi32(q0, q1));
            sqq = _mm256_add_epi32(sqq, _mm256_add_epi32(_mm256_mullo_epi32(q0, q0), _mm256_mullo_epi32(q1, q1)));
            sxq0 = _mm256_add_ps(sxq0, _mm256_mul_ps(x[i], _mm256_cvtepi32_ps(q0)));
            sxq1 = _mm256_add_ps(sxq1, _mm256_mul_ps(x[i + 1], _mm256_cvtepi32_ps(q1)));
        }
        int sq_l[LANES], sqq_l[LANES];
        float sxq0_l[LANES], sxq1_l[LANES], ns_l[LANES], nm_l[LANES];
        _mm256_storeu_si256((__m256i *)(void *)sq_l, sq);
        _mm256_storeu_si256((__m256i *)(void *)sqq_l, sqq);
        _mm256_storeu_ps(sxq0_l, sxq0);
        _mm256_storeu_ps(sxq1_l, sxq1);
        int valid = 0;
        for (int j = 0; j < LANES; j++) { /* the twin's least-squares line, word for word */
            double n = 32, sxq = (double)sxq0_l[j] + sxq1_l[j];
            double det = n * sqq_l[j] - (double)sq_l[j] * sq_l[j];
            ns_l[j] = nm_l[j] = 0;
            if (det <= 0) continue;
            double ns = (n * sxq - sq_l[j] * (double)sx[j]) / det, nm = (sx[j] - ns * sq_l[j]) / n;
            if (nm > 0) {
                nm = 0;
                ns = sqq_l[j] > 0 ? sxq / sqq_l[j] : 0;
            }
            if (ns <= 0) continue;
            ns_l[j] = (float)ns;
            nm_l[j] = (float)nm;
            valid |= 1 << j;
        }
        if (!valid) continue;
        const __m256 e = grid_err8(x, _mm256_loadu_ps(ns_l), _mm256_loadu_ps(nm_l));
        const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        const __m256 lanes =
            _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(valid), bit), bit));
        const __m256 better = _mm256_and_ps(lanes, _mm256_cmp_ps(e, best_e, _CMP_LT_OQ));
        best_e = _mm256_blendv_ps(best_e, e, better);
        best_s = _mm256_blendv_ps(best_s, _mm256_loadu_ps(ns_l), better);
        best_m = _mm256_blendv_ps(best_m, _mm256_loadu_ps(nm_l), better);
    }
    /* a sub-block with hi <= lo (constant, or NaN-free and empty of range) keeps scale 0 and min -lo */
    const __m256 flat = _mm256_cmp_ps(hi, lo, _CMP_LE_OQ);
    best_s = _mm256_andnot_ps(flat, best_s);
    best_m = _mm256_blendv_ps(best_m, lo, flat);
    _mm256_storeu_ps(scale, best_s);
    _mm256_storeu_ps(min, _mm256_xor_ps(best_m, _mm256_set1_ps(-0.0f))); /* -best_m, as -0 for +0 */
}

void qtts_quantize_q4_k_avx2(const float *src, qtts_block_q4_k *y, int64_t n_blocks) {
    const __m256i lane_base = _mm256_setr_epi32(0, SUB, 2 * SUB, 3 * SUB, 4 * SUB, 5 * SUB, 6 * SUB, 7 * SUB);
    for (int64_t b = 0; b < n_blocks; b++, src += 256) {
        __m256 x[SUB]; /* x[i] lane j: value i of sub-block j */
        for (int i = 0; i < SUB; i++) x[i] = _mm256_i32gather_ps(src + i, lane_base, 4);
        float scales[LANES], mins[LANES], max_scale = 0, max_min = 0;
        fit8(x, scales, mins);
        for (int j = 0; j < LANES; j++) {
            max_scale = scales[j] > max_scale ? scales[j] : max_scale; /* as quant.c */
            max_min = mins[j] > max_min ? mins[j] : max_min;
        }
        qtts_block_q4_k *blk = &y[b];
        blk->d = qtts_f32_to_f16(max_scale / 63.0f);
        blk->dmin = qtts_f32_to_f16(max_min / 63.0f);
        const float d = qtts_f16_to_f32(blk->d), dmin = qtts_f16_to_f32(blk->dmin);
        int a[LANES], c[LANES];
        for (int j = 0; j < LANES; j++) {
            a[j] = d > 0 ? qtts_q4_k_clamp63((int)lrintf(scales[j] / d)) : 0;
            c[j] = dmin > 0 ? qtts_q4_k_clamp63((int)lrintf(mins[j] / dmin)) : 0;
        }
        /* the codes nearest the fit, then each neighbour in the twin's order where it is better */
        const __m256 vd = _mm256_set1_ps(d), vndmin = _mm256_set1_ps(-dmin);
        const __m256i va = _mm256_loadu_si256((const __m256i *)(const void *)a);
        const __m256i vc = _mm256_loadu_si256((const __m256i *)(const void *)c);
        __m256i best_a = va, best_c = vc;
        __m256 best_e =
            grid_err8(x, _mm256_mul_ps(vd, _mm256_cvtepi32_ps(va)), _mm256_mul_ps(vndmin, _mm256_cvtepi32_ps(vc)));
        for (int da = -1; da <= 1; da++)
            for (int dc = -1; dc <= 1; dc++) {
                if (!da && !dc) continue;
                const __m256i a2 = _mm256_add_epi32(va, _mm256_set1_epi32(da));
                const __m256i c2 = _mm256_add_epi32(vc, _mm256_set1_epi32(dc));
                /* 0 <= a2, c2 <= 63 */
                const __m256i out = _mm256_or_si256(_mm256_or_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), a2),
                                                                    _mm256_cmpgt_epi32(a2, _mm256_set1_epi32(63))),
                                                    _mm256_or_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), c2),
                                                                    _mm256_cmpgt_epi32(c2, _mm256_set1_epi32(63))));
                const __m256 e = grid_err8(x, _mm256_mul_ps(vd, _mm256_cvtepi32_ps(a2)),
                                           _mm256_mul_ps(vndmin, _mm256_cvtepi32_ps(c2)));
                const __m256 better = _mm256_andnot_ps(_mm256_castsi256_ps(out), _mm256_cmp_ps(e, best_e, _CMP_LT_OQ));
                best_e = _mm256_blendv_ps(best_e, e, better);
                best_a =
                    _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(best_a), _mm256_castsi256_ps(a2), better));
                best_c =
                    _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(best_c), _mm256_castsi256_ps(c2), better));
            }
        int ba[LANES], bc[LANES];
        _mm256_storeu_si256((__m256i *)(void *)ba, best_a);
        _mm256_storeu_si256((__m256i *)(void *)bc, best_c);
        uint8_t ls[LANES], lm[LANES];
        for (int j = 0; j < LANES; j++) {
            ls[j] = (uint8_t)ba[j];
            lm[j] = (uint8_t)bc[j];
        }
        qtts_q4_k_pack_scales(blk->scales, ls, lm);
        float is_l[LANES], m_l[LANES];
        for (int j = 0; j < LANES; j++) {
            uint8_t sc, m;
            qtts_q4_k_scale_min(j, blk->scales, &sc, &m);
            const float ds = d * (float)sc;
            is_l[j] = ds > 0 ? 1.0f / ds : 0.0f;
            m_l[j] = -dmin * (float)m;
        }
        const __m256 vis = _mm256_loadu_ps(is_l), vm = _mm256_loadu_ps(m_l);
        int q[SUB][LANES];
        for (int i = 0; i < SUB; i++) _mm256_storeu_si256((__m256i *)(void *)q[i], level8(x[i], vis, vm));
        for (int j = 0; j < 256; j += 64)
            for (int l = 0; l < 32; l++) /* value j+l is sub-block (j+l)/32, value l; j+l+32 the next sub-block */
                blk->qs[j / 2 + l] = (uint8_t)(q[l][j / 32] | (q[l][j / 32 + 1] << 4));
    }
}
