void main() {
    uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (r >= p.rows) return; // the whole workgroup leaves together
    uint t = gl_WorkGroupID.z;
    float acc = row_dot(r * p.row_bytes, p.x_off + t * p.x_stride);
    float s = wg_sum(acc);
    if (gl_LocalInvocationID.x == 0) Y[p.y_off + t * p.y_stride + p.row0 + r] = s;
}
