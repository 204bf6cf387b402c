/* A PEFT LoRA adapter for the golden CustomVoice talker, written by tests
 * from known matrices (r 2, alpha 4, two talker weights), so that each test
 * can compute the merged weights itself. */
#ifndef QTTS_TEST_LORA_ADAPTER_H
#define QTTS_TEST_LORA_ADAPTER_H

#include <stdint.h>

enum { LORA_TEST_RANK = 2, LORA_TEST_N = 2 };
#define LORA_TEST_ALPHA 4.0

/* The adapted weights: PEFT module name, the model's weight, its shape. */
typedef struct {
    const char *module, *weight;
    int64_t out, in;
} lora_test_target;
extern const lora_test_target lora_test_targets[LORA_TEST_N];

/* a[t] ([RANK x in]) and b[t] ([out x RANK], scaled by 0.5) filled from seed,
 * malloc'd; 0, or -1 (then all freed and NULL). */
int lora_test_matrices(uint64_t seed, float **a, float **b);
void lora_test_matrices_free(float **a, float **b);

/* The adapter in dir (created): adapter_config.json and
 * adapter_model.safetensors holding a[t], b[t]. bad_rows (0: none): lora_B of
 * the first target gets that many rows instead (a shape that does not fit);
 * bad_module (NULL: none): the first target's module name instead. */
int lora_test_adapter_write(const char *dir, float *const *a, float *const *b, int64_t bad_rows,
                            const char *bad_module);

#endif
