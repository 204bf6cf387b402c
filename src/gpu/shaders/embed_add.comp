#version 450
// out[d] (+)= table[row_base + IDS[id_index]][d]: one embedding row looked up
// by a token id that is already on the device (a sampled code), summed into
// the next input. Ids outside 0..rows-1 add nothing.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer TBuf { float T[]; };
layout(std430, binding = 1) readonly buffer IBuf { int IDS[]; };
layout(std430, binding = 2) buffer OBuf { float O[]; };
layout(push_constant) uniform P { uint dim, row_base, rows, id_index, out_off, accumulate; } p;
void main() {
    uint d = gl_GlobalInvocationID.x;
    if (d >= p.dim) return;
    int id = IDS[p.id_index];
    float v = (id >= 0 && uint(id) < p.rows) ? T[(p.row_base + uint(id)) * p.dim + d] : 0.0;
    O[p.out_off + d] = p.accumulate != 0u ? O[p.out_off + d] + v : v;
}
