#version 450
#extension GL_GOOGLE_include_directive : require
#include "gemv.glsl"
float row_dot(uint rb, uint xb) {
    float acc = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < p.cols; i += WG)
        acc += uintBitsToFloat(half_at(rb + 2u * i) << 16) * X[xb + i];
    return acc;
}
#include "gemv_main.glsl"
