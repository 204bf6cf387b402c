/* LoRA adapters as PEFT saves them (adapter_config.json + adapter_model.safetensors,
 * tensors "<prefix><module>.lora_A.weight" [r x in] and ".lora_B.weight" [out x r]),
 * merged into a model's weights: W += scale * (alpha / r) * B A, with alpha / sqrt(r)
 * when the config says use_rslora. Module names are matched against the model's
 * official names with PEFT's "base_model.model." prefix dropped, then with
 * "talker." added (an adapter trained on the talker alone). */
#ifndef QTTS_IO_LORA_H
#define QTTS_IO_LORA_H

#include "core/err.h"
#include "io/store.h"

/* Replaces *st with a store holding the merged weights (f32) and the others
 * as views of the old store, which the new one owns. path: the adapter's
 * folder (or its adapter_model.safetensors). A target the model does not
 * have, or a shape that does not fit, fails naming the tensor; *st is then
 * unchanged. n_merged (may be NULL) gets the number of weights merged. */
int qtts_lora_merge(qtts_store **st, const char *path, double scale, int *n_merged, qtts_err *err);

#endif
