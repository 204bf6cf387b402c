/* Zeroconf for builds without Avahi (macOS, minimal Linux installs): the
 * server says why nothing is announced and goes on (see wyoming.h). */
#include <stdio.h>

#include "server/wyoming.h"

wy_zeroconf *wy_zeroconf_start(const char *name, int port, int verbose, char *why, size_t why_size) {
    (void)name, (void)port, (void)verbose;
    snprintf(why, why_size, "this qtts was built without Avahi (install libavahi-client-dev and rebuild)");
    return NULL;
}

void wy_zeroconf_stop(wy_zeroconf *z) { (void)z; }
