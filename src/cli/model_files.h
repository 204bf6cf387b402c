/* A model given on the command line in any layout qtts reads (io/layout.h):
 * an official folder, a Transformers-native folder, a qtts .gguf or another
 * project's GGUF pair: the folder with its text files (config.json,
 * tokenizer, speech_tokenizer/config.json) and, when the tensors are not an
 * official folder's, the stores of its tensors under the official names.
 * Every subcommand that reads a model goes through it, so each layout works
 * wherever a folder does. */
#ifndef QTTS_CLI_MODEL_FILES_H
#define QTTS_CLI_MODEL_FILES_H

#include <limits.h>

#include "core/err.h"
#include "io/layout.h"
#include "io/store.h"

/* dir, tmp, model_store, codec_store, layout, files, note: see qtts_model_files */
typedef qtts_model_files cli_model_files;

/* Opens path for computing (storage-only matrices converted). */
int cli_model_files_open(cli_model_files *m, const char *path, qtts_err *err);
void cli_model_files_close(cli_model_files *m);
/* The speech tokenizer's folder: dir/speech_tokenizer, or dir itself (a bare tokenizer). */
void cli_model_files_tokenizer_dir(const cli_model_files *m, char *out, size_t size);

#endif
