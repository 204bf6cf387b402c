/* The pronunciation lexicon's parser (text/lexicon.h) on arbitrary bytes:
 * no crash; a refusal is QTTS_ERR_INVALID with a "name:line:" message (or
 * out of memory); an accepted lexicon, applied to the same bytes as text
 * (when they are valid UTF-8), gives valid UTF-8, and the same result
 * whole and in pieces of 1-7 bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/lexicon.h"
#include "text/normalize.h"
#include "text/utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qtts_err err = {0};
    const char *text = (const char *)data;
    qtts_lexicon *lx = qtts_lexicon_parse_text(text, size, "f", &err);
    if (!lx) {
        if (err.status == QTTS_ERR_NO_MEMORY) return 0;
        if (err.status != QTTS_ERR_INVALID || strncmp(err.msg, "f:", 2)) abort();
        return 0;
    }
    if (qtts_utf8_check(text, size) != size) {
        qtts_lexicon_release(lx);
        return 0;
    }
    size_t out_len = 0;
    char *out = qtts_text_normalize_lex(text, size, "en", QTTS_NORM_BASIC, lx, &out_len, &err);
    if (out && qtts_utf8_check(out, out_len) != out_len) abort();
    if (out) {
        qtts_norm_stream *s = qtts_norm_stream_new("en", QTTS_NORM_BASIC, &err);
        if (!s) abort();
        qtts_norm_stream_set_lexicon(s, lx);
        size_t step = 1 + size % 7;
        int ok = 1;
        for (size_t p = 0; p < size && ok; p += step)
            ok = !qtts_norm_stream_feed(s, text + p, p + step <= size ? step : size - p, 0, &err);
        if (ok && !qtts_norm_stream_feed(s, NULL, 0, 1, &err)) {
            size_t n;
            const char *t = qtts_norm_stream_text(s, &n);
            if (n != out_len || memcmp(t, out, n)) abort();
        } else if (err.status != QTTS_ERR_NO_MEMORY) {
            abort();
        }
        qtts_norm_stream_free(s);
    }
    free(out);
    qtts_lexicon_release(lx);
    return 0;
}
