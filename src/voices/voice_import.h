/* Voices other Qwen3-TTS programs save, read into the parts of a registered
 * voice (voice_files.h) for `qtts voices import`. The format is told from
 * the bytes, never from the file name:
 *   GGUF, general.architecture "qwen3tts.voicepack" (CrispASR's voice packs,
 *       its bake-qwen3-tts-voice-pack.py): every voice of the pack, tensors
 *       voicepack.spk.NAME.embd (F32 x-vector) and voicepack.code.NAME.codes
 *       (I32 [T][16]), transcripts from the voicepack.ref_texts array;
 *   "QVCE" (gm-C's .qvoice, versions 2 and 3): the x-vector, the reference
 *       transcript and codes (in-context cloning); its v3 sections for
 *       loading a voice into another model (META, TPAD, WOVR, WDLT) are not read;
 *   anything else: a raw little-endian f32 x-vector, no header (qwentts.cpp's
 *       and qtts's .spk, gm-C's x-vector .bin), with the codes of a
 *       .rvq file (11-bit codebook-major, the same in qwentts.cpp and qtts)
 *       when one is given.
 * Every value is checked (finite x-vector, codes below 2048, sizes against
 * the file) so a voice imported here loads as any registered one. */
#ifndef QTTS_VOICES_VOICE_IMPORT_H
#define QTTS_VOICES_VOICE_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

typedef struct {
    char name[72]; /* the pack's name for it; "" for a single-voice file */
    float *xvec; /* malloc'd */
    size_t xvec_len;
    int32_t *codes; /* frame-major [n_frames][16], malloc'd; NULL when the file has none */
    size_t n_frames;
    char *ref_text; /* malloc'd; NULL when the file has none */
} voice_import_item;

typedef struct {
    const char *format; /* "CrispASR voice pack", "qvoice", "raw f32 x-vector" */
    voice_import_item *items;
    int n;
} voice_import_set;

/* Reads the voice(s) in buf[size] (label names it in errors). rvq/rvq_size:
 * the codes of a raw x-vector (NULL: none; refused with the other formats).
 * Returns 0, or -1 with one line in err (out is then empty). */
int voice_import_parse(const unsigned char *buf, size_t size, const unsigned char *rvq, size_t rvq_size,
                       const char *label, voice_import_set *out, qtts_err *err);
void voice_import_free(voice_import_set *s);

#endif
