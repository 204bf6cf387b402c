#version 450
#extension GL_GOOGLE_include_directive : require
// y = w * x / sqrt(mean(x^2) + eps) per row; one workgroup per row.
#define WG 64
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer WBuf { float Wt[]; };
layout(std430, binding = 2) buffer YBuf { float Y[]; };
layout(push_constant) uniform P { uint dim, x_off, y_off, has_w; float eps; } p;
#include "reduce.glsl"
void main() {
    uint xb = p.x_off + gl_WorkGroupID.x * p.dim, yb = p.y_off + gl_WorkGroupID.x * p.dim;
    float ss = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.dim; i += WG) ss += X[xb + i] * X[xb + i];
    float inv = 1.0 / sqrt(wg_sum(ss) / float(p.dim) + p.eps);
    for (uint i = gl_LocalInvocationID.x; i < p.dim; i += WG)
        Y[yb + i] = (p.has_w != 0u ? Wt[i] : 1.0) * (X[xb + i] * inv);
}
