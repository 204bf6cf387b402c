#version 450
#extension GL_GOOGLE_include_directive : require
// Causal attention with grouped KV heads and an optional sliding window over
// a KV cache of f32 or (f16 != 0) f16 values (kv_half.glsl): query t of this
// call is at key index POS[pos_index] + t.
// One workgroup per (head, query); keys in blocks of WG with an online
// softmax (running max and sum), as the CPU kernel does.
#define WG 64
#define MAX_HD 512
layout(local_size_x = WG) in;
layout(std430, binding = 0) readonly buffer QBuf { float Q[]; };
layout(std430, binding = 1) readonly buffer KBuf { uint K[]; };
layout(std430, binding = 2) readonly buffer VBuf { uint V[]; };
layout(std430, binding = 3) buffer OBuf { float O[]; };
layout(std430, binding = 4) readonly buffer PBuf { uint POS[]; };
layout(push_constant) uniform P {
    uint q_off, q_stride, kv_stride, out_off, out_stride;
    uint n_heads, n_kv_heads, head_dim, window, pos_index;
    float scale;
    uint f16;
} p;
#include "reduce.glsl"
#include "kv_half.glsl"
float k_at(uint i) { return p.f16 != 0u ? kv_f16_value((K[i >> 1] >> ((i & 1u) * 16u)) & 0xFFFFu) : uintBitsToFloat(K[i]); }
float v_at(uint i) { return p.f16 != 0u ? kv_f16_value((V[i >> 1] >> ((i & 1u) * 16u)) & 0xFFFFu) : uintBitsToFloat(V[i]); }
shared float qs[MAX_HD];
shared float es[WG];
void main() {
    uint lid = gl_LocalInvocationID.x, h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, hd = p.head_dim;
    uint qi = POS[p.pos_index] + t, kvh = h / (p.n_heads / p.n_kv_heads);
    uint first = (p.window > 0u && qi + 1u > p.window) ? qi + 1u - p.window : 0u;
    for (uint d = lid; d < hd; d += WG) qs[d] = Q[p.q_off + t * p.q_stride + h * hd + d];
    float o[MAX_HD / WG];
    for (uint k = 0; k < MAX_HD / WG; k++) o[k] = 0.0;
    float m = -1.0 / 0.0, l = 0.0;
    barrier();
    for (uint jb = first; jb <= qi; jb += WG) {
        uint j = jb + lid;
        float s = -1.0 / 0.0;
        if (j <= qi) {
            s = 0.0;
            uint kb = j * p.kv_stride + kvh * hd;
            for (uint d = 0; d < hd; d++) s += qs[d] * k_at(kb + d);
            s *= p.scale;
        }
        float nm = max(m, wg_max(s));
        float corr = exp(m - nm);
        float e = j <= qi ? exp(s - nm) : 0.0;
        l = l * corr + wg_sum(e);
        es[lid] = e;
        barrier();
        uint nb = min(uint(WG), qi - jb + 1u);
        for (uint k = 0; k * WG + lid < hd; k++) {
            uint d = k * WG + lid;
            float acc = o[k] * corr;
            for (uint jj = 0; jj < nb; jj++) acc += es[jj] * v_at((jb + jj) * p.kv_stride + kvh * hd + d);
            o[k] = acc;
        }
        m = nm;
        barrier();
    }
    float inv = l > 0.0 ? 1.0 / l : 0.0;
    for (uint k = 0; k * WG + lid < hd; k++) O[p.out_off + t * p.out_stride + h * hd + k * WG + lid] = o[k] * inv;
}
