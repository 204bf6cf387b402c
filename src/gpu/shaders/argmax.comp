#version 450
// OUT[out_index] = the index of the largest z (the first on ties); one workgroup
// of WG threads (a power of two the device allows, set when the pipeline is made).
layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer ZBuf { float Z[]; };
layout(std430, binding = 1) buffer OBuf { int OUT[]; };
layout(push_constant) uniform P { uint n, z_off, out_index; } p;
shared float bv[WG];
shared uint bi[WG];
void main() {
    uint lid = gl_LocalInvocationID.x;
    float v = -1.0 / 0.0;
    uint best = 0xFFFFFFFFu;
    for (uint i = lid; i < p.n; i += WG) {
        float z = Z[p.z_off + i];
        if (best == 0xFFFFFFFFu || z > v) { v = z; best = i; }
    }
    bv[lid] = v;
    bi[lid] = best;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
            float ov = bv[lid + s];
            uint oi = bi[lid + s];
            if (oi != 0xFFFFFFFFu && (bi[lid] == 0xFFFFFFFFu || ov > bv[lid] || (ov == bv[lid] && oi < bi[lid]))) {
                bv[lid] = ov;
                bi[lid] = oi;
            }
        }
        barrier();
    }
    if (lid == 0) OUT[p.out_index] = int(bi[0] == 0xFFFFFFFFu ? 0u : bi[0]);
}
