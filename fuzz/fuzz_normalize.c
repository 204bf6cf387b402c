/* The text front end (qtts_text_normalize) on arbitrary bytes; the first
 * byte picks the language (the ten, or auto) and the mode. Beyond "no
 * crash": invalid UTF-8 is refused with QTTS_ERR_INVALID and nothing else;
 * valid UTF-8 gives valid UTF-8 within the stated size bound; off mode
 * returns the bytes unchanged; the same text fed in pieces (qtts_norm_stream,
 * piece lengths from the first byte) gives the same result, except where
 * `auto` guesses from the first sentence only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/norm_lang.h"
#include "text/normalize.h"
#include "text/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!size) return 0;
    int n_langs = qtts_norm_lang_count();
    int li = data[0] % (n_langs + 1);
    qtts_norm_mode mode = (qtts_norm_mode)((data[0] / 16) % 3);
    const char *lang = li == n_langs ? "auto" : qtts_norm_lang_at(li)->code;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    qtts_err err = {0};
    size_t out_len = 0;
    char *out = qtts_text_normalize(text, len, lang, mode, &out_len, &err);
    int valid = qtts_utf8_check(text, len) == len;
    if (!valid) {
        if (out || err.status != QTTS_ERR_INVALID) abort();
        return 0;
    }
    if (!out) {
        if (err.status != QTTS_ERR_NO_MEMORY) abort(); /* the only other failure: the output cap */
        return 0;
    }
    /* NUL bytes survive only in off mode (the others turn control characters into spaces) */
    int has_nul = memchr(text, 0, len) != NULL;
    if ((mode != QTTS_NORM_OFF || !has_nul) && strlen(out) != out_len) abort();
    if (out[out_len] || out_len > 16 * len + 4096 || qtts_utf8_check(out, out_len) != out_len) abort();
    if (mode == QTTS_NORM_OFF && (out_len != len || memcmp(out, text, len))) abort();
    qtts_norm_stream *s = qtts_norm_stream_new(lang, mode, &err);
    if (!s) abort();
    size_t step = 1 + data[0] % 7, done = 0;
    for (size_t p = 0; p < len; p += step) {
        if (qtts_norm_stream_feed(s, text + p, p + step <= len ? step : len - p, 0, &err)) {
            if (err.status != QTTS_ERR_NO_MEMORY) abort(); /* the output cap, counted on the text so far */
            qtts_norm_stream_free(s);
            free(out);
            return 0;
        }
        size_t n;
        const char *part = qtts_norm_stream_text(s, &n);
        if (n < done || (li != n_langs && (n > out_len || memcmp(part, out, n)))) abort(); /* final text only grows */
        done = n;
    }
    if (qtts_norm_stream_feed(s, NULL, 0, 1, &err)) abort();
    size_t n;
    const char *whole = qtts_norm_stream_text(s, &n);
    if (li != n_langs && (n != out_len || memcmp(whole, out, n))) abort();
    qtts_norm_stream_free(s);
    free(out);
    return 0;
}
