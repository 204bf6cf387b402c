/* The engine's per-CPU calibration cache file (engine/calibration_cache.h)
 * on arbitrary bytes. Beyond "no crash": a file that reads is empty or
 * holds what it says, a failure always says why, and what was read writes
 * back and reads again to the same set. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/calibration_cache.h"

static char g_path[64], g_out[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_path[0]) {
        snprintf(g_path, sizeof g_path, "/tmp/qtts-fuzz-cal-%ld.txt", (long)getpid());
        snprintf(g_out, sizeof g_out, "/tmp/qtts-fuzz-cal-%ld-out.txt", (long)getpid());
    }
    FILE *f = fopen(g_path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    qtts_calibration_key k;
    qtts_calibration_key_here(&k, 2);
    snprintf(k.cpu, sizeof k.cpu, "x"); /* a short key the inputs can reach */
    qtts_calibration_set s;
    char why[256] = "";
    const int rc = qtts_calibration_cache_read(g_path, &k, &s, why, sizeof why);
    if (rc < 0 && !why[0]) abort();
    if (rc < 0 && (s.have_q8_0 || s.have_q4_k || s.have_conv)) abort();
    if (rc == 0) {
        qtts_err err = {0};
        qtts_calibration_set again;
        if (qtts_calibration_cache_write(g_out, &k, &s, &err) == 0) {
            if (qtts_calibration_cache_read(g_out, &k, &again, why, sizeof why) != 0) abort();
            if (again.have_q8_0 != s.have_q8_0 || again.have_q4_k != s.have_q4_k || again.have_conv != s.have_conv)
                abort();
            if (s.have_q8_0 && (again.q8_0.faster != s.q8_0.faster || again.q8_0.prefetch != s.q8_0.prefetch))
                abort();
        }
    }
    return 0;
}
