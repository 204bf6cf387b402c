/* The talker prompt, every mode, from token ids. It is "dual-track": each
 * position is a text-track row (projected text embedding) plus a codec-track
 * row (codec embedding), or a text row alone.
 *   text_ids     : the whole chat template "<|im_start|>assistant\n{text}<|im_end|>\n<|im_start|>assistant\n"
 *   instruct_ids : "<|im_start|>user\n{instruct}<|im_end|>\n" (all rows used), or none
 *   ref_ids      : "<|im_start|>assistant\n{ref_text}<|im_end|>\n" (ICL only)
 * Output: the prefill rows X0 [n_rows x D], the trailing text rows R
 * [n_trailing x D] read one per generated frame, and PAD (read once R is used
 * up). Layouts follow the official generate(): non-streaming modes and ICL with
 * a short text get R = [PAD], exactly as the reference. */
#ifndef QTTS_MODEL_PROMPT_H
#define QTTS_MODEL_PROMPT_H

#include <stdint.h>

#include "model/talker.h"

typedef enum {
    QTTS_MODE_CUSTOM_VOICE, /* CustomVoice model: speaker required, instruct optional (1.7B only) */
    QTTS_MODE_VOICE_DESIGN, /* VoiceDesign model: instruct required, no speaker */
    QTTS_MODE_CLONE_XVEC,   /* Base model, x-vector only */
    QTTS_MODE_CLONE_ICL,    /* Base model, x-vector + reference codes + reference text */
} qtts_mode;

typedef struct {
    qtts_mode mode;
    const int32_t *text_ids;
    int64_t n_text_ids;
    const int32_t *instruct_ids; /* NULL / 0 = none */
    int64_t n_instruct_ids;
    const int32_t *ref_ids; /* ICL */
    int64_t n_ref_ids;
    const int32_t *ref_codes; /* ICL: [n_ref_frames x num_code_groups] */
    int64_t n_ref_frames;
    const float *xvector;    /* Base: [talker hidden] speaker embedding */
    const char *speaker;     /* CustomVoice (case-insensitive) */
    const char *language;    /* NULL or "auto" = Auto; else a config language (case-insensitive, no dialects) */
    int non_streaming;       /* -1 = official default (CustomVoice/VoiceDesign 1, clone 0), else 0/1 */
} qtts_prompt_spec;

typedef struct {
    int64_t dim, n_rows, n_trailing;
    float *rows;     /* [n_rows x dim] */
    float *trailing; /* [n_trailing x dim] */
    float *pad;      /* [dim] */
} qtts_prompt;

const char *qtts_mode_name(qtts_mode m);

/* Checks the spec against the model (one clear error line on failure). */
int qtts_prompt_validate(const qtts_talker_model *m, const qtts_prompt_spec *s, qtts_err *err);
int qtts_prompt_build(const qtts_talker_model *m, qtts_pool *pool, const qtts_prompt_spec *s, qtts_prompt *out,
                      qtts_err *err);
void qtts_prompt_free(qtts_prompt *p);
/* Ids of the text itself inside target text ids (the chat template's role
 * prefix and suffix removed); 0 for fewer ids than the template. */
int64_t qtts_prompt_text_tokens(int64_t n_text_ids);
/* Target-template ids around other text ids: the role prefix and suffix of
 * tmpl (target template ids of any text) with text[n] between them, into out
 * (room for n + 8). Returns the length, or -1 when tmpl is too short. */
int64_t qtts_prompt_wrap_text(const int32_t *tmpl, int64_t n_tmpl, const int32_t *text, int64_t n, int32_t *out);

#endif
