// Byte-addressed reads of a weight buffer bound as 32-bit words (W), so no
// 8/16-bit storage feature is needed and blocks may start at any byte.
uint byte_at(uint off) { return (W[off >> 2] >> ((off & 3u) * 8u)) & 0xFFu; }
int sbyte_at(uint off) { return bitfieldExtract(int(W[off >> 2]), int((off & 3u) * 8u), 8); }
// a 16-bit little-endian value at an even offset
uint half_at(uint off) { return (W[off >> 2] >> ((off & 2u) * 8u)) & 0xFFFFu; }
float f16_at(uint off) { return unpackHalf2x16(half_at(off)).x; }
