/* EPUB without libzip and libxml2 at build time (see epub.h). */
#include "text/epub.h"

#include <string.h>

int qtts_epub_supported(void) { return 0; }

int qtts_epub_parse(const void *data, size_t len, qtts_book *out, qtts_err *err) {
    (void)data, (void)len;
    memset(out, 0, sizeof *out);
    return qtts_fail_as(err, QTTS_ERR_INVALID,
                        "this qtts was built without EPUB support (libzip and libxml2 were not found; install "
                        "libzip-dev and libxml2-dev and rebuild), or convert the book first (pandoc -t markdown)");
}
