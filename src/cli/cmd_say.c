/* qtts say: text -> speech. Long text is split at sentence boundaries and the
 * pieces are spoken one after another with the same voice and a seed chain,
 * streamed to the output as frames are decoded. All compute runs on the
 * engine thread; this thread only parses, submits and writes bytes. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "audio/encoder.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "io/rvq.h"
#include "io/spk.h"
#include "qtts.h"
#include "text/split.h"
#include "core/clock.h"
#include "io/file.h"

enum { FADE_SAMPLES = 240 }; /* 10 ms fades where utterances are joined */
/* Input caps: a book is a few MB of text; a 60 s reference is at most ~70 MB even as 96 kHz 32-bit stereo. */
#define MAX_TEXT_BYTES ((size_t)1 << 30)
#define MAX_AUDIO_BYTES ((size_t)256 << 20)

static void say_usage(FILE *out) {
    fprintf(out,
            "usage: qtts say [options] [TEXT]        (TEXT, --file FILE, or standard input)\n"
            "  -m, --model PATH          model folder or .gguf (default $QTTS_MODEL)\n"
            "  -o, --output FILE         output file, '-' = stdout (default out.wav)\n"
            "      --format NAME         wav, flac, mp3, opus, vorbis, pcm (default: from the extension)\n"
            "      --sample-format F     s16 (default) or f32 (wav and pcm)\n"
            "  voice (by model type):\n"
            "      --speaker NAME        CustomVoice built-in speaker\n"
            "      --instruct TEXT       VoiceDesign voice description / CustomVoice 1.7B style\n"
            "      --ref-audio FILE      Base: reference recording to clone\n"
            "      --ref-text TEXT       Base: transcript of the reference (in-context cloning)\n"
            "      --x-vector-only       Base: clone from the speaker embedding alone\n"
            "      --ref-spk FILE.spk    Base: pre-extracted x-vector (instead of --ref-audio)\n"
            "      --ref-rvq FILE.rvq    Base: pre-extracted reference codes (with --ref-spk)\n"
            "      --lang NAME           language or 'auto' (default auto)\n"
            "      --text-layout L       streaming or non-streaming (default: the official one per mode)\n"
            "  sampling:\n"
            "      --greedy              argmax everywhere (deterministic)\n"
            "      --seed N              random seed (printed when not given)\n"
            "      --temperature F  --top-k N  --top-p F  --repetition-penalty F\n"
            "      --cp-temperature F  --cp-top-k N  --cp-top-p F     (code predictor)\n"
            "      --max-frames N        stop after N frames (80 ms each)\n"
            "  input and output:\n"
            "      --file FILE           read the text from FILE\n"
            "      --stream-by-line      every input line is its own utterance\n"
            "      --save-codes FILE     also write the generated codes (.rvq; single utterance)\n"
            "      --play                play through the system player (aplay, paplay, pw-play or ffplay)\n"
            "                            as audio is decoded (instead of -o)\n"
            "  engine:\n"
            "      --threads N           compute threads (default: all CPUs)\n"
            "      --quant TYPE          weights as f32, bf16, q8_0 or q4_k (default: as stored)\n"
            "      --decoder-precision P auto (default: bf16 with q8_0/q4_k weights on AVX-512 BF16\n"
            "                            CPUs, else f32), f32 or bf16 (~2x faster, ~38 dB SNR)\n"
            "  -v, --verbose             per-utterance timings    -q, --quiet   no progress line\n");
}

typedef struct {
    qtts_encoder *enc;
    float tail[FADE_SAMPLES]; /* held back so the utterance's end can fade out when another follows */
    int n_tail;
    int fade_in; /* samples of fade-in still to apply */
    qtts_err err;
} out_state;

/* Writes samples, keeping the last FADE_SAMPLES back while joining is possible. */
static int out_write(out_state *o, const float *x, size_t n, int hold) {
    if (o->fade_in > 0) {
        /* fade-in needs a writable copy */
        float buf[FADE_SAMPLES];
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

static int parse_float(const char *opt, const char *v, float lo, float hi, float *out) {
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= lo && d <= hi)) {
        cli_error("%s: expected a number in [%g, %g], got '%s'", opt, lo, hi, v);
        return -1;
    }
    *out = (float)d;
    return 0;
}

static int parse_int(const char *opt, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long d = strtol(v, &end, 10);
    if (errno || end == v || *end || d < lo || d > hi) {
        cli_error("%s: expected a whole number in [%ld, %ld], got '%s'", opt, lo, hi, v);
        return -1;
    }
    *out = d;
    return 0;
}

int cmd_say(int argc, char **argv) {
    enum {
        O_FORMAT = 256, O_SAMPLE_FORMAT, O_SPEAKER, O_INSTRUCT, O_REF_AUDIO, O_REF_TEXT, O_XVEC, O_REF_SPK,
        O_REF_RVQ, O_LANG, O_LAYOUT, O_GREEDY, O_SEED, O_TEMP, O_TOPK, O_TOPP, O_REP, O_CPTEMP, O_CPTOPK, O_CPTOPP,
        O_MAXF, O_FILE, O_BYLINE, O_SAVE, O_THREADS, O_QUANT, O_DECPREC, O_PLAY,
    };
    static const struct option opts[] = {
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
        {"file", required_argument, 0, O_FILE},    {"stream-by-line", no_argument, 0, O_BYLINE},
        {"save-codes", required_argument, 0, O_SAVE}, {"threads", required_argument, 0, O_THREADS},
        {"quant", required_argument, 0, O_QUANT},  {"decoder-precision", required_argument, 0, O_DECPREC},  {"play", no_argument, 0, O_PLAY},
        {"verbose", no_argument, 0, 'v'},
        {"quiet", no_argument, 0, 'q'},            {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *model = NULL, *output = "out.wav", *format = NULL, *sample_format = "s16", *ref_audio = NULL;
    const char *ref_spk = NULL, *ref_rvq = NULL, *ref_text = NULL, *file = NULL, *save_codes = NULL, *quant = NULL;
    const char *dec_prec = NULL;
    int by_line = 0, verbose = 0, quiet = 0, threads = 0, play = 0, output_given = 0;
    qtts_request req;
    qtts_request_default(&req);
    long lv;
    float fv;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":m:o:vqh", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model = optarg; break;
        case 'o': output = optarg; output_given = 1; break;
        case O_FORMAT: format = optarg; break;
        case O_SAMPLE_FORMAT: sample_format = optarg; break;
        case O_SPEAKER: req.speaker = optarg; break;
        case O_INSTRUCT: req.instruct = optarg; break;
        case O_REF_AUDIO: ref_audio = optarg; break;
        case O_REF_TEXT: ref_text = optarg; break;
        case O_XVEC: req.x_vector_only = 1; break;
        case O_REF_SPK: ref_spk = optarg; break;
        case O_REF_RVQ: ref_rvq = optarg; break;
        case O_LANG: req.language = optarg; break;
        case O_LAYOUT:
            if (!strcmp(optarg, "streaming")) req.layout = QTTS_LAYOUT_STREAMING;
            else if (!strcmp(optarg, "non-streaming")) req.layout = QTTS_LAYOUT_NON_STREAMING;
            else {
                cli_error("--text-layout: expected streaming or non-streaming, got '%s'", optarg);
                return CLI_USAGE;
            }
            break;
        case O_GREEDY: req.greedy = 1; break;
        case O_SEED: {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-') {
                cli_error("--seed: expected a non-negative whole number, got '%s'", optarg);
                return CLI_USAGE;
            }
            req.seed = s;
            req.has_seed = 1;
            break;
        }
        case O_TEMP: if (parse_float("--temperature", optarg, 1e-3f, 100, &fv)) return CLI_USAGE; req.temperature = fv; break;
        case O_TOPK: if (parse_int("--top-k", optarg, 1, 1 << 20, &lv)) return CLI_USAGE; req.top_k = (int)lv; break;
        case O_TOPP: if (parse_float("--top-p", optarg, 1e-6f, 1, &fv)) return CLI_USAGE; req.top_p = fv; break;
        case O_REP: if (parse_float("--repetition-penalty", optarg, 1e-3f, 100, &fv)) return CLI_USAGE; req.repetition_penalty = fv; break;
        case O_CPTEMP: if (parse_float("--cp-temperature", optarg, 1e-3f, 100, &fv)) return CLI_USAGE; req.cp_temperature = fv; break;
        case O_CPTOPK: if (parse_int("--cp-top-k", optarg, 1, 1 << 20, &lv)) return CLI_USAGE; req.cp_top_k = (int)lv; break;
        case O_CPTOPP: if (parse_float("--cp-top-p", optarg, 1e-6f, 1, &fv)) return CLI_USAGE; req.cp_top_p = fv; break;
        case O_MAXF: if (parse_int("--max-frames", optarg, 1, 1 << 20, &lv)) return CLI_USAGE; req.max_frames = (int)lv; break;
        case O_FILE: file = optarg; break;
        case O_BYLINE: by_line = 1; break;
        case O_SAVE: save_codes = optarg; break;
        case O_THREADS: if (parse_int("--threads", optarg, 1, 256, &lv)) return CLI_USAGE; threads = (int)lv; break;
        case O_QUANT: quant = optarg; break;
        case O_DECPREC:
            if (cli_check_decoder_precision(optarg)) return CLI_USAGE;
            dec_prec = optarg;
            break;
        case O_PLAY: play = 1; break;
        case 'v': verbose = 1; break;
        case 'q': quiet = 1; break;
        case 'h': say_usage(stdout); return CLI_OK;
        case ':': cli_error("say: option '%s' needs a value", argv[optind - 1]); return CLI_USAGE;
        default: cli_error("say: unknown option '%s' (see 'qtts say --help')", argv[optind - 1]); return CLI_USAGE;
        }
    }
    /* ---- the text ---- */
    char *text = NULL;
    size_t text_len = 0;
    if (optind < argc) {
        if (file) {
            cli_error("say: give the text either as an argument or with --file, not both");
            return CLI_USAGE;
        }
        if (optind + 1 < argc) {
            cli_error("say: more than one text argument (quote the text)");
            return CLI_USAGE;
        }
        text = strdup(argv[optind]);
        text_len = text ? strlen(text) : 0;
    } else {
        qtts_err rerr = {0};
        int rrc = file ? qtts_read_file(file, MAX_TEXT_BYTES, &text, &text_len, &rerr)
                       : qtts_read_stream(stdin, "standard input", MAX_TEXT_BYTES, &text, &text_len, &rerr);
        if (rrc) {
            cli_error("%s", rerr.msg);
            return CLI_FAIL;
        }
    }
    if (!text) {
        cli_error("out of memory reading the text");
        return CLI_FAIL;
    }
    if (strlen(text) != text_len) {
        cli_error("the text contains a NUL byte");
        free(text);
        return CLI_FAIL;
    }
    qtts_err qe = {0};
    qtts_split_params sp;
    qtts_split_params_default(&sp);
    sp.by_line = by_line;
    qtts_text_chunk *chunks = NULL;
    long n_chunks = qtts_text_split(text, text_len, &sp, &chunks, &qe);
    if (n_chunks < 0) {
        cli_error("%s", qe.msg);
        free(text);
        return CLI_FAIL;
    }
    if (n_chunks == 0) {
        cli_error("say: the text is empty");
        free(text);
        return CLI_USAGE;
    }
    if (save_codes && n_chunks > 1) {
        cli_error("--save-codes needs a single utterance, but the text splits into %ld", n_chunks);
        free(chunks);
        free(text);
        return CLI_USAGE;
    }
    if (play && output_given) {
        cli_error("say: --play and -o exclude each other");
        free(chunks);
        free(text);
        return CLI_USAGE;
    }
    FILE *player = NULL;
    if (play) {
        player = open_player();
        if (!player) {
            cli_error("say: --play found no audio player (install alsa-utils, pulseaudio-utils, pipewire or ffmpeg)");
            free(chunks);
            free(text);
            return CLI_FAIL;
        }
    }
    /* ---- voice options that need no model ---- */
    if ((ref_audio || ref_spk) && req.speaker) {
        cli_error("say: --speaker and reference audio exclude each other");
        free(chunks);
        free(text);
        return CLI_USAGE;
    }
    if (ref_audio && ref_spk) {
        cli_error("say: give --ref-audio or --ref-spk/--ref-rvq, not both");
        free(chunks);
        free(text);
        return CLI_USAGE;
    }
    if (ref_rvq && !ref_spk) {
        cli_error("say: --ref-rvq needs --ref-spk");
        free(chunks);
        free(text);
        return CLI_USAGE;
    }
    if ((ref_text || req.x_vector_only) && !ref_audio && !ref_spk) {
        cli_error("say: --ref-text/--x-vector-only need --ref-audio or --ref-spk");
        free(chunks);
        free(text);
        return CLI_USAGE;
    }
    if (ref_text && req.x_vector_only) {
        cli_error("say: --ref-text and --x-vector-only exclude each other");
        free(chunks);
        free(text);
        return CLI_USAGE;
    }
    qtts_sample_format sfmt;
    if (qtts_sample_format_parse(sample_format, &sfmt)) {
        cli_error("--sample-format: expected s16 or f32, got '%s'", sample_format);
        free(chunks);
        free(text);
        return CLI_USAGE;
    }
    char model_buf[PATH_MAX];
    const char *model_path = cli_resolve_model(model, model_buf, sizeof model_buf);
    if (!model_path) { /* cli_resolve_model said why */
        free(chunks);
        free(text);
        return cli_model_path(model) ? CLI_FAIL : CLI_USAGE;
    }

    /* ---- engine ---- */
    int rc = CLI_FAIL;
    char err[512];
    qtts_engine_params ep;
    qtts_engine_params_default(&ep);
    ep.model_path = model_path;
    ep.n_threads = threads;
    ep.weight_type = quant;
    ep.decoder_precision = dec_prec;
    ep.max_batch = 1;
    ep.verbose = verbose;
    qtts_engine *e = qtts_engine_create(&ep, err, sizeof err);
    qtts_voice *voice = NULL;
    qtts_encoder *enc = NULL;
    out_state out = {0};
    cli_progress pr;
    float *xvec = NULL;
    int32_t *ref_codes = NULL;
    char *audio_bytes = NULL;
    if (!e) {
        cli_error("%s", err);
        goto done;
    }
    if (verbose) {
        const qtts_model_info *mi = qtts_engine_info(e);
        fprintf(stderr, "qtts: %s %s model, weights %s, decoder %s, %d threads\n", mi->size, mi->variant,
                mi->weight_type, mi->decoder_precision, mi->n_threads);
    }
    if (ref_audio) {
        size_t n = 0;
        qtts_err rerr = {0};
        if (qtts_read_file(ref_audio, MAX_AUDIO_BYTES, &audio_bytes, &n, &rerr)) {
            cli_error("%s", rerr.msg);
            goto done;
        }
        voice = qtts_voice_from_audio_bytes(e, audio_bytes, n, req.x_vector_only ? NULL : ref_text, err, sizeof err);
        if (!voice) {
            cli_error("%s: %s", ref_audio, err);
            goto done;
        }
    } else if (ref_spk) {
        int64_t dim = 0, T = 0;
        xvec = qtts_spk_read(ref_spk, qtts_engine_info(e)->hidden_size, &dim, &qe);
        if (!xvec) {
            cli_error("%s", qe.msg);
            goto done;
        }
        if (ref_rvq && qtts_rvq_read(ref_rvq, 16, 2048, &ref_codes, &T, &qe)) {
            cli_error("%s", qe.msg);
            goto done;
        }
        voice = qtts_voice_from_parts(e, xvec, (size_t)dim, ref_codes, (size_t)T, ref_text, err, sizeof err);
        if (!voice) {
            cli_error("%s", err);
            goto done;
        }
    }
    req.voice = voice;
    if (voice && !req.x_vector_only && !ref_text) req.x_vector_only = 1; /* no transcript: x-vector cloning */
    if (!req.has_seed) {
        /* draw one seed for the whole job and print it so the run can be repeated */
        FILE *ur = fopen("/dev/urandom", "rb");
        uint64_t s = 0;
        if (!ur || fread(&s, sizeof s, 1, ur) != 1) s = (uint64_t)qtts_now_s() * 1000003u;
        if (ur) fclose(ur);
        req.seed = s >> 1;
        req.has_seed = 1;
        if (!req.greedy && !quiet) fprintf(stderr, "qtts: seed %llu\n", (unsigned long long)req.seed);
    }
    if (player) {
        qtts_audio_sink sink = {.write = write_to_file, .seek = NULL, .user = player};
        enc = qtts_encoder_open(QTTS_AUDIO_WAV, QTTS_SAMPLE_S16, qtts_engine_info(e)->sample_rate, 1, &sink, &qe);
    } else {
        enc = qtts_encoder_open_file(output, format, sfmt, qtts_engine_info(e)->sample_rate, 1, &qe);
    }
    if (!enc) {
        cli_error("%s", qe.msg);
        goto done;
    }
    out.enc = enc;
    cli_progress_init(&pr, quiet ? 0 : -1, (int)n_chunks, qtts_text_units(text, text_len, sp.cjk_weight));
    uint64_t base_seed = req.seed;
    int sr = qtts_engine_info(e)->sample_rate;
    for (long i = 0; i < n_chunks; i++) {
        char *piece = qtts_text_chunk_dup(text, chunks[i], &qe);
        if (!piece) {
            cli_error("%s", qe.msg);
            goto done;
        }
        req.text = piece;
        req.seed = base_seed + (uint64_t)i; /* the seed chain: utterance i uses seed + i */
        req.keep_codes = save_codes != NULL;
        cli_progress_begin(&pr, (int)i, qtts_text_units(text + chunks[i].start, chunks[i].len, sp.cjk_weight));
        qtts_stream *st = qtts_submit(e, &req, err, sizeof err);
        if (!st) {
            free(piece);
            cli_progress_clear(&pr);
            cli_error("%s", err);
            goto done;
        }
        if (i > 0) out.fade_in = FADE_SAMPLES;
        float buf[8192];
        size_t samples = 0;
        long n;
        while ((n = qtts_stream_read(st, buf, sizeof buf / sizeof buf[0], -1)) > 0) {
            samples += (size_t)n;
            if (out_write(&out, buf, (size_t)n, i + 1 < n_chunks)) break;
            cli_progress_update(&pr, (int)(samples / 1920), (double)samples / sr);
        }
        if (n != 0) {
            cli_progress_clear(&pr);
            cli_error("%s", n < 0 ? qtts_stream_error(st) : out.err.msg);
            qtts_stream_free(st);
            free(piece);
            goto done;
        }
        qtts_result res;
        qtts_stream_result(st, &res);
        cli_progress_end(&pr, res.n_frames, res.audio_seconds);
        if (i + 1 < n_chunks && out.n_tail) { /* fade out the held-back end before the next utterance */
            for (int k = 0; k < out.n_tail; k++) out.tail[k] *= (float)(out.n_tail - k) / (float)out.n_tail;
        }
        if (verbose)
            fprintf(stderr,
                    "qtts: utterance %ld: %d frames (%.2f s audio%s), queue %.0f ms, first audio %.0f ms, total %.0f "
                    "ms (RTF %.3f); prefill %.1f ms, talker %.1f ms, code predictor %.1f ms, decoder %.1f ms; "
                    "seed %llu\n",
                    i + 1, res.n_frames, res.audio_seconds, res.finished_by_eos ? ", ended by EOS" : ", frame limit",
                    res.queue_ms, res.first_audio_ms, res.total_ms,
                    res.audio_seconds > 0 ? res.total_ms / 1e3 / res.audio_seconds : 0.0, res.prefill_ms,
                    res.talker_ms, res.code_predictor_ms, res.decoder_ms, (unsigned long long)res.seed);
        if (save_codes) {
            size_t nf = 0;
            int g = 0;
            const int32_t *codes = qtts_stream_codes(st, &nf, &g);
            if (!codes || qtts_rvq_write(save_codes, codes, g, (int64_t)nf, &qe)) {
                cli_error("%s", codes ? qe.msg : "no codes were generated");
                qtts_stream_free(st);
                free(piece);
                goto done;
            }
        }
        qtts_stream_free(st);
        free(piece);
    }
    if (out_write(&out, NULL, 0, 0) || qtts_encoder_close(enc, &qe)) {
        enc = NULL;
        cli_error("%s: %s", output, out.err.msg[0] ? out.err.msg : qe.msg);
        goto done;
    }
    enc = NULL;
    rc = CLI_OK;
done:
    if (enc) qtts_encoder_abort(enc);
    if (player && pclose(player) != 0 && rc == CLI_OK) {
        cli_error("say: the audio player failed");
        rc = CLI_FAIL;
    }
    qtts_voice_release(voice);
    qtts_engine_free(e);
    free(xvec);
    free(ref_codes);
    free(audio_bytes);
    free(chunks);
    free(text);
    return rc;
}
