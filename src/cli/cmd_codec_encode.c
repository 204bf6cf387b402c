/* qtts codec encode IN -o OUT.rvq [--spk OUT.spk] [--threads N] [-m PATH]
 *
 * Encodes a reference recording (any format libsndfile reads, any rate) into
 * speech-tokenizer codes (.rvq), and optionally the speaker x-vector (.spk,
 * needs a Base model folder). Codes need only the speech tokenizer: -m may
 * be a model folder (its speech_tokenizer/ is used) or the tokenizer folder.
 * All loading and compute run as one job on the engine thread. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audio/audio_read.h"
#include "cli/args.h"
#include "cli/cli.h"
#include "cli/model_files.h"
#include "engine/executor.h"
#include "io/rvq.h"
#include "io/spk.h"
#include "io/store.h"
#include "model/codec_encoder.h"
#include "model/config.h"
#include "model/speaker_encoder.h"
#include "model/voice.h"

typedef struct {
    const char *in, *model;
    const cli_model_files *files;
    int want_spk;
    /* results */
    int32_t *codes;
    int64_t frames, n_q;
    float *xvec;
    int64_t dim;
    double seconds;
    int rc;
    qtts_err err;
} encode_job;

static void encode_run(qtts_pool *pool, void *ctx) {
    encode_job *j = ctx;
    qtts_err *err = &j->err;
    char tok_dir[PATH_MAX];
    const cli_model_files *m = j->files;
    qtts_store *tok_st = NULL, *main_st = NULL; /* opened here (a folder), or borrowed from a .gguf */
    qtts_codec_encoder *enc = NULL;
    qtts_spk_encoder *spk = NULL;
    qtts_audio a = {0};
    j->rc = -1;
    /* the tokenizer lives in <model>/speech_tokenizer, or -m is the tokenizer itself */
    cli_model_files_tokenizer_dir(m, tok_dir, sizeof tok_dir);
    qtts_codec_config ccfg;
    if (qtts_codec_config_load(&ccfg, tok_dir, err)) goto done;
    if (!m->codec_store && !(tok_st = qtts_store_open(tok_dir, err))) goto done;
    if (!(enc = qtts_codec_encoder_load(m->codec_store ? m->codec_store : tok_st, &ccfg, err))) goto done;
    qtts_audio_opts o;
    qtts_audio_opts_default(&o);
    o.target_rate = qtts_codec_encoder_sample_rate(enc);
    o.min_samples = qtts_codec_encoder_hop(enc); /* one whole frame (0.08 s), the limit of every reference path */
    if (j->want_spk) {
        qtts_model_config mcfg;
        if (qtts_model_config_load(&mcfg, m->dir, err)) {
            qtts_fail_prefix(err, "--spk needs a Base model folder");
            goto done;
        }
        if (!m->model_store && !(main_st = qtts_store_open(m->dir, err))) goto done;
        if (!(spk = qtts_spk_encoder_load(m->model_store ? m->model_store : main_st, &mcfg, err))) goto done;
        if (qtts_spk_encoder_sample_rate(spk) != o.target_rate) {
            qtts_fail(err, "speaker encoder rate %lld differs from the tokenizer rate %lld",
                      (long long)qtts_spk_encoder_sample_rate(spk), (long long)o.target_rate);
            goto done;
        }
        o.min_samples = qtts_voice_min_samples(spk, enc);
    }
    if (qtts_audio_read_file(j->in, &o, &a, err)) goto done;
    j->seconds = (double)a.n / (double)a.rate;
    j->n_q = qtts_codec_encoder_valid_quantizers(enc);
    j->frames = qtts_codec_encoder_frames(enc, a.n);
    j->codes = qtts_malloc((size_t)(j->frames * j->n_q) * sizeof(int32_t), err);
    if (!j->codes) goto done;
    if (qtts_codec_encoder_encode(enc, pool, a.samples, a.n, j->n_q, j->codes, NULL, NULL, err)) goto done;
    if (spk) {
        j->dim = qtts_spk_encoder_dim(spk);
        j->xvec = qtts_malloc((size_t)j->dim * sizeof(float), err);
        if (!j->xvec || qtts_spk_encoder_embed(spk, pool, a.samples, a.n, j->xvec, NULL, NULL, err)) goto done;
    }
    j->rc = 0;
done:
    qtts_audio_free(&a);
    qtts_spk_encoder_free(spk);
    qtts_codec_encoder_free(enc);
    qtts_store_free(main_st);
    qtts_store_free(tok_st);
}

static void encode_usage(FILE *f) {
    fprintf(f, "usage: qtts codec encode IN -o OUT.rvq [--spk OUT.spk] [--threads N] [-m MODEL]\n"
               "  IN           reference audio (WAV/FLAC/OGG/MP3..., any rate and channel count)\n"
               "  -o OUT.rvq   speech-tokenizer codes [16][frames], 11-bit packed ('-': standard output)\n"
               "  --spk FILE   also write the speaker x-vector (float32 LE; needs a Base model; '-': stdout)\n"
               "  --threads N  compute threads (default: all cores)\n"
               "  -m MODEL     model folder, .gguf, speech_tokenizer folder or downloaded model name\n"
               "               (default $QTTS_MODEL)\n");
}

int cmd_codec_encode(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *spk_out = NULL, *model = NULL;
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            encode_usage(stdout);
            return CLI_OK;
        }
        int has_val = i + 1 < argc;
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!has_val) goto missing;
            out = argv[++i];
        } else if (!strcmp(a, "--spk")) {
            if (!has_val) goto missing;
            spk_out = argv[++i];
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!has_val) goto missing;
            model = argv[++i];
        } else if (!strcmp(a, "--threads") || !strcmp(a, "-t")) {
            if (!has_val) goto missing;
            if (cli_int_to("--threads", argv[++i], 1, 1024, &threads)) return CLI_USAGE;
        } else if (a[0] == '-' && a[1]) {
            cli_error("codec encode: unknown option '%s'", a);
            encode_usage(stderr);
            return CLI_USAGE;
        } else if (!in) {
            in = a;
        } else {
            cli_error("codec encode: more than one input ('%s' and '%s')", in, a);
            return CLI_USAGE;
        }
        continue;
    missing:
        cli_error("codec encode: option '%s' needs a value", a);
        return CLI_USAGE;
    }
    if (!in || !out) {
        cli_error("codec encode: %s", !in ? "missing input audio file" : "missing -o OUT.rvq");
        encode_usage(stderr);
        return CLI_USAGE;
    }
    char model_buf[PATH_MAX];
    const char *given_model = model;
    model = cli_resolve_model(model, model_buf, sizeof model_buf); /* a path or a downloaded model's name */
    if (!model) return cli_model_path(given_model) ? CLI_FAIL : CLI_USAGE; /* not found / none given */
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    qtts_err err = {0};
    cli_model_files files;
    if (cli_model_files_open(&files, model, &err)) {
        cli_error("%s", err.msg);
        return CLI_FAIL;
    }
    qtts_exec *ex = qtts_exec_create(threads, &err);
    if (!ex) {
        cli_model_files_close(&files);
        cli_error("%s", err.msg);
        return CLI_FAIL;
    }
    encode_job j = {.in = in, .model = model, .files = &files, .want_spk = spk_out != NULL};
    qtts_exec_call(ex, encode_run, &j);
    qtts_exec_free(ex);
    cli_model_files_close(&files);
    int rc = CLI_FAIL;
    if (j.rc) {
        cli_error("%s", j.err.msg);
        goto done;
    }
    if (qtts_rvq_write(out, j.codes, j.n_q, j.frames, &err)) {
        cli_error("%s", err.msg);
        goto done;
    }
    if (spk_out && qtts_spk_write(spk_out, j.xvec, j.dim, &err)) {
        cli_error("%s", err.msg);
        goto done;
    }
    if (!strcmp(out, "-") || (spk_out && !strcmp(spk_out, "-"))) fflush(stdout);
    fprintf(stderr, "qtts: %s: %.2f s -> %lld frames x %lld codebooks%s\n", in, j.seconds, (long long)j.frames,
            (long long)j.n_q, spk_out ? " + x-vector" : "");
    rc = CLI_OK;
done:
    free(j.codes);
    free(j.xvec);
    return rc;
}
