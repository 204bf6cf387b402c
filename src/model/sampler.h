/* Token selection: the HF logits chain of the talker (repetition penalty,
 * min-new-tokens EOS mask, id suppression), the temperature / top-k / top-p
 * warpers, greedy argmax, and a counter-based PRNG (Philox4x32-10) so a draw
 * depends only on (seed, stream, step, sub-step): a request's output never
 * depends on its batch neighbours. */
#ifndef QTTS_MODEL_SAMPLER_H
#define QTTS_MODEL_SAMPLER_H

#include <stdint.h>

typedef struct {
    int do_sample;     /* 0 = greedy argmax (first max on ties) */
    float temperature; /* > 0 */
    int64_t top_k;     /* 0 = off; ties with the k-th value are kept */
    float top_p;       /* 1 = off */
} qtts_sample_cfg;

/* Philox4x32 with 10 rounds (Salmon et al. 2011). */
void qtts_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);
/* A uniform double in [0, 1) with 53 random bits for draw (seed, stream, step, sub). */
double qtts_philox_uniform(uint64_t seed, uint64_t stream, uint32_t step, uint32_t sub);

int32_t qtts_argmax(const float *z, int64_t n);

/* Talker processors, in HF order, in place on the raw fp32 logits z[n]:
 * repetition penalty over the distinct previously generated ids hist[n_hist]
 * (z/p if z > 0 else z*p), EOS -> -inf while n_generated < min_new_tokens,
 * ids [max(0, n-1024), n) except eos -> -inf (the official suppress list). */
void qtts_talker_process_logits(float *z, int64_t n, const int32_t *hist, int64_t n_hist, float rep_penalty,
                                int64_t n_generated, int64_t min_new_tokens, int64_t eos);

/* Temperature, top-k, top-p warpers in place (filtered entries -> -inf).
 * scratch: 2*n floats. No-op when !do_sample. */
void qtts_sample_warp(float *z, int64_t n, const qtts_sample_cfg *c, float *scratch);

/* Picks a token from processed logits: argmax when !do_sample, otherwise
 * warp, softmax and invert the CDF at u in [0,1). z is modified.
 * scratch: 2*n floats. */
int32_t qtts_sample_pick(float *z, int64_t n, const qtts_sample_cfg *c, double u, float *scratch);

#endif
