/* The Vulkan device the gpu tests run on. */
#ifndef QTTS_TEST_GPU_DEVICE_H
#define QTTS_TEST_GPU_DEVICE_H

#include "gpu/gpu.h"

/* Opens "vulkan" and prints its name. Without one: NULL, the reason printed
 * as SKIP (and *exit_code 77) or, where QTTS_REQUIRE_VULKAN=1 demands a
 * device (CI), as FAIL (and *exit_code 1). */
qtts_gpu *test_gpu_open(int *exit_code);

#endif
