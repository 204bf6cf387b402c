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

/* Replaces *st with a store holding the merged weights and the others as
 * views of the old store, which the new one owns. Each merged weight is
 * computed in f32 (the sums in double) and stored in its own type again
 * when a kernel runs that type (f32, bf16, f16, q8_0 and q4_k requantized),
 * else (Q5_K, Q6_K...) requantized to q8_0; with keep_f32 (the loader
 * converts every matrix to an asked type anyway) it stays f32. path: the adapter's folder (or its adapter_model.safetensors).
 * A target the model does not have, or a shape that does not fit, fails
 * naming the tensor; *st is then unchanged. pool: the caller's (NULL: this
 * thread). n_merged (may be NULL) gets the number of weights merged. */
int qtts_lora_merge(qtts_store **st, const char *path, double scale, int keep_f32, qtts_pool *pool, int *n_merged,
                    qtts_err *err);

/* "PATH[:SCALE]" (--lora): a path that exists is taken whole (a folder may
 * hold a colon), else a finite number after the last colon is the scale
 * (default 1). path gets the PATH part. */
int qtts_lora_spec(const char *spec, char *path, size_t n, double *scale, qtts_err *err);

#endif
