#include "model/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void qtts_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3], k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0, hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

double qtts_philox_uniform(uint64_t seed, uint64_t stream, uint32_t step, uint32_t sub) {
    uint32_t ctr[4] = {sub, step, (uint32_t)stream, (uint32_t)(stream >> 32)};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t o[4];
    qtts_philox4x32_10(ctr, key, o);
    uint64_t bits = ((uint64_t)o[0] << 21) ^ (o[1] >> 11); /* 53 bits */
    return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

int32_t qtts_argmax(const float *z, int64_t n) {
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (z[i] > z[best]) best = i;
    return (int32_t)best;
}

void qtts_talker_process_logits(float *z, int64_t n, const int32_t *hist, int64_t n_hist, float rep_penalty,
                                int64_t n_generated, int64_t min_new_tokens, int64_t eos) {
    if (rep_penalty != 1.0f)
        for (int64_t i = 0; i < n_hist; i++) {
            int32_t v = hist[i];
            if (v < 0 || v >= n) continue;
            z[v] = z[v] > 0 ? z[v] / rep_penalty : z[v] * rep_penalty;
        }
    if (n_generated < min_new_tokens && eos >= 0 && eos < n) z[eos] = -INFINITY;
    for (int64_t v = n > 1024 ? n - 1024 : 0; v < n; v++)
        if (v != eos) z[v] = -INFINITY;
}

/* k-th largest (1-based) of a[0..n) by quickselect; a is permuted. */
static float kth_largest(float *a, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1, want = k - 1;
    while (lo < hi) {
        float pivot = a[lo + (hi - lo) / 2];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] > pivot) i++;
            while (a[j] < pivot) j--;
            if (i <= j) {
                float t = a[i];
                a[i] = a[j];
                a[j] = t;
                i++;
                j--;
            }
        }
        if (want <= j) hi = j;
        else if (want >= i) lo = i;
        else return a[want];
    }
    return a[want];
}

static int cmp_float_asc(const void *x, const void *y) {
    float a = *(const float *)x, b = *(const float *)y;
    return (a > b) - (a < b);
}

void qtts_sample_warp(float *z, int64_t n, const qtts_sample_cfg *c, float *scratch) {
    if (!c->do_sample) return;
    if (c->temperature != 1.0f)
        for (int64_t i = 0; i < n; i++) z[i] /= c->temperature;
    if (c->top_k > 0 && c->top_k < n) {
        memcpy(scratch, z, (size_t)n * sizeof(float));
        float kth = kth_largest(scratch, n, c->top_k);
        for (int64_t i = 0; i < n; i++)
            if (z[i] < kth) z[i] = -INFINITY;
    }
    if (c->top_p < 1.0f) {
        /* HF: sort ascending, drop the prefix whose cumulative probability is
         * <= 1 - top_p, always keeping the largest. Ties at the cut are kept. */
        memcpy(scratch, z, (size_t)n * sizeof(float));
        qsort(scratch, (size_t)n, sizeof(float), cmp_float_asc);
        float mx = scratch[n - 1];
        if (mx == -INFINITY) return;
        double sum = 0;
        for (int64_t i = 0; i < n; i++) sum += exp((double)scratch[i] - mx);
        double cum = 0, limit = 1.0 - (double)c->top_p;
        int64_t m = 0;
        for (; m < n - 1; m++) {
            cum += exp((double)scratch[m] - mx) / sum;
            if (cum > limit) break;
        }
        float thr = scratch[m];
        for (int64_t i = 0; i < n; i++)
            if (z[i] < thr) z[i] = -INFINITY;
    }
}

int32_t qtts_sample_pick(float *z, int64_t n, const qtts_sample_cfg *c, double u, float *scratch) {
    if (!c->do_sample) return qtts_argmax(z, n);
    qtts_sample_warp(z, n, c, scratch);
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; i++) mx = z[i] > mx ? z[i] : mx;
    if (mx == -INFINITY) return qtts_argmax(z, n);
    double total = 0;
    for (int64_t i = 0; i < n; i++) {
        scratch[i] = z[i] == -INFINITY ? 0.0f : (float)exp((double)z[i] - mx);
        total += scratch[i];
    }
    double target = u * total, cum = 0;
    int64_t last = -1;
    for (int64_t i = 0; i < n; i++) {
        if (scratch[i] <= 0) continue;
        cum += scratch[i];
        last = i;
        if (cum > target) return (int32_t)i;
    }
    return (int32_t)last; /* rounding at the very top */
}
