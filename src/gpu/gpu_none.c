/* The backend's entry points in a build without Vulkan (QTTS_VULKAN=OFF). */
#include "gpu/gpu.h"
#include "gpu/gpu_decoder.h"
#include "gpu/gpu_lm.h"
#include "gpu/gpu_ops.h"

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

/* The device LM (gpu_lm.h): no device can be opened, so none is ever made. */
qtts_gpu_lm *qtts_gpu_lm_new(qtts_gpu *g, const qtts_talker_model *m, int max_streams, int64_t max_pos,
                             qtts_err *err) {
    (void)g, (void)m, (void)max_streams, (void)max_pos;
    qtts_fail_as(err, QTTS_ERR_INVALID, "this qtts was built without Vulkan (cmake -DQTTS_VULKAN=ON)");
    return NULL;
}
void qtts_gpu_lm_free(qtts_gpu_lm *d) { (void)d; }
size_t qtts_gpu_memory_peak(const qtts_gpu *g) {
    (void)g;
    return 0;
}
int qtts_gpu_lm_reserve(qtts_gpu_lm *d, int slot, int64_t positions, qtts_err *err) {
    (void)d, (void)slot, (void)positions;
    return qtts_fail_as(err, QTTS_ERR_INVALID, "this qtts was built without Vulkan");
}
int qtts_gpu_lm_prefill(qtts_gpu_lm *d, int slot, const float *rows, int64_t n, const qtts_gpu_sample_settings *ss,
                        int32_t *c0, qtts_err *err) {
    (void)d, (void)slot, (void)rows, (void)n, (void)ss, (void)c0;
    return qtts_fail_as(err, QTTS_ERR_INVALID, "this qtts was built without Vulkan");
}
int qtts_gpu_lm_frame(qtts_gpu_lm *d, int B, const int *slots, const float *const *text, int32_t *codes,
                      int32_t *next_c0, qtts_gpu_seq *then, qtts_err *err) {
    (void)d, (void)B, (void)slots, (void)text, (void)codes, (void)next_c0, (void)then;
    return qtts_fail_as(err, QTTS_ERR_INVALID, "this qtts was built without Vulkan");
}
qtts_gpu_buf *qtts_gpu_lm_code_ring(qtts_gpu_lm *d) {
    (void)d;
    return NULL;
}

/* The device decoder (gpu_decoder.h): likewise never made. */
qtts_gpu_decoder *qtts_gpu_decoder_new(qtts_gpu *g, const qtts_store *st, const qtts_codec_config *cfg, qtts_err *err) {
    (void)g, (void)st, (void)cfg;
    qtts_fail_as(err, QTTS_ERR_INVALID, "this qtts was built without Vulkan (cmake -DQTTS_VULKAN=ON)");
    return NULL;
}
void qtts_gpu_decoder_free(qtts_gpu_decoder *d) { (void)d; }
int64_t qtts_gpu_decoder_frame_samples(const qtts_gpu_decoder *d) {
    (void)d;
    return 0;
}
int64_t qtts_gpu_decoder_num_quantizers(const qtts_gpu_decoder *d) {
    (void)d;
    return 0;
}
qtts_gpu_dec_stream *qtts_gpu_dec_stream_new(qtts_gpu_decoder *d, qtts_err *err) {
    (void)d;
    qtts_fail_as(err, QTTS_ERR_INVALID, "this qtts was built without Vulkan");
    return NULL;
}
void qtts_gpu_dec_stream_reset(qtts_gpu_dec_stream *s) { (void)s; }
void qtts_gpu_dec_stream_free(qtts_gpu_dec_stream *s) { (void)s; }
int64_t qtts_gpu_dec_stream_frames(const qtts_gpu_dec_stream *s) {
    (void)s;
    return 0;
}
int qtts_gpu_decoder_step(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams, const int32_t *const *codes,
                          const int64_t *n_frames, int n, float *const *out, qtts_err *err) {
    (void)d, (void)streams, (void)codes, (void)n_frames, (void)n, (void)out;
    return qtts_fail_as(err, QTTS_ERR_INVALID, "this qtts was built without Vulkan");
}
int qtts_gpu_decoder_use_ring(qtts_gpu_decoder *d, qtts_gpu_buf *ring, int64_t ring_rows, int64_t width,
                              qtts_err *err) {
    (void)d, (void)ring, (void)ring_rows, (void)width;
    return qtts_fail_as(err, QTTS_ERR_INVALID, "this qtts was built without Vulkan");
}
int qtts_gpu_decoder_step_from(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams, const int32_t *const *codes,
                               const qtts_gpu_ring_at *at, const int64_t *n_frames, int n, float *const *out,
                               qtts_err *err) {
    (void)d, (void)streams, (void)codes, (void)at, (void)n_frames, (void)n, (void)out;
    return qtts_fail_as(err, QTTS_ERR_INVALID, "this qtts was built without Vulkan");
}
qtts_gpu_seq *qtts_gpu_decoder_stage(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams,
                                     const int32_t *const *codes, const qtts_gpu_ring_at *at, const int64_t *n_frames,
                                     int n, qtts_err *err) {
    (void)d, (void)streams, (void)codes, (void)at, (void)n_frames, (void)n;
    qtts_fail_as(err, QTTS_ERR_INVALID, "this qtts was built without Vulkan");
    return NULL;
}
void qtts_gpu_decoder_collect(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams, const int64_t *n_frames, int n,
                              float *const *out) {
    (void)d, (void)streams, (void)n_frames, (void)n, (void)out;
}
