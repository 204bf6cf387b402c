#version 450
#extension GL_GOOGLE_include_directive : require
// Token sampling on the device, the rule of the CPU sampler (src/model/sampler.c):
// for the talker, repetition penalty over the stream's history, EOS masked while
// too few tokens, the top 1024 ids (but EOS) suppressed; then greedy argmax, or
// temperature, top-k (ties kept), top-p (ties kept) and the inverse CDF in index
// order at the Philox4x32-10 draw (seed, stream, step, sub). One workgroup per row;
// settings, RNG counter and history are read from device buffers (a recorded
// sequence serves every frame); the logits are overwritten with the processed ones.
// Thread t owns the contiguous elements [t*chunk, (t+1)*chunk): no thread reads
// another's, so only shared memory crosses threads.
// WG threads: a power of two the device allows (at most 256), set when the
// pipeline is made (vk_device.c); the ids do not depend on it, the float sums'
// order does (within the rounding the CPU comparison allows).
layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer ZBuf { float Z[]; };
layout(std430, binding = 1) buffer SBuf { uint S[]; };    // per slot: SLOT_WORDS words (vk_sample.c)
layout(std430, binding = 2) buffer HBuf { uint SEEN[]; }; // per slot: seen_words bits of talker ids
layout(std430, binding = 3) buffer OBuf { int OUT[]; };
layout(std430, binding = 4) buffer RBuf { int RING[]; }; // per slot ring_rows rows of ring_width ids
layout(push_constant) uniform P {
    uint n, z_off, z_stride, slot0, seen_words, out_off, out_stride, sub, flags, ring_rows, ring_width;
} p;
#include "reduce.glsl"

// the slot layout, as vk_sample.c writes it
const uint SLOT_WORDS = 32u, W_SEED = 0u, W_STREAM = 2u, W_STEP = 4u, W_DRAW = 5u, W_CFG_TALKER = 8u,
           W_CFG_CP = 16u;
const uint C_DO_SAMPLE = 0u, C_TEMPERATURE = 1u, C_TOP_K = 2u, C_TOP_P = 3u, C_PENALTY = 4u, C_MIN_NEW = 5u,
           C_EOS = 6u;
const uint F_TALKER = 1u, F_ADVANCE = 2u;
const uint SUPPRESSED = 1024u; // the talker's top ids that are not audio codes (qtts_talker_process_logits)
const float NEG_INF = -1.0 / 0.0;
const uint NONE = 0xFFFFFFFFu;

shared uint hist[256];
shared uint sh_word[2];
shared float pre[WG + 1];

// floats to unsigned keys in the same order (-0 as +0)
uint fkey(float f) {
    uint u = f == 0.0 ? 0u : floatBitsToUint(f);
    return (u & 0x80000000u) != 0u ? ~u : u | 0x80000000u;
}
float keyf(uint k) { return uintBitsToFloat((k & 0x80000000u) != 0u ? k & 0x7FFFFFFFu : ~k); }

uvec4 philox(uvec4 c, uvec2 k) {
    for (int r = 0; r < 10; r++) {
        uint hi0, lo0, hi1, lo1;
        umulExtended(0xD2511F53u, c.x, hi0, lo0);
        umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
        c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
        k += uvec2(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

// the first maximum of z (the lowest index on ties), over the whole row
uint wg_argmax(uint zb, uint b, uint e) {
    uint lid = gl_LocalInvocationID.x;
    float v = NEG_INF;
    uint best = NONE;
    for (uint i = b; i < e; i++) {
        float z = Z[zb + i];
        if (best == NONE || z > v) { v = z; best = i; }
    }
    barrier();
    red_f[lid] = v;
    red_u[lid] = best;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) {
            float ov = red_f[lid + s];
            uint oi = red_u[lid + s];
            if (oi != NONE && (red_u[lid] == NONE || ov > red_f[lid] || (ov == red_f[lid] && oi < red_u[lid]))) {
                red_f[lid] = ov;
                red_u[lid] = oi;
            }
        }
        barrier();
    }
    return red_u[0] == NONE ? 0u : red_u[0];
}

uint wg_max_u(uint v) {
    uint lid = gl_LocalInvocationID.x;
    barrier();
    red_u[lid] = v;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) red_u[lid] = max(red_u[lid], red_u[lid + s]);
        barrier();
    }
    return red_u[0];
}

float own_max(uint zb, uint b, uint e) {
    float m = NEG_INF;
    for (uint i = b; i < e; i++) m = max(m, Z[zb + i]);
    return wg_max(m);
}

float weight(float z, float mx) { return z == NEG_INF ? 0.0 : exp(z - mx); }

void main() {
    const uint lid = gl_LocalInvocationID.x, row = gl_WorkGroupID.x;
    const uint slot = p.slot0 + row, sb = slot * SLOT_WORDS, zb = p.z_off + row * p.z_stride;
    const bool talker = (p.flags & F_TALKER) != 0u;
    const uint cb = sb + (talker ? W_CFG_TALKER : W_CFG_CP);
    const uint chunk = (p.n + WG - 1) / WG, b = min(lid * chunk, p.n), e = min(b + chunk, p.n);
    const bool do_sample = S[cb + C_DO_SAMPLE] != 0u;
    const uint step = S[sb + W_STEP];

    if (talker) {
        float pen = uintBitsToFloat(S[cb + C_PENALTY]);
        uint min_new = S[cb + C_MIN_NEW], eos = S[cb + C_EOS]; // eos: NONE when there is none
        uint sup = p.n > SUPPRESSED ? p.n - SUPPRESSED : 0u;
        for (uint i = b; i < e; i++) {
            precise float z = Z[zb + i];
            if (pen != 1.0 && ((SEEN[slot * p.seen_words + i / 32u] >> (i & 31u)) & 1u) != 0u)
                z = z > 0.0 ? z / pen : z * pen;
            if ((step < min_new && i == eos) || (i >= sup && i != eos)) z = NEG_INF;
            Z[zb + i] = z;
        }
    }

    uint tok = NONE;
    uvec4 draw = uvec4(0u);
    if (!do_sample) {
        tok = wg_argmax(zb, b, e);
    } else {
        draw = philox(uvec4(p.sub, step, S[sb + W_STREAM], S[sb + W_STREAM + 1u]),
                      uvec2(S[sb + W_SEED], S[sb + W_SEED + 1u]));
        float temp = uintBitsToFloat(S[cb + C_TEMPERATURE]), top_p = uintBitsToFloat(S[cb + C_TOP_P]);
        uint top_k = S[cb + C_TOP_K];
        if (temp != 1.0)
            for (uint i = b; i < e; i++) {
                precise float z = Z[zb + i] / temp;
                Z[zb + i] = z;
            }
        if (top_k > 0u && top_k < p.n) {
            // radix select of the k-th largest key, 8 bits a pass from the top
            uint prefix = 0u, mask = 0u, k = top_k;
            for (int shift = 24; shift >= 0; shift -= 8) {
                barrier();
                for (uint i = lid; i < 256u; i += WG) hist[i] = 0u;
                barrier();
                for (uint i = b; i < e; i++) {
                    uint key = fkey(Z[zb + i]);
                    if ((key & mask) == prefix) atomicAdd(hist[(key >> uint(shift)) & 255u], 1u);
                }
                barrier();
                if (lid == 0u) {
                    uint d = 255u, acc = 0u;
                    while (d > 0u && acc + hist[d] < k) acc += hist[d--];
                    sh_word[0] = prefix | (d << uint(shift));
                    sh_word[1] = k - acc;
                }
                barrier();
                prefix = sh_word[0];
                k = sh_word[1];
                mask |= 255u << uint(shift);
            }
            float kth = keyf(prefix);
            for (uint i = b; i < e; i++)
                if (Z[zb + i] < kth) Z[zb + i] = NEG_INF;
        }
        if (top_p < 1.0) {
            float mx = own_max(zb, b, e);
            if (mx != NEG_INF) {
                float s = 0.0;
                for (uint i = b; i < e; i++) s += weight(Z[zb + i], mx);
                float cut = (1.0 - top_p) * wg_sum(s);
                // the smallest value whose mass with every smaller one exceeds the cut
                // (the CPU's ascending sort and running sum): bisection over the keys
                uint lo = 0u, hi = fkey(mx);
                while (lo < hi) {
                    uint mid = lo + (hi - lo) / 2u;
                    float c = 0.0;
                    for (uint i = b; i < e; i++) {
                        float z = Z[zb + i];
                        if (fkey(z) <= mid) c += weight(z, mx);
                    }
                    if (wg_sum(c) > cut) hi = mid;
                    else lo = mid + 1u;
                }
                float thr = keyf(lo);
                for (uint i = b; i < e; i++)
                    if (Z[zb + i] < thr) Z[zb + i] = NEG_INF;
            }
        }
        float mx = own_max(zb, b, e);
        if (mx == NEG_INF) {
            tok = wg_argmax(zb, b, e);
        } else {
            // the CDF in index order: each thread's sum, their running sums in thread order
            float cs = 0.0;
            uint last = NONE;
            for (uint i = b; i < e; i++) {
                float w = weight(Z[zb + i], mx);
                if (w > 0.0) {
                    cs += w;
                    last = i;
                }
            }
            barrier();
            red_f[lid] = cs;
            barrier();
            if (lid == 0u) {
                pre[0] = 0.0;
                for (uint t = 0u; t < WG; t++) pre[t + 1u] = pre[t] + red_f[t];
                sh_word[0] = NONE;
            }
            barrier();
            // u = (o0 * 2^21 + (o1 >> 11)) / 2^53 as in qtts_philox_uniform, split in two exact floats
            float u_hi = float(draw.x >> 8) * (1.0 / 16777216.0);
            float u_lo = float(((draw.x & 255u) << 21) | (draw.y >> 11)) * (1.0 / 9007199254740992.0);
            float total = pre[WG], target = u_hi * total + u_lo * total;
            if (pre[lid] <= target && pre[lid + 1u] > target) {
                float c = 0.0;
                uint pick = last;
                for (uint i = b; i < e; i++) {
                    float w = weight(Z[zb + i], mx);
                    if (w <= 0.0) continue;
                    c += w;
                    if (pre[lid] + c > target) {
                        pick = i;
                        break;
                    }
                }
                sh_word[0] = pick;
            }
            barrier();
            tok = sh_word[0];
            uint last_all = wg_max_u(last == NONE ? 0u : last + 1u);
            if (tok == NONE) tok = last_all - 1u; // rounding at the very top: the last token left
        }
    }
    barrier(); // every thread has read the step
    if (lid == 0u) {
        OUT[p.out_off + row * p.out_stride] = int(tok);
        // the ring keeps the last ring_rows steps' ids (a frame's codes) for a later sequence to read
        if (p.ring_rows != 0u)
            RING[(slot * p.ring_rows + (step & (p.ring_rows - 1u))) * p.ring_width + p.sub] = int(tok);
        if (do_sample) {
            S[sb + W_DRAW] = draw.x;
            S[sb + W_DRAW + 1u] = draw.y;
        }
        if (talker && tok < p.n) SEEN[slot * p.seen_words + tok / 32u] |= 1u << (tok & 31u);
        if ((p.flags & F_ADVANCE) != 0u) S[sb + W_STEP] = step + 1u;
    }
}
