/* Recorded command sequences: one command buffer, the descriptor sets its
 * dispatches bind, and a fence. Recorded once, submitted any number of times. */
#include <stdlib.h>
#include <string.h>

#include "gpu/vk_internal.h"

enum {
    SETS_PER_POOL = 64,
    /* a submission that has not finished after this long is treated as a lost device */
    FENCE_TIMEOUT_NS = 60ull * 1000 * 1000 * 1000,
};

struct qtts_gpu_seq {
    qtts_gpu *g;
    VkCommandBuffer cmd;
    VkFence fence;
    VkDescriptorPool *pools;
    int n_pools, sets_in_last;
    int recording, dispatches;
};

qtts_gpu *qtts_vk_seq_gpu(const qtts_gpu_seq *s) { return s->g; }

static int refuse_lost(qtts_err *err) {
    return qtts_fail(err, "GPU: the device was lost earlier; close it and open it again");
}

qtts_gpu_seq *qtts_gpu_seq_new(qtts_gpu *g, qtts_err *err) {
    if (g->lost) {
        refuse_lost(err);
        return NULL;
    }
    qtts_gpu_seq *s = qtts_calloc(1, sizeof *s, err);
    if (!s) return NULL;
    s->g = g;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = g->cmd_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    if (vkAllocateCommandBuffers(g->dev, &ai, &s->cmd) != VK_SUCCESS ||
        vkCreateFence(g->dev, &fi, NULL, &s->fence) != VK_SUCCESS || vkBeginCommandBuffer(s->cmd, &bi) != VK_SUCCESS) {
        qtts_fail(err, "GPU: a command buffer could not be made");
        qtts_gpu_seq_free(s);
        return NULL;
    }
    s->recording = 1;
    s->sets_in_last = SETS_PER_POOL;
    return s;
}

static VkDescriptorSet new_set(qtts_gpu_seq *s, qtts_gpu_shader shader, qtts_err *err) {
    qtts_gpu *g = s->g;
    if (s->sets_in_last == SETS_PER_POOL) {
        VkDescriptorPool *p = realloc(s->pools, (size_t)(s->n_pools + 1) * sizeof *p);
        if (!p) {
            qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory");
            return VK_NULL_HANDLE;
        }
        s->pools = p;
        VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, SETS_PER_POOL * QTTS_GPU_MAX_BINDINGS};
        VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                         .maxSets = SETS_PER_POOL,
                                         .poolSizeCount = 1,
                                         .pPoolSizes = &size};
        if (vkCreateDescriptorPool(g->dev, &pi, NULL, &s->pools[s->n_pools]) != VK_SUCCESS) {
            qtts_fail(err, "GPU: descriptor pool");
            return VK_NULL_HANDLE;
        }
        s->n_pools++;
        s->sets_in_last = 0;
    }
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = s->pools[s->n_pools - 1],
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &g->set_layout[shader]};
    VkDescriptorSet set;
    if (vkAllocateDescriptorSets(g->dev, &ai, &set) != VK_SUCCESS) {
        qtts_fail(err, "GPU: descriptor set");
        return VK_NULL_HANDLE;
    }
    s->sets_in_last++;
    return set;
}

int qtts_vk_dispatch(qtts_gpu_seq *s, qtts_gpu_shader shader, qtts_gpu_buf *const *bufs, const void *push,
                     size_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz, qtts_err *err) {
    qtts_gpu *g = s->g;
    const qtts_gpu_shader_code *c = &qtts_gpu_shader_codes[shader];
    if (!s->recording) return qtts_fail(err, "GPU: %s recorded into a finished sequence", c->name);
    if (push_bytes > QTTS_GPU_PUSH_BYTES) return qtts_fail(err, "GPU: %s push constants too large", c->name);
    const uint32_t *max = g->props.limits.maxComputeWorkGroupCount;
    if (gx == 0 || gy == 0 || gz == 0) return 0; /* nothing to do */
    if (gx > max[0] || gy > max[1] || gz > max[2])
        return qtts_fail_as(err, QTTS_ERR_INVALID, "GPU: %s needs %ux%ux%u workgroups, more than the device's %ux%ux%u",
                            c->name, gx, gy, gz, max[0], max[1], max[2]);
    VkDescriptorSet set = new_set(s, shader, err);
    if (set == VK_NULL_HANDLE) return -1;
    VkDescriptorBufferInfo bi[QTTS_GPU_MAX_BINDINGS];
    VkWriteDescriptorSet wr[QTTS_GPU_MAX_BINDINGS];
    for (int i = 0; i < c->bindings; i++) {
        if (!bufs[i]) return qtts_fail(err, "GPU: %s binding %d has no buffer", c->name, i);
        bi[i] = (VkDescriptorBufferInfo){bufs[i]->buf, 0, VK_WHOLE_SIZE};
        wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstSet = set,
                                       .dstBinding = (uint32_t)i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &bi[i]};
    }
    vkUpdateDescriptorSets(g->dev, (uint32_t)c->bindings, wr, 0, NULL);
    /* every earlier shader write (and the host's) is visible to this dispatch */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    vkCmdPipelineBarrier(s->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    vkCmdBindPipeline(s->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, g->pipe[shader]);
    vkCmdBindDescriptorSets(s->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, g->pipe_layout[shader], 0, 1, &set, 0, NULL);
    unsigned char pc[QTTS_GPU_PUSH_BYTES] = {0};
    memcpy(pc, push, push_bytes);
    vkCmdPushConstants(s->cmd, g->pipe_layout[shader], VK_SHADER_STAGE_COMPUTE_BIT, 0, QTTS_GPU_PUSH_BYTES, pc);
    vkCmdDispatch(s->cmd, gx, gy, gz);
    s->dispatches++;
    return 0;
}

int qtts_gpu_seq_end(qtts_gpu_seq *s, qtts_err *err) {
    if (!s->recording) return 0;
    /* the results are visible to the host once the fence signals */
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
    vkCmdPipelineBarrier(s->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL,
                         0, NULL);
    s->recording = 0;
    if (vkEndCommandBuffer(s->cmd) != VK_SUCCESS) return qtts_fail(err, "GPU: the command buffer could not be ended");
    return 0;
}

int qtts_gpu_seq_run(qtts_gpu_seq *s, qtts_err *err) { return qtts_gpu_seq_run_then(s, NULL, err); }

int qtts_gpu_seq_run_then(qtts_gpu_seq *s, qtts_gpu_seq *then, qtts_err *err) {
    if (s->recording && qtts_gpu_seq_end(s, err)) return -1;
    if (then && then->recording && qtts_gpu_seq_end(then, err)) return -1;
    qtts_gpu *g = s->g;
    if (then && then->g != g) return qtts_fail(err, "GPU: two sequences of different devices in one submission");
    if (g->lost) return refuse_lost(err);
    /* in submission order: every dispatch's barrier waits for the writes of the first buffer's dispatches too */
    VkCommandBuffer cmds[2] = {s->cmd, then ? then->cmd : VK_NULL_HANDLE};
    VkSubmitInfo si = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = then ? 2 : 1, .pCommandBuffers = cmds};
    VkResult r = g->lose_next ? VK_ERROR_DEVICE_LOST : vkResetFences(g->dev, 1, &s->fence);
    g->lose_next = 0;
    if (r == VK_SUCCESS) r = vkQueueSubmit(g->queue, 1, &si, s->fence);
    if (r == VK_SUCCESS) r = vkWaitForFences(g->dev, 1, &s->fence, VK_TRUE, FENCE_TIMEOUT_NS);
    /* neither can be submitted to again: the spec's lost device, or work that may still run */
    if (r == VK_ERROR_DEVICE_LOST || r == VK_TIMEOUT) g->lost = 1;
    if (r == VK_TIMEOUT) return qtts_fail(err, "GPU: a submission did not finish within 60 s (device hung or lost)");
    if (r != VK_SUCCESS)
        return qtts_fail_as(err, r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? QTTS_ERR_NO_MEMORY : QTTS_ERR_INTERNAL,
                            "GPU: submission failed (%s)", qtts_vk_result_name(r));
    return 0;
}

void qtts_gpu_seq_free(qtts_gpu_seq *s) {
    if (!s) return;
    qtts_gpu *g = s->g;
    for (int i = 0; i < s->n_pools; i++) vkDestroyDescriptorPool(g->dev, s->pools[i], NULL);
    free(s->pools);
    if (s->fence) vkDestroyFence(g->dev, s->fence, NULL);
    if (s->cmd) vkFreeCommandBuffers(g->dev, g->cmd_pool, 1, &s->cmd);
    free(s);
}
