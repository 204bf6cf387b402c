/* Every tensor of an official Qwen3-TTS checkpoint, by name and PyTorch shape,
 * derived from its configuration (the inventory of the architecture spec:
 * talker, code predictor, speaker encoder, speech-tokenizer decoder and
 * encoder). Written independently of the loaders; the tests check it against
 * the tensors of the golden checkpoints, then use it to write real-size
 * checkpoints as sparse files (a header and holes: no disk, no memory). */
#ifndef QTTS_TEST_CHECKPOINT_INVENTORY_H
#define QTTS_TEST_CHECKPOINT_INVENTORY_H

#include <stdint.h>

#include "model/config.h"

typedef struct {
    char name[128];
    int ndim;
    int64_t shape[4];
} inventory_tensor;

typedef struct {
    inventory_tensor *t;
    int n, cap;
    int failed; /* an allocation failed: the list is incomplete */
} inventory;

/* model.safetensors: talker, code predictor and (Base) speaker encoder. */
void inventory_model(inventory *inv, const qtts_model_config *cfg);
/* speech_tokenizer/model.safetensors: decoder and encoder. */
void inventory_codec(inventory *inv, const qtts_codec_config *cfg);
void inventory_free(inventory *inv);
int64_t inventory_params(const inventory *inv);

/* Writes a safetensors file with every tensor of inv as dtype ("BF16" or
 * "F32"); the data region is a hole (reads as zeros). Returns 0 or -1. */
int inventory_write_sparse(const inventory *inv, const char *dtype, const char *path);

#endif
