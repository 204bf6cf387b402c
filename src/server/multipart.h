/* multipart/form-data bodies (RFC 7578 over RFC 2046's multipart framing),
 * parsed from a complete body held in memory: the server buffers bodies up to
 * its size limit anyway, and a whole-body parser is simple to fuzz.
 *
 * Parts point into the body (nothing is copied); names and file names are
 * NUL-free views with lengths. Only what form uploads use is accepted: a
 * boundary parameter, Content-Disposition: form-data with a name, optional
 * filename and Content-Type. Transfer encodings other than the identity are
 * refused (browsers and SDKs never send them). */
#ifndef QTTS_SERVER_MULTIPART_H
#define QTTS_SERVER_MULTIPART_H

#include <stddef.h>

typedef struct {
    const char *name;
    size_t name_len;
    const char *filename; /* NULL for plain fields */
    size_t filename_len;
    const char *content_type; /* the part's Content-Type value, or NULL */
    size_t content_type_len;
    const unsigned char *data;
    size_t len;
} srv_form_part;

/* 1 if a Content-Type header value names multipart/form-data. */
int srv_multipart_is_form(const char *content_type);

/* Splits body into at most max_parts parts. Returns the number of parts, or
 * -1 with *why set to a one-line reason (no boundary, truncated body, a part
 * without a name, too many parts, ...). */
int srv_multipart_parse(const char *content_type, const unsigned char *body, size_t len, srv_form_part *parts,
                        int max_parts, const char **why);

/* The first part called name, or NULL. */
const srv_form_part *srv_form_find(const srv_form_part *parts, int n, const char *name);

#endif
