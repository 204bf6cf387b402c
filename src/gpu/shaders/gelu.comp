#version 450
// Exact (erf) GELU in place over rows: x = 0.5 x (1 + erf(x / sqrt 2)). GLSL has no erf:
// Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7) with the sign restored.
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer XBuf { float X[]; };
layout(push_constant) uniform P { uint n, off, ld; } p;
float erf_as(float v) {
    float a = abs(v), t = 1.0 / (1.0 + 0.3275911 * a);
    float y = 1.0 - t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))) *
                        exp(-a * a);
    return v < 0.0 ? -y : y;
}
void main() {
    uint i = gl_GlobalInvocationID.x, r = gl_WorkGroupID.y;
    if (i >= p.n) return;
    uint at = p.off + r * p.ld + i;
    float x = X[at];
    X[at] = 0.5 * x * (1.0 + erf_as(x * 0.70710678118654752));
}
