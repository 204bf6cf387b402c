/* The one table of compute shaders: name (src/gpu/shaders/NAME.comp) and
 * how many storage buffers it binds. */
#ifndef QTTS_GPU_GPU_SHADERS_H
#define QTTS_GPU_GPU_SHADERS_H

#include <stddef.h>
#include <stdint.h>

#define QTTS_GPU_SHADER_TABLE(X)                                                                                       \
    X(gemv_f32, 3)                                                                                                     \
    X(gemv_bf16, 3)                                                                                                    \
    X(gemv_q8_0, 3)                                                                                                    \
    X(gemv_q4_k, 3)                                                                                                    \
    X(rmsnorm, 3)                                                                                                      \
    X(rope, 3)                                                                                                         \
    X(kv_store, 3)                                                                                                     \
    X(attention, 5)                                                                                                    \
    X(silu_mul, 2)                                                                                                     \
    X(embed_add, 3)                                                                                                    \
    X(argmax, 2)                                                                                                       \
    X(sample, 5)                                                                                                       \
    X(conv1d, 5)                                                                                                       \
    X(tconv, 4)                                                                                                        \
    X(snake, 4)                                                                                                        \
    X(copy_rows, 2)                                                                                                    \
    X(dwconv, 4)                                                                                                       \
    X(layernorm, 4)                                                                                                    \
    X(gelu, 1)                                                                                                         \
    X(scale_add, 3)                                                                                                    \
    X(transpose, 2)                                                                                                    \
    X(clamp, 1)                                                                                                        \
    X(add_rows, 2)                                                                                                     \
    X(ring_gather, 3)

typedef enum {
#define QTTS_GPU_SHADER_ENUM(name, nb) QTTS_SHADER_##name,
    QTTS_GPU_SHADER_TABLE(QTTS_GPU_SHADER_ENUM)
#undef QTTS_GPU_SHADER_ENUM
        QTTS_SHADER_COUNT
} qtts_gpu_shader;

typedef struct {
    const char *name;
    const uint32_t *words;
    size_t bytes;
    int bindings;
} qtts_gpu_shader_code;

extern const qtts_gpu_shader_code qtts_gpu_shader_codes[QTTS_SHADER_COUNT];

#endif
