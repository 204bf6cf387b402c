/* Sampler: Philox4x32-10 known-answer vectors (Random123), determinism by
 * seed, the HF talker processors, and the empirical distribution of 100k
 * draws against the softmax of the processed logits (chi-square, fixed seed,
 * so the test is deterministic) for temperature, top-k (with ties) and top-p. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model/sampler.h"

/* Reference warp in double: returns probabilities p[n]. */
static void ref_probs(const float *z0, int n, const qtts_sample_cfg *c, double *p) {
    double z[64];
    for (int i = 0; i < n; i++) z[i] = (double)(z0[i] / c->temperature);
    if (c->top_k > 0 && c->top_k < n) {
        double s[64];
        memcpy(s, z, sizeof(double) * (size_t)n);
        for (int i = 0; i < n; i++) /* sort descending */
            for (int j = i + 1; j < n; j++)
                if (s[j] > s[i]) { double t = s[i]; s[i] = s[j]; s[j] = t; }
        double kth = s[c->top_k - 1];
        for (int i = 0; i < n; i++) if (z[i] < kth) z[i] = -INFINITY;
    }
    double mx = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++) mx = z[i] > mx ? z[i] : mx;
    for (int i = 0; i < n; i++) sum += (p[i] = isinf(z[i]) ? 0 : exp(z[i] - mx));
    for (int i = 0; i < n; i++) p[i] /= sum;
    if (c->top_p < 1.0f) {
        /* keep the most probable tokens until their mass reaches top_p (HF: drop the ascending prefix with cum <= 1-p) */
        int idx[64];
        for (int i = 0; i < n; i++) idx[i] = i;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++)
                if (p[idx[j]] < p[idx[i]]) { int t = idx[i]; idx[i] = idx[j]; idx[j] = t; }
        double cum = 0;
        for (int k = 0; k < n - 1; k++) {
            cum += p[idx[k]];
            if (cum <= 1.0 - c->top_p) p[idx[k]] = 0;
            else break;
        }
        sum = 0;
        for (int i = 0; i < n; i++) sum += p[i];
        for (int i = 0; i < n; i++) p[i] /= sum;
    }
}

static void chi_square_case(const char *what, const float *z, int n, qtts_sample_cfg c, uint64_t seed) {
    enum { DRAWS = 100000 };
    double p[64];
    long cnt[64] = {0};
    float work[64], scratch[128];
    ref_probs(z, n, &c, p);
    for (int d = 0; d < DRAWS; d++) {
        memcpy(work, z, sizeof(float) * (size_t)n);
        double u = qtts_philox_uniform(seed, 7, (uint32_t)d, 3);
        int t = qtts_sample_pick(work, n, &c, u, scratch);
        if (t >= 0 && t < n) cnt[t]++;
    }
    double chi = 0;
    int df = -1, impossible = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] <= 0) {
            if (cnt[i]) impossible++;
            continue;
        }
        double e = p[i] * DRAWS;
        chi += (cnt[i] - e) * (cnt[i] - e) / e;
        df++;
    }
    /* Wilson-Hilferty 99.9% critical value */
    double k = df > 0 ? df : 1, zq = 3.09;
    double crit = k * pow(1 - 2 / (9 * k) + zq * sqrt(2 / (9 * k)), 3);
    TEST_CHECK(impossible == 0, "%s: %d filtered tokens were drawn", what, impossible);
    TEST_CHECK(chi < crit, "%s: chi2 %.2f >= %.2f (df %d)", what, chi, crit, df);
    if (chi < crit) printf("  ok   %-40s chi2 %.2f (df %d, 99.9%% crit %.2f)\n", what, chi, df, crit);
}

int main(void) {
    /* Philox4x32-10 known answers (Random123 kat_vectors) */
    {
        uint32_t o[4];
        const uint32_t c0[4] = {0, 0, 0, 0}, k0[2] = {0, 0};
        qtts_philox4x32_10(c0, k0, o);
        const uint32_t w0[4] = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
        TEST_CHECK(!memcmp(o, w0, sizeof o), "philox zero vector: %08x %08x %08x %08x", o[0], o[1], o[2], o[3]);
        const uint32_t c1[4] = {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, k1[2] = {0xffffffff, 0xffffffff};
        qtts_philox4x32_10(c1, k1, o);
        const uint32_t w1[4] = {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd};
        TEST_CHECK(!memcmp(o, w1, sizeof o), "philox ones vector: %08x %08x %08x %08x", o[0], o[1], o[2], o[3]);
        const uint32_t c2[4] = {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, k2[2] = {0xa4093822, 0x299f31d0};
        qtts_philox4x32_10(c2, k2, o);
        const uint32_t w2[4] = {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1};
        TEST_CHECK(!memcmp(o, w2, sizeof o), "philox pi vector: %08x %08x %08x %08x", o[0], o[1], o[2], o[3]);
    }
    /* uniform: range, determinism, key separation */
    {
        double a = qtts_philox_uniform(42, 0, 5, 1), b = qtts_philox_uniform(42, 0, 5, 1);
        TEST_CHECK(a == b, "same key -> same draw");
        TEST_CHECK(a != qtts_philox_uniform(43, 0, 5, 1), "seed changes the draw");
        TEST_CHECK(a != qtts_philox_uniform(42, 1, 5, 1), "stream changes the draw");
        TEST_CHECK(a != qtts_philox_uniform(42, 0, 6, 1), "step changes the draw");
        TEST_CHECK(a != qtts_philox_uniform(42, 0, 5, 2), "sub-step changes the draw");
        double mn = 1, mx = 0, mean = 0;
        for (int i = 0; i < 100000; i++) {
            double u = qtts_philox_uniform(9, 0, (uint32_t)i, 0);
            mn = u < mn ? u : mn;
            mx = u > mx ? u : mx;
            mean += u;
        }
        mean /= 100000;
        TEST_CHECK(mn >= 0 && mx < 1 && fabs(mean - 0.5) < 0.005, "uniform range/mean: %g %g %g", mn, mx, mean);
    }
    /* argmax: first max on ties */
    {
        float z[5] = {1, 3, 2, 3, -1};
        TEST_CHECK(qtts_argmax(z, 5) == 1, "argmax tie -> first");
    }
    /* talker processors */
    {
        enum { V = 3072, EOS = 2150 };
        float *z = malloc(sizeof(float) * V);
        for (int i = 0; i < V; i++) z[i] = (float)((i * 37) % 101 - 50) / 10.0f;
        z[5] = 2.0f;
        z[6] = -2.0f;
        int32_t hist[2] = {5, 6}; /* distinct ids, as the generator keeps them */
        qtts_talker_process_logits(z, V, hist, 2, 1.05f, 1, 2, EOS);
        TEST_CHECK(z[5] == 2.0f / 1.05f && z[6] == -2.0f * 1.05f, "repetition penalty: %g %g", z[5], z[6]);
        TEST_CHECK(isinf(z[EOS]) && z[EOS] < 0, "eos masked before min_new_tokens");
        int ok = 1;
        for (int i = 2048; i < V; i++) ok &= isinf(z[i]) != 0;
        TEST_CHECK(ok, "ids 2048..3071 suppressed");
        for (int i = 0; i < V; i++) z[i] = 0.5f;
        qtts_talker_process_logits(z, V, NULL, 0, 1.05f, 2, 2, EOS);
        TEST_CHECK(z[EOS] == 0.5f && isinf(z[EOS + 1]) && z[2047] == 0.5f, "eos allowed from step 2, others suppressed");
        free(z);
    }
    /* distribution of draws */
    {
        float z[12] = {1.5f, 0.3f, -0.2f, 2.0f, 2.0f, 0.9f, -1.0f, 0.0f, 1.1f, 0.7f, -0.5f, 1.9f};
        chi_square_case("temperature 1", z, 12, (qtts_sample_cfg){1, 1.0f, 0, 1.0f}, 1);
        chi_square_case("temperature 0.7", z, 12, (qtts_sample_cfg){1, 0.7f, 0, 1.0f}, 2);
        chi_square_case("temperature 1.6", z, 12, (qtts_sample_cfg){1, 1.6f, 0, 1.0f}, 3);
        chi_square_case("top-k 4 (tie at 2.0 kept)", z, 12, (qtts_sample_cfg){1, 0.9f, 4, 1.0f}, 4);
        chi_square_case("top-k 2 with tie", z, 12, (qtts_sample_cfg){1, 1.0f, 2, 1.0f}, 5);
        chi_square_case("top-p 0.8", z, 12, (qtts_sample_cfg){1, 1.0f, 0, 0.8f}, 6);
        chi_square_case("top-k 6 + top-p 0.9 + T 0.9", z, 12, (qtts_sample_cfg){1, 0.9f, 6, 0.9f}, 7);
        /* top-k 2: only the two tied 2.0 entries survive, equally likely */
        float w[12], s[24];
        memcpy(w, z, sizeof w);
        qtts_sample_warp(w, 12, &(qtts_sample_cfg){1, 1.0f, 2, 1.0f}, s);
        int kept = 0;
        for (int i = 0; i < 12; i++) kept += !isinf(w[i]);
        TEST_CHECK(kept == 2 && !isinf(w[3]) && !isinf(w[4]), "top-k 2 keeps exactly the tied pair");
        memcpy(w, z, sizeof w);
        qtts_sample_warp(w, 12, &(qtts_sample_cfg){1, 1.0f, 3, 1.0f}, s);
        kept = 0;
        for (int i = 0; i < 12; i++) kept += !isinf(w[i]);
        TEST_CHECK(kept == 3, "top-k 3 keeps 3 (2.0, 2.0, 1.9): %d", kept);
        /* greedy ignores u */
        memcpy(w, z, sizeof w);
        TEST_CHECK(qtts_sample_pick(w, 12, &(qtts_sample_cfg){0, 1.0f, 0, 1.0f}, 0.99, s) == 3, "greedy = argmax");
    }
    return test_finish("test_sampler");
}
