// Workgroup reductions over WG threads (every thread calls them: they hold barriers).
shared float red_f[WG];
shared uint red_u[WG];

float wg_sum(float v) {
    uint lid = gl_LocalInvocationID.x;
    barrier();
    red_f[lid] = v;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) red_f[lid] += red_f[lid + s];
        barrier();
    }
    return red_f[0];
}

float wg_max(float v) {
    uint lid = gl_LocalInvocationID.x;
    barrier();
    red_f[lid] = v;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (lid < s) red_f[lid] = max(red_f[lid], red_f[lid + s]);
        barrier();
    }
    return red_f[0];
}
