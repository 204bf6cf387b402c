#include "model/mel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct qtts_mel {
    int64_t sr, n_fft, hop, n_mels, n_bins, pad;
    float *fb;         /* [n_mels][n_bins], float32 like librosa's default dtype */
    int64_t *fb_range; /* per mel: first and one-past-last nonzero bin */
    double *window;    /* periodic Hann, rounded to float as torch.hann_window does */
    double *tw_re, *tw_im;
    int64_t *bitrev;
};

/* Slaney mel scale (librosa hz_to_mel / mel_to_hz with htk=False). */
static double hz_to_mel(double f) {
    const double f_sp = 200.0 / 3.0, min_log_hz = 1000.0, min_log_mel = min_log_hz / f_sp;
    const double logstep = log(6.4) / 27.0;
    return f >= min_log_hz ? min_log_mel + log(f / min_log_hz) / logstep : f / f_sp;
}

static double mel_to_hz(double m) {
    const double f_sp = 200.0 / 3.0, min_log_hz = 1000.0, min_log_mel = min_log_hz / f_sp;
    const double logstep = log(6.4) / 27.0;
    return m >= min_log_mel ? min_log_hz * exp(logstep * (m - min_log_mel)) : f_sp * m;
}

void qtts_mel_free(qtts_mel *m) {
    if (!m) return;
    free(m->fb);
    free(m->fb_range);
    free(m->window);
    free(m->tw_re);
    free(m->tw_im);
    free(m->bitrev);
    free(m);
}

qtts_mel *qtts_mel_create(int64_t sample_rate, int64_t n_fft, int64_t hop, int64_t n_mels, double fmin, double fmax,
                          qtts_err *err) {
    if (sample_rate <= 0 || n_mels <= 0 || hop <= 0 || hop > n_fft || n_fft < 2 || n_fft > (1 << 16) ||
        (n_fft & (n_fft - 1))) {
        qtts_fail(err, "mel: unsupported settings (sr %lld, n_fft %lld, hop %lld, mels %lld)", (long long)sample_rate,
                  (long long)n_fft, (long long)hop, (long long)n_mels);
        return NULL;
    }
    if (fmax <= 0) fmax = sample_rate / 2.0;
    qtts_mel *m = qtts_calloc(1, sizeof *m, err);
    if (!m) return NULL;
    m->sr = sample_rate;
    m->n_fft = n_fft;
    m->hop = hop;
    m->n_mels = n_mels;
    m->n_bins = n_fft / 2 + 1;
    m->pad = (n_fft - hop) / 2;
    m->fb = qtts_calloc((size_t)(n_mels * m->n_bins), sizeof(float), err);
    m->fb_range = qtts_calloc((size_t)(2 * n_mels), sizeof(int64_t), err);
    m->window = qtts_malloc((size_t)n_fft * sizeof(double), err);
    m->tw_re = qtts_malloc((size_t)(n_fft / 2) * sizeof(double), err);
    m->tw_im = qtts_malloc((size_t)(n_fft / 2) * sizeof(double), err);
    m->bitrev = qtts_malloc((size_t)n_fft * sizeof(int64_t), err);
    double *mel_f = qtts_malloc((size_t)(n_mels + 2) * sizeof(double), err);
    if (!m->fb || !m->fb_range || !m->window || !m->tw_re || !m->tw_im || !m->bitrev || !mel_f) {
        free(mel_f);
        qtts_mel_free(m);
        return NULL;
    }
    /* librosa.filters.mel: triangles between consecutive mel-spaced points,
     * each scaled by 2/(f[i+2]-f[i]) (Slaney area normalisation). */
    double mlo = hz_to_mel(fmin), mhi = hz_to_mel(fmax);
    for (int64_t i = 0; i < n_mels + 2; i++) mel_f[i] = mel_to_hz(mlo + (mhi - mlo) * (double)i / (double)(n_mels + 1));
    for (int64_t i = 0; i < n_mels; i++) {
        double d0 = mel_f[i + 1] - mel_f[i], d1 = mel_f[i + 2] - mel_f[i + 1];
        double enorm = 2.0 / (mel_f[i + 2] - mel_f[i]);
        int64_t first = -1, last = -1;
        for (int64_t b = 0; b < m->n_bins; b++) {
            /* np.linspace(0, sr/2, n_bins) */
            double f = (double)b * ((double)sample_rate / 2.0) / (double)(m->n_bins - 1);
            double lower = -(mel_f[i] - f) / d0, upper = (mel_f[i + 2] - f) / d1;
            double wgt = lower < upper ? lower : upper;
            if (wgt < 0) wgt = 0;
            float v = (float)(wgt * enorm);
            m->fb[i * m->n_bins + b] = v;
            if (v != 0.0f) {
                if (first < 0) first = b;
                last = b;
            }
        }
        m->fb_range[2 * i] = first < 0 ? 0 : first;
        m->fb_range[2 * i + 1] = first < 0 ? 0 : last + 1;
    }
    free(mel_f);
    for (int64_t i = 0; i < n_fft; i++)
        m->window[i] = (double)(float)(0.5 - 0.5 * cos(2.0 * M_PI * (double)i / (double)n_fft));
    for (int64_t i = 0; i < n_fft / 2; i++) {
        m->tw_re[i] = cos(-2.0 * M_PI * (double)i / (double)n_fft);
        m->tw_im[i] = sin(-2.0 * M_PI * (double)i / (double)n_fft);
    }
    int bits = 0;
    while (((int64_t)1 << bits) < n_fft) bits++;
    for (int64_t i = 0; i < n_fft; i++) {
        int64_t r = 0;
        for (int b = 0; b < bits; b++)
            if (i & ((int64_t)1 << b)) r |= (int64_t)1 << (bits - 1 - b);
        m->bitrev[i] = r;
    }
    return m;
}

qtts_mel *qtts_mel_create_speaker(int64_t sample_rate, int64_t n_mels, qtts_err *err) {
    return qtts_mel_create(sample_rate, 1024, 256, n_mels, 0.0, sample_rate / 2.0, err);
}

int64_t qtts_mel_frames(const qtts_mel *m, int64_t n) {
    int64_t padded = n + 2 * m->pad;
    if (n <= m->pad || padded < m->n_fft) return 0;
    return (padded - m->n_fft) / m->hop + 1;
}

int64_t qtts_mel_min_samples(const qtts_mel *m) {
    int64_t a = m->pad + 1, b = m->n_fft - 2 * m->pad;
    return a > b ? a : b;
}

const float *qtts_mel_filterbank(const qtts_mel *m) { return m->fb; }

/* In-place iterative radix-2 complex FFT (double precision: the mel feeds a
 * log, so low-energy bins need the extra accuracy). */
static void fft(const qtts_mel *m, double *re, double *im) {
    int64_t n = m->n_fft;
    for (int64_t i = 0; i < n; i++) {
        int64_t r = m->bitrev[i];
        if (r > i) {
            double t = re[i];
            re[i] = re[r];
            re[r] = t;
            t = im[i];
            im[i] = im[r];
            im[r] = t;
        }
    }
    for (int64_t len = 2; len <= n; len <<= 1) {
        int64_t half = len / 2, step = n / len;
        for (int64_t s = 0; s < n; s += len)
            for (int64_t k = 0; k < half; k++) {
                double wr = m->tw_re[k * step], wi = m->tw_im[k * step];
                double *ar = re + s + k, *ai = im + s + k, *br = re + s + k + half, *bi = im + s + k + half;
                double xr = *br * wr - *bi * wi, xi = *br * wi + *bi * wr;
                *br = *ar - xr;
                *bi = *ai - xi;
                *ar += xr;
                *ai += xi;
            }
    }
}

typedef struct {
    const qtts_mel *m;
    const float *wav;
    int64_t n;
    float *out;
    double *scratch; /* per thread: re, im (n_fft each), mag (n_bins) */
} mel_job;

static void mel_frames(void *ctx, int64_t f0, int64_t f1, int tid) {
    const mel_job *j = ctx;
    const qtts_mel *m = j->m;
    double *re = j->scratch + (size_t)tid * (size_t)(2 * m->n_fft + m->n_bins);
    double *im = re + m->n_fft, *mag = im + m->n_fft;
    for (int64_t f = f0; f < f1; f++) {
        for (int64_t i = 0; i < m->n_fft; i++) {
            /* reflect padding (torch 'reflect': the edge sample is not repeated) */
            int64_t p = f * m->hop + i - m->pad;
            if (p < 0) p = -p;
            if (p >= j->n) p = 2 * (j->n - 1) - p;
            re[i] = (double)j->wav[p] * m->window[i];
            im[i] = 0.0;
        }
        fft(m, re, im);
        for (int64_t b = 0; b < m->n_bins; b++) mag[b] = sqrt(re[b] * re[b] + im[b] * im[b] + 1e-9);
        float *o = j->out + f * m->n_mels;
        for (int64_t k = 0; k < m->n_mels; k++) {
            const float *w = m->fb + k * m->n_bins;
            double acc = 0.0;
            for (int64_t b = m->fb_range[2 * k]; b < m->fb_range[2 * k + 1]; b++) acc += (double)w[b] * mag[b];
            o[k] = (float)log(acc > 1e-5 ? acc : 1e-5);
        }
    }
}

int qtts_mel_compute(const qtts_mel *m, qtts_pool *pool, const float *wav, int64_t n, float *out, qtts_err *err) {
    int64_t frames = qtts_mel_frames(m, n);
    if (frames <= 0 || n < qtts_mel_min_samples(m))
        return qtts_fail(err, "mel: %lld samples is too short (need at least %lld)", (long long)n,
                         (long long)qtts_mel_min_samples(m));
    int nt = pool ? qtts_pool_size(pool) : 1;
    mel_job j = {m, wav, n, out, NULL};
    j.scratch = qtts_malloc((size_t)nt * (size_t)(2 * m->n_fft + m->n_bins) * sizeof(double), err);
    if (!j.scratch) return -1;
    qtts_parallel_for(pool, frames, 4, mel_frames, &j);
    free(j.scratch);
    return 0;
}
