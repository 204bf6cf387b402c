#version 450
// x = min(max(x, lo), hi) in place over rows: the decoder's output samples to [-1, 1].
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer XBuf { float X[]; };
layout(push_constant) uniform P { uint n, off, ld; float lo, hi; } p;
void main() {
    uint i = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
    if (i >= p.n) return;
    uint at = p.off + r * p.ld + i;
    X[at] = min(max(X[at], p.lo), p.hi);
}
