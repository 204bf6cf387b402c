/* On-device sampling: the slots' settings, RNG counters and histories in
 * device buffers, and the host side of the sample kernel (shaders/sample.comp). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_sample.h"
#include "gpu/vk_internal.h"

/* The slot layout in 32-bit words, as sample.comp reads it. */
enum {
    SLOT_WORDS = 32,
    W_SEED = 0, /* lo, hi */
    W_STREAM = 2,
    W_STEP = 4,
    W_DRAW = 5, /* the last draw's Philox words 0 and 1 */
    W_CFG_TALKER = 8,
    W_CFG_CP = 16,
    /* within a settings block */
    C_DO_SAMPLE = 0,
    C_TEMPERATURE = 1,
    C_TOP_K = 2,
    C_TOP_P = 3,
    C_PENALTY = 4,
    C_MIN_NEW = 5,
    C_EOS = 6,
    /* push-constant flags */
    F_TALKER = 1,
    F_ADVANCE = 2,
};

struct qtts_gpu_sampler {
    qtts_gpu_buf *state, *seen;
    int slots;
    int64_t vocab, seen_words;
};

qtts_gpu_sampler *qtts_gpu_sampler_new(qtts_gpu *g, int slots, int64_t vocab, qtts_err *err) {
    if (slots <= 0 || slots > 65535 || vocab <= 0 || vocab > (1 << 24)) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "GPU sampler: %d slots of vocabulary %lld", slots, (long long)vocab);
        return NULL;
    }
    qtts_gpu_sampler *s = qtts_calloc(1, sizeof *s, err);
    if (!s) return NULL;
    s->slots = slots;
    s->vocab = vocab;
    s->seen_words = (vocab + 31) / 32;
    if (!(s->state = qtts_gpu_buf_new(g, (size_t)slots * SLOT_WORDS * 4, err)) ||
        !(s->seen = qtts_gpu_buf_new(g, (size_t)slots * (size_t)s->seen_words * 4, err))) {
        qtts_fail_prefix(err, "GPU sampler");
        qtts_gpu_sampler_free(g, s);
        return NULL;
    }
    return s;
}

void qtts_gpu_sampler_free(qtts_gpu *g, qtts_gpu_sampler *s) {
    if (!s) return;
    qtts_gpu_buf_free(g, s->state);
    qtts_gpu_buf_free(g, s->seen);
    free(s);
}

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static uint32_t clamp_u32(int64_t v) { return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

static int check_cfg(const qtts_sample_cfg *c, const char *which, qtts_err *err) {
    if (c->do_sample &&
        (!(c->temperature > 0) || !isfinite(c->temperature) || !(c->top_p > 0 && c->top_p <= 1) || c->top_k < 0))
        return qtts_fail_as(err, QTTS_ERR_INVALID,
                            "GPU sampler: %s sampling needs temperature > 0, top_p in (0, 1], top_k >= 0", which);
    return 0;
}

static void put_cfg(uint32_t *w, const qtts_sample_cfg *c) {
    w[C_DO_SAMPLE] = c->do_sample != 0;
    w[C_TEMPERATURE] = f32_bits(c->temperature);
    w[C_TOP_K] = clamp_u32(c->top_k);
    w[C_TOP_P] = f32_bits(c->top_p);
}

int qtts_gpu_sampler_start(qtts_gpu_sampler *s, int slot, const qtts_gpu_sample_settings *c, uint32_t step,
                           const int32_t *hist, int64_t n_hist, qtts_err *err) {
    if (slot < 0 || slot >= s->slots)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU sampler: slot %d of %d", slot, s->slots);
    if (check_cfg(&c->talker, "talker", err) || check_cfg(&c->cp, "code predictor", err)) return -1;
    if (!(c->repetition_penalty > 0) || !isfinite(c->repetition_penalty))
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU sampler: the repetition penalty must be > 0");
    uint32_t *w = (uint32_t *)qtts_gpu_buf_data(s->state) + (size_t)slot * SLOT_WORDS;
    memset(w, 0, SLOT_WORDS * 4);
    w[W_SEED] = (uint32_t)c->seed;
    w[W_SEED + 1] = (uint32_t)(c->seed >> 32);
    w[W_STREAM] = (uint32_t)c->stream;
    w[W_STREAM + 1] = (uint32_t)(c->stream >> 32);
    w[W_STEP] = step;
    put_cfg(w + W_CFG_TALKER, &c->talker);
    w[W_CFG_TALKER + C_PENALTY] = f32_bits(c->repetition_penalty);
    w[W_CFG_TALKER + C_MIN_NEW] = clamp_u32(c->min_new_tokens);
    w[W_CFG_TALKER + C_EOS] = c->eos >= 0 && c->eos < s->vocab ? (uint32_t)c->eos : UINT32_MAX;
    put_cfg(w + W_CFG_CP, &c->cp);
    w[W_CFG_CP + C_PENALTY] = f32_bits(1.0f);
    uint32_t *seen = (uint32_t *)qtts_gpu_buf_data(s->seen) + (size_t)slot * (size_t)s->seen_words;
    memset(seen, 0, (size_t)s->seen_words * 4);
    for (int64_t i = 0; hist && i < n_hist; i++)
        if (hist[i] >= 0 && hist[i] < s->vocab) seen[hist[i] / 32] |= 1u << (hist[i] % 32);
    return 0;
}

int qtts_gpu_sampler_copy(qtts_gpu_sampler *s, int dst, int src, qtts_err *err) {
    if (dst < 0 || dst >= s->slots || src < 0 || src >= s->slots)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU sampler: slots %d and %d of %d", dst, src, s->slots);
    uint32_t *w = qtts_gpu_buf_data(s->state), *seen = qtts_gpu_buf_data(s->seen);
    memmove(w + (size_t)dst * SLOT_WORDS, w + (size_t)src * SLOT_WORDS, SLOT_WORDS * 4);
    memmove(seen + (size_t)dst * (size_t)s->seen_words, seen + (size_t)src * (size_t)s->seen_words,
            (size_t)s->seen_words * 4);
    return 0;
}

uint32_t qtts_gpu_sampler_step(const qtts_gpu_sampler *s, int slot) {
    if (slot < 0 || slot >= s->slots) return 0;
    return ((const uint32_t *)s->state->map)[(size_t)slot * SLOT_WORDS + W_STEP];
}

void qtts_gpu_sampler_last_draw(const qtts_gpu_sampler *s, int slot, uint32_t out[2]) {
    out[0] = out[1] = 0;
    if (slot < 0 || slot >= s->slots) return;
    const uint32_t *w = (const uint32_t *)s->state->map + (size_t)slot * SLOT_WORDS;
    out[0] = w[W_DRAW];
    out[1] = w[W_DRAW + 1];
}

/* 1 if elements [off, off + count) of 4-byte elements lie inside b and fit 32-bit indices. */
static int fits(const qtts_gpu_buf *b, int64_t off, int64_t count) {
    return b && off >= 0 && count >= 0 && (uint64_t)(off + count) <= b->size / 4 && off + count <= UINT32_MAX;
}

int qtts_gpu_sample(qtts_gpu_seq *seq, qtts_gpu_sampler *s, const qtts_gpu_sample_args *a, qtts_err *err) {
    if (a->rows <= 0) return 0;
    if (a->n <= 0 || a->rows > 65535 || a->z_stride < 0 || a->id_stride < 0 || a->z_stride > UINT32_MAX ||
        a->id_stride > UINT32_MAX)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU sample: bad shape (%lld rows of %lld)", (long long)a->rows,
                            (long long)a->n);
    if (a->talker && a->n > s->vocab)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU sample: %lld talker logits, the history holds %lld",
                            (long long)a->n, (long long)s->vocab);
    if (a->slot0 < 0 || a->slot0 + a->rows > s->slots)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU sample: slots %d..%lld of %d", a->slot0,
                            (long long)(a->slot0 + a->rows - 1), s->slots);
    if (!fits(a->z, a->z_off, (a->rows - 1) * a->z_stride + a->n))
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU sample: the logits lie outside their buffer");
    if (!fits(a->ids, a->id_off, (a->rows - 1) * a->id_stride + 1))
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU sample: the ids lie outside their buffer");
    if (a->ring && (a->ring_rows <= 0 || (a->ring_rows & (a->ring_rows - 1)) || a->ring_width <= (int64_t)a->sub ||
                    !fits(a->ring, 0, (int64_t)s->slots * a->ring_rows * a->ring_width)))
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU sample: a ring of %lld x %lld ids for %d slots",
                            (long long)a->ring_rows, (long long)a->ring_width, s->slots);
    struct {
        uint32_t n, z_off, z_stride, slot0, seen_words, out_off, out_stride, sub, flags, ring_rows, ring_width;
    } pc = {(uint32_t)a->n,
            (uint32_t)a->z_off,
            (uint32_t)a->z_stride,
            (uint32_t)a->slot0,
            (uint32_t)s->seen_words,
            (uint32_t)a->id_off,
            (uint32_t)a->id_stride,
            a->sub,
            (a->talker ? F_TALKER : 0u) | (a->advance ? F_ADVANCE : 0u),
            a->ring ? (uint32_t)a->ring_rows : 0u,
            a->ring ? (uint32_t)a->ring_width : 0u};
    qtts_gpu_buf *b[] = {a->z, s->state, s->seen, a->ids, a->ring ? a->ring : a->ids};
    return qtts_vk_dispatch(seq, QTTS_SHADER_sample, b, &pc, sizeof pc, (uint32_t)a->rows, 1, 1, err);
}
