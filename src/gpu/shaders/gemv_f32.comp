#version 450
#extension GL_GOOGLE_include_directive : require
#include "gemv.glsl"
float row_dot(uint rb, uint xb) {
    float acc = 0.0;
    uint w0 = rb >> 2;
    for (uint i = gl_LocalInvocationID.x; i < p.cols; i += WG) acc += uintBitsToFloat(W[w0 + i]) * X[xb + i];
    return acc;
}
#include "gemv_main.glsl"
