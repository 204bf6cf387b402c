#include "cli/model_files.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "io/gguf.h"
#include "io/model_pack.h"

int cli_model_files_open(cli_model_files *m, const char *path, qtts_err *err) {
    memset(m, 0, sizeof *m);
    if (!qtts_gguf_is_path(path)) {
        m->dir = path;
        return 0;
    }
    if (qtts_model_unpack(path, m->tmp, sizeof m->tmp, &m->model_store, &m->codec_store, err)) return -1;
    m->dir = m->tmp;
    return 0;
}

void cli_model_files_close(cli_model_files *m) {
    qtts_store_free(m->codec_store); /* borrows the model store's mapping: first */
    qtts_store_free(m->model_store);
    if (m->tmp[0]) qtts_pack_remove_dir(m->tmp);
    memset(m, 0, sizeof *m);
}

void cli_model_files_tokenizer_dir(const cli_model_files *m, char *out, size_t size) {
    snprintf(out, size, "%s/speech_tokenizer/config.json", m->dir);
    if (access(out, R_OK) == 0) snprintf(out, size, "%s/speech_tokenizer", m->dir);
    else snprintf(out, size, "%s", m->dir);
}
