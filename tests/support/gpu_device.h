/* The Vulkan device the gpu tests run on. */
#ifndef QTTS_TEST_GPU_DEVICE_H
#define QTTS_TEST_GPU_DEVICE_H

#include <stdint.h>

#include "gpu/gpu.h"
#include "gpu/gpu_ops.h"

/* Opens "vulkan" and prints its name. Without one: NULL, the reason printed
 * as SKIP (and *exit_code 77) or, where QTTS_REQUIRE_VULKAN=1 demands a
 * device (CI), as FAIL (and *exit_code 1). */
qtts_gpu *test_gpu_open(int *exit_code);

/* A device buffer of n floats holding x (left as allocated when x is NULL);
 * exits the test with the reason when it cannot be made. */
qtts_gpu_buf *test_gpu_upload(qtts_gpu *g, const float *x, int64_t n);

#endif
