#version 450
// Appends n tokens' rows (width floats each) to a cache at rows POS[pos_index] + t.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer SBuf { float S[]; };
layout(std430, binding = 1) buffer CBuf { float C[]; };
layout(std430, binding = 2) readonly buffer PBuf { uint POS[]; };
layout(push_constant) uniform P { uint width, src_off, src_stride, cache_stride, pos_index; } p;
void main() {
    uint i = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (i >= p.width) return;
    C[(POS[p.pos_index] + t) * p.cache_stride + i] = S[p.src_off + t * p.src_stride + i];
}
