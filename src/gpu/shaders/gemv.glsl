// y[t][row0 + r] = dot(row r of this weight chunk, x[t]) for every token t:
// one workgroup per (row, token); each type file defines row_dot(). Rows
// beyond 65535 workgroups continue in gl_WorkGroupID.y.
#define WG 64
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer WBuf { uint W[]; };
layout(std430, binding = 1) readonly buffer XBuf { float X[]; };
layout(std430, binding = 2) buffer YBuf { float Y[]; };
layout(push_constant) uniform P {
    uint rows, cols, row_bytes, row0;
    uint x_off, x_stride, y_off, y_stride;
} p;
#include "reduce.glsl"
#include "bytes.glsl"
