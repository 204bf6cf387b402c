#version 450
// SnakeBeta over channel-major rows: y[c][t] = x[c][t] + ib[c] * sin^2(ea[c] * x[c][t]),
// ea = exp(alpha), ib = 1/(exp(beta) + eps) precomputed per channel. sin^2 as the CPU twin
// computes it (Cody-Waite reduction modulo pi/2, the Cephes polynomials on [-pi/4, pi/4]),
// not the device's sin, whose precision Vulkan leaves loose for large arguments.
// y may be x (in place): each thread reads its element before writing it.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer XBuf { float X[]; };
layout(std430, binding = 1) readonly buffer EBuf { float EA[]; };
layout(std430, binding = 2) readonly buffer IBuf { float IB[]; };
layout(std430, binding = 3) buffer YBuf { float Y[]; };
layout(push_constant) uniform P { uint T, x_off, ldx, y_off, ldy; } p;
precise float sin2(float v) {
    precise float q = roundEven(v * 0.636619772367581343);
    precise float r = ((v - q * 1.5703125) - q * 4.837512969970703125e-4) - q * 7.54978995489188216e-8;
    r = clamp(r, -0.785398163397448310, 0.785398163397448310);
    precise float z = r * r;
    precise float s = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
    precise float c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
    precise float odd = q - 2.0 * floor(q * 0.5);
    float m = odd != 0.0 ? c : s;
    return m * m;
}
void main() {
    uint t = gl_GlobalInvocationID.x, c = gl_WorkGroupID.y;
    if (t >= p.T) return;
    float x = X[p.x_off + c * p.ldx + t];
    Y[p.y_off + c * p.ldy + t] = x + IB[c] * sin2(EA[c] * x);
}
