/* qtts codec decode|encode: the speech tokenizer on its own.
 *   decode: .rvq codes -> WAV (exact streaming decode, or the reference's chunked decode)
 *   encode: audio -> .rvq (+ .spk), in cmd_codec_encode.c */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audio/encoder.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/model_files.h"
#include "engine/executor.h"
#include "gpu/device_spec.h"
#include "gpu/gpu.h"
#include "gpu/gpu_decoder.h"
#include "io/rvq.h"
#include "model/codec_decoder.h"

static void codec_usage(FILE *out) {
    fprintf(out,
            "usage: qtts codec decode IN.rvq -o OUT.wav [-m MODEL] [--sample-format s16|f32]\n"
            "                         [--official-chunking] [--threads N] [--device D]\n"
            "       qtts codec encode IN -o OUT.rvq [--spk OUT.spk] [-m MODEL]\n\n"
            "  -m, --model PATH      model folder containing speech_tokenizer/, or the tokenizer folder\n"
            "                        (default: $QTTS_MODEL)\n"
            "  -o, --output PATH     output file\n"
            "  --sample-format F     WAV sample format: s16 (default) or f32\n"
            "  --official-chunking   decode like the reference: 300-frame chunks with 25 frames of left\n"
            "                        context (default: exact streaming decode = one forward over all frames)\n"
            "  --threads N           compute threads (default: online CPUs)\n"
            "  --device D            decode: cpu (default), vulkan, vulkan:N or auto (qtts info --devices)\n\n"
            ".rvq: 16 codebooks x T frames, codebook-major, 11-bit codes packed LSB first, 22 bytes per frame.\n");
}

typedef struct {
    const char *model;
    const int32_t *codes;
    int64_t T;
    int official;
    const char *device; /* "cpu", "vulkan", "vulkan:N" or "auto" */
    float *audio;
    int64_t n_samples, sample_rate;
    int rc;
    qtts_err err;
    const cli_model_files *files;
} decode_job;

/* The device decode of j's codes into j->audio (the CPU decoder's
 * qtts_codec_decode_offline on the device): 1 when the device is not used
 * ("auto" without one: the line saying why is printed), else 0 or -1. */
static int decode_on_device(decode_job *j, const qtts_codec_decoder *dec, const qtts_store *st) {
    qtts_device_kind kind;
    if (qtts_device_parse(j->device, &kind, &j->err)) return -1;
    if (kind == QTTS_DEVICE_CPU) return 1;
    qtts_err why = {0};
    qtts_gpu *g = qtts_gpu_open(kind == QTTS_DEVICE_AUTO ? "vulkan" : j->device, &why);
    qtts_gpu_decoder *gd = g && st ? qtts_gpu_decoder_new(g, st, qtts_codec_decoder_config(dec), &why) : NULL;
    if (g && !st) snprintf(why.msg, sizeof why.msg, "the speech decoder's weights are not at hand");
    qtts_gpu_dec_stream *s = gd ? qtts_gpu_dec_stream_new(gd, &why) : NULL;
    int rc = -1;
    if (!s) {
        if (kind == QTTS_DEVICE_AUTO) {
            fprintf(stderr, "qtts: no usable GPU (%s); decoding on the CPU\n", why.msg);
            rc = 1;
        } else {
            j->err = why;
        }
    } else {
        const int64_t fs = qtts_gpu_decoder_frame_samples(gd), nq = qtts_gpu_decoder_num_quantizers(gd);
        const int64_t chunk = j->official ? QTTS_CODEC_OFFICIAL_CHUNK : j->T, context = QTTS_CODEC_OFFICIAL_CONTEXT;
        float *junk = j->official ? qtts_malloc((size_t)(context * fs) * sizeof(float), &j->err) : NULL;
        rc = j->official && !junk ? -1 : 0;
        /* chunk by chunk: up to `context` frames before each re-decoded on a fresh state and dropped */
        for (int64_t start = 0; !rc && start < j->T; start += chunk) {
            int64_t n = j->T - start < chunk ? j->T - start : chunk, ctx = start < context ? start : context;
            const int32_t *c = j->codes + (start - ctx) * nq;
            float *o = j->audio + start * fs;
            qtts_gpu_dec_stream_reset(s);
            if (ctx) rc = qtts_gpu_decoder_step(gd, &s, &c, &ctx, 1, &junk, &j->err);
            c = j->codes + start * nq;
            if (!rc) rc = qtts_gpu_decoder_step(gd, &s, &c, &n, 1, &o, &j->err);
        }
        free(junk);
    }
    qtts_gpu_dec_stream_free(s);
    qtts_gpu_decoder_free(gd);
    qtts_gpu_close(g);
    return rc;
}

/* Runs on the engine thread: load the decoder, decode, free it. */
static void decode_on_engine(qtts_pool *pool, void *p) {
    decode_job *j = p;
    j->rc = -1;
    qtts_codec_decoder *dec = NULL;
    if (j->files->codec_store) { /* a .gguf: its tensors, the config it carries */
        char dir[PATH_MAX];
        qtts_codec_config cc;
        cli_model_files_tokenizer_dir(j->files, dir, sizeof dir);
        if (qtts_codec_config_load(&cc, dir, &j->err)) return;
        dec = qtts_codec_decoder_load_pool(j->files->codec_store, &cc, pool, QTTS_DECODER_F32, &j->err);
    } else {
        dec = qtts_codec_decoder_open_pool(j->model, pool, QTTS_DECODER_F32, &j->err);
    }
    if (!dec) return;
    int64_t fs = qtts_codec_decoder_frame_samples(dec);
    j->sample_rate = qtts_codec_decoder_sample_rate(dec);
    j->audio = qtts_malloc(sizeof(float) * (size_t)(j->T * fs), &j->err);
    int dev = j->audio ? decode_on_device(j, dec, j->files->codec_store ? j->files->codec_store
                                                                        : qtts_codec_decoder_owned_store(dec))
                       : -1;
    if (dev <= 0) {
        j->rc = dev;
        j->n_samples = j->T * fs;
    } else {
        j->rc = qtts_codec_decode_offline(dec, pool, j->codes, j->T, j->official ? QTTS_CODEC_OFFICIAL_CHUNK : 0,
                                          QTTS_CODEC_OFFICIAL_CONTEXT, j->audio, &j->err);
        j->n_samples = j->T * fs;
    }
    qtts_codec_decoder_free(dec);
}

/* The tokenizer's code geometry, read without loading weights. */
static int codec_geometry(const cli_model_files *m, int64_t *nq, int64_t *cb, qtts_err *err) {
    char dir[PATH_MAX];
    cli_model_files_tokenizer_dir(m, dir, sizeof dir);
    qtts_codec_config cfg;
    if (qtts_codec_config_load(&cfg, dir, err)) return -1;
    *nq = cfg.dec.num_quantizers;
    *cb = cfg.dec.codebook_size;
    return 0;
}

static int codec_decode(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *in = NULL, *fmt_name = "s16", *device = "cpu";
    int official = 0;
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_val = i + 1 < argc;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            codec_usage(stdout);
            return CLI_OK;
        } else if ((!strcmp(a, "-m") || !strcmp(a, "--model")) && has_val) {
            model = argv[++i];
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && has_val) {
            out = argv[++i];
        } else if (!strcmp(a, "--sample-format") && has_val) {
            fmt_name = argv[++i];
        } else if (!strcmp(a, "--device") && has_val) {
            device = argv[++i];
            if (cli_check_device(device)) return CLI_USAGE;
        } else if (!strcmp(a, "--official-chunking")) {
            official = 1;
        } else if (!strcmp(a, "--threads") && has_val) {
            if (cli_int_to("--threads", argv[++i], 1, 1024, &threads)) return CLI_USAGE;
        } else if (a[0] == '-' && a[1]) {
            cli_error("codec decode: unknown or incomplete option '%s' (see 'qtts codec --help')", a);
            return CLI_USAGE;
        } else if (!in) {
            in = a;
        } else {
            cli_error("codec decode: more than one input file ('%s', '%s')", in, a);
            return CLI_USAGE;
        }
    }
    qtts_sample_format fmt;
    if (qtts_sample_format_parse(fmt_name, &fmt)) {
        cli_error("--sample-format: expected s16 or f32, got '%s'", fmt_name);
        return CLI_USAGE;
    }
    if (!in || !out) {
        cli_error("codec decode: need an input .rvq file and -o OUT.wav (see 'qtts codec --help')");
        return CLI_USAGE;
    }
    char model_buf[PATH_MAX];
    const char *given_model = model;
    model = cli_resolve_model(model, model_buf, sizeof model_buf); /* a path or a downloaded model's name */
    if (!model) return cli_model_path(given_model) ? CLI_FAIL : CLI_USAGE; /* not found / none given */
    if (threads < 1) threads = 1;

    qtts_err err = {0};
    cli_model_files files;
    if (cli_model_files_open(&files, model, &err)) {
        cli_error("%s", err.msg);
        return CLI_FAIL;
    }
    int64_t nq = 0, cb = 0;
    int32_t *codes = NULL;
    int64_t T = 0;
    if (codec_geometry(&files, &nq, &cb, &err) || qtts_rvq_read(in, nq, cb, &codes, &T, &err)) {
        cli_model_files_close(&files);
        cli_error("%s", err.msg);
        return CLI_FAIL;
    }
    qtts_exec *ex = qtts_exec_create(threads, &err);
    if (!ex) {
        free(codes);
        cli_model_files_close(&files);
        cli_error("%s", err.msg);
        return CLI_FAIL;
    }
    decode_job job = {.model = model, .codes = codes, .T = T, .official = official, .device = device,
                      .files = &files};
    qtts_exec_call(ex, decode_on_engine, &job);
    qtts_exec_free(ex);
    cli_model_files_close(&files);
    free(codes);
    int rc = CLI_OK;
    if (job.rc) {
        cli_error("%s", job.err.msg);
        rc = CLI_FAIL;
    } else if (qtts_audio_write_file(out, NULL, fmt, job.audio, (size_t)job.n_samples, (int)job.sample_rate, 1, &err)) {
        cli_error("%s", err.msg);
        rc = CLI_FAIL;
    }
    free(job.audio);
    return rc;
}

int cmd_codec(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        codec_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_USAGE : CLI_OK;
    }
    if (!strcmp(argv[1], "decode")) return codec_decode(argc - 1, argv + 1);
    if (!strcmp(argv[1], "encode")) return cmd_codec_encode(argc - 1, argv + 1);
    cli_error("codec: unknown subcommand '%s' (decode or encode)", argv[1]);
    return CLI_USAGE;
}
