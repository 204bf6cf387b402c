#version 450
// Causal transposed conv1d (kernel K, stride s, output trimmed to T*s samples), channel-major:
// output sample u = t*s + j of channel co sums the inputs t - h (h = 0..H, H = ceil(K/s) - 1)
// through tap j + h*s of W [c_in][c_out][K]. Row ci of x starts with its H history samples,
// so streaming needs no overlap-add tail. The sum runs in the CPU twin's order (ci, then
// input x[t + kk] for kk = 0..H, i.e. h = H - kk).
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer WBuf { float W[]; };
layout(std430, binding = 1) readonly buffer BBuf { float B[]; };
layout(std430, binding = 2) readonly buffer XBuf { float X[]; };
layout(std430, binding = 3) buffer YBuf { float Y[]; };
layout(push_constant) uniform P { uint c_in, c_out, K, s, H, T, x_off, ldx, y_off, ldy, has_bias; } p;
void main() {
    uint u = gl_GlobalInvocationID.x, co = gl_WorkGroupID.y;
    if (u >= p.T * p.s) return;
    uint t = u / p.s, j = u - t * p.s;
    float acc = 0.0;
    for (uint ci = 0u; ci < p.c_in; ci++) {
        uint wb = (ci * p.c_out + co) * p.K, xb = p.x_off + ci * p.ldx + t;
        for (uint kk = 0u; kk <= p.H; kk++) {
            uint tap = j + (p.H - kk) * p.s;
            if (tap < p.K) acc += W[wb + tap] * X[xb + kk];
        }
    }
    Y[p.y_off + co * p.ldy + u] = acc + (p.has_bias != 0u ? B[co] : 0.0);
}
