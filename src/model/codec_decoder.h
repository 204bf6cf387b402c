/* Speech-tokenizer decoder (Qwen3-TTS-Tokenizer-12Hz): codes -> 24 kHz audio.
 *
 * Every layer is causal, so the decoder runs as an exact streaming decoder:
 * a qtts_codec_stream keeps the transformer's sliding KV window (with a
 * continuing RoPE position), each causal conv's left history and each
 * transposed conv's input history. Feeding frames in any chunk sizes gives
 * the samples of one forward over all frames (float rounding aside); the
 * audio of a frame is out as soon as its codes are in.
 *
 * The reference's own offline decode ("official chunking": chunks of 300
 * frames, each after the first re-decoding 25 frames of left context with a
 * fresh state, context samples dropped) is qtts_codec_decode_offline with
 * chunk > 0.
 *
 * Codes are FRAME-MAJOR: codes[t*n_q + q]. Negative codes (batch padding -1)
 * are clamped to 0 as the reference does; codes >= codebook size are errors.
 * All calls run on the engine thread with its pool; a decoder holds scratch
 * buffers, so one decoder runs one call at a time (several streams share a
 * decoder through qtts_codec_decode_step_batch). */
#ifndef QTTS_MODEL_CODEC_DECODER_H
#define QTTS_MODEL_CODEC_DECODER_H

#include <stdint.h>

#include "core/err.h"
#include "core/threadpool.h"
#include "io/store.h"
#include "tensor/tensor.h"
#include "tensor/conv_calibrate.h"
#include "model/config.h"

typedef struct qtts_codec_decoder qtts_codec_decoder;
typedef struct qtts_codec_stream qtts_codec_stream;

/* Loads the decoder from a store holding the official tensor names
 * ("decoder.pre_conv.conv.weight", ...). Sizes come from cfg and the tensor
 * shapes; the store must outlive the decoder (weights may be views into it). */
qtts_codec_decoder *qtts_codec_decoder_load(const qtts_store *st, const qtts_codec_config *cfg, qtts_err *err);
/* path: a model folder containing speech_tokenizer/, or the tokenizer folder
 * itself (config.json + model.safetensors). The decoder owns the store. */
qtts_codec_decoder *qtts_codec_decoder_open(const char *path, qtts_err *err);
void qtts_codec_decoder_free(qtts_codec_decoder *dec);
/* Frees its weights and scratch, keeping its sizes (the queries below and
 * qtts_codec_decoder_macs_per_frame still answer): for an engine whose decoder
 * runs on a device, which uploaded them. Streams and precision changes are
 * refused after it. */
void qtts_codec_decoder_drop_weights(qtts_codec_decoder *dec);

/* Arithmetic of the high-rate convolutions (the four decoder blocks and the
 * output conv, ~95% of the decoder's FLOPs). F32 (default) follows the
 * reference within 1e-4; BF16 rounds their weights and inputs to bf16 and
 * sums in f32: up to 2x their speed on AVX-512 BF16 / Arm BF16 CPUs, at a
 * waveform SNR against f32 that test_codec_decoder reports. Switching to
 * BF16 is one-way (the f32 weights are freed); it fails on CPUs without bf16
 * convolutions. WINOGRAD keeps f32 arithmetic but runs the residual units'
 * 7-tap convolutions (~70% of the FLOPs) as Winograd F(4, 7)
 * (tensor/conv_winograd.h): 2.5 instead of 7 multiply-adds per output and
 * weight, ~100 dB SNR against f32 (test_codec_decoder reports it); one-way
 * too (their tap weights are freed), any CPU. WINOGRAD_F16 is WINOGRAD with
 * every time-major layer's weights (the RVQ projections, pre_conv, the
 * transformer, the upsampling stages, decoder.0 and a low-rate block's
 * transposed conv) stored in f16 and widened exactly per panel: f32
 * arithmetic on f16-rounded weights, half their memory and half the bytes a
 * streaming step reads (at 1-4 frames per step those layers are bound by
 * reading their weights). WINOGRAD_I16 is WINOGRAD with every 1-tap
 * product in int16 (tensor/conv.h, qtts_conv_to_i16, qtts_gemm_b_i16_panels):
 * the channel-major ones (the Winograd points of the residual and
 * transposed convs, the residual units' 1x1 convs: most of the decoder's
 * multiply-adds) and the time-major layers of WINOGRAD_F16 (half their f32
 * memory); x86-64 with AVX2 only. */
typedef enum {
    QTTS_DECODER_F32 = 0,
    QTTS_DECODER_BF16 = 1,
    QTTS_DECODER_WINOGRAD = 2,
    QTTS_DECODER_WINOGRAD_F16 = 3,
    QTTS_DECODER_WINOGRAD_I16 = 4
} qtts_decoder_precision;
int qtts_codec_decoder_set_precision(qtts_codec_decoder *dec, qtts_decoder_precision p, qtts_err *err);
/* The same, its weights converted on pool's threads (NULL: this thread); the same bits either way. */
int qtts_codec_decoder_set_precision_pool(qtts_codec_decoder *dec, qtts_decoder_precision p, qtts_pool *pool,
                                          qtts_err *err);
qtts_decoder_precision qtts_codec_decoder_precision(const qtts_codec_decoder *dec);
/* qtts_codec_decoder_load and _open with the weights packed on pool's threads
 * (its owner calls; NULL: this thread) and then in precision prec (F32: as
 * loaded; else as qtts_codec_decoder_set_precision_pool leaves them, bit for
 * bit): the same decoder, sooner. The layers bf16 converts are packed in it
 * directly, with no f32 form in between. */
qtts_codec_decoder *qtts_codec_decoder_load_pool(const qtts_store *st, const qtts_codec_config *cfg, qtts_pool *pool,
                                                 qtts_decoder_precision prec, qtts_err *err);
qtts_codec_decoder *qtts_codec_decoder_open_pool(const char *path, qtts_pool *pool, qtts_decoder_precision prec,
                                                 qtts_err *err);
/* The precision for a user option: "f32", "winograd", "winograd-f16",
 * "winograd-i16", "bf16", or NULL/""/"auto": with quantized LM weights
 * (q8_0/q4_k: speed was asked for, and their own error is far larger) the
 * fastest conv path in `measured` (tensor/conv_calibrate.h: each of
 * winograd, winograd-i16 and bf16 only where it beats its f32 form by a
 * margin; the engine loader measures on this CPU or reads its cache), else
 * f32. WINOGRAD_F16 only when asked for. measured may be NULL where
 * qtts_decoder_precision_measures says no measurement is needed. */
int qtts_decoder_precision_choose(const char *opt, qtts_dtype lm_weights, const qtts_conv_calibration *measured,
                                  qtts_decoder_precision *out, qtts_err *err);
/* Whether choosing for opt and lm_weights looks at a measurement ("auto" with q8_0/q4_k). */
int qtts_decoder_precision_measures(const char *opt, qtts_dtype lm_weights);
const char *qtts_decoder_precision_name(qtts_decoder_precision p);
/* A name of the table (not "auto") into *out; -1 when unknown. */
int qtts_decoder_precision_parse(const char *name, qtts_decoder_precision *out);
/* Every name the table holds, "auto" first (must match the table: test_codec_decoder checks it). */
#define QTTS_DECODER_PRECISION_NAMES "auto, f32, winograd, winograd-f16, winograd-i16, bf16"
#define QTTS_DECODER_PRECISION_OPTIONS "auto|f32|winograd|winograd-f16|winograd-i16|bf16"
/* The config it was loaded with (the device decoder, gpu/gpu_decoder.h, reads
 * the same tensors by it). */
const qtts_codec_config *qtts_codec_decoder_config(const qtts_codec_decoder *dec);
/* The store opened by qtts_codec_decoder_open (NULL after _load). */
qtts_store *qtts_codec_decoder_owned_store(const qtts_codec_decoder *dec);

int64_t qtts_codec_decoder_num_quantizers(const qtts_codec_decoder *dec);
int64_t qtts_codec_decoder_frame_samples(const qtts_codec_decoder *dec); /* 1920 */
int64_t qtts_codec_decoder_sample_rate(const qtts_codec_decoder *dec);   /* 24000 */
/* Frames processed per internal step (longer feeds are split; exact either way). Default 8. */
void qtts_codec_decoder_set_max_chunk(qtts_codec_decoder *dec, int64_t frames);
/* Largest block output (bytes) the high-rate tail keeps in cache before it
 * runs the remaining blocks on pieces of the step (exact either way; for
 * tuning and tests). Default 512 KiB. */
void qtts_codec_decoder_set_cache_budget(qtts_codec_decoder *dec, int64_t bytes);

/* Where the channel-major tail's time goes (for benchmarks): while a table
 * is set, every step adds each operation's wall time to it, in ms. */
typedef enum {
    QTTS_DECODER_OP_PAD,        /* SnakeBeta into a conv's padded input (history + step) */
    QTTS_DECODER_OP_TCONV,      /* the blocks' transposed convs (as phases) */
    QTTS_DECODER_OP_INTERLEAVE, /* their phases back into time order */
    QTTS_DECODER_OP_RES_CONV,   /* the residual units' dilated convs */
    QTTS_DECODER_OP_SNAKE,      /* the residual units' second SnakeBeta */
    QTTS_DECODER_OP_POINT_CONV, /* the residual units' 1x1 convs (with the residual add) */
    QTTS_DECODER_OP_OUTPUT,     /* final SnakeBeta, output conv and clamp */
    QTTS_DECODER_OP_COUNT
} qtts_decoder_op;
typedef struct {
    double ms[QTTS_DECODER_OP_COUNT];
} qtts_decoder_op_times;
const char *qtts_decoder_op_name(qtts_decoder_op op);
/* NULL stops the timing. The table must outlive the steps it times. Where
 * several threads run streams' tails side by side (several streams in a step
 * on a pool of several threads), their times add up: thread-ms, not wall. */
void qtts_codec_decoder_set_op_times(qtts_codec_decoder *dec, qtts_decoder_op_times *times);

/* A stream's state; starts at frame 0 with zero history. */
qtts_codec_stream *qtts_codec_stream_new(const qtts_codec_decoder *dec, qtts_err *err);
void qtts_codec_stream_reset(qtts_codec_stream *s);
void qtts_codec_stream_free(qtts_codec_stream *s);
/* Frames decoded so far. */
int64_t qtts_codec_stream_frames(const qtts_codec_stream *s);

/* Debug hook: called for every stage output of every step of this stream.
 * stage is one of "rvq_out", "pre_conv_out", "pre_transformer_out",
 * "upsample<i>_transconv_out", "upsample<i>_convnext_out", "decoder<i>_out"
 * (decoder0 = input conv, decoder1..N = blocks, then the final SnakeBeta and
 * the output conv BEFORE the clamp). Element (c, t) is data[c*ch_stride +
 * t*t_stride], t over the n new samples of this step. */
typedef void (*qtts_codec_stage_fn)(void *ctx, const char *stage, const float *data, int64_t channels, int64_t n,
                                    int64_t ch_stride, int64_t t_stride);
void qtts_codec_stream_set_debug(qtts_codec_stream *s, qtts_codec_stage_fn fn, void *ctx);

/* Streaming decode of n_frames new frames: out gets n_frames*frame_samples samples.
 * Bad codes are rejected before anything changes; after any other failure
 * (out of memory) the stream is inconsistent and must be reset. */
int qtts_codec_decode_feed(qtts_codec_decoder *dec, qtts_pool *pool, qtts_codec_stream *s, const int32_t *codes,
                           int64_t n_frames, float *out, qtts_err *err);

/* One step for several streams at once (each with its own codes and frame
 * count, which may be 0): the low-rate layers run as one batched weight pass
 * over all streams' rows (internally in steps of at most 16 frames in all,
 * max_chunk per stream, which bounds the scratch memory). out[i] gets
 * n_frames[i]*frame_samples samples. Streams must be distinct. Equal to
 * feeding each stream separately. */
int qtts_codec_decode_step_batch(qtts_codec_decoder *dec, qtts_pool *pool, qtts_codec_stream *const *streams,
                                 const int32_t *const *codes, const int64_t *n_frames, int n_streams,
                                 float *const *out, qtts_err *err);

/* Offline decode of T frames into out (T*frame_samples). chunk <= 0: one exact
 * streaming pass (= one forward over all frames). chunk > 0: the official
 * chunked decode (chunk frames per piece, up to `context` frames of left
 * context re-decoded with a fresh state and dropped); the reference uses
 * chunk 300, context 25. */
int qtts_codec_decode_offline(qtts_codec_decoder *dec, qtts_pool *pool, const int32_t *codes, int64_t T,
                              int64_t chunk, int64_t context, float *out, qtts_err *err);

enum { QTTS_CODEC_OFFICIAL_CHUNK = 300, QTTS_CODEC_OFFICIAL_CONTEXT = 25 };

/* Multiply-accumulates per frame of the streaming decoder (for GFLOP/s figures; FLOP = 2*MAC). */
double qtts_codec_decoder_macs_per_frame(const qtts_codec_decoder *dec);

#endif
