/* A whole Qwen3-TTS checkpoint in one GGUF file: the talker, code predictor,
 * speaker encoder and speech tokenizer tensors (names as in the official
 * safetensors; the codec's are prefixed "speech_tokenizer.") plus the text
 * files (config.json, generation_config.json, tokenizer files,
 * speech_tokenizer/config.json) as string metadata. `qtts quantize` writes
 * it; every loader accepts it where it accepts a model folder. */
#ifndef QTTS_IO_MODEL_PACK_H
#define QTTS_IO_MODEL_PACK_H

#include "core/err.h"
#include "io/store.h"
#include "tensor/tensor.h"

#define QTTS_PACK_CODEC_PREFIX "speech_tokenizer."

/* Whether a tensor is a dense weight matrix that quantization applies to:
 * the talker's and code predictor's 2-D ".weight" tensors that the loader
 * converts with --quant (norms, biases, embedding tables, codec and
 * speaker-encoder tensors stay as they are). */
int qtts_pack_is_quantizable(const char *name, int ndim);

/* What a pack wrote: tensors in all, and the matrices by the type written
 * (indexed by qtts_dtype; a matrix whose rows hold no whole block of the
 * type asked for keeps a wider one). */
typedef struct {
    int tensors;
    int matrices[32];
} qtts_pack_stats;

/* Writes the model at in_path (any layout io/layout.h reads) as a GGUF at
 * out_path, matrices converted to `type` (qtts_dtype_fit per row length);
 * with kernel_layout, the LM's layer matrices in this CPU's kernel layout
 * where it has one (io/kernel_layout.h). progress and stats may be NULL. */
int qtts_model_pack(const char *in_path, const char *out_path, qtts_dtype type, int kernel_layout,
                    void (*progress)(void *user, int done, int total), void *user, qtts_pack_stats *stats,
                    qtts_err *err);

/* The same, with the LoRA adapters lora[0..n_lora) ("PATH[:SCALE]", as
 * --lora) merged into the weights first, in order, in f32 (io/lora.h), so
 * the one conversion to `type` comes after them: the file holds what loading
 * in_path with --quant type and those --lora gives. Each adapter is recorded
 * in the metadata key QTTS_PACK_KEY_LORA, one "PATH scale S, N weights" line
 * each (qtts_pack_lora_note reads it back). */
#define QTTS_PACK_KEY_LORA "qtts.lora_merged"
int qtts_model_pack_lora(const char *in_path, const char *out_path, qtts_dtype type, int kernel_layout,
                         const char *const *lora, int n_lora, void (*progress)(void *user, int done, int total),
                         void *user, qtts_pack_stats *stats, qtts_err *err);

/* The adapters a qtts .gguf at path was made with (QTTS_PACK_KEY_LORA),
 * malloc'd, or NULL when it has none or is no such file. */
char *qtts_pack_lora_note(const char *path);

/* Opens a packed GGUF: writes its text files into a new private folder
 * (returned in tmp_dir, which the caller removes with qtts_pack_remove_dir)
 * with the layout of a model folder, and returns the store of its tensors
 * (the codec tensors under their original names in *codec_store, which
 * borrows from *model_store's mapping: free it first). */
/* kernel_layout keeps matrices stored in the kernels' layout as they lie
 * where the file's layout is this CPU's (io/kernel_layout.h); without it,
 * or on another CPU, they are put back into GGML rows. */
int qtts_model_unpack(const char *gguf_path, int kernel_layout, char *tmp_dir, size_t tmp_size,
                      qtts_store **model_store, qtts_store **codec_store, qtts_err *err);
void qtts_pack_remove_dir(const char *tmp_dir);

#endif
