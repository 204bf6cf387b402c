/* The device names (gpu/device_spec.h) the library and every command accept:
 * each accepted form maps to its kind; near misses are refused with the
 * list of accepted names. */
#include <string.h>

#include "gpu/device_spec.h"
#include "harness.h"

int main(void) {
    static const struct {
        const char *spec;
        int ok;
        qtts_device_kind kind;
    } cases[] = {
        {NULL, 1, QTTS_DEVICE_CPU},
        {"", 1, QTTS_DEVICE_CPU},
        {"cpu", 1, QTTS_DEVICE_CPU},
        {"vulkan", 1, QTTS_DEVICE_VULKAN},
        {"vulkan:0", 1, QTTS_DEVICE_VULKAN},
        {"vulkan:12", 1, QTTS_DEVICE_VULKAN},
        {"auto", 1, QTTS_DEVICE_AUTO},
        {"vulkan:", 0, 0},
        {"vulkan:-1", 0, 0},
        {"vulkan:1x", 0, 0},
        {"vulkan:x", 0, 0},
        {"Vulkan", 0, 0},
        {"cpu:0", 0, 0},
        {"auto:1", 0, 0},
        {"vulkan0", 0, 0},
        {" vulkan", 0, 0},
        {"vulkan ", 0, 0},
        {"cuda", 0, 0},
        {"gpu", 0, 0},
        {"cpux", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        qtts_device_kind kind = (qtts_device_kind)-1;
        qtts_err err = {0};
        int rc = qtts_device_parse(cases[i].spec, &kind, &err);
        const char *name = cases[i].spec ? cases[i].spec : "(null)";
        if (cases[i].ok)
            TEST_CHECK(rc == 0 && kind == cases[i].kind, "'%s': rc %d kind %d, want kind %d", name, rc, (int)kind,
                       (int)cases[i].kind);
        else
            TEST_CHECK(rc != 0 && err.status == QTTS_ERR_INVALID && strstr(err.msg, qtts_device_names()),
                       "'%s' must be refused naming %s, got rc %d '%s'", name, qtts_device_names(), rc, err.msg);
    }
    return test_finish("test_device_spec");
}
