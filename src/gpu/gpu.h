/* The Vulkan compute backend: device choice and the device listing. The
 * same functions exist in a build without Vulkan (gpu_none.c), where opening
 * a device fails with "built without Vulkan". Only the thread that opened a
 * device records or submits work on it. */
#ifndef QTTS_GPU_GPU_H
#define QTTS_GPU_GPU_H

#include <stddef.h>
#include <stdio.h>

#include "core/err.h"

typedef struct qtts_gpu qtts_gpu;

/* 1 when this build has the Vulkan backend. */
int qtts_gpu_built(void);

/* Writes one block per Vulkan device (index, name, type, driver, memory,
 * subgroup size, storage-buffer range, the features qtts uses). 0, or -1
 * with err (no loader, no device, built without Vulkan). */
int qtts_gpu_list_devices(FILE *out, qtts_err *err);

/* spec: "vulkan" (the first discrete GPU, else integrated, else any device)
 * or "vulkan:N" (the N-th device of the listing). With the environment
 * variable QTTS_VULKAN_VALIDATE=1 the Khronos validation layer is enabled
 * and its errors are counted (qtts_gpu_validation_errors). */
qtts_gpu *qtts_gpu_open(const char *spec, qtts_err *err);
void qtts_gpu_close(qtts_gpu *g);

/* "name (driver)" of the open device. */
const char *qtts_gpu_name(const qtts_gpu *g);
/* Messages of severity error the validation layer reported so far (0 without it). */
int qtts_gpu_validation_errors(const qtts_gpu *g);

#endif
