#version 450
// Depthwise causal conv, time-major: y[t][c] = sum_kk wt[kk][c] xh[t + kk][c] + b[c];
// xh has k-1 history rows of C floats first. Summed in the CPU twin's order.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer WBuf { float W[]; };
layout(std430, binding = 2) readonly buffer BBuf { float B[]; };
layout(std430, binding = 3) buffer YBuf { float Y[]; };
layout(push_constant) uniform P { uint C, k, x_off, y_off, has_bias; } p;
void main() {
    uint c = gl_GlobalInvocationID.x, t = gl_WorkGroupID.y;
    if (c >= p.C) return;
    float acc = 0.0;
    for (uint kk = 0u; kk < p.k; kk++) acc += W[kk * p.C + c] * X[p.x_off + (t + kk) * p.C + c];
    Y[p.y_off + t * p.C + c] = acc + (p.has_bias != 0u ? B[c] : 0.0);
}
