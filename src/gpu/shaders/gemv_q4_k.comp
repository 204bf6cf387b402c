#version 450
#extension GL_GOOGLE_include_directive : require
#include "gemv.glsl"
// Q4_K super-block (144 bytes): f16 d, f16 dmin, 12 bytes of 6-bit scale and
// min codes for 8 sub-blocks of 32, 128 bytes of nibbles. Sub-block s uses
// the low (s even) or high (s odd) nibbles of bytes 32*(s/2) .. +31;
// value = d * sc_s * q - dmin * m_s. One thread per sub-block.
float row_dot(uint rb, uint xb) {
    float acc = 0.0;
    uint units = (p.cols / 256u) * 8u;
    for (uint u = gl_LocalInvocationID.x; u < units; u += WG) {
        uint b = u >> 3, s = u & 7u, off = rb + 144u * b;
        uint dd = W[off >> 2]; // 144-byte blocks keep 4-byte alignment
        float d = unpackHalf2x16(dd).x, dmin = unpackHalf2x16(dd >> 16).x;
        uint sc, m;
        if (s < 4u) {
            sc = byte_at(off + 4u + s) & 63u;
            m = byte_at(off + 8u + s) & 63u;
        } else {
            uint q = byte_at(off + 8u + s);
            sc = (q & 0xFu) | ((byte_at(off + s) >> 6) << 4);
            m = (q >> 4) | ((byte_at(off + 4u + s) >> 6) << 4);
        }
        uint qw = (off + 16u + 32u * (s >> 1)) >> 2, sh = 4u * (s & 1u);
        uint xe = xb + 256u * b + 32u * s;
        float sq = 0.0, sx = 0.0;
        for (uint j = 0; j < 8u; j++) {
            uint w = W[qw + j];
            for (uint k = 0; k < 4u; k++) {
                float xv = X[xe + 4u * j + k];
                sq += float((w >> (8u * k + sh)) & 0xFu) * xv;
                sx += xv;
            }
        }
        acc += d * float(sc) * sq - dmin * float(m) * sx;
    }
    return acc;
}
#include "gemv_main.glsl"
