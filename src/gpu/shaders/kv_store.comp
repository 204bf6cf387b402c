#version 450
#extension GL_GOOGLE_include_directive : require
// Appends n tokens' rows (width values each) to a cache at rows POS[pos_index] + t:
// f32 words, or (f16 != 0) f16 pairs, one word per invocation (width and
// cache_stride even, so a word never holds two rows).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer SBuf { float S[]; };
layout(std430, binding = 1) buffer CBuf { uint C[]; };
layout(std430, binding = 2) readonly buffer PBuf { uint POS[]; };
layout(push_constant) uniform P { uint width, src_off, src_stride, cache_stride, pos_index, f16; } p;
#include "kv_half.glsl"
void main() {
    uint i = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    uint src = p.src_off + t * p.src_stride, row = (POS[p.pos_index] + t) * p.cache_stride;
    if (p.f16 == 0u) {
        if (i < p.width) C[row + i] = floatBitsToUint(S[src + i]);
        return;
    }
    if (2u * i >= p.width) return;
    C[(row >> 1) + i] = kv_f16_bits(S[src + 2u * i]) | (kv_f16_bits(S[src + 2u * i + 1u]) << 16);
}
