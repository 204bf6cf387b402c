#version 450
// out[out_off + f*n + j] = RING[(slot * ring_rows + ((first + f) & (ring_rows - 1))) * n + j]
// for f < frames, j < n, with (slot, first) = AT[at_index], AT[at_index + 1]: consecutive
// rows of a per-slot ring that another sequence wrote (the LM's codes, read by the
// decoder), at a place the host writes before each submission, so one recorded
// sequence serves every step. A row outside the ring reads 0.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer RBuf { int RING[]; };
layout(std430, binding = 1) readonly buffer ABuf { uint AT[]; };
layout(std430, binding = 2) writeonly buffer OBuf { int O[]; };
layout(push_constant) uniform P { uint n, frames, ring_rows, at_index, out_off, ring_len; } p;
void main() {
    uint k = gl_GlobalInvocationID.x;
    if (k >= p.n * p.frames) return;
    uint f = k / p.n, j = k - f * p.n;
    uint row = AT[p.at_index] * p.ring_rows + ((AT[p.at_index + 1u] + f) & (p.ring_rows - 1u));
    uint i = row * p.n + j;
    O[p.out_off + k] = i < p.ring_len ? RING[i] : 0;
}
