#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "gpu/device_spec.h"
#include "model/codec_decoder.h"
#include "qtts.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"say", cmd_say, "synthesize speech from text (file or streaming output)"},
    {"quantize", cmd_quantize, "write a model as one quantized .gguf file (q8_0, q4_k, bf16, f32)"},
    {"info", cmd_info, "show what a model folder, .gguf or speech-tokenizer folder contains"},
    {"tokenize", cmd_tokenize, "text -> token ids with the model's text tokenizer"},
    {"normalize", cmd_normalize, "text -> what the model reads (numbers, markdown, URLs in words)"},
    {"codec", cmd_codec, "speech tokenizer on its own: encode audio to .rvq (+ .spk), decode .rvq to audio"},
    {"download", cmd_download, "fetch an official checkpoint from the HuggingFace hub into the model cache"},
    {"bench", cmd_bench, "end-to-end speed benchmark at real model sizes (random weights) or on a model"},
    {"serve", cmd_serve, "HTTP server: OpenAI-compatible speech API, voices, metrics"},
    {"voices", cmd_voices, "list, add or remove registered voices (the server's --voices-dir)"},
    {"wyoming", cmd_wyoming, "Wyoming protocol server (Home Assistant): text to speech, streaming"},
};

void cli_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("qtts: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_check_decoder_precision(const char *value) {
    qtts_decoder_precision p;
    if (!strcmp(value, "auto") || !qtts_decoder_precision_parse(value, &p)) return 0;
    cli_error("--decoder-precision: expected one of %s, got '%s'", QTTS_DECODER_PRECISION_NAMES, value);
    return -1;
}

int cli_parse_overlap(const char *value, qtts_overlap_mode *out) {
    static const struct {
        const char *name;
        qtts_overlap_mode mode;
    } modes[] = {{"auto", QTTS_OVERLAP_AUTO}, {"on", QTTS_OVERLAP_ALWAYS}, {"off", QTTS_OVERLAP_NEVER}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (!strcmp(value, modes[i].name)) {
            *out = modes[i].mode;
            return 0;
        }
    cli_error("--overlap: expected auto, on or off, got '%s'", value);
    return -1;
}

int cli_add_lora(cli_lora_list *l, const char *value) {
    if (!value || !*value) {
        cli_error("--lora: expected PATH or PATH:SCALE, got ''");
        return -1;
    }
    if (l->n == CLI_MAX_LORA) {
        cli_error("--lora: at most %d adapters", CLI_MAX_LORA);
        return -1;
    }
    l->spec[l->n++] = value;
    return 0;
}

int cli_check_kv_cache(const char *value) {
    if (!strcmp(value, "auto") || !strcmp(value, "f32") || !strcmp(value, "f16")) return 0;
    cli_error("--kv-cache: expected auto, f32 or f16, got '%s'", value);
    return -1;
}

int cli_check_device(const char *value) {
    qtts_device_kind kind;
    qtts_err err = {0};
    if (!qtts_device_parse(value, &kind, &err)) return 0;
    cli_error("--device: %s", err.msg);
    return -1;
}

const char *cli_model_path(const char *given) {
    if (given && *given) return given;
    const char *env = getenv("QTTS_MODEL");
    return env && *env ? env : NULL;
}

static void usage(FILE *out) {
    fprintf(out, "usage: qtts <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'qtts <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv) {
    /* A closed pipe (player quit, `| head`) is an error to report, not a silent kill. */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "help") && argc >= 3) { /* qtts help say == qtts say --help */
        char *help_argv[] = {argv[2], "--help", NULL};
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[2], commands[i].name)) return commands[i].run(2, help_argv);
        cli_error("unknown command '%s' (see 'qtts --help')", argv[2]);
        return CLI_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("qtts %s\n", qtts_version());
        return CLI_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
    cli_error("unknown command '%s' (see 'qtts --help')", argv[1]);
    return CLI_USAGE;
}
