/* What the Vulkan files share: the device object and its pipelines. */
#ifndef QTTS_GPU_VK_INTERNAL_H
#define QTTS_GPU_VK_INTERNAL_H

#include <stdatomic.h>
#include <vulkan/vulkan.h>

#include "gpu/gpu.h"
#include "gpu/gpu_ops.h"
#include "gpu/gpu_shaders.h"

enum {
    QTTS_GPU_PUSH_BYTES = 128, /* every device offers at least this much push-constant space */
    QTTS_GPU_MAX_BINDINGS = 8,
};

struct qtts_gpu {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    int validation_errors;
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties mem;
    uint32_t subgroup_size;
    uint32_t wide_wg; /* threads of the one-workgroup kernels (sample, argmax): vk_device.c */
    VkDevice dev;
    VkQueue queue;
    uint32_t queue_family;
    VkCommandPool cmd_pool;
    uint32_t host_mem_type; /* host-visible, coherent; device-local too where one is */
    size_t buffer_limit; /* the storage-buffer range, or a test's lower limit */
    uint64_t mem_used; /* bytes of the buffers allocated now */
    _Atomic uint64_t mem_peak; /* the most mem_used has been (read by other threads: statistics) */
    uint64_t mem_limit; /* the most they may take: the heap's size, or a lower limit */
    int lost; /* a submission reported a lost device or never finished: nothing more is submitted */
    int lose_next; /* test hook: the next submission reports a lost device */
    VkDescriptorSetLayout set_layout[QTTS_SHADER_COUNT];
    VkPipelineLayout pipe_layout[QTTS_SHADER_COUNT];
    VkPipeline pipe[QTTS_SHADER_COUNT];
    char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE + VK_MAX_DRIVER_NAME_SIZE + VK_MAX_DRIVER_INFO_SIZE + 8];
};

struct qtts_gpu_buf {
    VkBuffer buf;
    VkDeviceMemory mem;
    void *map;
    size_t size;
    uint64_t alloc; /* bytes of device memory (counted in mem_used) */
};

/* Records one dispatch of `shader` over groups (gx, gy, gz) with the buffers
 * bound in order and `push` as its push constants, after a barrier that
 * makes every earlier write visible. */
int qtts_vk_dispatch(qtts_gpu_seq *s, qtts_gpu_shader shader, qtts_gpu_buf *const *bufs, const void *push,
                     size_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz, qtts_err *err);
qtts_gpu *qtts_vk_seq_gpu(const qtts_gpu_seq *s);
/* Chunk c of a matrix: its buffer, first row, row count and the matrix's shape. */
qtts_gpu_buf *qtts_vk_mat_chunk(const qtts_gpu_mat *m, int c, int64_t *row0, int64_t *rows, qtts_dtype *type,
                                int64_t *cols, size_t *row_bytes);
const char *qtts_vk_result_name(VkResult r);

#endif
