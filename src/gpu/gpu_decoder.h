/* The speech-tokenizer decoder on a Vulkan device: codes -> 24 kHz PCM, the
 * streaming decoder of model/codec_decoder.h assembled from the kernels of
 * gpu_ops.h and gpu_conv.h. The codebook lookup, the RVQ projections,
 * pre_conv, the sliding-window transformer, the upsampling stages (transposed
 * conv + ConvNeXt), decoder.0, the SnakeBeta / transposed-conv / residual-unit
 * blocks, the output conv and the clamp run on the device; only the samples
 * come back. Weights are read from the store the CPU decoder was loaded from
 * and uploaded as f32 (whatever precision the CPU decoder uses).
 *
 * A stream's state lives in device buffers (every conv's history, the
 * transformer's last window-1 keys and values, its RoPE position), so codes fed
 * frame by frame give the samples of one call over all frames (float rounding
 * aside). A step decodes several streams in one submission, each stream's
 * kernels over its own rows: a stream's samples do not depend on the others.
 * The codes are written by the host into a device buffer before the
 * submission, or read where they run from the device LM's code ring
 * (qtts_gpu_decoder_step_from). Only the thread that opened the device may
 * call these. */
#ifndef QTTS_GPU_GPU_DECODER_H
#define QTTS_GPU_GPU_DECODER_H

#include <stdint.h>

#include "core/err.h"
#include "gpu/gpu.h"
#include "gpu/gpu_ops.h"
#include "io/store.h"
#include "model/config.h"

typedef struct qtts_gpu_decoder qtts_gpu_decoder;

enum { QTTS_GPU_DEC_STAGE_FRAMES = 8 }; /* the most frames of a stream in one submission */
typedef struct qtts_gpu_dec_stream qtts_gpu_dec_stream;

/* Uploads the decoder of st (the official tensor names, "decoder.pre_conv.conv.weight", ...)
 * with the sizes of cfg. st may be freed after. */
qtts_gpu_decoder *qtts_gpu_decoder_new(qtts_gpu *g, const qtts_store *st, const qtts_codec_config *cfg, qtts_err *err);
void qtts_gpu_decoder_free(qtts_gpu_decoder *d);
int64_t qtts_gpu_decoder_frame_samples(const qtts_gpu_decoder *d);
int64_t qtts_gpu_decoder_num_quantizers(const qtts_gpu_decoder *d);

/* A stream at frame 0 with zero history (its state on the device). */
qtts_gpu_dec_stream *qtts_gpu_dec_stream_new(qtts_gpu_decoder *d, qtts_err *err);
void qtts_gpu_dec_stream_reset(qtts_gpu_dec_stream *s);
void qtts_gpu_dec_stream_free(qtts_gpu_dec_stream *s);
int64_t qtts_gpu_dec_stream_frames(const qtts_gpu_dec_stream *s);

/* One step for n distinct streams: codes[i] holds n_frames[i] frames
 * (frame-major, num_quantizers codes each; negative codes read entry 0 as on
 * the CPU, codes >= the codebook size are rejected before anything runs) and
 * out[i] gets n_frames[i] * frame_samples samples. Longer feeds are split into
 * submissions of at most 8 frames per stream (exact either way). After a
 * device failure the streams are inconsistent and must be reset. */
int qtts_gpu_decoder_step(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams, const int32_t *const *codes,
                          const int64_t *n_frames, int n, float *const *out, qtts_err *err);

/* The codes of the device LM (qtts_gpu_lm_code_ring: ring_rows rows of
 * `width` codes per slot; width must be num_quantizers), which steps may read
 * where they run instead of taking them from the host; NULL: none. ring must
 * outlive d or be unset. */
int qtts_gpu_decoder_use_ring(qtts_gpu_decoder *d, qtts_gpu_buf *ring, int64_t ring_rows, int64_t width,
                              qtts_err *err);

/* Where a stream's codes are in the code ring: LM slot `slot` from its frame
 * `first` on (slot < 0: from the host). */
typedef struct {
    int slot;
    int64_t first;
} qtts_gpu_ring_at;

/* qtts_gpu_decoder_step where stream i whose at[i].slot >= 0 reads its
 * n_frames[i] frames from the code ring (codes[i] is not read; at most
 * ring_rows - 1 frames, still in the ring: the caller's to know); at may be
 * NULL (every stream from codes). */
int qtts_gpu_decoder_step_from(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams, const int32_t *const *codes,
                               const qtts_gpu_ring_at *at, const int64_t *n_frames, int n, float *const *out,
                               qtts_err *err);

/* One step in two halves, for a caller that submits it in one submission
 * after other work (qtts_gpu_lm_frame's `then`): stage checks the step as
 * qtts_gpu_decoder_step_from does (1..QTTS_GPU_DEC_STAGE_FRAMES frames per
 * stream, 1..64 streams),
 * writes its inputs and returns its recorded sequence (d keeps it; NULL with
 * err). Once that sequence has run, collect copies the samples to out[i] and
 * advances the streams; nothing else may use d in between. Codes read from
 * the ring are read when the sequence runs, so frames the same submission
 * makes before it can be among them. */
qtts_gpu_seq *qtts_gpu_decoder_stage(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams,
                                     const int32_t *const *codes, const qtts_gpu_ring_at *at, const int64_t *n_frames,
                                     int n, qtts_err *err);
void qtts_gpu_decoder_collect(qtts_gpu_decoder *d, qtts_gpu_dec_stream *const *streams, const int64_t *n_frames, int n,
                              float *const *out);

#endif
