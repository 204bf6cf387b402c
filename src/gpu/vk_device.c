/* Vulkan instance, device choice, queue and pipelines, and the listing
 * behind `qtts info --devices`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/vk_internal.h"

const char *qtts_vk_result_name(VkResult r) {
    switch (r) {
    case VK_SUCCESS: return "success";
    case VK_TIMEOUT: return "timeout";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "out of device memory";
    case VK_ERROR_INITIALIZATION_FAILED: return "initialization failed";
    case VK_ERROR_DEVICE_LOST: return "device lost";
    case VK_ERROR_LAYER_NOT_PRESENT: return "layer not present";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "extension not present";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "no compatible Vulkan driver";
    default: return "Vulkan error";
    }
}

int qtts_gpu_built(void) { return 1; }

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                    VkDebugUtilsMessageTypeFlagsEXT types,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)types;
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        qtts_gpu *g = user;
        g->validation_errors++;
        fprintf(stderr, "vulkan validation: %s\n", data && data->pMessage ? data->pMessage : "(no message)");
    }
    return VK_FALSE;
}

static int want_validation(void) {
    const char *v = getenv("QTTS_VULKAN_VALIDATE");
    return v && !strcmp(v, "1");
}

/* The instance; with validation, the layer and a messenger counting into g. */
static int make_instance(qtts_gpu *g, int validate, qtts_err *err) {
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "qtts", .apiVersion = VK_API_VERSION_1_1};
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkDebugUtilsMessengerCreateInfoEXT msg = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
                                              .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                                                                 VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
                                              .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                                                             VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
                                              .pfnUserCallback = on_validation,
                                              .pUserData = g};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    if (validate) {
        ci.enabledLayerCount = 1;
        ci.ppEnabledLayerNames = layers;
        ci.enabledExtensionCount = 1;
        ci.ppEnabledExtensionNames = exts;
        ci.pNext = &msg;
    }
    VkResult r = vkCreateInstance(&ci, NULL, &g->instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        return qtts_fail_as(err, QTTS_ERR_INVALID,
                            "no Vulkan driver found (a GPU driver, or Mesa's lavapipe from mesa-vulkan-drivers)");
    if (r != VK_SUCCESS)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "no Vulkan instance (%s)%s", qtts_vk_result_name(r),
                            validate && r == VK_ERROR_LAYER_NOT_PRESENT
                                ? ": is the validation layer installed (vulkan-validationlayers)?"
                                : "");
    if (validate) {
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(g->instance, "vkCreateDebugUtilsMessengerEXT");
        if (!create || create(g->instance, &msg, NULL, &g->messenger) != VK_SUCCESS)
            return qtts_fail(err, "the Vulkan validation messenger could not be created");
    }
    return 0;
}

/* The physical devices, malloc'ed; *n is their count. */
static VkPhysicalDevice *physical_devices(VkInstance inst, uint32_t *n, qtts_err *err) {
    *n = 0;
    VkResult r = vkEnumeratePhysicalDevices(inst, n, NULL);
    if (r != VK_SUCCESS) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "no Vulkan devices (%s)", qtts_vk_result_name(r));
        return NULL;
    }
    if (*n == 0) {
        qtts_fail_as(err, QTTS_ERR_INVALID,
                     "no Vulkan device found (a GPU driver, or Mesa's lavapipe from mesa-vulkan-drivers)");
        return NULL;
    }
    VkPhysicalDevice *d = qtts_calloc(*n, sizeof *d, err);
    if (d && vkEnumeratePhysicalDevices(inst, n, d) != VK_SUCCESS) {
        free(d);
        qtts_fail(err, "Vulkan devices could not be listed");
        return NULL;
    }
    return d;
}

static const char *type_name(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
    }
}

typedef struct {
    VkPhysicalDeviceProperties props;
    char driver[VK_MAX_DRIVER_NAME_SIZE + VK_MAX_DRIVER_INFO_SIZE + 4];
    uint32_t subgroup;
    uint64_t device_local;
    int compute_queue; /* a queue family with compute, or -1 */
} device_facts;

static void facts(VkPhysicalDevice pd, device_facts *f) {
    memset(f, 0, sizeof *f);
    VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties sub = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sub};
    vkGetPhysicalDeviceProperties(pd, &f->props);
    if (f->props.apiVersion >= VK_API_VERSION_1_2) sub.pNext = &drv;
    vkGetPhysicalDeviceProperties2(pd, &p2);
    f->subgroup = sub.subgroupSize;
    if (drv.driverName[0]) snprintf(f->driver, sizeof f->driver, "%s %s", drv.driverName, drv.driverInfo);
    else snprintf(f->driver, sizeof f->driver, "driver version 0x%x", f->props.driverVersion);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    for (uint32_t i = 0; i < mp.memoryHeapCount; i++)
        if (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) f->device_local += mp.memoryHeaps[i].size;
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties qf[16];
    if (nq > 16) nq = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
    f->compute_queue = -1;
    for (uint32_t i = 0; i < nq && f->compute_queue < 0; i++)
        if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) f->compute_queue = (int)i;
}

/* Threads of the kernels that run one workgroup per row (sample, argmax):
 * 256, or the largest power of two (their reductions halve) the device's
 * limits allow, since Vulkan only guarantees 128 invocations a workgroup.
 * The 64-thread kernels fit every device. The reductions use shared memory,
 * not subgroup operations, so the subgroup size does not constrain it.
 * QTTS_VULKAN_WG lowers it (tests: the same kernels at another width). */
static uint32_t wide_workgroup(const VkPhysicalDeviceLimits *l) {
    uint32_t cap = 256;
    if (l->maxComputeWorkGroupInvocations < cap) cap = l->maxComputeWorkGroupInvocations;
    if (l->maxComputeWorkGroupSize[0] < cap) cap = l->maxComputeWorkGroupSize[0];
    const char *env = getenv("QTTS_VULKAN_WG");
    long want = env ? strtol(env, NULL, 10) : 0;
    if (want >= 1 && (uint32_t)want < cap) cap = (uint32_t)want;
    uint32_t w = 1;
    while (w * 2 <= cap) w *= 2;
    return w;
}

int qtts_gpu_list_devices(FILE *out, qtts_err *err) {
    qtts_gpu tmp = {0};
    if (make_instance(&tmp, 0, err)) return -1;
    uint32_t n;
    VkPhysicalDevice *pd = physical_devices(tmp.instance, &n, err);
    if (!pd) {
        vkDestroyInstance(tmp.instance, NULL);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) {
        device_facts f;
        facts(pd[i], &f);
        fprintf(out, "vulkan:%u  %s\n", i, f.props.deviceName);
        fprintf(out, "  type:            %s\n", type_name(f.props.deviceType));
        fprintf(out, "  driver:          %s\n", f.driver);
        fprintf(out, "  Vulkan:          %u.%u.%u\n", VK_API_VERSION_MAJOR(f.props.apiVersion),
                VK_API_VERSION_MINOR(f.props.apiVersion), VK_API_VERSION_PATCH(f.props.apiVersion));
        fprintf(out, "  memory:          %.0f MiB device-local\n", (double)f.device_local / (1024.0 * 1024.0));
        fprintf(out, "  subgroup size:   %u\n", f.subgroup);
        fprintf(out, "  workgroups:      64 threads; sample and argmax %u (max %u a workgroup)\n",
                wide_workgroup(&f.props.limits), f.props.limits.maxComputeWorkGroupInvocations);
        fprintf(out, "  storage buffer:  %.0f MiB max range (larger weights are split)\n",
                (double)f.props.limits.maxStorageBufferRange / (1024.0 * 1024.0));
        fprintf(out, "  compute queue:   %s\n", f.compute_queue >= 0 ? "yes" : "none (unusable)");
        fprintf(out, "  features used:   Vulkan 1.1 compute, 32-bit storage buffers, push constants "
                     "(no 8/16-bit storage, no float64, no extensions)\n");
    }
    free(pd);
    vkDestroyInstance(tmp.instance, NULL);
    return 0;
}

/* "vulkan" -> -1 (choose), "vulkan:N" -> N; -2 for anything else. */
static long parse_spec(const char *spec) {
    if (!spec || strncmp(spec, "vulkan", 6)) return -2;
    if (!spec[6]) return -1;
    if (spec[6] != ':' || !spec[7]) return -2;
    char *end;
    long v = strtol(spec + 7, &end, 10);
    return *end || v < 0 || v > 1000 ? -2 : v;
}

static int pick_device(qtts_gpu *g, long want, qtts_err *err) {
    uint32_t n;
    VkPhysicalDevice *pd = physical_devices(g->instance, &n, err);
    if (!pd) return -1;
    long best = -1;
    int best_rank = -1;
    for (uint32_t i = 0; i < n; i++) {
        device_facts f;
        facts(pd[i], &f);
        if (f.compute_queue < 0) continue;
        int rank = f.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU     ? 3
                   : f.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 2
                                                                                  : 1;
        if ((want < 0 && rank > best_rank) || want == (long)i) {
            best = i;
            best_rank = rank;
        }
    }
    if (want >= (long)n) {
        free(pd);
        return qtts_fail_as(err, QTTS_ERR_INVALID,
                            "no such device: this machine has %u Vulkan device%s (qtts info --devices)", n,
                            n == 1 ? "" : "s");
    }
    if (best < 0) {
        free(pd);
        return qtts_fail_as(err, QTTS_ERR_INVALID, "no Vulkan device with a compute queue");
    }
    g->phys = pd[best];
    free(pd);
    device_facts f;
    facts(g->phys, &f);
    g->props = f.props;
    g->subgroup_size = f.subgroup;
    g->wide_wg = wide_workgroup(&f.props.limits);
    g->queue_family = (uint32_t)f.compute_queue;
    snprintf(g->name, sizeof g->name, "%s (%s)", f.props.deviceName, f.driver);
    vkGetPhysicalDeviceMemoryProperties(g->phys, &g->mem);
    return 0;
}

static int pick_memory(qtts_gpu *g, qtts_err *err) {
    const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int best = -1;
    for (uint32_t i = 0; i < g->mem.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = g->mem.memoryTypes[i].propertyFlags;
        if ((f & host) != host) continue;
        if (best < 0 || ((f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) &&
                         !(g->mem.memoryTypes[best].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)))
            best = (int)i;
    }
    if (best < 0) return qtts_fail(err, "the Vulkan device has no host-visible coherent memory");
    g->host_mem_type = (uint32_t)best;
    g->mem_limit = g->mem.memoryHeaps[g->mem.memoryTypes[best].heapIndex].size;
    return 0;
}

static int make_pipelines(qtts_gpu *g, qtts_err *err) {
    /* specialization constant 0 is the workgroup width of the shaders that
     * declare it (sample, argmax); the others do not, and Vulkan ignores it there */
    const VkSpecializationMapEntry wg_entry = {.constantID = 0, .offset = 0, .size = sizeof(uint32_t)};
    const VkSpecializationInfo wg_spec = {
        .mapEntryCount = 1, .pMapEntries = &wg_entry, .dataSize = sizeof(uint32_t), .pData = &g->wide_wg};
    for (int s = 0; s < QTTS_SHADER_COUNT; s++) {
        const qtts_gpu_shader_code *c = &qtts_gpu_shader_codes[s];
        VkDescriptorSetLayoutBinding b[QTTS_GPU_MAX_BINDINGS];
        for (int i = 0; i < c->bindings; i++)
            b[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i,
                                                  .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                  .descriptorCount = 1,
                                                  .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
        VkDescriptorSetLayoutCreateInfo dl = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                              .bindingCount = (uint32_t)c->bindings,
                                              .pBindings = b};
        VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = QTTS_GPU_PUSH_BYTES};
        VkShaderModuleCreateInfo mi = {
            .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = c->bytes, .pCode = c->words};
        VkShaderModule mod;
        if (vkCreateDescriptorSetLayout(g->dev, &dl, NULL, &g->set_layout[s]) != VK_SUCCESS)
            return qtts_fail(err, "Vulkan: descriptor set layout of %s", c->name);
        VkPipelineLayoutCreateInfo pl = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                         .setLayoutCount = 1,
                                         .pSetLayouts = &g->set_layout[s],
                                         .pushConstantRangeCount = 1,
                                         .pPushConstantRanges = &pr};
        if (vkCreatePipelineLayout(g->dev, &pl, NULL, &g->pipe_layout[s]) != VK_SUCCESS)
            return qtts_fail(err, "Vulkan: pipeline layout of %s", c->name);
        if (vkCreateShaderModule(g->dev, &mi, NULL, &mod) != VK_SUCCESS)
            return qtts_fail(err, "Vulkan: shader module %s", c->name);
        VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                          .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                                    .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                                                    .module = mod,
                                                    .pName = "main",
                                                    .pSpecializationInfo = &wg_spec},
                                          .layout = g->pipe_layout[s]};
        VkResult r = vkCreateComputePipelines(g->dev, VK_NULL_HANDLE, 1, &ci, NULL, &g->pipe[s]);
        vkDestroyShaderModule(g->dev, mod, NULL);
        if (r != VK_SUCCESS) return qtts_fail(err, "Vulkan: pipeline %s (%s)", c->name, qtts_vk_result_name(r));
    }
    return 0;
}

qtts_gpu *qtts_gpu_open(const char *spec, qtts_err *err) {
    long want = parse_spec(spec);
    if (want == -2) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "unknown device '%s' (vulkan or vulkan:N)", spec ? spec : "");
        return NULL;
    }
    qtts_gpu *g = qtts_calloc(1, sizeof *g, err);
    if (!g) return NULL;
    if (make_instance(g, want_validation(), err) || pick_device(g, want, err) || pick_memory(g, err)) goto fail;
    {
        float prio = 1.0f;
        VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                      .queueFamilyIndex = g->queue_family,
                                      .queueCount = 1,
                                      .pQueuePriorities = &prio};
        VkDeviceCreateInfo di = {
            .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi};
        VkResult r = vkCreateDevice(g->phys, &di, NULL, &g->dev);
        if (r != VK_SUCCESS) {
            qtts_fail(err, "Vulkan device %s could not be opened (%s)", g->name, qtts_vk_result_name(r));
            goto fail;
        }
        vkGetDeviceQueue(g->dev, g->queue_family, 0, &g->queue);
        VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                      .queueFamilyIndex = g->queue_family};
        if (vkCreateCommandPool(g->dev, &pi, NULL, &g->cmd_pool) != VK_SUCCESS) {
            qtts_fail(err, "Vulkan: command pool");
            goto fail;
        }
    }
    g->buffer_limit = g->props.limits.maxStorageBufferRange;
    if (make_pipelines(g, err)) goto fail;
    return g;
fail:
    qtts_fail_prefix(err, "device %s", spec);
    qtts_gpu_close(g);
    return NULL;
}

void qtts_gpu_close(qtts_gpu *g) {
    if (!g) return;
    if (g->dev) {
        if (!g->lost) vkDeviceWaitIdle(g->dev); /* a hung device might never be idle */
        for (int s = 0; s < QTTS_SHADER_COUNT; s++) {
            if (g->pipe[s]) vkDestroyPipeline(g->dev, g->pipe[s], NULL);
            if (g->pipe_layout[s]) vkDestroyPipelineLayout(g->dev, g->pipe_layout[s], NULL);
            if (g->set_layout[s]) vkDestroyDescriptorSetLayout(g->dev, g->set_layout[s], NULL);
        }
        if (g->cmd_pool) vkDestroyCommandPool(g->dev, g->cmd_pool, NULL);
        vkDestroyDevice(g->dev, NULL);
    }
    if (g->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(g->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(g->instance, g->messenger, NULL);
    }
    if (g->instance) vkDestroyInstance(g->instance, NULL);
    free(g);
}

const char *qtts_gpu_name(const qtts_gpu *g) { return g->name; }
int qtts_gpu_validation_errors(const qtts_gpu *g) { return g->validation_errors; }

void qtts_gpu_set_memory_limit(qtts_gpu *g, size_t bytes) {
    uint64_t heap = g->mem.memoryHeaps[g->mem.memoryTypes[g->host_mem_type].heapIndex].size;
    g->mem_limit = bytes && bytes < heap ? bytes : heap;
}
size_t qtts_gpu_memory_limit(const qtts_gpu *g) { return (size_t)g->mem_limit; }
size_t qtts_gpu_memory_used(const qtts_gpu *g) { return (size_t)g->mem_used; }
size_t qtts_gpu_memory_peak(const qtts_gpu *g) {
    return (size_t)atomic_load_explicit(&((qtts_gpu *)g)->mem_peak, memory_order_relaxed);
}
int qtts_gpu_lost(const qtts_gpu *g) { return g->lost; }
void qtts_gpu_test_lose_next_submit(qtts_gpu *g) { g->lose_next = 1; }

void qtts_gpu_set_buffer_limit(qtts_gpu *g, size_t bytes) {
    size_t dev = g->props.limits.maxStorageBufferRange;
    g->buffer_limit = bytes && bytes < dev ? bytes : dev;
}
