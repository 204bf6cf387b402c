/* End-to-end benchmark (`qtts bench`): a real engine (include/qtts.h) over
 * a model at real dimensions (random weights written as a checkpoint by
 * bench/random_checkpoint.h, or any model the engine loads) runs one
 * request of exactly N frames, then B requests started together, and reports
 * what the engine measured for them (engine/request_times.h): per-stage
 * times, real-time factors, time to first audio, peak RSS, and achieved GB/s
 * and GFLOP/s next to the machine's limits measured by bench/probe.h (on the
 * engine's pool). The schedule (frames per decoder step, overlap) is the
 * engine's own: this thread only submits and reads. */
#ifndef QTTS_BENCH_BENCH_H
#define QTTS_BENCH_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/probe.h"
#include "core/err.h"
#include "model/config.h"
#include "engine/calibration_cache.h"
#include "qtts.h"
#include "tensor/tensor.h"

typedef struct {
    const char *model_path; /* a model the engine loads (folder or .gguf); NULL = random weights */
    const char *size;       /* random: "0.6b" or "1.7b" */
    qtts_variant variant;   /* random: base, custom_voice (1.7b also voice_design) */
    qtts_dtype wtype;       /* matrix storage; QTTS_DTYPE_INVALID with a folder = as stored */
    int frames;             /* frames per stream (>= 1) */
    int batch;              /* concurrent streams of the second pass (1 = no second pass; at most 64) */
    int threads;            /* pool size (0 = all online CPUs) */
    int runs;               /* repetitions of each pass; the best time of each figure is kept */
    int probe;              /* measure bandwidth / FMA peak */
    size_t probe_bytes;     /* bandwidth buffer (0 = default 512 MiB) */
    uint64_t seed;
    const char *text;       /* prompt sentence for a model folder (NULL = a 10-word default) */
    const char *decoder_precision; /* "auto" (NULL), "f32", "bf16": as qtts_engine_params */
    const char *kv_cache;          /* "auto" (NULL), "f32", "f16": as qtts_engine_params */
    const char *device;            /* "cpu" (NULL), "vulkan", "vulkan:N", "auto": as qtts_engine_params */
    qtts_overlap_mode overlap; /* decoder steps beside LM steps (2+ threads): qtts_engine_params.overlap */
    const char *const *lora;   /* LoRA adapters (model_path only): qtts_engine_params.lora */
    int n_lora;
} qtts_bench_options;

void qtts_bench_options_default(qtts_bench_options *o);

/* One stage of the frame loop, per call (talker: one step for all streams;
 * code predictor: one frame for all streams; decoder: one batched decode
 * step). gbs = bytes / ms, gflops = flop / ms. */
typedef struct {
    double ms, cpu_ms;  /* wall, and CPU time of the engine thread */
    double rows;        /* streams per call */
    int64_t calls;      /* calls measured (the first frame is left out as warm-up when there are more) */
    double bytes, flop; /* weight bytes read and FLOP per call */
    double gbs, gflops;
    double gbs_cpu, gflops_cpu; /* the same per engine-thread CPU second (what an undisturbed machine gives) */
} qtts_bench_stage;

typedef struct {
    /* setup */
    char source[16]; /* "random" or "model" */
    char model[512]; /* size or path */
    char variant[24], quant[16], isa[16];
    char decoder_precision[16]; /* "f32", "winograd" or "bf16" */
    char kv_cache[8];           /* the talker's KV cache entries: "f32" or "f16" */
    char device[192];           /* where the talker and code predictor ran: qtts_model_info.device */
    qtts_calibration_set cal;   /* the kernel measurements the engine loaded with (measured or cached) */
    int threads, frames, batch, runs;
    double load_s;                            /* weights built/loaded */
    int64_t prompt_tokens, prompt_rows;       /* text ids of the template, talker prefill rows */
    double talker_weight_bytes;               /* per step: decoder layers + codec_head */
    double talker_kv_bytes;                   /* per step and stream: the KV cache read back, on average */
    double cp_weight_bytes;                   /* per frame: 15 forwards (+ projection) + heads */
    double talker_flop_per_row, cp_flop_per_row, decoder_flop_per_frame;
    double frame_ms;                          /* audio per frame (80 ms) */
    /* one stream */
    double prompt_ms;  /* prompt build (text projection) */
    double prefill_ms; /* prompt build + talker prefill + codec_head + first sample */
    double ttfa_ms;    /* start -> first decoded audio (prefill + first frame + its decode) */
    double wall_s, audio_s, rtf, rtf_steady; /* rtf = wall / audio; steady = (talker+cp+decoder per frame) / frame_ms */
    int64_t frames_out, samples_out;
    int64_t decode_steps, overlapped_steps; /* decoder steps of the 1-stream pass, and how many ran beside LM steps */
    qtts_bench_stage talker, cp, decoder;
    /* the same from the engine thread's CPU time: on a shared machine, what
     * the run would take undisturbed (exact with 1 thread; with more, the
     * other threads are assumed to run alongside) */
    double prefill_cpu_ms, ttfa_cpu_ms, rtf_cpu, rtf_steady_cpu;
    /* batch streams (valid when batch > 1) */
    double batch_wall_s, batch_audio_s, aggregate_xrt; /* audio seconds per wall second, all streams */
    double aggregate_xrt_cpu;                          /* per engine-thread CPU second */
    int64_t batch_frames_out, batch_samples_out;
    int64_t batch_decode_steps, batch_overlapped_steps; /* as decode_steps / overlapped_steps, for this pass */
    qtts_bench_stage talker_b, cp_b, decoder_b;
    /* the engine thread's CPU time per frame for the talker and code predictor
     * (on a device: recording inputs, submitting, waiting, reading codes back),
     * one stream and per frame of the batch pass */
    double lm_host_cpu_ms, lm_host_cpu_ms_b;
    /* memory (MB = 1e6 bytes) */
    double rss_loaded_mb, peak_rss_single_mb, peak_rss_mb;
    double device_memory_mb; /* the device buffers' peak (0 on the CPU) */
    uint64_t device_requests; /* requests whose LM work ran on the device */
    double peak_rss_load_mb; /* high-water mark at the end of loading */
    int peak_reset;          /* peak_rss_* cover synthesis only (VmHWM was reset after load) */
    /* machine limits (valid when probed) */
    int probed;
    qtts_probe_result probe;
    double bw_gbs, peak_gflops; /* the figures the ratios use (all pool threads, or 1 when threads == 1) */
    double peak_gflops_decoder; /* peak_gflops, or the bf16 dot-product peak for a bf16 decoder */
} qtts_bench_result;

int qtts_bench_run(const qtts_bench_options *o, qtts_bench_result *r, qtts_err *err);

/* Human-readable report. */
void qtts_bench_print(FILE *f, const qtts_bench_result *r);
/* One JSON object (malloc'd, NUL-terminated; free()), or NULL when out of memory. */
char *qtts_bench_json(const qtts_bench_result *r);

#endif
