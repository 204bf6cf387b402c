#version 450
// NeoX (split-half) rotary embedding in place. The angles come from a table
// the host fills with the CPU's own cos/sin per position (row pos: head_dim/2
// cosines then head_dim/2 sines), so no GPU transcendental enters; the
// position of token t is POS[pos_index] + t, read when the kernel runs (a
// recorded command buffer serves every step).
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer TBuf { float T[]; };
layout(std430, binding = 2) readonly buffer PBuf { uint POS[]; };
layout(push_constant) uniform P { uint n_heads, head_dim, x_off, stride, pos_index; } p;
void main() {
    uint half_dim = p.head_dim / 2u, i = gl_GlobalInvocationID.x;
    if (i >= half_dim * p.n_heads) return;
    uint h = i / half_dim, k = i % half_dim, t = gl_WorkGroupID.y;
    uint row = (POS[p.pos_index] + t) * p.head_dim;
    float c = T[row + k], s = T[row + half_dim + k];
    uint base = p.x_off + t * p.stride + h * p.head_dim;
    float a = X[base + k], b = X[base + k + half_dim];
    X[base + k] = a * c - b * s;
    X[base + k + half_dim] = b * c + a * s;
}
