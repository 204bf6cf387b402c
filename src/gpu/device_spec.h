/* Where the engine computes: the one table of device names ("cpu",
 * "vulkan", "vulkan:N", "auto") that the library and every command accept. */
#ifndef QTTS_GPU_DEVICE_SPEC_H
#define QTTS_GPU_DEVICE_SPEC_H

#include "core/err.h"

typedef enum {
    QTTS_DEVICE_CPU, /* "cpu" (also NULL or "") */
    QTTS_DEVICE_VULKAN, /* "vulkan" or "vulkan:N": that device or an error */
    QTTS_DEVICE_AUTO, /* "auto": a Vulkan device where one opens, else the CPU */
} qtts_device_kind;

/* 0, or -1 with err naming the accepted values. */
int qtts_device_parse(const char *spec, qtts_device_kind *kind, qtts_err *err);
/* "cpu|vulkan|vulkan:N|auto", for help texts and errors. */
const char *qtts_device_names(void);

#endif
