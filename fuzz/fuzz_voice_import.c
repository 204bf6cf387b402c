/* Other programs' voice files (voices/voice_import.h) from arbitrary bytes:
 * voice packs (GGUF), .qvoice and raw x-vectors, with or without .rvq codes
 * (the first byte's low bit: the last third of the input is the .rvq).
 * Beyond "no crash": a failure says why in one printable line; a success
 * gives at least one voice, each with a finite x-vector and codes below
 * 2048, and a transcript with no NUL inside. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "voices/voice_import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const int with_rvq = data[0] & 1;
    data++, size--;
    size_t n = with_rvq ? size - size / 3 : size;
    const uint8_t *rvq = with_rvq ? data + n : NULL;
    qtts_err err = {0};
    voice_import_set s;
    if (voice_import_parse(data, n, rvq, size - n, "fuzz", &s, &err)) {
        if (!err.msg[0] || s.n || s.items) abort();
        for (const char *c = err.msg; *c; c++)
            if ((unsigned char)*c < 0x20) abort(); /* one line, no control characters from the file */
        return 0;
    }
    if (s.n < 1) abort();
    for (int i = 0; i < s.n; i++) {
        const voice_import_item *it = &s.items[i];
        if (!it->xvec || it->xvec_len < 1) abort();
        for (size_t k = 0; k < it->xvec_len; k++)
            if (!isfinite(it->xvec[k])) abort();
        for (size_t k = 0; it->codes && k < it->n_frames * 16; k++)
            if (it->codes[k] < 0 || it->codes[k] >= 2048) abort();
        if (it->ref_text && memchr(it->ref_text, 0, strlen(it->ref_text) + 1) != it->ref_text + strlen(it->ref_text))
            abort();
    }
    voice_import_free(&s);
    return 0;
}
