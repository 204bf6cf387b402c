/* The voice-cloning front end at the REAL 0.6B-Base / Tokenizer-12Hz sizes
 * with random weights (an in-memory store): checks that every size is taken
 * from the config/tensors (nothing tuned to the tiny fixtures), that the
 * outputs are finite and well-formed, and prints timings.
 * QTTS_BENCH_SECONDS=N sets the reference length (default 1 s) and adds a
 * per-encoder timing split. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "io/store.h"
#include "model/codec_encoder.h"
#include "model/codec_random.h"
#include "model/config.h"
#include "model/speaker_encoder.h"
#include "model/voice.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static unsigned long long g_seed = 12345;
static float urand(void) {
    g_seed = g_seed * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((g_seed >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}

/* Adds a tensor of random values (uniform, std = scale) or constant. */
static int add(qtts_store *st, const char *name, int ndim, int64_t d0, int64_t d1, int64_t d2, float scale,
               float offset, qtts_err *err) {
    int64_t shape[3] = {d0, d1, d2}, n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *p = malloc((size_t)n * sizeof(float));
    if (!p) return -1;
    for (int64_t i = 0; i < n; i++) p[i] = offset + scale * 1.7320508f * urand();
    return qtts_store_add(st, name, QTTS_F32, ndim, shape, p, 1, err);
}

#define ADD(...)                                                   \
    do {                                                           \
        if (add(__VA_ARGS__, &err)) {                              \
            fprintf(stderr, "FAIL add tensor: %s\n", err.msg);     \
            return 1;                                              \
        }                                                          \
    } while (0)

int main(void) {
    qtts_err err = {0};
    qtts_model_config mc;
    memset(&mc, 0, sizeof mc);
    mc.has_speaker_encoder = 1;
    mc.spk_mel_dim = 128;
    mc.spk_enc_dim = 1024;
    mc.talker.hidden = 1024;
    int64_t ch[5] = {512, 512, 512, 512, 1536}, ks[5] = {5, 3, 3, 3, 1}, ds[5] = {1, 2, 3, 4, 1};
    memcpy(mc.spk_channels, ch, sizeof ch);
    memcpy(mc.spk_kernels, ks, sizeof ks);
    memcpy(mc.spk_dilations, ds, sizeof ds);
    mc.spk_attention_channels = 128;
    mc.spk_res2net_scale = 8;
    mc.spk_se_channels = 128;
    mc.spk_sample_rate = 24000;

    qtts_codec_config cc;
    qtts_codec_config_real(&cc);

    /* speaker encoder tensors */
    qtts_store *ms = qtts_store_new(&err), *ts = qtts_store_new(&err);
    if (!ms || !ts) return 1;
    char n[256];
#define SPK(name_, o, i, k)                                                                    \
    do {                                                                                       \
        snprintf(n, sizeof n, "speaker_encoder.%s.weight", name_);                             \
        ADD(ms, n, 3, o, i, k, 1.0f / sqrtf((float)((i) * (k))), 0.0f);                        \
        snprintf(n, sizeof n, "speaker_encoder.%s.bias", name_);                               \
        ADD(ms, n, 1, o, 1, 1, 0.05f, 0.0f);                                                   \
    } while (0)
    SPK("blocks.0.conv", 512, 128, 5);
    for (int b = 1; b <= 3; b++) {
        char p[128];
        snprintf(p, sizeof p, "blocks.%d.tdnn1.conv", b);
        SPK(p, 512, 512, 1);
        for (int j = 0; j < 7; j++) {
            snprintf(p, sizeof p, "blocks.%d.res2net_block.blocks.%d.conv", b, j);
            SPK(p, 64, 64, 3);
        }
        snprintf(p, sizeof p, "blocks.%d.tdnn2.conv", b);
        SPK(p, 512, 512, 1);
        snprintf(p, sizeof p, "blocks.%d.se_block.conv1", b);
        SPK(p, 128, 512, 1);
        snprintf(p, sizeof p, "blocks.%d.se_block.conv2", b);
        SPK(p, 512, 128, 1);
    }
    SPK("mfa.conv", 1536, 1536, 1);
    SPK("asp.tdnn.conv", 128, 4608, 1);
    SPK("asp.conv", 1536, 128, 1);
    SPK("fc", 1024, 3072, 1);

    /* Mimi encoder tensors */
#define CONV(name_, o, i, k, bias)                                                             \
    do {                                                                                       \
        snprintf(n, sizeof n, "%s.weight", name_);                                             \
        ADD(ts, n, 3, o, i, k, 1.0f / sqrtf((float)((i) * (k))), 0.0f);                        \
        if (bias) {                                                                            \
            snprintf(n, sizeof n, "%s.bias", name_);                                           \
            ADD(ts, n, 1, o, 1, 1, 0.05f, 0.0f);                                               \
        }                                                                                      \
    } while (0)
    CONV("encoder.encoder.layers.0.conv", 64, 1, 7, 1);
    int64_t c = 64, idx = 1;
    for (int s = 0; s < 4; s++) {
        int64_t r = cc.enc.ratios[3 - s];
        char p[128];
        snprintf(p, sizeof p, "encoder.encoder.layers.%lld.block.1.conv", (long long)idx);
        CONV(p, c / 2, c, 3, 1);
        snprintf(p, sizeof p, "encoder.encoder.layers.%lld.block.3.conv", (long long)idx);
        CONV(p, c, c / 2, 1, 1);
        idx += 2;
        snprintf(p, sizeof p, "encoder.encoder.layers.%lld.conv", (long long)idx);
        CONV(p, 2 * c, c, 2 * r, 1);
        idx++;
        c *= 2;
    }
    {
        char p[128]; /* ELU, then the last conv */
        snprintf(p, sizeof p, "encoder.encoder.layers.%lld.conv", (long long)(idx + 1));
        CONV(p, 512, 1024, 3, 1);
    }
    for (int l = 0; l < 8; l++) {
        char b[128];
        snprintf(b, sizeof b, "encoder.encoder_transformer.layers.%d", l);
        const char *ln[] = {"input_layernorm", "post_attention_layernorm"};
        for (int i = 0; i < 2; i++) {
            snprintf(n, sizeof n, "%s.%s.weight", b, ln[i]);
            ADD(ts, n, 1, 512, 1, 1, 0.1f, 1.0f);
            snprintf(n, sizeof n, "%s.%s.bias", b, ln[i]);
            ADD(ts, n, 1, 512, 1, 1, 0.05f, 0.0f);
        }
        const char *pr[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
        for (int i = 0; i < 4; i++) {
            snprintf(n, sizeof n, "%s.self_attn.%s.weight", b, pr[i]);
            ADD(ts, n, 2, 512, 512, 1, 1.0f / sqrtf(512.0f), 0.0f);
        }
        snprintf(n, sizeof n, "%s.mlp.fc1.weight", b);
        ADD(ts, n, 2, 2048, 512, 1, 1.0f / sqrtf(512.0f), 0.0f);
        snprintf(n, sizeof n, "%s.mlp.fc2.weight", b);
        ADD(ts, n, 2, 512, 2048, 1, 1.0f / sqrtf(2048.0f), 0.0f);
        snprintf(n, sizeof n, "%s.self_attn_layer_scale.scale", b);
        ADD(ts, n, 1, 512, 1, 1, 0.05f, 0.2f);
        snprintf(n, sizeof n, "%s.mlp_layer_scale.scale", b);
        ADD(ts, n, 1, 512, 1, 1, 0.05f, 0.2f);
    }
    CONV("encoder.downsample.conv", 512, 512, 4, 0);
    const char *rv[] = {"semantic", "acoustic"};
    for (int i = 0; i < 2; i++) {
        snprintf(n, sizeof n, "encoder.quantizer.%s_residual_vector_quantizer.input_proj.weight", rv[i]);
        ADD(ts, n, 3, 256, 512, 1, 1.0f / sqrtf(512.0f), 0.0f);
        for (int l = 0; l < (i ? 31 : 1); l++) {
            snprintf(n, sizeof n, "encoder.quantizer.%s_residual_vector_quantizer.layers.%d.codebook.embed_sum",
                     rv[i], l);
            ADD(ts, n, 2, 2048, 256, 1, 0.3f, 0.0f);
            snprintf(n, sizeof n, "encoder.quantizer.%s_residual_vector_quantizer.layers.%d.codebook.cluster_usage",
                     rv[i], l);
            ADD(ts, n, 1, 2048, 1, 1, 0.3f, 1.0f);
        }
    }

    qtts_pool *pool = qtts_pool_create(2, &err);
    qtts_spk_encoder *spk = pool ? qtts_spk_encoder_load(ms, &mc, &err) : NULL;
    qtts_codec_encoder *enc = spk ? qtts_codec_encoder_load(ts, &cc, &err) : NULL;
    TEST_CHECK(enc != NULL, "load real-size encoders: %s", err.msg);
    if (!enc) return test_finish("test_cloning_realsize");
    TEST_CHECK(qtts_codec_encoder_hop(enc) == 1920, "hop %lld", (long long)qtts_codec_encoder_hop(enc));
    TEST_CHECK(qtts_spk_encoder_dim(spk) == 1024, "x-vector dim");

    double secs = 1.0;
    const char *env = getenv("QTTS_BENCH_SECONDS");
    if (env && atof(env) > 0) secs = atof(env);
    int64_t ns = (int64_t)(secs * 24000) + 123; /* not a whole number of frames */
    float *w = malloc((size_t)ns * sizeof(float));
    for (int64_t i = 0; i < ns; i++)
        w[i] = 0.3f * sinf(2.0f * (float)M_PI * (220.0f + 0.01f * (float)i) * (float)i / 24000.0f) + 0.02f * urand();
    qtts_voice_data v;
    double t0 = now_s();
    int rc = qtts_voice_extract(&v, pool, spk, enc, w, ns, "text", 0, &err);
    double t1 = now_s();
    TEST_CHECK(rc == 0, "extract: %s", err.msg);
    if (!rc) {
        int64_t F = (ns + 1919) / 1920;
        TEST_CHECK(v.n_frames == F && v.n_q == 16 && v.dim == 1024, "voice %lld x %lld, dim %lld",
                   (long long)v.n_frames, (long long)v.n_q, (long long)v.dim);
        int ok = 1;
        for (int64_t i = 0; i < v.dim; i++) ok &= isfinite(v.xvec[i]) != 0;
        for (int64_t i = 0; i < v.n_frames * v.n_q; i++) ok &= v.codes[i] >= 0 && v.codes[i] < 2048;
        TEST_CHECK(ok, "finite x-vector, codes in range");
        printf("real sizes, %.2f s reference: voice extraction %.0f ms (2 threads)\n", secs, (t1 - t0) * 1e3);
    }
    if (!rc && env) {
        /* timing split */
        int64_t F = (ns + 1919) / 1920;
        float *x = malloc(1024 * sizeof(float));
        int32_t *codes = malloc((size_t)(F * 16) * sizeof(int32_t));
        double a0 = now_s();
        qtts_spk_encoder_embed(spk, pool, w, ns, x, NULL, NULL, &err);
        double a1 = now_s();
        qtts_codec_encoder_encode(enc, pool, w, ns, 16, codes, NULL, NULL, &err);
        double a2 = now_s();
        TEST_CHECK(!memcmp(codes, v.codes, (size_t)(F * 16) * sizeof(int32_t)), "deterministic codes");
        printf("real sizes, %.2f s reference, 2 threads: voice %.0f ms (speaker encoder %.0f ms, codec encoder %.0f "
               "ms)\n",
               secs, (t1 - t0) * 1e3, (a1 - a0) * 1e3, (a2 - a1) * 1e3);
        free(x);
        free(codes);
    }
    if (!rc) qtts_voice_free(&v);
    free(w);
    qtts_codec_encoder_free(enc);
    qtts_spk_encoder_free(spk);
    qtts_pool_free(pool);
    qtts_store_free(ms);
    qtts_store_free(ts);
    return test_finish("test_cloning_realsize");
}
