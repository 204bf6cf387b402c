// A KV cache bound as 32-bit words: f32 values, or f16 values two to a word
// (low half first), so no 16-bit storage feature is needed. The conversions
// are the CPU's bit for bit (tensor.c, ops.c): f32 -> f16 clamps to +-65504
// and rounds to nearest even, subnormals included; f16 -> f32 is exact.
uint kv_f16_bits(float x) {
    uint u = floatBitsToUint(x), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00u;
    if (a > 0x477fe000u) a = 0x477fe000u; // 65504
    if (a < 0x38800000u) return sign | uint(roundEven(uintBitsToFloat(a) * 16777216.0));
    uint h = (((a >> 23) - 112u) << 10) | ((a & 0x7fffffu) >> 13), rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h++;
    return sign | h;
}
float kv_f16_value(uint h) {
    uint sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 0u) return uintBitsToFloat(sign | floatBitsToUint(float(m) * 5.9604644775390625e-8));
    if (e == 31u) return uintBitsToFloat(sign | 0x7f800000u | (m << 13));
    return uintBitsToFloat(sign | ((e + 112u) << 23) | (m << 13));
}
