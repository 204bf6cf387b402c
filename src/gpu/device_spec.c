#include "gpu/device_spec.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    qtts_device_kind kind;
    int numbered; /* also "name:N" */
} device_names[] = {
    {"cpu", QTTS_DEVICE_CPU, 0},
    {"vulkan", QTTS_DEVICE_VULKAN, 1},
    {"auto", QTTS_DEVICE_AUTO, 0},
};

const char *qtts_device_names(void) { return "cpu|vulkan|vulkan:N|auto"; }

int qtts_device_parse(const char *spec, qtts_device_kind *kind, qtts_err *err) {
    if (!spec || !*spec) {
        *kind = QTTS_DEVICE_CPU;
        return 0;
    }
    for (size_t i = 0; i < sizeof device_names / sizeof *device_names; i++) {
        size_t n = strlen(device_names[i].name);
        if (strncmp(spec, device_names[i].name, n)) continue;
        const char *rest = spec + n;
        if (!*rest || (device_names[i].numbered && rest[0] == ':' && rest[1] >= '0' && rest[1] <= '9' &&
                       strspn(rest + 1, "0123456789") == strlen(rest + 1))) {
            *kind = device_names[i].kind;
            return 0;
        }
    }
    return qtts_fail_as(err, QTTS_ERR_INVALID, "unknown device \"%s\" (%s)", spec, qtts_device_names());
}
