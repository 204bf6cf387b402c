/* GGUF reader/writer: placeholder until the GGUF work lands (issue 2). */
#include "io/store.h"

qtts_store *qtts_gguf_open(const char *path, qtts_err *err) {
    qtts_fail(err, "%s: GGUF loading is not implemented yet", path);
    return NULL;
}
