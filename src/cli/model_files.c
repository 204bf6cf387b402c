#include "cli/model_files.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int cli_model_files_open(cli_model_files *m, const char *path, qtts_err *err) {
    return qtts_model_files_open(m, path, QTTS_LAYOUT_CONVERT, err);
}

void cli_model_files_close(cli_model_files *m) { qtts_model_files_close(m); }

void cli_model_files_tokenizer_dir(const cli_model_files *m, char *out, size_t size) {
    snprintf(out, size, "%s/speech_tokenizer/config.json", m->dir);
    if (access(out, R_OK) == 0) snprintf(out, size, "%s/speech_tokenizer", m->dir);
    else snprintf(out, size, "%s", m->dir);
}
