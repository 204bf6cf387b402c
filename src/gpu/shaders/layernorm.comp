#version 450
#extension GL_GOOGLE_include_directive : require
// y = (x - mean) / sqrt(var + eps) * w + b per row (biased variance, two passes over
// the row as the CPU twin); one workgroup per row.
#define WG 64
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer WBuf { float Wt[]; };
layout(std430, binding = 2) readonly buffer BBuf { float Bs[]; };
layout(std430, binding = 3) buffer YBuf { float Y[]; };
layout(push_constant) uniform P { uint dim, x_off, y_off, has_w, has_b; float eps; } p;
#include "reduce.glsl"
void main() {
    uint xb = p.x_off + gl_WorkGroupID.x * p.dim, yb = p.y_off + gl_WorkGroupID.x * p.dim;
    float s = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.dim; i += WG) s += X[xb + i];
    float mean = wg_sum(s) / float(p.dim);
    float v = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.dim; i += WG) v += (X[xb + i] - mean) * (X[xb + i] - mean);
    float inv = 1.0 / sqrt(wg_sum(v) / float(p.dim) + p.eps);
    for (uint i = gl_LocalInvocationID.x; i < p.dim; i += WG)
        Y[yb + i] = (X[xb + i] - mean) * inv * (p.has_w != 0u ? Wt[i] : 1.0) + (p.has_b != 0u ? Bs[i] : 0.0);
}
