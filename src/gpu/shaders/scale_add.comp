#version 450
// x[r][c] += g[c] * v[r][c] (LayerScale residuals), g = 1 without it; without v,
// x[r][c] += g[c] (a bias after a bias-free product).
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer GBuf { float G[]; };
layout(std430, binding = 2) readonly buffer VBuf { float V[]; };
layout(push_constant) uniform P { uint n, x_off, ldx, v_off, ldv, has_g, has_v; } p;
void main() {
    uint c = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
    if (c >= p.n) return;
    float g = p.has_g != 0u ? G[c] : 1.0;
    X[p.x_off + r * p.ldx + c] += p.has_v != 0u ? g * V[p.v_off + r * p.ldv + c] : g;
}
