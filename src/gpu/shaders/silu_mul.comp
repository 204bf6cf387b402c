#version 450
// out[r][i] = silu(gate[r][i]) * up[r][i]; gate and up are rows of one
// buffer at their own offsets and strides (a fused [gate | up] projection).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer FBuf { float F[]; };
layout(std430, binding = 1) buffer OBuf { float O[]; };
layout(push_constant) uniform P { uint n, gate_off, up_off, in_stride, out_off, out_stride; } p;
void main() {
    uint i = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
    if (i >= p.n) return;
    float g = F[p.gate_off + r * p.in_stride + i];
    O[p.out_off + r * p.out_stride + i] = g / (1.0 + exp(-g)) * F[p.up_off + r * p.in_stride + i];
}
