/* A model given on the command line as a folder or as a one-file .gguf
 * (qtts quantize): the folder with its text files (config.json, tokenizer,
 * speech_tokenizer/config.json) and, for a .gguf, the stores of its tensors.
 * Every subcommand that reads a model goes through it, so a .gguf works
 * wherever a folder does. */
#ifndef QTTS_CLI_MODEL_FILES_H
#define QTTS_CLI_MODEL_FILES_H

#include <limits.h>

#include "core/err.h"
#include "io/store.h"

typedef struct {
    const char *dir;           /* the model folder, or the .gguf's unpacked text files */
    char tmp[PATH_MAX];        /* that private folder (removed on close); "" for a folder */
    qtts_store *model_store;   /* .gguf: talker, code predictor, speaker encoder */
    qtts_store *codec_store;   /* .gguf: the speech tokenizer's tensors */
} cli_model_files;

int cli_model_files_open(cli_model_files *m, const char *path, qtts_err *err);
void cli_model_files_close(cli_model_files *m);
/* The speech tokenizer's folder: dir/speech_tokenizer, or dir itself (a bare tokenizer). */
void cli_model_files_tokenizer_dir(const cli_model_files *m, char *out, size_t size);

#endif
