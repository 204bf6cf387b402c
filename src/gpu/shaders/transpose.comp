#version 450
// dst[i][r] = src[r][i] for r < rows, i < n, each at its own offset and row stride:
// between the decoder's time-major layers (rows of channels) and its channel-major ones
// (rows of samples).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer SBuf { float S[]; };
layout(std430, binding = 1) buffer DBuf { float D[]; };
layout(push_constant) uniform P { uint n, s_off, lds, d_off, ldd; } p;
void main() {
    uint i = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
    if (i >= p.n) return;
    D[p.d_off + i * p.ldd + r] = S[p.s_off + r * p.lds + i];
}
