#version 450
// The talker's codebook-0 logits processors, in HF order, as
// qtts_talker_process_logits does on the CPU (mode 0): repetition penalty on
// the ids already generated (z/p if z > 0 else z*p), EOS -> -inf while fewer
// than min_new tokens were generated, ids [max(0, n-1024), n) except EOS ->
// -inf. Mode 1 marks the token just chosen (IDS[id_index]) as generated.
// Per-stream state at S[s_off]: step, penalty (float bits), min_new, unused,
// then one generated flag per id.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer ZBuf { float Z[]; };
layout(std430, binding = 1) buffer SBuf { uint S[]; };
layout(std430, binding = 2) readonly buffer IBuf { int IDS[]; };
layout(push_constant) uniform P { uint n, z_off, s_off, eos, id_index, mode; } p;
void main() {
    uint lid = gl_LocalInvocationID.x;
    if (p.mode == 1u) {
        int id = IDS[p.id_index];
        if (lid == 0u && id >= 0 && uint(id) < p.n) S[p.s_off + 4u + uint(id)] = 1u;
        return;
    }
    uint step = S[p.s_off], min_new = S[p.s_off + 2u];
    float pen = uintBitsToFloat(S[p.s_off + 1u]);
    uint suppress_from = p.n > 1024u ? p.n - 1024u : 0u;
    for (uint v = lid; v < p.n; v += 256u) {
        float z = Z[p.z_off + v];
        if (pen != 1.0 && S[p.s_off + 4u + v] != 0u) z = z > 0.0 ? z / pen : z * pen;
        if (v == p.eos && step < min_new) z = -1.0 / 0.0;
        if (v >= suppress_from && v != p.eos) z = -1.0 / 0.0;
        Z[p.z_off + v] = z;
    }
}
