#version 450
// Y[y_off + r*y_stride + i] (+)= X[x_off + r*x_stride + i] for i < n, r < rows:
// residual adds, a bias broadcast over rows (x_stride 0) and row copies
// (accumulate 0) between the buffers of a recorded forward pass.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) buffer YBuf { float Y[]; };
layout(push_constant) uniform P { uint n, x_off, x_stride, y_off, y_stride, accumulate; } p;
void main() {
    uint i = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
    if (i >= p.n) return;
    float v = X[p.x_off + r * p.x_stride + i];
    uint y = p.y_off + r * p.y_stride + i;
    Y[y] = p.accumulate != 0u ? Y[y] + v : v;
}
