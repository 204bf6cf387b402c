/* qtts say: text -> speech. Long text is split at sentence boundaries and the
 * pieces are spoken one after another with the same voice and a seed chain,
 * streamed to the output as frames are decoded. All compute runs on the
 * engine thread; this thread only parses, submits and writes bytes. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/encoder.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/interrupt.h"
#include "cli/load_line.h"
#include "cli/progress.h"
#include "cli/say_book.h"
#include "cli/say_script.h"
#include "core/clock.h"
#include "core/sampling_ranges.h"
#include "io/file.h"
#include "io/rvq.h"
#include "io/spk.h"
#include "qtts.h"
#include "voices/voice_files.h"
#include "text/norm_lang.h"
#include "text/normalize.h"
#include "text/split.h"
#include "text/utf8.h"

enum { FADE_SAMPLES = 240 }; /* 10 ms fades where utterances are joined */
/* Input caps: a book is a few MB of text; a 60 s reference is at most ~70 MB even as 96 kHz 32-bit stereo. */
#define MAX_TEXT_BYTES ((size_t)1 << 30)
#define MAX_AUDIO_BYTES ((size_t)256 << 20)

static void say_usage(FILE *out) {
    fprintf(out,
            "usage: qtts say [options] [TEXT]        (TEXT, --file FILE, or standard input)\n"
            "  -m, --model PATH          model folder or .gguf (default $QTTS_MODEL)\n"
            "  -o, --output FILE         output file, '-' = stdout (default out.wav)\n"
            "      --format NAME         wav, flac, mp3, opus, vorbis, aac, m4a, pcm (default: from the\n"
            "                            extension)\n"
            "      --sample-format F     s16 (default) or f32 (wav and pcm)\n"
            "  voice (by model type):\n"
            "      --speaker NAME        CustomVoice built-in speaker\n"
            "      --instruct TEXT       VoiceDesign voice description / CustomVoice 1.7B style\n"
            "      --ref-audio FILE      Base: reference recording to clone\n"
            "      --ref-text TEXT       Base: transcript of the reference (in-context cloning)\n"
            "      --x-vector-only       Base: clone from the speaker embedding alone\n"
            "      --ref-spk FILE.spk    Base: pre-extracted x-vector (instead of --ref-audio)\n"
            "      --ref-rvq FILE.rvq    Base: pre-extracted reference codes (with --ref-spk)\n"
            "      --voice NAME          Base: a registered voice (qtts voices, the server's --voices-dir),\n"
            "                            cloned as the server does; CustomVoice: a built-in speaker\n"
            "      --voices-dir DIR      where registered voices are (default $QTTS_VOICES_DIR)\n"
            "      --lang NAME           language or 'auto' (default auto)\n"
            "      --normalize MODE      full (default: numbers, money, units, dates, markdown, URLs in words),\n"
            "                            basic (markdown, emoji, URLs only) or off; see qtts normalize\n"
            "      --no-normalize        the same as --normalize off\n"
            "      --lexicon FILE        pronunciation lexicon: written<TAB>spoken[<TAB>lang] per line,\n"
            "                            applied before numbers and symbols (docs/text.md); a registered\n"
            "                            --voice's own NAME.lexicon applies over it\n"
            "      --code-blocks skip|read  fenced code in markdown: not read (default) or its lines read\n"
            "      --text-layout L       streaming or non-streaming (default: the official one per mode)\n"
            "  sampling:\n"
            "      --greedy              argmax everywhere (deterministic)\n"
            "      --seed N              random seed (printed when not given)\n"
            "      --temperature F  --top-k N  --top-p F  --repetition-penalty F\n"
            "      --cp-temperature F  --cp-top-k N  --cp-top-p F     (code predictor)\n"
            "      --max-frames N        stop after N frames (80 ms each)\n"
            "      --guard-frames-per-token R  runaway guard: stop after 4 s + R frames per text token\n"
            "                            (default 10 unless --max-frames is given; 0: off)\n"
            "      --no-repetition-guard do not stop when the codes loop (default: stop)\n"
            "  input and output:\n"
            "      --file FILE           read the text from FILE\n"
            "      --stream-by-line      every input line is its own utterance\n"
            "      --script FILE         a dialogue: '[Name] text' or 'Name: text' turns, each in its\n"
            "                            speaker's voice, as one recording (docs/cli.md)\n"
            "      --cast NAME=VOICE     the voice of a script's NAME: a built-in speaker, a registered\n"
            "                            voice or a VoiceDesign description (default: NAME itself)\n"
            "      --pause MS            silence between a script's turns (default 400)\n"
            "      --book FILE           a book (.txt, .md or .epub) read into -o DIR: one file per chapter\n"
            "                            (--format, default mp3) and book.m3u; rerun to resume: finished\n"
            "                            chapters are kept (docs/cli.md)\n"
            "      --m4b                 with --book: also DIR/book.m4b, the chapters in one file with a\n"
            "                            chapter mark each (titles from the headings)\n"
            "      --stream-text         read the text (stdin or --file) as it arrives, e.g. piped from an\n"
            "                            LLM, and speak it as one utterance while it is being written\n"
            "      --save-codes FILE     also write the generated codes (.rvq; single utterance)\n"
            "      --play                play through the system player (aplay, paplay, pw-play or ffplay)\n"
            "                            as audio is decoded (instead of -o)\n"
            "  engine:\n"
            "      --threads N           compute threads (default: all CPUs)\n"
            "      --quant TYPE          weights as f32, bf16, q8_0 or q4_k (default: as stored)\n"
            "      --decoder-precision P auto (default: with q8_0/q4_k weights the fastest measured\n"
            "                            here, see info --cpu; else f32), f32, winograd (f32, ~100 dB\n"
            "                            SNR), winograd-f16 (+ f16 time-major weights, ~53 dB),\n"
            "                            winograd-i16 (+ int16 products, ~44 dB, x86 AVX2) or bf16\n"
            "                            (~33 dB SNR)\n"
            "      --kv-cache T          the talker's KV cache: auto (default: f16 with q8_0/q4_k\n"
            "                            weights, else f32), f32 or f16 (half the memory)\n"
            "      --lora PATH[:SCALE]   merge a PEFT LoRA adapter (folder with adapter_config.json and\n"
            "                            adapter_model.safetensors) into the talker at load; SCALE\n"
            "                            (default 1) multiplies its alpha/r; repeatable\n"
            "      --device D            cpu (default), vulkan, vulkan:N or auto: where the\n"
            "                            requests' talker and code predictor run (qtts info --devices)\n"
            "  -v, --verbose             per-utterance timings    -q, --quiet   no progress line\n");
}

/* Per-utterance warnings printed of each kind; the rest go into one summary line. */
#define WARNINGS_LISTED 3

typedef struct {
    qtts_encoder *enc;
    float tail[FADE_SAMPLES]; /* held back so the utterance's end can fade out when another follows */
    int n_tail;
    int fade_in; /* samples of fade-in still to apply */
    qtts_err err;
    const char *path; /* for messages: the -o file */
} out_state;

/* Writes samples, keeping the last FADE_SAMPLES back while joining is possible. */
static int out_write(out_state *o, const float *x, size_t n, int hold) {
    if (o->fade_in > 0 && n > 0) { /* n == 0 (the final flush) must not recurse: nothing to fade */
        /* fade-in needs a writable copy */
        float buf[FADE_SAMPLES] = {0};
        size_t k = n < (size_t)o->fade_in ? n : (size_t)o->fade_in;
        for (size_t i = 0; i < k; i++) {
            int pos = FADE_SAMPLES - o->fade_in + (int)i;
            buf[i] = x[i] * (float)pos / FADE_SAMPLES;
        }
        o->fade_in -= (int)k;
        if (out_write(o, buf, k, hold)) return -1;
        x += k;
        n -= k;
        if (!n) return 0;
    }
    if (!hold) {
        if (o->n_tail && qtts_encoder_write(o->enc, o->tail, (size_t)o->n_tail, &o->err)) return -1;
        o->n_tail = 0;
        return n ? qtts_encoder_write(o->enc, x, n, &o->err) : 0;
    }
    /* flush what no longer fits in the tail */
    size_t total = (size_t)o->n_tail + n;
    if (total > FADE_SAMPLES) {
        size_t flush = total - FADE_SAMPLES;
        size_t from_tail = flush < (size_t)o->n_tail ? flush : (size_t)o->n_tail;
        if (from_tail && qtts_encoder_write(o->enc, o->tail, from_tail, &o->err)) return -1;
        memmove(o->tail, o->tail + from_tail, ((size_t)o->n_tail - from_tail) * sizeof(float));
        o->n_tail -= (int)from_tail;
        size_t from_x = flush - from_tail;
        if (from_x && qtts_encoder_write(o->enc, x, from_x, &o->err)) return -1;
        x += from_x;
        n -= from_x;
    }
    memcpy(o->tail + o->n_tail, x, n * sizeof(float));
    o->n_tail += (int)n;
    return 0;
}

static int write_to_file(void *user, const void *bytes, size_t n) {
    FILE *f = user;
    return fwrite(bytes, 1, n, f) == n && fflush(f) == 0 ? 0 : -1;
}

/* The first player found on PATH, fed a streaming WAV on its stdin. */
static FILE *open_player(void) {
    static const char *const players[][2] = {
        {"aplay", "aplay -q -"},
        {"paplay", "paplay"},
        {"pw-play", "pw-play -"},
        {"ffplay", "ffplay -nodisp -autoexit -loglevel quiet -"},
    };
    for (size_t i = 0; i < sizeof players / sizeof players[0]; i++) {
        char check[128];
        snprintf(check, sizeof check, "command -v %s >/dev/null 2>&1", players[i][0]);
        if (system(check) == 0) return popen(players[i][1], "w");
    }
    return NULL;
}

/* Everything the command line says; filled by say_parse_args. */
typedef struct {
    const char *model, *output, *format, *sample_format, *file, *save_codes, *quant, *dec_prec, *kv_cache, *device;
    const char *ref_audio, *ref_text, *ref_spk, *ref_rvq;
    const char *voice, *voices_dir; /* --voice: a registered voice (or CustomVoice speaker) */
    int by_line, verbose, quiet, threads, play, output_given, stream_text;
    int m4b; /* --m4b: a chaptered DIR/book.m4b as well */
    const char *script; /* --script FILE */
    const char *lexicon; /* --lexicon FILE (loaded into req.lexicon by cmd_say) */
    const char *book;   /* --book FILE (-o is then a folder) */
    char *cast[64];     /* --cast NAME=VOICE */
    int n_cast, pause_ms;
    cli_lora_list lora; /* --lora */
    qtts_sample_format sfmt;
    qtts_request req;
} say_opts;

/* Everything cmd_say owns; say_cleanup releases all of it on every path. */
typedef struct {
    char *text;
    size_t text_len;
    qtts_split_params sp;
    qtts_text_chunk *chunks;
    long n_chunks;
    FILE *player; /* --play: the player's stdin */
    qtts_engine *e;
    char *audio_bytes; /* --ref-audio file */
    float *xvec;       /* --ref-spk */
    int32_t *ref_codes; /* --ref-rvq */
    qtts_voice *voice;
    say_script script; /* --script: its turns and their voices */
    size_t samples;    /* audio samples streamed so far */
    int n_guarded;     /* utterances the runaway guard ended */
    int n_capped;      /* utterances stopped at --max-frames */
    out_state out; /* out.enc: the encoder while it is open */
    cli_progress pr;
    int normalized; /* the text front end ran on the whole text: chunks go as they are */
    cli_interrupt intr; /* Ctrl-C / SIGTERM: stop at a frame and finish the file */
} say_job;

enum {
    O_LORA = 256, O_FORMAT, O_SAMPLE_FORMAT, O_SPEAKER, O_INSTRUCT, O_REF_AUDIO, O_REF_TEXT, O_XVEC, O_REF_SPK,
    O_REF_RVQ, O_LANG, O_LAYOUT, O_GREEDY, O_SEED, O_TEMP, O_TOPK, O_TOPP, O_REP, O_CPTEMP, O_CPTOPK, O_CPTOPP,
    O_MAXF, O_FILE, O_BYLINE, O_SAVE, O_THREADS, O_QUANT, O_DECPREC, O_KVCACHE, O_DEVICE, O_PLAY, O_VOICE, O_VOICES_DIR,
    O_GUARD_RATIO, O_NO_REPEAT_GUARD, O_STREAM_TEXT, O_SCRIPT, O_CAST, O_PAUSE, O_BOOK, O_NORMALIZE,
    O_NO_NORMALIZE, O_M4B, O_LEXICON, O_CODE_BLOCKS,
};
static const struct option say_options[] = {
    {"model", required_argument, 0, 'm'},      {"output", required_argument, 0, 'o'},
    {"format", required_argument, 0, O_FORMAT}, {"sample-format", required_argument, 0, O_SAMPLE_FORMAT},
    {"speaker", required_argument, 0, O_SPEAKER}, {"instruct", required_argument, 0, O_INSTRUCT},
    {"ref-audio", required_argument, 0, O_REF_AUDIO}, {"ref-text", required_argument, 0, O_REF_TEXT},
    {"x-vector-only", no_argument, 0, O_XVEC}, {"ref-spk", required_argument, 0, O_REF_SPK},
    {"ref-rvq", required_argument, 0, O_REF_RVQ}, {"lang", required_argument, 0, O_LANG},
    {"language", required_argument, 0, O_LANG}, {"text-layout", required_argument, 0, O_LAYOUT},
    {"greedy", no_argument, 0, O_GREEDY},      {"seed", required_argument, 0, O_SEED},
    {"temperature", required_argument, 0, O_TEMP}, {"top-k", required_argument, 0, O_TOPK},
    {"top-p", required_argument, 0, O_TOPP},   {"repetition-penalty", required_argument, 0, O_REP},
    {"cp-temperature", required_argument, 0, O_CPTEMP}, {"cp-top-k", required_argument, 0, O_CPTOPK},
    {"cp-top-p", required_argument, 0, O_CPTOPP}, {"max-frames", required_argument, 0, O_MAXF},
    {"guard-frames-per-token", required_argument, 0, O_GUARD_RATIO},
    {"normalize", required_argument, 0, O_NORMALIZE}, {"no-normalize", no_argument, 0, O_NO_NORMALIZE},
    {"lexicon", required_argument, 0, O_LEXICON}, {"code-blocks", required_argument, 0, O_CODE_BLOCKS},
    {"no-repetition-guard", no_argument, 0, O_NO_REPEAT_GUARD},
    {"file", required_argument, 0, O_FILE},    {"stream-by-line", no_argument, 0, O_BYLINE},
    {"stream-text", no_argument, 0, O_STREAM_TEXT},
    {"script", required_argument, 0, O_SCRIPT}, {"cast", required_argument, 0, O_CAST},
    {"pause", required_argument, 0, O_PAUSE},  {"book", required_argument, 0, O_BOOK},
    {"m4b", no_argument, 0, O_M4B},
    {"save-codes", required_argument, 0, O_SAVE}, {"threads", required_argument, 0, O_THREADS},
    {"quant", required_argument, 0, O_QUANT},  {"decoder-precision", required_argument, 0, O_DECPREC},
    {"kv-cache", required_argument, 0, O_KVCACHE}, {"lora", required_argument, 0, O_LORA},
    {"kv-cache", required_argument, 0, O_KVCACHE},
    {"device", required_argument, 0, O_DEVICE},
    {"play", no_argument, 0, O_PLAY},          {"voice", required_argument, 0, O_VOICE},
    {"voices-dir", required_argument, 0, O_VOICES_DIR}, {"verbose", no_argument, 0, 'v'},
    {"quiet", no_argument, 0, 'q'},            {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0},
};

static int parse_layout(const char *v, qtts_text_layout *out) {
    if (!strcmp(v, "streaming")) *out = QTTS_LAYOUT_STREAMING;
    else if (!strcmp(v, "non-streaming")) *out = QTTS_LAYOUT_NON_STREAMING;
    else {
        cli_error("--text-layout: expected streaming or non-streaming, got '%s'", v);
        return -1;
    }
    return 0;
}

/* Options into o; the text argument, if any, stays at argv[optind]. */
static int say_parse_args(int argc, char **argv, say_opts *o) {
    memset(o, 0, sizeof *o);
    o->output = "out.wav";
    o->sample_format = "s16";
    o->pause_ms = 400;
    qtts_request *r = &o->req;
    qtts_request_default(r);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":m:o:vqh", say_options, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'm': o->model = optarg; break;
        case 'o': o->output = optarg; o->output_given = 1; break;
        case O_FORMAT: o->format = optarg; break;
        case O_SAMPLE_FORMAT: o->sample_format = optarg; break;
        case O_SPEAKER: r->speaker = optarg; break;
        case O_INSTRUCT: r->instruct = optarg; break;
        case O_REF_AUDIO: o->ref_audio = optarg; break;
        case O_REF_TEXT: o->ref_text = optarg; break;
        case O_XVEC: r->x_vector_only = 1; break;
        case O_REF_SPK: o->ref_spk = optarg; break;
        case O_REF_RVQ: o->ref_rvq = optarg; break;
        case O_LANG: r->language = optarg; break;
        case O_NORMALIZE: {
            int m = qtts_norm_mode_parse(optarg);
            if (m < 0) cli_error("--normalize takes off, basic or full, not '%s'", optarg), bad = 1;
            else r->normalize = qtts_norm_request_mode((qtts_norm_mode)m);
            break;
        }
        case O_NO_NORMALIZE: r->normalize = QTTS_NORMALIZE_OFF; break;
        case O_LEXICON: o->lexicon = optarg; break;
        case O_CODE_BLOCKS:
            if (strcmp(optarg, "skip") && strcmp(optarg, "read"))
                cli_error("--code-blocks takes skip or read, not '%s'", optarg), bad = 1;
            else r->code_blocks = !strcmp(optarg, "read") ? QTTS_CODE_BLOCKS_READ : QTTS_CODE_BLOCKS_SKIP;
            break;
        case O_LAYOUT: bad = parse_layout(optarg, &r->layout); break;
        case O_GREEDY: r->greedy = 1; break;
        case O_SEED: bad = cli_u64("--seed", optarg, &r->seed); r->has_seed = 1; break;
        case O_TEMP: /* 0 means greedy, as in the HTTP API */
            bad = cli_float("--temperature", optarg, 0, QTTS_TEMPERATURE_MAX, &r->temperature);
            if (!bad && r->temperature == 0) r->greedy = 1;
            break;
        case O_TOPK: bad = cli_int_to("--top-k", optarg, 0, QTTS_TOP_K_MAX, &r->top_k); break; /* 0: the model's */
        case O_TOPP: bad = cli_float("--top-p", optarg, QTTS_TOP_P_MIN, 1, &r->top_p); break;
        case O_REP:
            bad = cli_float("--repetition-penalty", optarg, QTTS_REPETITION_PENALTY_MIN, QTTS_REPETITION_PENALTY_MAX,
                            &r->repetition_penalty);
            break;
        case O_CPTEMP: bad = cli_float("--cp-temperature", optarg, 1e-3, 100, &r->cp_temperature); break;
        case O_CPTOPK: bad = cli_int_to("--cp-top-k", optarg, 0, 1 << 20, &r->cp_top_k); break;
        case O_CPTOPP: bad = cli_float("--cp-top-p", optarg, 1e-6, 1, &r->cp_top_p); break;
        case O_MAXF: bad = cli_int_to("--max-frames", optarg, 1, QTTS_MAX_FRAMES_MAX, &r->max_frames); break;
        case O_GUARD_RATIO:
            if (!(bad = cli_float("--guard-frames-per-token", optarg, 0, 1000, &r->guard_frames_per_token)) &&
                r->guard_frames_per_token == 0)
                r->guard_frames_per_token = -1.0f; /* 0 on the command line: off */
            break;
        case O_NO_REPEAT_GUARD: r->no_repetition_guard = 1; break;
        case O_FILE: o->file = optarg; break;
        case O_BYLINE: o->by_line = 1; break;
        case O_STREAM_TEXT: o->stream_text = 1; break;
        case O_SCRIPT: o->script = optarg; break;
        case O_BOOK: o->book = optarg; break;
        case O_M4B: o->m4b = 1; break;
        case O_CAST:
            if (o->n_cast == (int)(sizeof o->cast / sizeof o->cast[0])) {
                cli_error("--cast: at most %d names", (int)(sizeof o->cast / sizeof o->cast[0]));
                bad = 1;
            } else {
                o->cast[o->n_cast++] = optarg;
            }
            break;
        case O_PAUSE: bad = cli_int_to("--pause", optarg, 0, 60000, &o->pause_ms); break;
        case O_SAVE: o->save_codes = optarg; break;
        case O_THREADS: bad = cli_int_to("--threads", optarg, 1, 256, &o->threads); break;
        case O_QUANT: o->quant = optarg; break;
        case O_DECPREC: bad = cli_check_decoder_precision(optarg); o->dec_prec = optarg; break;
        case O_KVCACHE: bad = cli_check_kv_cache(optarg); o->kv_cache = optarg; break;
        case O_LORA: bad = cli_add_lora(&o->lora, optarg); break;
        case O_DEVICE: bad = cli_check_device(optarg); o->device = optarg; break;
        case O_PLAY: o->play = 1; break;
        case O_VOICE: o->voice = optarg; break;
        case O_VOICES_DIR: o->voices_dir = optarg; break;
        case 'v': o->verbose = 1; break;
        case 'q': o->quiet = 1; break;
        case 'h': say_usage(stdout); return CLI_OK;
        case ':': cli_error("say: option '%s' needs a value", argv[optind - 1]); return CLI_USAGE;
        default: cli_error("say: unknown option '%s' (see 'qtts say --help')", argv[optind - 1]); return CLI_USAGE;
        }
        if (bad) return CLI_USAGE; /* the parser printed why */
    }
    return CLI_CONTINUE;
}

/* Option combinations that are wrong whatever the text and the model. */
/* The files are checked before the model loads (seconds for a real-size one):
 * reference inputs readable, the -o file creatable. */
static int say_check_files(const say_opts *o) {
    const char *inputs[] = {o->ref_audio, o->ref_spk, o->ref_rvq};
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
        if (inputs[i] && strcmp(inputs[i], "-") && access(inputs[i], R_OK)) {
            cli_error("%s: cannot open: %s", inputs[i], strerror(errno));
            return CLI_FAIL;
        }
    if (o->play || o->book || !strcmp(o->output, "-")) return CLI_CONTINUE;
    char dir[PATH_MAX];
    const char *slash = strrchr(o->output, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - o->output) + 1 : 1, slash ? o->output : ".");
    int bad = access(o->output, F_OK) ? access(dir, W_OK | X_OK) : access(o->output, W_OK);
    if (bad) {
        cli_error("%s: cannot create: %s", o->output, strerror(errno));
        return CLI_FAIL;
    }
    return CLI_CONTINUE;
}

static int say_check_opts(say_opts *o) {
    const char *why = NULL;
    if (o->voice && (o->ref_audio || o->ref_spk || o->ref_rvq || o->req.speaker))
        why = "--voice and --ref-audio/--ref-spk/--ref-rvq/--speaker exclude each other (give one voice)";
    else if (o->voice && o->ref_text)
        why = "--voice brings its own transcript; --ref-text goes with --ref-audio or --ref-spk";
    else if ((o->ref_audio || o->ref_spk) && o->req.speaker) why = "--speaker and reference audio exclude each other";
    else if (o->ref_audio && o->ref_spk) why = "give --ref-audio or --ref-spk/--ref-rvq, not both";
    else if (o->ref_rvq && !o->ref_spk) why = "--ref-rvq needs --ref-spk";
    else if (o->ref_spk && o->ref_text && !o->ref_rvq && !o->req.x_vector_only)
        why = "--ref-text with --ref-spk needs --ref-rvq (in-context cloning needs the reference codes)";
    else if (o->ref_spk && o->ref_rvq && !o->ref_text)
        why = "--ref-rvq needs --ref-text, the transcript of the reference (or drop --ref-rvq for x-vector cloning)";
    else if (o->ref_text && !o->ref_audio && !o->ref_spk) why = "--ref-text needs --ref-audio or --ref-spk";
    else if (o->req.x_vector_only && !o->ref_audio && !o->ref_spk && !o->voice)
        why = "--x-vector-only needs --ref-audio, --ref-spk or --voice";
    else if (o->ref_text && o->req.x_vector_only) why = "--ref-text and --x-vector-only exclude each other";
    else if (o->play && o->output_given) why = "--play and -o exclude each other";
    else if (o->script && (o->voice || o->ref_audio || o->ref_spk || o->req.speaker || o->req.instruct))
        why = "--script takes each turn's voice from its tag and --cast (no --voice/--speaker/--instruct/--ref-*)";
    else if (o->script && (o->file || o->by_line || o->stream_text || o->save_codes))
        why = "--script reads its own file (no --file, --stream-by-line, --stream-text or --save-codes)";
    else if (o->n_cast && !o->script) why = "--cast goes with --script";
    else if (o->book && (o->script || o->file || o->by_line || o->stream_text || o->save_codes || o->play))
        why = "--book reads its own file (no --script, --file, --stream-*, --save-codes or --play)";
    else if (o->book && !o->output_given) why = "--book needs -o DIR, the folder of the chapter files";
    else if (o->m4b && !o->book) why = "--m4b goes with --book";
    else if (o->m4b && o->format && (!strcasecmp(o->format, "aac") || !strcasecmp(o->format, "m4a") ||
                                     !strcasecmp(o->format, "mp4") || !strcasecmp(o->format, "m4b") ||
                                     !strcasecmp(o->format, "pcm") || !strcasecmp(o->format, "raw")))
        why = "--m4b reads the chapter files back: give them a --format libsndfile reads (wav, flac, mp3, opus, "
              "vorbis; flac keeps book.m4b from being encoded twice lossily)";
    if (why) {
        cli_error("say: %s", why);
        return CLI_USAGE;
    }
    if (o->voice && !srv_voice_name_ok(o->voice)) { /* never a path: no '/', no ".." */
        cli_error("say: --voice '%.80s' is not a voice name (1-64 characters of A-Z a-z 0-9 _ - . starting with a "
                  "letter or digit, without '..')",
                  o->voice);
        return CLI_USAGE;
    }
    if (qtts_sample_format_parse(o->sample_format, &o->sfmt)) {
        cli_error("--sample-format: expected s16 or f32, got '%s'", o->sample_format);
        return CLI_USAGE;
    }
    static const char *const quants[] = {"auto", "f32", "bf16", "q8_0", "q4_k"};
    int quant_ok = !o->quant;
    for (size_t i = 0; !quant_ok && i < sizeof quants / sizeof quants[0]; i++) quant_ok = !strcmp(o->quant, quants[i]);
    if (!quant_ok) {
        cli_error("--quant: expected auto, f32, bf16, q8_0 or q4_k, got '%s'", o->quant);
        return CLI_USAGE;
    }
    if (o->book && !o->format) o->format = "mp3"; /* -o is a folder */
    qtts_audio_format fmt = QTTS_AUDIO_WAV;
    qtts_err fe = {0};
    if (!o->play && (o->format ? qtts_audio_format_parse(o->format, &fmt, &fe)
                               : strcmp(o->output, "-") && qtts_audio_format_from_path(o->output, &fmt, &fe))) {
        cli_error("%s", fe.msg);
        return CLI_USAGE;
    }
    if (!o->play && qtts_audio_format_available(fmt, &fe)) { /* before the model loads */
        cli_error("%s", fe.msg);
        return CLI_FAIL;
    }
    if (o->sfmt == QTTS_SAMPLE_F32 && (fmt == QTTS_AUDIO_MP3 || fmt == QTTS_AUDIO_OPUS || fmt == QTTS_AUDIO_VORBIS ||
                                      fmt == QTTS_AUDIO_AAC || fmt == QTTS_AUDIO_M4A)) {
        cli_error("--sample-format f32 applies to wav, pcm and flac output, not %s", qtts_audio_format_name(fmt));
        return CLI_USAGE;
    }
    if (!o->play && !strcmp(o->output, "-") && isatty(STDOUT_FILENO)) { /* audio bytes would garble the terminal */
        cli_error("-o -: standard output is a terminal; pipe it (| ffplay -) or redirect it (> out.wav)");
        return CLI_USAGE;
    }
    return say_check_files(o);
}

/* The text (argument, --file or standard input), split into utterances. */
static int say_read_text(const say_opts *o, int argc, char **argv, say_job *j) {
    qtts_err qe = {0};
    if (o->script && optind < argc) {
        cli_error("say: give the text either as an argument or with --script, not both");
        return CLI_USAGE;
    }
    if (optind < argc) {
        if (o->file || optind + 1 < argc) {
            cli_error(o->file ? "say: give the text either as an argument or with --file, not both"
                              : "say: more than one text argument (quote the text)");
            return CLI_USAGE;
        }
        j->text = strdup(argv[optind]);
        j->text_len = j->text ? strlen(j->text) : 0;
    } else {
        if (!o->script && (!o->file || !strcmp(o->file, "-")) && isatty(STDIN_FILENO)) /* otherwise it looks like a hang */
            fprintf(stderr, "qtts: reading the text from standard input (Ctrl-D to end)\n");
        if (qtts_read_file(o->script ? o->script : o->file ? o->file : "-", MAX_TEXT_BYTES, &j->text, &j->text_len,
                           &qe)) {
            cli_error("%s", qe.msg);
            return CLI_FAIL;
        }
    }
    if (!j->text) {
        cli_error("out of memory reading the text");
        return CLI_FAIL;
    }
    /* a UTF-8 byte order mark (Windows editors write one) marks the encoding; it is not text to speak */
    if (optind >= argc && j->text_len >= 3 && !memcmp(j->text, "\xEF\xBB\xBF", 3)) {
        memmove(j->text, j->text + 3, j->text_len - 2);
        j->text_len -= 3;
    }
    if (strlen(j->text) != j->text_len) {
        cli_error("the text contains a NUL byte");
        return CLI_FAIL;
    }
    /* All of it now, before minutes of synthesis: the offset is in the user's text. */
    size_t bad = qtts_utf8_check(j->text, j->text_len);
    if (bad != j->text_len) {
        cli_error("%s: not valid UTF-8 (byte 0x%02X at offset %zu)",
                  o->script ? o->script : o->file ? o->file : "the text", (unsigned char)j->text[bad], bad);
        return CLI_FAIL;
    }
    if (o->script) { /* the turns, joined: the text to split */
        char *joined = NULL;
        if (say_script_parse(o->script, j->text, j->text_len, &j->script, &joined, &j->text_len)) return CLI_FAIL;
        free(j->text);
        j->text = joined;
        /* the turns' offsets index this text: each chunk is normalized by the engine at submit */
    } else if (o->req.normalize != QTTS_NORMALIZE_OFF) {
        /* before the splitter, so a chunk never ends inside a number; the chunks then go as they are */
        const char *lang = qtts_norm_lang_find(o->req.language) ? o->req.language : "auto";
        size_t n = 0;
        qtts_norm_opts no = {.lexicon = o->req.lexicon, .read_code = o->req.code_blocks == QTTS_CODE_BLOCKS_READ};
        char *norm = qtts_text_normalize_opts(j->text, j->text_len, lang,
                                              (qtts_norm_mode)qtts_norm_mode_of_request(o->req.normalize), &no,
                                              &n, &qe);
        if (!norm) {
            cli_error("normalizing the text: %s", qe.msg);
            return CLI_FAIL;
        }
        if (o->verbose) fprintf(stderr, "normalized: %s\n", norm);
        free(j->text);
        j->text = norm, j->text_len = n;
        j->normalized = 1;
    }
    qtts_split_params_default(&j->sp);
    j->sp.by_line = o->by_line;
    j->n_chunks = qtts_text_split(j->text, j->text_len, &j->sp, &j->chunks, &qe);
    if (j->n_chunks < 0) {
        cli_error("%s", qe.msg);
        return CLI_FAIL;
    }
    if (j->n_chunks == 0) {
        cli_error("say: the text is empty");
        return CLI_USAGE;
    }
    if (o->save_codes && j->n_chunks > 1) {
        cli_error("--save-codes needs a single utterance, but the text splits into %ld", j->n_chunks);
        return CLI_USAGE;
    }
    return CLI_CONTINUE;
}

static int say_start_engine(const say_opts *o, say_job *j) {
    char model_buf[PATH_MAX];
    qtts_error err = {0};
    qtts_engine_params ep;
    qtts_engine_params_default(&ep);
    ep.model_path = cli_resolve_model(o->model, model_buf, sizeof model_buf);
    if (!ep.model_path) return cli_model_path(o->model) ? CLI_FAIL : CLI_USAGE; /* it said why */
    if (o->play && !(j->player = open_player())) {
        cli_error("say: --play found no audio player (install alsa-utils, pulseaudio-utils, pipewire or ffmpeg)");
        return CLI_FAIL;
    }
    ep.n_threads = o->threads;
    ep.weight_type = o->quant;
    ep.decoder_precision = o->dec_prec;
    ep.kv_cache = o->kv_cache;
    ep.lora = o->lora.spec;
    ep.n_lora = o->lora.n;
    ep.device = o->device;
    ep.max_batch = 1;
    ep.verbose = o->verbose;
    cli_load_line ll;
    if (!o->quiet) cli_load_line_attach(&ll, &ep);
    j->e = qtts_engine_create(&ep, &err);
    if (!o->quiet) cli_load_line_clear(&ll);
    if (!j->e) {
        cli_error("%s", err.message);
        return CLI_FAIL;
    }
    if (o->verbose) {
        const qtts_model_info *mi = qtts_engine_info(j->e);
        fprintf(stderr, "qtts: %s %s model, weights %s, decoder %s, KV cache %s, %d threads\n", mi->size, mi->variant,
                mi->weight_type, mi->decoder_precision, mi->kv_cache, mi->n_threads);
        if (mi->load_report) fprintf(stderr, "qtts: %s\n", mi->load_report);
    }
    return CLI_CONTINUE;
}

/* --voice NAME with a CustomVoice model: a built-in speaker's name is taken as
 * --speaker (the server's "voice" does the same); anything else is an error
 * that says what the name is. */
static int say_voice_as_speaker(say_opts *o, const qtts_model_info *mi, const char *dir) {
    for (int i = 0; i < mi->n_speakers; i++)
        if (!strcasecmp(o->voice, mi->speakers[i])) {
            if (o->req.x_vector_only) {
                cli_error("say: --x-vector-only applies to Base models (voice cloning)");
                return CLI_USAGE;
            }
            o->req.speaker = mi->speakers[i];
            return CLI_CONTINUE;
        }
    char names[1024];
    size_t used = 0;
    names[0] = 0;
    for (int i = 0; i < mi->n_speakers && used < sizeof names; i++) {
        int w = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", mi->speakers[i]);
        used += w > 0 ? (size_t)w : 0;
    }
    struct stat st;
    int registered = dir && srv_voice_files_stat(dir, o->voice, &st) == 0;
    cli_error("say: --voice '%s' is %s; this CustomVoice model's speakers: %s", o->voice,
              registered ? "a registered (cloned) voice, which needs a Base model" : "not a built-in speaker",
              names);
    return CLI_FAIL;
}

/* --voice NAME: with a Base model the registered voice NAME of the voices
 * directory, read by the server's own loader (voices/voice_files.h) and
 * cloned by the same rule: in context when it holds reference codes and a
 * transcript (unless --x-vector-only), else from its x-vector alone. */
static int say_registered_voice(say_opts *o, say_job *j) {
    const qtts_model_info *mi = qtts_engine_info(j->e);
    const char *dir = cli_voices_dir(o->voices_dir);
    if (!strcmp(mi->variant, "custom_voice")) return say_voice_as_speaker(o, mi, dir);
    if (strcmp(mi->variant, "base")) {
        cli_error("say: --voice needs a Base model (registered voices) or a CustomVoice model (built-in speakers); "
                  "a %s model takes the voice from --instruct",
                  mi->variant);
        return CLI_FAIL;
    }
    if (!dir) {
        cli_error("say: --voice %s needs the voices directory: --voices-dir DIR or $QTTS_VOICES_DIR", o->voice);
        return CLI_USAGE;
    }
    srv_voice_file_info info;
    char err[512];
    int rc = srv_voice_files_info(dir, o->voice, &info, err, sizeof err); /* unknown vs. missing dir vs. corrupt */
    if (rc == -2) cli_unknown_voice(dir, o->voice);
    else if (rc) cli_error("%s", err);
    if (rc) return CLI_FAIL;
    srv_voice_files_info_free(&info);
    if (!(j->voice = srv_voice_files_load(j->e, dir, o->voice, err, sizeof err))) {
        cli_error("voice '%s' in %s does not load: %s (remove it with 'qtts voices rm %s')", o->voice, dir, err,
                  o->voice);
        return CLI_FAIL;
    }
    if (o->verbose) {
        size_t n_frames = 0;
        const int32_t *codes = qtts_voice_codes(j->voice, &n_frames);
        int icl = codes && n_frames && qtts_voice_ref_text(j->voice) && !o->req.x_vector_only;
        fprintf(stderr, "qtts: voice '%s' from %s: %s (%zu reference frames)\n", o->voice, dir,
                icl ? "in-context cloning" : "x-vector-only cloning", n_frames);
    }
    return CLI_CONTINUE;
}

/* Base models: the voice from --ref-audio, from --ref-spk (+ --ref-rvq) or
 * --voice (which also takes CustomVoice speakers). */
static int say_load_voice(say_opts *o, say_job *j) {
    qtts_error err = {0};
    qtts_err qe = {0};
    if (o->script)
        return say_script_cast(&j->script, j->e, o->cast, o->n_cast, cli_voices_dir(o->voices_dir), o->script)
                   ? CLI_FAIL
                   : CLI_CONTINUE;
    if (o->voice) {
        int rc = say_registered_voice(o, j);
        if (rc != CLI_CONTINUE) return rc;
    } else if (o->ref_audio) {
        size_t n = 0;
        if (qtts_read_file(o->ref_audio, MAX_AUDIO_BYTES, &j->audio_bytes, &n, &qe)) {
            cli_error("%s", qe.msg);
            return CLI_FAIL;
        }
        const char *ref_text = o->req.x_vector_only ? NULL : o->ref_text;
        if (!(j->voice = qtts_voice_from_audio_bytes(j->e, j->audio_bytes, n, ref_text, &err))) {
            cli_error("%s: %s", o->ref_audio, err.message);
            return CLI_FAIL;
        }
    } else if (o->ref_spk) {
        const qtts_model_info *mi = qtts_engine_info(j->e); /* the .rvq geometry is the model's */
        int64_t dim = 0, T = 0;
        if (!(j->xvec = qtts_spk_read(o->ref_spk, mi->hidden_size, &dim, &qe)) ||
            (o->ref_rvq && qtts_rvq_read(o->ref_rvq, mi->n_codebooks, mi->codebook_size, &j->ref_codes, &T, &qe))) {
            cli_error("%s", qe.msg);
            return CLI_FAIL;
        }
        j->voice = qtts_voice_from_parts(j->e, j->xvec, (size_t)dim, j->ref_codes, (size_t)T, o->ref_text, &err);
        if (!j->voice) {
            cli_error("%s", err.message);
            return CLI_FAIL;
        }
    }
    o->req.voice = j->voice;
    /* no transcript: x-vector (a registered voice decides for itself, as on the server) */
    if (j->voice && !o->voice && !o->req.x_vector_only && !o->ref_text) o->req.x_vector_only = 1;
    return CLI_CONTINUE;
}

/* What this model's mode needs, in the CLI's own flags (the engine's messages
 * name the request fields). A script casts per turn and is checked there. */
static int say_check_mode(const say_opts *o, const say_job *j) {
    const char *variant = qtts_engine_info(j->e)->variant;
    if (o->script) return CLI_CONTINUE;
    if (!strcmp(variant, "voice_design") && (!o->req.instruct || !*o->req.instruct)) {
        cli_error("say: this VoiceDesign model needs --instruct TEXT describing the voice");
        return CLI_USAGE;
    }
    if (!strcmp(variant, "base") && o->req.speaker && *o->req.speaker && !o->req.voice) {
        cli_error("say: --speaker names a CustomVoice model's built-in speaker; this Base model clones a voice: give "
                  "--ref-audio FILE, --ref-spk FILE or --voice NAME");
        return CLI_USAGE;
    }
    if (!strcmp(variant, "base") && !o->req.voice) {
        cli_error("say: this Base model clones a voice: give --ref-audio FILE, --ref-spk FILE or --voice NAME");
        return CLI_USAGE;
    }
    if (!strcmp(variant, "base") && o->req.instruct && *o->req.instruct) {
        cli_error("say: --instruct is not supported when cloning a voice (a Base model)");
        return CLI_USAGE;
    }
    return CLI_CONTINUE;
}

/* Without --seed: one seed for the whole job, printed so the run can be repeated. */
static void say_draw_seed(say_opts *o) {
    if (o->req.has_seed) return;
    FILE *ur = fopen("/dev/urandom", "rb");
    uint64_t s = 0;
    if (!ur || fread(&s, sizeof s, 1, ur) != 1) s = (uint64_t)qtts_now_s() * 1000003u;
    if (ur) fclose(ur);
    o->req.seed = s & QTTS_SEED_EXACT_MAX; /* exact as a JSON number for the server and Wyoming too */
    o->req.has_seed = 1;
    if (!o->req.greedy && !o->quiet) fprintf(stderr, "qtts: seed %llu\n", (unsigned long long)o->req.seed);
}

/* The encoder: a streaming WAV into the player, or the -o file. */
static int say_open_output(const say_opts *o, say_job *j) {
    qtts_err qe = {0};
    j->out.path = j->player ? "the player" : strcmp(o->output, "-") ? o->output : "standard output";
    int sr = qtts_engine_info(j->e)->sample_rate;
    if (j->player) {
        qtts_audio_sink sink = {.write = write_to_file, .seek = NULL, .user = j->player};
        j->out.enc = qtts_encoder_open(QTTS_AUDIO_WAV, QTTS_SAMPLE_S16, sr, 1, &sink, &qe);
    } else {
        j->out.enc = qtts_encoder_open_file(o->output, o->format, o->sfmt, sr, 1, &qe);
    }
    if (!j->out.enc) {
        cli_error("%s", qe.msg);
        return CLI_FAIL;
    }
    return CLI_CONTINUE;
}

static void say_print_timings(long i, const qtts_result *res) {
    fprintf(stderr,
            "qtts: utterance %ld: %d frames (%.2f s audio%s), queue %.0f ms, first audio %.0f ms, total %.0f "
            "ms (RTF %.3f); prefill %.1f ms, talker %.1f ms, code predictor %.1f ms, decoder %.1f ms; "
            "seed %llu\n",
            i + 1, res->n_frames, res->audio_seconds,
            res->finished_by == QTTS_FINISHED_EOS          ? ", ended by EOS"
            : res->finished_by == QTTS_FINISHED_MAX_FRAMES ? ", frame limit"
            : res->guard == QTTS_GUARD_LENGTH              ? ", runaway guard: length"
                                                           : ", runaway guard: repetition",
            res->queue_ms, res->first_audio_ms, res->total_ms,
            res->audio_seconds > 0 ? res->total_ms / 1e3 / res->audio_seconds : 0.0, res->prefill_ms,
            res->talker_ms, res->code_predictor_ms, res->decoder_ms, (unsigned long long)res->seed);
}

static int save_codes(const char *path, const qtts_stream *st) {
    qtts_err qe = {0};
    size_t nf = 0;
    int g = 0;
    const int32_t *codes = qtts_stream_codes(st, &nf, &g);
    if (!codes || qtts_rvq_write(path, codes, g, (int64_t)nf, &qe)) {
        cli_error("%s", codes ? qe.msg : "no codes were generated");
        return -1;
    }
    return 0;
}

/* Whether chunk i + 1 continues chunk i's voice (joined with short fades);
 * a script's next turn instead follows after a pause of silence. */
static int joins_next(const say_job *j, long i) {
    if (i + 1 >= j->n_chunks) return 0;
    if (!j->script.d.n) return 1;
    return say_script_turn_of(&j->script, j->chunks[i].start) ==
           say_script_turn_of(&j->script, j->chunks[i + 1].start);
}

/* Streams one utterance's audio to the output; -1 after printing the error. */
static int say_stream_audio(say_job *j, qtts_stream *st, long i) {
    const qtts_model_info *mi = qtts_engine_info(j->e);
    if (i > 0 && joins_next(j, i - 1)) j->out.fade_in = FADE_SAMPLES;
    float buf[8192];
    size_t samples = 0;
    long n;
    /* a short wait, so that a signal is seen within a tenth of a second even during a long prefill */
    while ((n = qtts_stream_read(st, buf, sizeof buf / sizeof buf[0], 100)) > 0 || n == QTTS_STREAM_TIMEOUT) {
        if (cli_interrupt_signal(&j->intr)) {
            qtts_stream_cancel(st);
            cli_progress_clear(&j->pr);
            return -1; /* say_cleanup reports it */
        }
        if (n == QTTS_STREAM_TIMEOUT) continue;
        samples += (size_t)n;
        j->samples += (size_t)n;
        if (out_write(&j->out, buf, (size_t)n, joins_next(j, i))) break;
        cli_progress_update(&j->pr, (int)(samples / (size_t)mi->frame_samples), (double)samples / mi->sample_rate);
    }
    if (n != 0) {
        cli_progress_clear(&j->pr);
        if (n < 0) cli_error("%s", qtts_stream_error(st));
        else cli_error("%s: %s", j->out.path, j->out.err.msg);
        return -1;
    }
    return 0;
}

/* --pause MS of silence between a script's turns. */
static int say_write_pause(const say_opts *o, say_job *j) {
    static const float zeros[1024];
    size_t n = (size_t)((long long)o->pause_ms * qtts_engine_info(j->e)->sample_rate / 1000);
    while (n) {
        size_t k = n < 1024 ? n : 1024;
        if (out_write(&j->out, zeros, k, 0)) {
            cli_error("%s: %s", o->output, j->out.err.msg);
            return -1;
        }
        n -= k;
    }
    return 0;
}

/* Speaks utterance i with seed base_seed + i (the seed chain). */
static int say_utterance(const say_opts *o, say_job *j, long i, uint64_t base_seed) {
    qtts_err qe = {0};
    qtts_error err = {0};
    const qtts_text_chunk ch = j->chunks[i];
    char *piece = qtts_text_chunk_dup(j->text, ch, &qe);
    if (!piece) {
        cli_error("%s", qe.msg);
        return -1;
    }
    qtts_request req = o->req;
    req.text = piece;
    if (j->normalized) req.normalize = QTTS_NORMALIZE_OFF; /* done once for the whole text */
    req.seed = base_seed + (uint64_t)i;
    req.keep_codes = o->save_codes != NULL;
    if (j->script.d.n) { /* the turn's voice */
        const say_turn_voice *tv = &j->script.tv[say_script_turn_of(&j->script, ch.start)];
        req.speaker = tv->speaker;
        req.voice = tv->voice;
        req.instruct = tv->instruct;
    }
    cli_progress_begin(&j->pr, (int)i, qtts_text_units(j->text + ch.start, ch.len, j->sp.cjk_weight));
    int rc = -1;
    qtts_stream *st = qtts_submit(j->e, &req, &err);
    if (!st) {
        cli_progress_clear(&j->pr);
        cli_error("%s", err.message);
    } else if (!say_stream_audio(j, st, i)) {
        qtts_result res;
        qtts_stream_result(st, &res);
        cli_progress_end(&j->pr, res.n_frames, res.audio_seconds);
        out_state *out = &j->out;
        if (joins_next(j, i) && out->n_tail) /* fade out the held-back end before the next utterance */
            for (int k = 0; k < out->n_tail; k++) out->tail[k] *= (float)(out->n_tail - k) / (float)out->n_tail;
        else if (i + 1 < j->n_chunks && say_write_pause(o, j)) /* a script's next turn */
            rc = -2;
        if (o->verbose) say_print_timings(i, &res);
        if (res.finished_by == QTTS_FINISHED_MAX_FRAMES) j->n_capped++;
        if (res.finished_by == QTTS_FINISHED_MAX_FRAMES && j->n_capped <= WARNINGS_LISTED) {
            cli_progress_clear(&j->pr);
            fprintf(stderr, "qtts: warning: utterance %ld stopped at the frame limit (%d frames), not at the end of "
                            "speech; raise --max-frames if it is cut short\n", i + 1, res.n_frames);
        }
        if (res.finished_by == QTTS_FINISHED_GUARD) j->n_guarded++;
        if (res.finished_by == QTTS_FINISHED_GUARD && j->n_guarded <= WARNINGS_LISTED) {
            cli_progress_clear(&j->pr);
            fprintf(stderr,
                    "qtts: warning: utterance %ld was ended by the runaway guard after %d frames (%s); %s changes "
                    "it\n",
                    i + 1, res.n_frames,
                    res.guard == QTTS_GUARD_LENGTH ? "far longer than its text" : "its codes were looping",
                    res.guard == QTTS_GUARD_LENGTH ? "--guard-frames-per-token R (0: off)" : "--no-repetition-guard");
        }
        if (rc != -2) rc = o->save_codes ? save_codes(o->save_codes, st) : 0;
        else rc = -1;
    }
    qtts_stream_free(st);
    free(piece);
    return rc;
}

/* --stream-text: the text source's bytes go to the engine as they arrive. */
typedef struct {
    int fd;
    qtts_stream *st;
    int failed;
    char why[600];
} text_feed;

static void *feed_text(void *p) {
    text_feed *f = p;
    char buf[4096];
    for (;;) {
        ssize_t n = read(f->fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            snprintf(f->why, sizeof f->why, "reading the text: %s", strerror(errno));
            f->failed = 1;
            qtts_stream_cancel(f->st);
            return NULL;
        }
        qtts_error err = {0};
        int cs;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs); /* cancelled only while it waits for text */
        qtts_status st = qtts_stream_append_text(f->st, buf, (size_t)n, n == 0, &err);
        pthread_setcancelstate(cs, NULL);
        if (st != QTTS_OK) {
            /* the utterance may have ended (EOS, guard) before the text did */
            if (!strstr(err.message, "already finished")) {
                snprintf(f->why, sizeof f->why, "%s", err.message);
                f->failed = 1;
                qtts_stream_cancel(f->st);
            }
            return NULL;
        }
        if (n == 0) return NULL;
    }
}

/* One incremental utterance from a text that is still being written. */
static int say_speak_streaming(const say_opts *o, say_job *j) {
    text_feed f = {.fd = 0};
    if (o->file && strcmp(o->file, "-") && (f.fd = open(o->file, O_RDONLY | O_CLOEXEC)) < 0) {
        cli_error("%s: %s", o->file, strerror(errno));
        return CLI_FAIL;
    }
    j->n_chunks = 1;
    cli_progress_init(&j->pr, 0, 1, 0); /* the length is unknown: no progress line */
    qtts_request req = o->req;
    req.text = "";
    req.text_incomplete = 1;
    req.keep_codes = o->save_codes != NULL;
    qtts_error err = {0};
    int rc = CLI_FAIL;
    pthread_t th;
    qtts_stream *st = qtts_submit(j->e, &req, &err);
    if (!st) {
        cli_error("%s", err.message);
    } else if ((f.st = st, pthread_create(&th, NULL, feed_text, &f)) != 0) {
        cli_error("say: cannot start the text reader thread");
    } else {
        int audio_rc = say_stream_audio(j, st, 0);
        qtts_stream_cancel(st); /* ends the reader if the utterance ended first */
        if (cli_interrupt_signal(&j->intr)) pthread_cancel(th); /* it may wait for text that never comes */
        pthread_join(th, NULL);
        if (f.failed) {
            cli_error("%s", f.why);
        } else if (!audio_rc) {
            qtts_result res;
            qtts_stream_result(st, &res);
            if (o->verbose) say_print_timings(0, &res);
            rc = o->save_codes && save_codes(o->save_codes, st) ? CLI_FAIL : CLI_OK;
        }
    }
    qtts_stream_free(st);
    if (f.fd > 0) close(f.fd);
    if (rc != CLI_OK) return rc;
    if (out_write(&j->out, NULL, 0, 0)) {
        cli_error("%s: %s", o->output, j->out.err.msg);
        return CLI_FAIL;
    }
    qtts_err qe = {0};
    int failed = qtts_encoder_close(j->out.enc, &qe);
    j->out.enc = NULL;
    if (failed) {
        cli_error("%s: %s", o->output, qe.msg);
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* After the listed warnings, one line with the totals (-q keeps warnings: it
 * only drops the progress line). */
static void say_warning_summary(const say_opts *o, const say_job *j) {
    if (j->n_capped > WARNINGS_LISTED)
        fprintf(stderr, "qtts: warning: %d of %ld utterances stopped at the frame limit (%d frames); raise --max-frames "
                        "if they are cut short\n", j->n_capped, j->n_chunks, o->req.max_frames);
    if (j->n_guarded > WARNINGS_LISTED)
        fprintf(stderr, "qtts: warning: %d of %ld utterances were ended by the runaway guard\n", j->n_guarded,
                j->n_chunks);
}

/* All utterances, then the end of the output. */
static int say_speak_all(const say_opts *o, say_job *j) {
    cli_progress_init(&j->pr, o->quiet ? 0 : -1, (int)j->n_chunks,
                      qtts_text_units(j->text, j->text_len, j->sp.cjk_weight));
    j->n_capped = 0;
    for (long i = 0; i < j->n_chunks; i++)
        if (say_utterance(o, j, i, o->req.seed)) return CLI_FAIL;
    say_warning_summary(o, j);
    if (out_write(&j->out, NULL, 0, 0)) { /* the held-back tail; say_cleanup aborts the encoder */
        cli_error("%s: %s", o->output, j->out.err.msg);
        return CLI_FAIL;
    }
    qtts_err qe = {0};
    int failed = qtts_encoder_close(j->out.enc, &qe);
    j->out.enc = NULL; /* closed either way */
    if (failed) {
        cli_error("%s: %s", o->output, qe.msg);
        return CLI_FAIL;
    }
    return CLI_OK;
}

/* What shapes a book chapter's audio besides its text (the resume hash). */
static void book_settings(const say_opts *o, char *out, size_t size) {
    const qtts_request *r = &o->req;
    snprintf(out, size, "%s|%s|%s|%s|%s|%s|%d|%d|%llu|%g|%d|%g|%g|%d|%s|%s|%s|%d", o->format, o->sample_format,
             r->speaker ? r->speaker : "", o->voice ? o->voice : "", r->instruct ? r->instruct : "",
             r->language ? r->language : "", r->greedy, r->x_vector_only, (unsigned long long)r->seed, r->temperature,
             r->top_k, r->top_p, r->repetition_penalty, r->max_frames, o->ref_audio ? o->ref_audio : "",
             o->ref_spk ? o->ref_spk : "", o->quant ? o->quant : "", (int)r->normalize);
}

static void format_hms(double s, char *out, size_t size) {
    long t = (long)(s + 0.5);
    snprintf(out, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

/* --book: every chapter not finished before, each into NAME.part and renamed
 * when complete; the seed chain restarts per chapter (chapter i: seed + i *
 * 1000000), so a resumed chapter sounds as it would have. */
static int say_speak_book(say_opts *o, say_job *j, say_book *bk) {
    const char *ext = o->format;
    char settings[2048];
    size_t todo_units = 0, done_units = 0;
    for (size_t i = 0; i < bk->b.n; i++) todo_units += strlen(bk->b.ch[i].text);
    double t0 = qtts_now_s(), total_s = 0;
    int guarded = 0, spoken = 0;
    for (size_t i = 0; i < bk->b.n; i++) {
        const qtts_chapter *ch = &bk->b.ch[i];
        char name[160], path[4096], part[4200];
        say_book_file_name(bk, i, ext, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", o->output, name);
        snprintf(part, sizeof part, "%s.part", path);
        o->req.seed = bk->seed + (uint64_t)i * 1000000u;
        book_settings(o, settings, sizeof settings);
        uint64_t hash = say_book_hash(ch->text, settings);
        struct stat st;
        if (bk->done[i].hash == hash && stat(path, &st) == 0) { /* finished before: never redone */
            todo_units -= strlen(ch->text);
            total_s += bk->done[i].seconds;
            guarded += bk->done[i].guarded;
            if (!o->quiet) fprintf(stderr, "qtts: chapter %zu/%zu '%s': done before (%s)\n", i + 1, bk->b.n, ch->title, name);
            continue;
        }
        if (!o->quiet) {
            double el = qtts_now_s() - t0;
            char eta[32] = "";
            if (done_units && todo_units > done_units) format_hms(el / (double)done_units * (double)(todo_units - done_units), eta, sizeof eta);
            fprintf(stderr, "qtts: chapter %zu/%zu '%s' (%zu characters)%s%s\n", i + 1, bk->b.n, ch->title,
                    strlen(ch->text), eta[0] ? ", book ETA " : "", eta);
        }
        free(j->text);
        free(j->chunks);
        j->chunks = NULL;
        qtts_err qe = {0};
        j->text_len = strlen(ch->text);
        if (!(j->text = strdup(ch->text))) {
            cli_error("out of memory");
            return CLI_FAIL;
        }
        j->n_chunks = qtts_text_split(j->text, j->text_len, &j->sp, &j->chunks, &qe);
        if (j->n_chunks <= 0) {
            cli_error("chapter %zu: %s", i + 1, j->n_chunks < 0 ? qe.msg : "no text");
            return CLI_FAIL;
        }
        int sr = qtts_engine_info(j->e)->sample_rate;
        if (!(j->out.enc = qtts_encoder_open_file(part, o->format, o->sfmt, sr, 1, &qe))) {
            cli_error("%s", qe.msg);
            return CLI_FAIL;
        }
        j->out.path = part;
        j->samples = 0;
        j->n_guarded = 0;
        memset(j->out.tail, 0, sizeof j->out.tail);
        j->out.n_tail = j->out.fade_in = 0;
        if (say_speak_all(o, j) != CLI_OK) {
            qtts_encoder_abort(j->out.enc); /* the .part stays behind; the next run redoes the chapter */
            j->out.enc = NULL;
            return CLI_FAIL;
        }
        double secs = (double)j->samples / sr;
        if (rename(part, path)) {
            cli_error("%s: %s", path, strerror(errno));
            return CLI_FAIL;
        }
        if (say_book_record(bk, i, hash, secs, j->n_guarded) || say_book_write_m3u(bk, ext)) return CLI_FAIL;
        done_units += strlen(ch->text);
        total_s += secs;
        guarded += j->n_guarded;
        spoken++;
    }
    if (say_book_write_m3u(bk, ext)) return CLI_FAIL;
    if (o->m4b && say_book_write_m4b(bk, ext)) return CLI_FAIL;
    if (!o->quiet) {
        char dur[32];
        format_hms(total_s, dur, sizeof dur);
        fprintf(stderr, "qtts: book: %zu chapters in %s (%d spoken now, %zu done before), %s of audio; %d "
                        "utterance%s ended by the runaway guard",
                bk->b.n, o->output, spoken, bk->b.n - (size_t)spoken, dur, guarded, guarded == 1 ? "" : "s");
        for (size_t i = 0, first = 1; i < bk->b.n; i++)
            if (bk->done[i].guarded) {
                fprintf(stderr, "%s%zu", first ? " (chapters " : ", ", i + 1);
                first = 0;
            }
        fprintf(stderr, "%s\n", guarded ? ")" : "");
    }
    return CLI_OK;
}

/* Releases everything in j; a failing player turns success into failure. */
/* On failure a file output is finalized (valid, with the audio so far) or,
 * with no audio at all, removed. */
/* Only a regular file is removed: -o /dev/null or a FIFO stays. */
static int remove_output(const char *path) {
    struct stat st;
    return !lstat(path, &st) && S_ISREG(st.st_mode) && !remove(path);
}

/* A file that cannot be finished (a write failed: disk full) is removed too.
 * After SIGINT/SIGTERM the exit status is 128 + the signal. */
static int say_cleanup(const say_opts *o, say_job *j, int rc) {
    int sig = cli_interrupt_signal(&j->intr);
    if (j->out.enc && rc != CLI_OK && !j->player && strcmp(o->output, "-")) {
        if (sig) out_write(&j->out, NULL, 0, 0); /* the held-back last samples */
        double secs = (double)qtts_encoder_frames(j->out.enc) / qtts_engine_info(j->e)->sample_rate;
        qtts_err qe = {0};
        int bad = qtts_encoder_close(j->out.enc, &qe);
        j->out.enc = NULL;
        int removed = (secs <= 0 || bad) && remove_output(o->output);
        if (sig && bad) cli_error("interrupted (%s); %s%s: %s", cli_interrupt_name(sig), removed ? "removed " : "",
                                  o->output, qe.msg);
        else if (sig && secs > 0)
            fprintf(stderr, "qtts: interrupted (%s); %s holds the %.2f s of audio written so far\n",
                    cli_interrupt_name(sig), o->output, secs);
        else if (sig) fprintf(stderr, "qtts: interrupted (%s) before any audio%s%s\n", cli_interrupt_name(sig),
                              removed ? "; removed " : "", removed ? o->output : "");
        else if (removed && secs > 0) fprintf(stderr, "qtts: removed %s: it could not be finished\n", o->output);
    } else if (sig) {
        fprintf(stderr, "qtts: interrupted (%s)\n", cli_interrupt_name(sig));
    }
    qtts_encoder_abort(j->out.enc);
    if (j->player && pclose(j->player) != 0 && rc == CLI_OK) {
        cli_error("say: the audio player failed");
        rc = CLI_FAIL;
    }
    qtts_voice_release(j->voice);
    say_script_free(&j->script); /* its voices before the engine */
    qtts_engine_free(j->e);
    free(j->xvec);
    free(j->ref_codes);
    free(j->audio_bytes);
    free(j->chunks);
    free(j->text);
    cli_interrupt_stop(&j->intr);
    return sig ? 128 + sig : rc;
}

static int cmd_say_run(say_opts *op, int argc, char **argv);

int cmd_say(int argc, char **argv) {
    say_opts o;
    int rc = say_parse_args(argc, argv, &o);
    if (rc == CLI_CONTINUE) rc = say_check_opts(&o);
    if (rc != CLI_CONTINUE) return rc;
    qtts_lexicon *lexicon = NULL;
    if (o.lexicon) {
        qtts_error le = {0};
        if (!(lexicon = qtts_lexicon_load(o.lexicon, &le))) {
            cli_error("--lexicon: %s", le.message);
            return CLI_FAIL;
        }
        o.req.lexicon = lexicon;
    }
    const char *vdir = o.voice ? cli_voices_dir(o.voices_dir) : NULL;
    struct stat vst;
    if (vdir && srv_voice_files_stat(vdir, o.voice, &vst) == 0) { /* a registered voice's own lexicon first */
        qtts_lexicon *merged = NULL;
        char warn[600];
        if (srv_voice_files_request_lexicon(vdir, o.voice, lexicon, &merged, warn, sizeof warn)) {
            cli_error("%s", warn);
            qtts_lexicon_release(lexicon);
            return CLI_FAIL;
        }
        if (warn[0]) fprintf(stderr, "qtts: warning: voice '%s': lexicon not used: %s\n", o.voice, warn);
        qtts_lexicon_release(lexicon);
        o.req.lexicon = lexicon = merged;
    }
    rc = cmd_say_run(&o, argc, argv);
    qtts_lexicon_release(lexicon);
    return rc;
}

static int cmd_say_run(say_opts *op, int argc, char **argv) {
    say_opts o = *op;
    int rc;
    say_job j = {0};
    if (o.stream_text && (optind < argc || o.by_line)) {
        cli_error("--stream-text reads standard input or --file, as one utterance (no text argument, no "
                  "--stream-by-line)");
        return CLI_USAGE;
    }
    say_book bk = {0};
    if (o.book && optind < argc) {
        cli_error("say: give the text either as an argument or with --book, not both");
        return CLI_USAGE;
    }
    if (o.book) {
        rc = say_book_open(o.book, o.output, &bk) ? CLI_FAIL : CLI_CONTINUE;
        qtts_split_params_default(&j.sp);
    } else {
        rc = o.stream_text ? CLI_CONTINUE : say_read_text(&o, argc, argv, &j);
    }
    if (rc == CLI_CONTINUE && cli_interrupt_start(&j.intr)) {
        cli_error("say: cannot start the signal watcher thread");
        rc = CLI_FAIL;
    }
    if (rc == CLI_CONTINUE) rc = say_start_engine(&o, &j);
    if (rc == CLI_CONTINUE) rc = say_load_voice(&o, &j);
    if (rc == CLI_CONTINUE) rc = say_check_mode(&o, &j);
    if (rc == CLI_CONTINUE && o.book) { /* the earlier run's seed, unless another is given */
        if (bk.has_seed && !o.req.has_seed) {
            o.req.seed = bk.seed;
            o.req.has_seed = 1;
        }
        say_draw_seed(&o);
        if ((!bk.has_seed || bk.seed != o.req.seed) && say_book_record_seed(&bk, o.req.seed)) rc = CLI_FAIL;
        if (rc == CLI_CONTINUE) {
            cli_interrupt_arm(&j.intr); /* a chapter's .part stays for the next run */
            rc = say_speak_book(&o, &j, &bk);
        }
        say_book_close(&bk);
        return say_cleanup(&o, &j, rc);
    }
    say_book_close(&bk);
    if (rc == CLI_CONTINUE) {
        say_draw_seed(&o);
        rc = say_open_output(&o, &j);
    }
    if (rc == CLI_CONTINUE) cli_interrupt_arm(&j.intr);
    if (rc == CLI_CONTINUE) rc = o.stream_text ? say_speak_streaming(&o, &j) : say_speak_all(&o, &j);
    return say_cleanup(&o, &j, rc);
}
