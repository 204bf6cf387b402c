/* qtts: Qwen3-TTS inference engine. The one public header.
 *
 * Threading contract: an engine owns one engine thread and a persistent pool
 * of n_threads-1 workers, created with the engine and never more. Every model
 * computation (synthesis, voice extraction, codec encode/decode) is a job on
 * the engine's queue. Calls from any other thread only enqueue work and wait
 * or read results; they never compute. All functions are thread-safe unless
 * noted.
 *
 * Errors: functions that can fail take a `qtts_error *` (NULL is fine) and
 * fill it with a qtts_status and one line of text. */
#ifndef QTTS_H
#define QTTS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from the shared library; everything else in libqtts is hidden. */
#if defined(QTTS_BUILDING) && defined(__GNUC__)
#define QTTS_API __attribute__((visibility("default")))
#else
#define QTTS_API
#endif

/* The one version number (CMake reads it from here); qtts_version() is the
 * library's own at run time, which a program can compare with the header's. */
#define QTTS_VERSION "0.1.0"
#define QTTS_SAMPLE_RATE 24000

/* What kind of failure an error is, so callers can act on it without reading
 * the message (an HTTP server maps it to a status code). */
typedef enum {
    QTTS_OK = 0,
    QTTS_ERR_INVALID,   /* the request or argument is wrong (bad text, unknown speaker, bad audio) */
    QTTS_ERR_BUSY,      /* the queue is full or the engine is shutting down: retry later */
    QTTS_ERR_NO_MEMORY,
    QTTS_ERR_MODEL,     /* the model files are missing, corrupt or unsupported */
    QTTS_ERR_CANCELLED, /* cancelled by the caller (qtts_stream_cancel, callback, disconnect) */
    QTTS_ERR_INTERNAL,  /* anything else: a bug or an I/O failure */
    QTTS_ERR_NOT_FOUND, /* a named voice, file or directory does not exist */
    QTTS_ERR_EXISTS,    /* a voice of that name is already registered */
} qtts_status;

/* What a failed call reports. */
typedef struct {
    qtts_status status;
    char message[512]; /* one line naming the file, value or limit at fault */
} qtts_error;

/* "ok", "invalid", "busy", "no_memory", "model", "cancelled", "internal",
 * "not_found", "exists". */
QTTS_API const char *qtts_status_name(qtts_status s);
/* The library's version, e.g. "0.1.0". */
QTTS_API const char *qtts_version(void);

typedef struct qtts_engine qtts_engine;
typedef struct qtts_voice qtts_voice;
typedef struct qtts_lexicon qtts_lexicon;
typedef struct qtts_stream qtts_stream;

typedef enum { QTTS_OVERLAP_AUTO = 0, QTTS_OVERLAP_ALWAYS, QTTS_OVERLAP_NEVER } qtts_overlap_mode;

typedef struct {
    const char *model_path;  /* model folder (with speech_tokenizer/) or .gguf */
    int n_threads;           /* 0: all online CPUs */
    const char *weight_type; /* NULL or "auto" (as stored), "f32", "bf16", "q8_0", "q4_k" */
    int max_batch;           /* concurrent synthesis slots; 0: default */
    int max_queue;           /* waiting requests beyond the slots; 0: default */
    int verbose;
    /* Speech-tokenizer decoder arithmetic: NULL or "auto" (with q8_0/q4_k LM
     * weights the fastest path measured at start-up, else f32), "f32"
     * (follows the reference within 1e-4), "winograd" (~102 dB SNR against
     * f32 on the golden decoder), "winograd-f16" (the same with f16
     * time-major weights: ~53 dB, 168 MB less memory for 0.6B),
     * "winograd-i16" (int16 products, x86-64 with AVX2), "bf16" (~33 dB). */
    const char *decoder_precision;
    /* The talker's KV cache: NULL or "auto" (f16 with q8_0/q4_k LM weights,
     * else f32), "f32", "f16" (half the memory per stream and half the bytes
     * each step reads back: at 700 positions, 80 instead of 160 MB for 0.6B). */
    const char *kv_cache;
    /* Decoder steps beside LM steps (two threads or more): QTTS_OVERLAP_AUTO
     * measures both ways while it runs and keeps the faster; ALWAYS and NEVER
     * are for A/B measurements. The audio is the same either way. */
    qtts_overlap_mode overlap;
    /* LoRA adapters merged into the talker's weights at load, in order,
     * before any conversion to weight_type: n_lora entries, each a PEFT
     * adapter folder (adapter_config.json + adapter_model.safetensors) or
     * its .safetensors file, optionally followed by ":SCALE" (default 1),
     * which multiplies the config's lora_alpha / r. As stored (weight_type
     * NULL or "auto") a merged weight gets the type it had on disk again
     * (requantized; q8_0 for the storage-only GGUF types); with a
     * weight_type it stays f32 until that one conversion. NULL / 0: none. */
    const char *const *lora;
    int n_lora;
    /* Where the talker and code predictor run: NULL or "cpu"; "vulkan" (the
     * first discrete GPU, else integrated, else any Vulkan device) or
     * "vulkan:N" (device N of `qtts info --devices`): engine creation fails
     * when it cannot be opened; "auto": that device where one opens, else the
     * CPU with one line on stderr saying why. On a device only greedy
     * requests run there (sampled ones and incremental text stay on the CPU);
     * the decoder and the cloning front end always run on the CPU. */
    const char *device;
    /* Called on the engine thread while the model loads (NULL: never), for
     * a progress line: the step under way ("LM weights", "speech decoder",
     * "decoder precision", "tokenizer") and the share of that step done
     * (0..1; the LM weights count their layers, other steps report 0 when
     * they begin). Last: ("ready", 1). */
    void (*load_progress)(void *user, const char *step, double done);
    void *load_progress_user;
} qtts_engine_params;

QTTS_API void qtts_engine_params_default(qtts_engine_params *p);
QTTS_API qtts_engine *qtts_engine_create(const qtts_engine_params *p, qtts_error *err);
/* Cancels running requests, stops the engine thread and the pool. */
QTTS_API void qtts_engine_free(qtts_engine *e);

typedef struct {
    const char *variant;   /* "base", "custom_voice", "voice_design" */
    const char *size;      /* "0b6", "1b7" */
    int hidden_size;       /* talker width = x-vector length */
    int n_speakers;
    const char *const *speakers; /* built-in speaker names (CustomVoice) */
    int n_languages;
    const char *const *languages; /* accepted --lang values, "auto" first */
    int sample_rate;
    int frame_samples; /* samples per codec frame (1920 = 80 ms at 24 kHz) */
    int n_codebooks;   /* codes per frame (16) */
    int codebook_size; /* each code is in [0, codebook_size) (2048) */
    int n_threads;
    int max_batch;
    const char *weight_type;       /* LM matrices as loaded: "f32", "bf16", "q8_0", "q4_k" */
    const char *decoder_precision; /* "f32", "winograd", "winograd-f16", "winograd-i16" or "bf16" (qtts_engine_params) */
    const char *kv_cache;          /* "f32" or "f16" (qtts_engine_params.kv_cache) */
    /* Where the load's time went: one line, milliseconds per phase (what -v prints). */
    const char *load_report;
    /* Kernel measurements the load ran (0: none needed, or all read from the per-CPU calibration cache). */
    int kernels_measured;
    /* "cpu", or the device the talker runs on, e.g. "vulkan: NAME (DRIVER)" */
    const char *device;
    /* Frames an utterance may have when a request sets no max_frames (the model's max_new_tokens - 1). */
    int max_frames;
} qtts_model_info;

/* Valid as long as the engine. */
QTTS_API const qtts_model_info *qtts_engine_info(const qtts_engine *e);

/* ---- voices (Base models) ---- */

/* Extracts a voice (x-vector + reference codes) from audio. samples: mono
 * float at sample_rate (resampled internally). ref_text may be NULL (then the
 * voice supports x-vector-only cloning). Runs as an engine job. */
QTTS_API qtts_voice *qtts_voice_from_samples(qtts_engine *e, const float *samples, size_t n, int sample_rate,
                                    const char *ref_text, qtts_error *err);
/* The same from an encoded audio file in memory (wav, flac, ogg, mp3...). */
QTTS_API qtts_voice *qtts_voice_from_audio_bytes(qtts_engine *e, const void *bytes, size_t size, const char *ref_text,
                                        qtts_error *err);
/* From pre-extracted parts: x-vector (hidden_size floats) and codes [n_frames][16] (may be NULL/0). */
QTTS_API qtts_voice *qtts_voice_from_parts(qtts_engine *e, const float *xvec, size_t xvec_len, const int32_t *codes,
                                  size_t n_frames, const char *ref_text, qtts_error *err);
/* Voices are reference counted; qtts_voice_from_* return one reference. */
QTTS_API qtts_voice *qtts_voice_retain(qtts_voice *v);
QTTS_API void qtts_voice_release(qtts_voice *v);
/* Accessors (pointers valid while the voice is held). */
QTTS_API const float *qtts_voice_xvector(const qtts_voice *v, size_t *len);
QTTS_API const int32_t *qtts_voice_codes(const qtts_voice *v, size_t *n_frames);
QTTS_API const char *qtts_voice_ref_text(const qtts_voice *v);

/* ---- pronunciation lexicon ---- */

/* A lexicon file: one "written<TAB>spoken[<TAB>language]" per line ('#'
 * comments; docs/text.md states the case and whole-word rules). NULL and
 * QTTS_ERR_INVALID with "FILE:LINE: why" for a bad line. One reference. */
QTTS_API qtts_lexicon *qtts_lexicon_load(const char *path, qtts_error *err);
/* The same from the file's text in memory (name: for messages, may be NULL). */
QTTS_API qtts_lexicon *qtts_lexicon_parse(const char *text, size_t len, const char *name, qtts_error *err);
QTTS_API qtts_lexicon *qtts_lexicon_retain(qtts_lexicon *lx);
QTTS_API void qtts_lexicon_release(qtts_lexicon *lx);

/* ---- synthesis ---- */

typedef enum { QTTS_LAYOUT_DEFAULT = 0, QTTS_LAYOUT_STREAMING = 1, QTTS_LAYOUT_NON_STREAMING = 2 } qtts_text_layout;

typedef struct {
    const char *text;       /* required, UTF-8 */
    const char *language;   /* NULL or "auto", or a language name */
    const char *speaker;    /* CustomVoice built-in speaker */
    const char *instruct;   /* VoiceDesign (required) / CustomVoice 1.7B style instruction */
    const qtts_voice *voice; /* Base: the voice to clone (the request holds its own reference) */
    int x_vector_only;      /* Base: ignore reference codes/text */
    qtts_text_layout layout;
    int greedy;             /* argmax on talker and code predictor */
    int has_seed;
    uint64_t seed;          /* without has_seed a random seed is drawn and reported */
    /* sampling; 0 (or <0) means the model's generation_config.json value */
    float temperature, top_p, repetition_penalty;
    int top_k;
    float cp_temperature, cp_top_p;
    int cp_top_k;
    int max_frames;         /* 0: model default */
    int keep_codes;         /* keep the generated codes for qtts_stream_codes */
    /* Runaway guard. A text-relative frame cap, in frames per text token (plus
     * a 4 s allowance): 0 = auto (10 when max_frames is 0, off when the caller
     * set max_frames), > 0 = this ratio, < 0 = off. A codebook-0 loop (one
     * pattern repeated exactly for >= 3.2 s) ends the utterance unless
     * no_repetition_guard. When a guard does not fire, output is unchanged. */
    float guard_frames_per_token;
    int no_repetition_guard;
    /* Incremental text: text is only the first piece (may be "" or NULL) and
     * the rest comes through qtts_stream_append_text, the last call with
     * is_last. The request uses the streaming text layout (one text token per
     * frame). Generation starts once the first word is complete and waits,
     * without changing anything, whenever it reaches text that has not
     * arrived: the codes equal those of the same text given at once in the
     * streaming layout. In-context cloning (Base with reference codes and
     * transcript) starts only when the text is complete. */
    int text_incomplete;
    /* The text front end (what a person would read aloud): numbers, money,
     * units, times, dates and symbols in words of the request's language,
     * markdown, emoji and URLs cleaned up. QTTS_NORMALIZE_DEFAULT (0) is
     * full. Incremental text (text_incomplete) is normalized as it comes,
     * exactly as the whole text would be: a number, a link or a markdown line
     * split over pieces waits until it is complete. */
    int normalize; /* a qtts_normalize_mode */
    /* A pronunciation lexicon (qtts_lexicon_load) applied before the rest of
     * the text front end (not with normalize off); NULL: none. The request
     * holds its own reference. */
    const qtts_lexicon *lexicon;
    /* Fenced code blocks (```) in markdown: QTTS_CODE_BLOCKS_SKIP (0, the
     * default: not read) or QTTS_CODE_BLOCKS_READ (their lines read as text). */
    int code_blocks;
} qtts_request;

typedef enum { QTTS_CODE_BLOCKS_SKIP = 0, QTTS_CODE_BLOCKS_READ = 1 } qtts_code_blocks;

typedef enum {
    QTTS_NORMALIZE_DEFAULT = 0, /* full */
    QTTS_NORMALIZE_OFF = 1,     /* the text exactly as given */
    QTTS_NORMALIZE_BASIC = 2,   /* markdown, emoji, control characters, URLs and e-mail addresses only */
    QTTS_NORMALIZE_FULL = 3,
} qtts_normalize_mode;

QTTS_API void qtts_request_default(qtts_request *r);

/* Why an utterance ended: the model's end-of-speech code, the frame limit
 * (max_frames or the model's max_new_tokens), or the runaway guard. */
typedef enum { QTTS_FINISHED_EOS = 0, QTTS_FINISHED_MAX_FRAMES, QTTS_FINISHED_GUARD } qtts_finish_reason;
typedef enum { QTTS_GUARD_NONE = 0, QTTS_GUARD_LENGTH, QTTS_GUARD_REPETITION } qtts_guard_reason;

typedef struct {
    uint64_t seed;
    int n_frames;
    int input_tokens; /* text tokens of the request's text (without the prompt template) */
    double audio_seconds;
    double queue_ms, prefill_ms, first_audio_ms, total_ms;
    double talker_ms, code_predictor_ms, decoder_ms; /* compute time spent for this request */
    int finished_by_eos;        /* finished_by == QTTS_FINISHED_EOS */
    qtts_finish_reason finished_by;
    qtts_guard_reason guard;    /* which guard, when finished_by == QTTS_FINISHED_GUARD */
    /* The schedule it ran: speech-tokenizer decoder steps (the first, of one
     * frame, included) and how many of them ran beside LM steps (overlap). */
    int decoder_steps, overlapped_decoder_steps;
} qtts_result;

/* "eos", "max_frames", "guard"; and "length", "repetition" (or "none"). */
QTTS_API const char *qtts_finish_reason_name(qtts_finish_reason r);
QTTS_API const char *qtts_guard_reason_name(qtts_guard_reason g);

/* Queues a request; returns at once. Validation errors (unknown speaker,
 * wrong mode, empty text: QTTS_ERR_INVALID; queue full: QTTS_ERR_BUSY) return NULL. */
QTTS_API qtts_stream *qtts_submit(qtts_engine *e, const qtts_request *r, qtts_error *err);
/* Reads up to max samples of 24 kHz mono float audio, waiting up to
 * timeout_ms (-1: forever). Returns the count (>0), 0 at the end of the audio,
 * QTTS_STREAM_TIMEOUT, or QTTS_STREAM_ERROR (see qtts_stream_error). */
#define QTTS_STREAM_TIMEOUT (-2)
#define QTTS_STREAM_ERROR (-1)
QTTS_API long qtts_stream_read(qtts_stream *s, float *buf, size_t max, int timeout_ms);
QTTS_API const char *qtts_stream_error(const qtts_stream *s);
/* QTTS_OK, or why the stream failed (QTTS_ERR_CANCELLED after a cancel). */
QTTS_API qtts_status qtts_stream_status(const qtts_stream *s);
/* Valid once qtts_stream_read returned 0. */
QTTS_API void qtts_stream_result(const qtts_stream *s, qtts_result *out);
/* The generated codes, frame-major [n_frames][16], once qtts_stream_read
 * returned 0 and if the request set keep_codes; NULL otherwise. */
QTTS_API const int32_t *qtts_stream_codes(const qtts_stream *s, size_t *n_frames, int *n_codebooks);
/* Cancels at the next frame boundary; reads then return QTTS_STREAM_ERROR. */
QTTS_API void qtts_stream_cancel(qtts_stream *s);
/* Appends UTF-8 text to a request submitted with text_incomplete (a piece
 * may end inside a character; bytes that cannot be UTF-8 fail the stream
 * once the engine thread reads them, as does a text ending inside one). is_last = 1 ends the text (utf8 may then be empty). Cheap: the
 * engine thread tokenizes. Fails with QTTS_ERR_INVALID on a request that is
 * not incremental, after is_last, or past 64 KiB of text; with the stream's
 * status once it has ended. Not after qtts_engine_free. */
QTTS_API qtts_status qtts_stream_append_text(qtts_stream *s, const char *utf8, size_t len, int is_last,
                                             qtts_error *err);
/* Cancels if still running and frees. */
QTTS_API void qtts_stream_free(qtts_stream *s);

/* Readiness without polling: fn(user) is called after new audio, the end or a
 * failure of the stream, so a reader can sleep in its own event loop and call
 * qtts_stream_read(s, ..., 0) when woken. It runs on the engine thread with
 * the stream's lock held: it must only signal (write an eventfd, set a flag,
 * resume a connection), never compute, block or call a qtts_stream_* function.
 * Setting it when something is already readable calls it once at once (on the
 * caller's thread), so no wake-up is lost; fn NULL removes it, and after that
 * returns it is never called again. One notifier per stream. */
typedef void (*qtts_stream_notify_fn)(void *user);
QTTS_API void qtts_stream_set_notify(qtts_stream *s, qtts_stream_notify_fn fn, void *user);
/* The same for readers that wait on a file descriptor (poll, epoll, asyncio's
 * add_reader): each event writes the 8-byte value 1 to fd, an eventfd or the
 * write end of a non-blocking pipe (a full pipe or EAGAIN is ignored: the
 * reader is already due to wake). The caller owns fd; -1 removes it. */
QTTS_API void qtts_stream_set_notify_fd(qtts_stream *s, int fd);

/* Convenience: submit + read loop. cb runs on the caller's thread with each
 * audio chunk; a non-zero return cancels (QTTS_ERR_CANCELLED). Returns QTTS_OK or err->status. */
typedef int (*qtts_audio_cb)(void *user, const float *samples, size_t n);
QTTS_API qtts_status qtts_synthesize(qtts_engine *e, const qtts_request *r, qtts_audio_cb cb, void *user, qtts_result *out,
                    qtts_error *err);

/* ---- engine statistics (for /metrics) ---- */
typedef struct {
    int active_slots, queued;
    uint64_t requests_done, requests_failed, requests_cancelled;
    double audio_seconds_total;
    uint64_t frames_total;
    /* completed requests by how they ended: eos, max_frames, guard:length, guard:repetition */
    uint64_t finished_eos, finished_max_frames, finished_guard_length, finished_guard_repetition;
    /* completed requests whose talker and code predictor ran on the device (qtts_engine_params.device) */
    uint64_t requests_on_device;
    uint64_t device_memory_peak; /* bytes: the most the device's buffers took at once (0 on the CPU) */
    /* frames the device's speech decoder read where the device LM left their codes, not through the host */
    uint64_t frames_decoded_from_device_codes;
    /* requests' decoder steps run in the same device submission as the frame they decode the last of */
    uint64_t decoder_steps_in_frame_submissions;
} qtts_engine_stats;
QTTS_API void qtts_engine_get_stats(qtts_engine *e, qtts_engine_stats *out);
/* Kernel thread ids of the engine thread and pool workers (engine first). */
QTTS_API int qtts_engine_thread_ids(qtts_engine *e, int *out, int max);

/* ---- audio files and encoding (the encoders the CLI and the server use) ----
 *
 * Formats by name: "wav", "pcm" (headerless little-endian samples, also
 * "raw"), "flac", "opus" (Ogg Opus), "vorbis" (Ogg Vorbis, also "ogg"),
 * "mp3", "aac" (AAC-LC in ADTS), "m4a" (AAC-LC in MP4, also "mp4").
 * Sample formats (wav and pcm; flac stores 16 or 24 bits): NULL or "s16",
 * "f32"; the lossy formats take NULL only. s16 is round(x * 32768) clipped.
 * Opus takes 8000, 12000, 16000, 24000 or 48000 Hz. Encoding is byte work on
 * the caller's thread, not a model computation. Bad names, rates or channel
 * counts are QTTS_ERR_INVALID. */
typedef struct qtts_audio_encoder qtts_audio_encoder;
/* An encoder into memory. streaming = 1: the bytes of every write can be
 * taken at once, to send audio while it is made (a WAV header then says
 * "length unknown", MP3 has no Xing tag, m4a is fragmented MP4); 0: the
 * whole file once finished, every header complete. samples are interleaved
 * frames of `channels`. */
QTTS_API qtts_audio_encoder *qtts_audio_encoder_new(const char *format, const char *sample_format, int sample_rate,
                                                    int channels, int streaming, qtts_error *err);
QTTS_API qtts_status qtts_audio_encoder_write(qtts_audio_encoder *enc, const float *samples, size_t n_frames,
                                              qtts_error *err);
/* Flushes and completes the stream; writes fail after it. */
QTTS_API qtts_status qtts_audio_encoder_finish(qtts_audio_encoder *enc, qtts_error *err);
/* The encoded bytes not taken yet (a streaming encoder's after any write, a
 * non-streaming one's only after finish), *size of them; valid until the
 * next call on enc. NULL with *size 0 when there are none. */
QTTS_API const void *qtts_audio_encoder_take(qtts_audio_encoder *enc, size_t *size);
QTTS_API void qtts_audio_encoder_free(qtts_audio_encoder *enc);
/* Encodes a whole buffer to a file; format NULL: from the extension (.wav
 * .flac .mp3 .opus .ogg .aac .m4a .pcm). */
QTTS_API qtts_status qtts_audio_save(const char *path, const char *format, const char *sample_format,
                                     const float *samples, size_t n_frames, int sample_rate, int channels,
                                     qtts_error *err);

/* Decoded audio, mono. */
typedef struct {
    float *samples; /* owned: qtts_audio_data_free */
    size_t n;
    int sample_rate;
    int source_rate, source_channels; /* the file's */
} qtts_audio_data;
/* Reads any file libsndfile reads (wav, flac, ogg vorbis/opus, mp3, ...):
 * the channels' mean, resampled to sample_rate (0: the file's own rate)
 * with soxr's HQ recipe, as reference audio is. max_seconds > 0 refuses a
 * longer file (before reading it when its header says so); 0: no limit.
 * A missing file is QTTS_ERR_NOT_FOUND; unreadable, empty or non-finite
 * audio QTTS_ERR_INVALID. */
QTTS_API qtts_status qtts_audio_read(const char *path, int sample_rate, double max_seconds, qtts_audio_data *out,
                                     qtts_error *err);
/* The same from an encoded file in memory. */
QTTS_API qtts_status qtts_audio_decode(const void *bytes, size_t size, int sample_rate, double max_seconds,
                                       qtts_audio_data *out, qtts_error *err);
QTTS_API void qtts_audio_data_free(qtts_audio_data *a);

/* ---- voice files ----
 * .spk: the x-vector as little-endian float32, no header. .rvq: reference
 * codes, 16 codebooks x T frames, codebook-major, 11-bit codes packed
 * LSB-first (22 bytes per frame), no header. What `qtts codec encode`
 * writes and `qtts say --ref-spk/--ref-rvq` reads. */

/* A voice of a Base model from its files: rvq_path may be NULL (x-vector
 * cloning only), ref_text is the codes' transcript (NULL: none). */
QTTS_API qtts_voice *qtts_voice_from_files(qtts_engine *e, const char *spk_path, const char *rvq_path,
                                           const char *ref_text, qtts_error *err);
/* Writes v's x-vector to spk_path and, when rvq_path is not NULL, its
 * reference codes to rvq_path (QTTS_ERR_INVALID if it has none). */
QTTS_API qtts_status qtts_voice_save(const qtts_voice *v, const char *spk_path, const char *rvq_path,
                                     qtts_error *err);

/* ---- registered voices ----
 * A directory of named voices, shared with `qtts serve --voices-dir`,
 * `qtts voices` and `qtts say --voice`: NAME.spk, NAME.rvq (when it has
 * reference codes), NAME.json (its transcript). Registration is crash-safe
 * and never overwrites; several processes may share the directory. Names:
 * 1-64 of A-Za-z0-9_.- starting with a letter or digit, no "..". */
typedef struct {
    char name[72];
    size_t xvec_len;      /* floats in NAME.spk */
    int has_codes;        /* NAME.rvq holds reference codes ... */
    size_t n_frames;      /* ... of this many 80 ms frames */
    const char *ref_text; /* the transcript, or NULL */
    int in_context;       /* codes and a transcript: a Base model clones in context, else from the x-vector */
    const char *error;    /* NULL, or why the voice's files are corrupt (the fields above are then partial) */
} qtts_voice_entry;
/* Every voice in dir (corrupt ones too, with error set), sorted by name.
 * A missing directory is QTTS_ERR_NOT_FOUND. */
QTTS_API qtts_status qtts_voices_list(const char *dir, qtts_voice_entry **out, size_t *n, qtts_error *err);
QTTS_API void qtts_voices_list_free(qtts_voice_entry *list, size_t n);
/* The voice NAME of dir for e (a Base model of the voice's size). Unknown
 * names are QTTS_ERR_NOT_FOUND; corrupt files QTTS_ERR_INVALID. */
QTTS_API qtts_voice *qtts_voices_load(qtts_engine *e, const char *dir, const char *name, qtts_error *err);
/* Registers v (a voice of e's model) as NAME: QTTS_ERR_EXISTS if NAME is
 * taken, QTTS_ERR_INVALID for a bad name. */
QTTS_API qtts_status qtts_voices_add(qtts_engine *e, const char *dir, const char *name, const qtts_voice *v,
                                     qtts_error *err);
/* Removes NAME (QTTS_ERR_NOT_FOUND if there is none). */
QTTS_API qtts_status qtts_voices_remove(const char *dir, const char *name, qtts_error *err);

/* ---- model names ----
 * What `qtts -m` accepts: an existing path wins (returned as given);
 * otherwise a short name ("0.6b-custom-voice"), a hub id
 * ("Qwen/Qwen3-TTS-12Hz-0.6B-CustomVoice") or a repository name that
 * `qtts download` put in the cache ($QTTS_HOME, else $XDG_CACHE_HOME/qtts,
 * else ~/.cache/qtts) names that folder. Returns buf, or NULL when nothing
 * exists (buf then holds the cache folder tried, or ""). */
QTTS_API const char *qtts_model_resolve(const char *name_or_path, char *buf, size_t size);

/* ---- bindings ----
 * sizeof of a public struct by its name ("qtts_request", "qtts_engine_params",
 * "qtts_result", "qtts_model_info", "qtts_engine_stats", "qtts_error",
 * "qtts_audio_data", "qtts_voice_entry"), 0 for other names. Structs only
 * grow at their end, and a zero field means its default, so a binding
 * (Python's ctypes) that knows an older prefix of a struct allocates this
 * many zeroed bytes and stays correct. */
QTTS_API size_t qtts_struct_size(const char *name);

#ifdef __cplusplus
}
#endif

#endif
