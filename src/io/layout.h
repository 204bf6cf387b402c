/* Model files in every layout people hold, opened as one thing: the folder of
 * text files the config and tokenizer loaders read, and the tensors under
 * the official checkpoint names.
 *
 * The layout is decided from tensor names and file metadata, never from a
 * model_type (the Transformers-native checkpoints keep "qwen3_tts" while
 * renaming every tensor). Layouts:
 *   official      the published HuggingFace folder (config.json, model.safetensors, speech_tokenizer/)
 *   transformers  the Transformers-native folder: renamed tensors, rope_parameters, no tts_model_type
 *   qtts          a one-file .gguf written by `qtts quantize`
 *   qwentts.cpp   qwen-talker-*.gguf + qwen-tokenizer-12hz-*.gguf
 *   CrispASR      qwen3-tts-12hz-*.gguf + qwen3-tts-tokenizer-12hz*.gguf
 *   llama.cpp     a talker .gguf (architecture qwen3tts) + its mmproj-*.gguf
 * A pair is found from either file (the companion is looked for next to it)
 * or from the folder holding both. Each foreign layout is a table mapping its
 * names onto the official ones (io/layout_*.c); what a file does not carry
 * (configs, tokenizer files) is rebuilt from its metadata and tensor shapes
 * into a private folder. */
#ifndef QTTS_IO_LAYOUT_H
#define QTTS_IO_LAYOUT_H

#include <limits.h>

#include "core/err.h"
#include "io/store.h"

enum { QTTS_LAYOUT_NOTE = 512 };

typedef struct {
    const char *layout;      /* "official", "transformers", "qtts", "qwentts.cpp", "CrispASR", "llama.cpp" */
    const char *dir;         /* the folder with config.json, tokenizer files and speech_tokenizer/config.json */
    char tmp[PATH_MAX];      /* a private folder written for this open (removed on close), or "" */
    char files[2 * PATH_MAX + 8]; /* the files read: "a.gguf + b.gguf", or the folder */
    /* The tensors under official names (codec ones without "speech_tokenizer."),
     * or both NULL for an official folder (the loaders read it themselves).
     * codec_store may borrow from model_store's mappings: free it first. */
    qtts_store *model_store, *codec_store;
    int has_codec_encoder;   /* the speech tokenizer's encoder is present (in-context cloning) */
    char note[QTTS_LAYOUT_NOTE]; /* what was converted at load ("" when nothing): types, folded tensors */
} qtts_model_files;

enum {
    /* convert matrices of storage-only types into runnable ones (loading to
     * run); without it tensors keep their stored types (info, quantize) */
    QTTS_LAYOUT_CONVERT = 1,
    /* keep matrices a qtts .gguf stores in this CPU's kernel layout as they
     * lie (io/kernel_layout.h; only the LM loader reads them); without it
     * they are put back into GGML rows */
    QTTS_LAYOUT_KERNEL = 2,
};

/* Opens a model folder, a .gguf, or a folder holding a GGUF pair. An unknown
 * layout fails with one line naming what was expected and what was found. */
int qtts_model_files_open(qtts_model_files *m, const char *path, int flags, qtts_err *err);
void qtts_model_files_close(qtts_model_files *m);

/* Only detection (no tensors read beyond the headers): the layout name, or
 * NULL with the same one-line error as qtts_model_files_open. */
const char *qtts_layout_detect(const char *path, qtts_err *err);

#endif
