#version 450
// Causal dilated conv1d, channel-major: y[co][t] = sum_ci sum_kk W[co][ci][kk] x[ci][t + kk*dil]
// + bias[co] (+ add[co][t]), t < T; row ci of x starts with its (k-1)*dil history samples.
// One thread per output sample; the sum runs in the CPU twin's order (ci, then kk).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer WBuf { float W[]; };
layout(std430, binding = 1) readonly buffer BBuf { float B[]; };
layout(std430, binding = 2) readonly buffer XBuf { float X[]; };
layout(std430, binding = 3) buffer YBuf { float Y[]; };
layout(std430, binding = 4) buffer ABuf { float A[]; }; // may be Y itself (an in-place residual)
layout(push_constant) uniform P {
    uint c_in, k, dil, T, x_off, ldx, y_off, ldy, a_off, lda, has_bias, has_add;
} p;
void main() {
    uint t = gl_GlobalInvocationID.x, co = gl_WorkGroupID.y;
    if (t >= p.T) return;
    float acc = 0.0;
    uint wb = co * p.c_in * p.k;
    for (uint ci = 0u; ci < p.c_in; ci++) {
        uint xb = p.x_off + ci * p.ldx + t;
        for (uint kk = 0u; kk < p.k; kk++) acc += W[wb + ci * p.k + kk] * X[xb + kk * p.dil];
    }
    float r = acc + (p.has_bias != 0u ? B[co] : 0.0);
    if (p.has_add != 0u) r += A[p.a_off + co * p.lda + t];
    Y[p.y_off + co * p.ldy + t] = r;
}
