/* Shared pieces of the qtts command line. Each subcommand lives in its own
 * cmd_<name>.c and is registered in main.c. Exit codes: 0 ok, 1 failure,
 * 2 bad usage. */
#ifndef QTTS_CLI_H
#define QTTS_CLI_H

#include <stddef.h>

#include "qtts.h"

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

int cmd_info(int argc, char **argv);
int cmd_say(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_normalize(int argc, char **argv);
int cmd_codec(int argc, char **argv);
int cmd_download(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_voices(int argc, char **argv);
int cmd_wyoming(int argc, char **argv);

/* Prints "qtts: <msg>" to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Resolves the model path: explicit value, else $QTTS_MODEL; NULL if neither. */
const char *cli_model_path(const char *given);
/* cli_model_path, then resolved: an existing path wins, else a model name
 * (0.6b-base, a repo id or repo name) found in the download cache. Writes
 * into buf and returns it, or prints one error line and returns NULL. */
const char *cli_resolve_model(const char *given, char *buf, size_t size);
/* --decoder-precision: 0 for a name of the decoder's table (model/codec_decoder.h) or auto; otherwise prints
 * one error line and returns -1. */
int cli_check_decoder_precision(const char *value);
/* --kv-cache: auto, f32 or f16; otherwise prints one error line and returns -1. */
int cli_check_kv_cache(const char *value);
/* --device: cpu, vulkan, vulkan:N or auto (gpu/device_spec.h); 0, or -1 after the error line. */
int cli_check_device(const char *value);
/* --overlap auto|on|off into *out; otherwise prints one error line and returns -1. */
int cli_parse_overlap(const char *value, qtts_overlap_mode *out);
/* --lora PATH[:SCALE], repeatable: the values as qtts_engine_params.lora takes them. */
enum { CLI_MAX_LORA = 16 };
typedef struct {
    const char *spec[CLI_MAX_LORA];
    int n;
} cli_lora_list;
/* Appends value; an empty one or one too many prints one error line and returns -1. */
int cli_add_lora(cli_lora_list *l, const char *value);
#define CLI_LORA_HELP                                                                                                  \
    "  --lora PATH[:SCALE]    merge a PEFT LoRA adapter (folder with adapter_config.json and\n"                      \
    "                         adapter_model.safetensors) into the talker at load; SCALE\n"                          \
    "                         (default 1) multiplies its alpha/r; repeatable\n"

/* The voices directory (registered voices, as `qtts serve --voices-dir`):
 * the given value, else $QTTS_VOICES_DIR; NULL if neither (cmd_voices.c). */
const char *cli_voices_dir(const char *given);
/* Prints "qtts: unknown voice 'NAME' in DIR (its voices: ...)", or that DIR
 * holds none (cmd_voices.c). */
void cli_unknown_voice(const char *dir, const char *name);

/* `qtts codec encode ...` (argv[0] = "encode"); called by cmd_codec, not listed in main.c. */
int cmd_codec_encode(int argc, char **argv);

#endif
