/* The backend's entry points in a build without Vulkan (QTTS_VULKAN=OFF). */
#include "gpu/gpu.h"

int qtts_gpu_built(void) { return 0; }

int qtts_gpu_list_devices(FILE *out, qtts_err *err) {
    (void)out;
    return qtts_fail_as(err, QTTS_ERR_INVALID, "this qtts was built without Vulkan (cmake -DQTTS_VULKAN=ON)");
}

qtts_gpu *qtts_gpu_open(const char *spec, qtts_err *err) {
    qtts_fail_as(err, QTTS_ERR_INVALID, "device '%s': this qtts was built without Vulkan (cmake -DQTTS_VULKAN=ON)",
                 spec ? spec : "");
    return NULL;
}

void qtts_gpu_close(qtts_gpu *g) { (void)g; }
const char *qtts_gpu_name(const qtts_gpu *g) {
    (void)g;
    return "";
}
int qtts_gpu_validation_errors(const qtts_gpu *g) {
    (void)g;
    return 0;
}
