/* The SPIR-V of every shader in gpu_shaders.h, compiled by glslc at build time. */
#include "gpu/gpu_shaders.h"

static const uint32_t spv_gemv_f32[] = {
#include "gemv_f32.spv.inc"
};
static const uint32_t spv_gemv_bf16[] = {
#include "gemv_bf16.spv.inc"
};
static const uint32_t spv_gemv_q8_0[] = {
#include "gemv_q8_0.spv.inc"
};
static const uint32_t spv_gemv_q4_k[] = {
#include "gemv_q4_k.spv.inc"
};
static const uint32_t spv_rmsnorm[] = {
#include "rmsnorm.spv.inc"
};
static const uint32_t spv_rope[] = {
#include "rope.spv.inc"
};
static const uint32_t spv_kv_store[] = {
#include "kv_store.spv.inc"
};
static const uint32_t spv_attention[] = {
#include "attention.spv.inc"
};
static const uint32_t spv_silu_mul[] = {
#include "silu_mul.spv.inc"
};
static const uint32_t spv_embed_add[] = {
#include "embed_add.spv.inc"
};
static const uint32_t spv_argmax[] = {
#include "argmax.spv.inc"
};
static const uint32_t spv_sample[] = {
#include "sample.spv.inc"
};

static const uint32_t spv_conv1d[] = {
#include "conv1d.spv.inc"
};
static const uint32_t spv_tconv[] = {
#include "tconv.spv.inc"
};
static const uint32_t spv_snake[] = {
#include "snake.spv.inc"
};
static const uint32_t spv_copy_rows[] = {
#include "copy_rows.spv.inc"
};
static const uint32_t spv_dwconv[] = {
#include "dwconv.spv.inc"
};
static const uint32_t spv_layernorm[] = {
#include "layernorm.spv.inc"
};
static const uint32_t spv_gelu[] = {
#include "gelu.spv.inc"
};
static const uint32_t spv_scale_add[] = {
#include "scale_add.spv.inc"
};

static const uint32_t spv_transpose[] = {
#include "transpose.spv.inc"
};
static const uint32_t spv_clamp[] = {
#include "clamp.spv.inc"
};
static const uint32_t spv_add_rows[] = {
#include "add_rows.spv.inc"
};
static const uint32_t spv_ring_gather[] = {
#include "ring_gather.spv.inc"
};

#define QTTS_GPU_SHADER_CODE(name, nb) [QTTS_SHADER_##name] = {#name, spv_##name, sizeof spv_##name, nb},
const qtts_gpu_shader_code qtts_gpu_shader_codes[QTTS_SHADER_COUNT] = {QTTS_GPU_SHADER_TABLE(QTTS_GPU_SHADER_CODE)};
