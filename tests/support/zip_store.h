/* A ZIP archive in memory with stored (uncompressed) entries, for tests that
 * build their own EPUBs: no library, so it works where the reader's is absent. */
#ifndef QTTS_TEST_ZIP_STORE_H
#define QTTS_TEST_ZIP_STORE_H

#include <stddef.h>

typedef struct {
    const char *name;
    const char *data; /* NUL-terminated text */
} zip_entry;

/* The archive of n entries (malloc'd, *len bytes), or NULL. */
unsigned char *zip_store(const zip_entry *e, size_t n, size_t *len);

#endif
