#version 450
// dst[r][i] = src[r][i], i < n, each at its own offset and row stride: moves the conv
// histories (the last samples of a step's padded input, kept for the next step).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer SBuf { float S[]; };
layout(std430, binding = 1) buffer DBuf { float D[]; };
layout(push_constant) uniform P { uint n, s_off, lds, d_off, ldd; } p;
void main() {
    uint i = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
    if (i >= p.n) return;
    D[p.d_off + r * p.ldd + i] = S[p.s_off + r * p.lds + i];
}
