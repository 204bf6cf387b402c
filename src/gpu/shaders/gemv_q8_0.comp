#version 450
#extension GL_GOOGLE_include_directive : require
#include "gemv.glsl"
// Q8_0 block (34 bytes): f16 scale d, then 32 int8 codes; value = d * q.
float row_dot(uint rb, uint xb) {
    float acc = 0.0;
    uint nb = p.cols / 32u;
    for (uint b = gl_LocalInvocationID.x; b < nb; b += WG) {
        uint off = rb + 34u * b;
        float s = 0.0;
        for (uint j = 0; j < 32u; j++) s += float(sbyte_at(off + 2u + j)) * X[xb + 32u * b + j];
        acc += f16_at(off) * s;
    }
    return acc;
}
#include "gemv_main.glsl"
