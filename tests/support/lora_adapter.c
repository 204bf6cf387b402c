#include "lora_adapter.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "test_util.h"

const lora_test_target lora_test_targets[LORA_TEST_N] = {
    {"base_model.model.model.layers.0.self_attn.q_proj", "talker.model.layers.0.self_attn.q_proj.weight", 64, 32},
    {"base_model.model.model.layers.1.mlp.down_proj", "talker.model.layers.1.mlp.down_proj.weight", 32, 96},
};

static float rnd(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2 - 1);
}

void lora_test_matrices_free(float **a, float **b) {
    for (int t = 0; t < LORA_TEST_N; t++) {
        free(a[t]), free(b[t]);
        a[t] = b[t] = NULL;
    }
}

int lora_test_matrices(uint64_t seed, float **a, float **b) {
    for (int t = 0; t < LORA_TEST_N; t++) a[t] = b[t] = NULL;
    for (int t = 0; t < LORA_TEST_N; t++) {
        const lora_test_target *g = &lora_test_targets[t];
        a[t] = malloc((size_t)(LORA_TEST_RANK * g->in) * sizeof(float));
        b[t] = malloc((size_t)(g->out * LORA_TEST_RANK) * sizeof(float));
        if (!a[t] || !b[t]) {
            lora_test_matrices_free(a, b);
            return -1;
        }
        for (int64_t i = 0; i < LORA_TEST_RANK * g->in; i++) a[t][i] = rnd(&seed);
        for (int64_t i = 0; i < g->out * LORA_TEST_RANK; i++) b[t][i] = 0.5f * rnd(&seed);
    }
    return 0;
}

int lora_test_adapter_write(const char *dir, float *const *a, float *const *b, int64_t bad_rows,
                            const char *bad_module) {
    char p[800], names[2 * LORA_TEST_N][160];
    const char *np[2 * LORA_TEST_N];
    int nd[2 * LORA_TEST_N];
    int64_t sh[2 * LORA_TEST_N][4];
    const float *data[2 * LORA_TEST_N];
    mkdir(dir, 0700);
    snprintf(p, sizeof p, "%s/adapter_config.json", dir);
    if (write_text_file(p, "{\"peft_type\": \"LORA\", \"r\": 2, \"lora_alpha\": 4, "
                           "\"target_modules\": [\"q_proj\", \"down_proj\"]}"))
        return -1;
    for (int t = 0; t < LORA_TEST_N; t++) {
        const char *mod = t == 0 && bad_module ? bad_module : lora_test_targets[t].module;
        snprintf(names[2 * t], sizeof names[0], "%s.lora_A.weight", mod);
        snprintf(names[2 * t + 1], sizeof names[0], "%s.lora_B.weight", mod);
        np[2 * t] = names[2 * t], np[2 * t + 1] = names[2 * t + 1];
        nd[2 * t] = nd[2 * t + 1] = 2;
        sh[2 * t][0] = LORA_TEST_RANK, sh[2 * t][1] = lora_test_targets[t].in;
        sh[2 * t + 1][0] = t == 0 && bad_rows ? bad_rows : lora_test_targets[t].out, sh[2 * t + 1][1] = LORA_TEST_RANK;
        data[2 * t] = a[t], data[2 * t + 1] = b[t];
    }
    snprintf(p, sizeof p, "%s/adapter_model.safetensors", dir);
    return write_safetensors_f32(p, 2 * LORA_TEST_N, np, nd, sh, data);
}
