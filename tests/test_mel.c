/* Mel front end: FFT against a direct DFT, the Slaney filterbank's shape,
 * frame counts and short-input errors. (The golden spk_mel comparison lives
 * in test_cloning_golden.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model/mel.h"

/* librosa mel scale (Slaney) for the checks below */
static double hz_to_mel(double f) {
    return f >= 1000.0 ? 15.0 + log(f / 1000.0) / (log(6.4) / 27.0) : f * 3.0 / 200.0;
}

int main(void) {
    qtts_err err = {0};
    qtts_mel *m = qtts_mel_create_speaker(24000, 128, &err);
    TEST_CHECK(m != NULL, "create: %s", err.msg);
    if (!m) return test_finish("test_mel");
    const int64_t nb = 513;
    const float *fb = qtts_mel_filterbank(m);

    /* filterbank: triangles, peak bins increasing, Slaney area norm: each
     * filter's peak height is 2/(f[i+2]-f[i]) at most */
    int ok_shape = 1, ok_order = 1;
    int64_t prev_peak = -1;
    for (int64_t k = 0; k < 128; k++) {
        const float *w = fb + k * nb;
        int64_t peak = 0;
        for (int64_t b = 0; b < nb; b++) {
            if (w[b] < 0) ok_shape = 0;
            if (w[b] > w[peak]) peak = b;
        }
        /* unimodal: non-decreasing up to the peak, non-increasing after */
        for (int64_t b = 1; b <= peak; b++)
            if (w[b] < w[b - 1]) ok_shape = 0;
        for (int64_t b = peak + 1; b < nb; b++)
            if (w[b] > w[b - 1]) ok_shape = 0;
        if (peak < prev_peak) ok_order = 0;
        prev_peak = peak;
    }
    TEST_CHECK(ok_shape, "mel filters are non-negative triangles");
    TEST_CHECK(ok_order, "mel filter peaks increase with the mel index");
    /* Slaney norm: every triangle has unit area in Hz (checked on the wide
     * upper filters, where bin sampling is fine enough) */
    {
        double worst = 0;
        for (int64_t k = 60; k < 127; k++) {
            double sum = 0;
            for (int64_t b = 0; b < nb; b++) sum += fb[k * nb + b];
            worst = fmax(worst, fabs(sum * 24000.0 / 1024.0 - 1.0));
        }
        TEST_CHECK(worst < 0.05, "filter area off by %.4f", worst);
        TEST_CHECK(fabs(hz_to_mel(1000.0) - 15.0) < 1e-12, "slaney mel(1 kHz) = 15");
    }
    /* bins above fmax (12 kHz = Nyquist here) and below fmin: the last bin belongs to no
     * filter's rising edge beyond the top point */
    double top = 0;
    for (int64_t k = 0; k < 128; k++) top = fmax(top, fb[k * nb + nb - 1]);
    TEST_CHECK(top < 1e-3, "Nyquist bin weight %.3g", top);

    /* frames: 1 + (n - 256) / 256 (140 for 36000) */
    TEST_CHECK(qtts_mel_frames(m, 36000) == 140, "frames(36000) = %lld", (long long)qtts_mel_frames(m, 36000));
    TEST_CHECK(qtts_mel_frames(m, 256 * 7) == 7, "frames(1792)");
    TEST_CHECK(qtts_mel_frames(m, 100) == 0, "frames(100) = 0");

    /* the log-mel of a pure tone peaks at the filter containing it; compare one
     * frame against a direct double-precision DFT + filterbank */
    int64_t n = 4096;
    float *x = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        x[i] = 0.3f * sinf(2.0f * (float)M_PI * 1234.5f * (float)i / 24000.0f) +
               0.01f * (float)((i * 7919) % 101 - 50) / 50.0f;
    int64_t fr = qtts_mel_frames(m, n);
    float *out = malloc((size_t)(fr * 128) * sizeof(float));
    TEST_CHECK(qtts_mel_compute(m, NULL, x, n, out, &err) == 0, "compute: %s", err.msg);
    {
        int64_t f = 5; /* an interior frame: input samples f*256-384 .. +1024 */
        double *mag = malloc(nb * sizeof(double));
        for (int64_t b = 0; b < nb; b++) {
            double re = 0, im = 0;
            for (int64_t i = 0; i < 1024; i++) {
                double w = 0.5 - 0.5 * cos(2 * M_PI * i / 1024.0);
                double v = x[f * 256 + i - 384] * (double)(float)w;
                re += v * cos(2 * M_PI * b * i / 1024.0);
                im -= v * sin(2 * M_PI * b * i / 1024.0);
            }
            mag[b] = sqrt(re * re + im * im + 1e-9);
        }
        float want[128];
        for (int64_t k = 0; k < 128; k++) {
            double acc = 0;
            for (int64_t b = 0; b < nb; b++) acc += fb[k * nb + b] * mag[b];
            want[k] = (float)log(fmax(acc, 1e-5));
        }
        TEST_NEAR(out + f * 128, want, 128, 1e-5, "FFT log-mel == direct DFT log-mel (frame 5)");
        free(mag);
    }
    /* too short */
    TEST_CHECK(qtts_mel_compute(m, NULL, x, 300, out, &err) != 0 && strstr(err.msg, "too short"),
               "300 samples rejected: %s", err.msg);
    /* bad settings */
    qtts_mel *bad = qtts_mel_create(24000, 1000, 256, 128, 0, 0, &err);
    TEST_CHECK(bad == NULL && strstr(err.msg, "n_fft"), "non power-of-two n_fft rejected: %s", err.msg);
    free(x);
    free(out);
    qtts_mel_free(m);
    return test_finish("test_mel");
}
