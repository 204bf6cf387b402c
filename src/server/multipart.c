#include "server/multipart.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define MAX_BOUNDARY 70        /* RFC 2046 */
#define MAX_PART_HEADERS 8192  /* bytes of one part's header block */

static int ci_prefix(const char *s, size_t n, const char *lit) {
    size_t k = strlen(lit);
    return n >= k && !strncasecmp(s, lit, k);
}

static const unsigned char *find(const unsigned char *hay, size_t n, const unsigned char *needle, size_t k) {
    if (k == 0 || n < k) return NULL;
    const unsigned char *end = hay + n - k;
    for (const unsigned char *p = hay; p <= end; p++) {
        p = memchr(p, needle[0], (size_t)(end - p) + 1);
        if (!p) return NULL;
        if (!memcmp(p, needle, k)) return p;
    }
    return NULL;
}

int srv_multipart_is_form(const char *ct) {
    if (!ct) return 0;
    while (*ct == ' ' || *ct == '\t') ct++;
    return ci_prefix(ct, strlen(ct), "multipart/form-data") &&
           (ct[19] == 0 || ct[19] == ';' || ct[19] == ' ' || ct[19] == '\t');
}

/* The value of parameter key in a header value of the form
 * "token; key=value; key2="quoted"". Quoted values end at the next
 * unescaped quote; the view keeps escapes as sent (names never need them). */
static int header_param(const char *v, size_t n, const char *key, const char **out, size_t *out_len) {
    size_t klen = strlen(key), i = 0;
    while (i < n) {
        while (i < n && v[i] != ';') { /* skip to the next parameter, stepping over quoted strings */
            if (v[i] == '"') {
                for (i++; i < n && v[i] != '"'; i++)
                    if (v[i] == '\\') i++;
            }
            i++;
        }
        if (i >= n) return 0;
        i++;
        while (i < n && (v[i] == ' ' || v[i] == '\t')) i++;
        size_t k0 = i;
        while (i < n && v[i] != '=' && v[i] != ';') i++;
        size_t k1 = i;
        while (k1 > k0 && (v[k1 - 1] == ' ' || v[k1 - 1] == '\t')) k1--;
        if (i >= n || v[i] != '=') continue;
        i++;
        while (i < n && (v[i] == ' ' || v[i] == '\t')) i++;
        const char *val;
        size_t vlen;
        if (i < n && v[i] == '"') {
            size_t s = ++i;
            while (i < n && v[i] != '"') i += v[i] == '\\' ? 2 : 1;
            if (i >= n) return -1; /* unterminated quote */
            val = v + s;
            vlen = i - s;
            i++;
        } else {
            size_t s = i;
            while (i < n && v[i] != ';' && v[i] != ' ' && v[i] != '\t') i++;
            val = v + s;
            vlen = i - s;
        }
        if (k1 - k0 == klen && !strncasecmp(v + k0, key, klen)) {
            *out = val;
            *out_len = vlen;
            return 1;
        }
    }
    return 0;
}

/* Reads one part's header block [p, end) (without the blank line). */
static int parse_part_headers(const char *p, size_t n, srv_form_part *part, const char **why) {
    int have_disposition = 0;
    while (n) {
        const char *eol = memchr(p, '\r', n);
        size_t line = eol ? (size_t)(eol - p) : n;
        if (eol && (line + 1 >= n || eol[1] != '\n')) {
            *why = "a part header line does not end in CRLF";
            return -1;
        }
        const char *colon = memchr(p, ':', line);
        if (!colon || colon == p) {
            *why = "a part header line is not 'Name: value'";
            return -1;
        }
        size_t klen = (size_t)(colon - p);
        const char *v = colon + 1;
        size_t vlen = line - klen - 1;
        while (vlen && (*v == ' ' || *v == '\t')) v++, vlen--;
        while (vlen && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t')) vlen--;
        if (klen == 19 && !strncasecmp(p, "Content-Disposition", 19)) {
            if (!ci_prefix(v, vlen, "form-data") || (vlen > 9 && v[9] != ';' && v[9] != ' ')) {
                *why = "a part's Content-Disposition is not form-data";
                return -1;
            }
            int r = header_param(v, vlen, "name", &part->name, &part->name_len);
            int f = header_param(v, vlen, "filename", &part->filename, &part->filename_len);
            if (r < 0 || f < 0) {
                *why = "a part's Content-Disposition has an unterminated quoted string";
                return -1;
            }
            if (!r || part->name_len == 0) {
                *why = "a part's Content-Disposition has no name";
                return -1;
            }
            if (!f) part->filename = NULL;
            have_disposition = 1;
        } else if (klen == 12 && !strncasecmp(p, "Content-Type", 12)) {
            part->content_type = v;
            part->content_type_len = vlen;
        } else if (klen == 25 && !strncasecmp(p, "Content-Transfer-Encoding", 25)) {
            if (!(vlen == 6 && !strncasecmp(v, "binary", 6)) && !(vlen == 4 && !strncasecmp(v, "8bit", 4)) &&
                !(vlen == 4 && !strncasecmp(v, "7bit", 4))) {
                *why = "a part uses a Content-Transfer-Encoding other than binary";
                return -1;
            }
        }
        if (!eol) break;
        p = eol + 2;
        n -= line + 2;
    }
    if (!have_disposition) {
        *why = "a part has no Content-Disposition header";
        return -1;
    }
    return 0;
}

int srv_multipart_parse(const char *ct, const unsigned char *body, size_t len, srv_form_part *parts, int max_parts,
                        const char **why) {
    if (!srv_multipart_is_form(ct)) {
        *why = "Content-Type is not multipart/form-data";
        return -1;
    }
    const char *bnd;
    size_t blen;
    if (header_param(ct, strlen(ct), "boundary", &bnd, &blen) != 1 || blen == 0 || blen > MAX_BOUNDARY) {
        *why = "Content-Type has no valid boundary parameter (1-70 characters)";
        return -1;
    }
    /* delim = CRLF "--" boundary; the first one may start the body. */
    unsigned char delim[4 + MAX_BOUNDARY];
    memcpy(delim, "\r\n--", 4);
    memcpy(delim + 4, bnd, blen);
    size_t dlen = 4 + blen;
    const unsigned char *p, *end = body + len;
    if (len >= dlen - 2 && !memcmp(body, delim + 2, dlen - 2)) p = body + dlen - 2;
    else if ((p = find(body, len, delim, dlen))) p += dlen;
    else {
        *why = "the body does not contain the boundary";
        return -1;
    }
    int n = 0;
    for (;;) {
        /* p is just past a delimiter: "--" closes, else optional padding + CRLF. */
        if (end - p >= 2 && p[0] == '-' && p[1] == '-') return n;
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n') {
            *why = end - p < 2 ? "the body ends before the closing boundary" : "a boundary line does not end in CRLF";
            return -1;
        }
        p += 2;
        const unsigned char *hend = find(p, (size_t)(end - p), (const unsigned char *)"\r\n\r\n", 4);
        const unsigned char *hblock = p;
        size_t hn;
        if (end - p >= 2 && p[0] == '\r' && p[1] == '\n') { /* no headers at all */
            hn = 0;
            p += 2;
        } else if (!hend || hend - p > MAX_PART_HEADERS) {
            *why = hend ? "a part's headers are too long" : "the body ends inside a part's headers";
            return -1;
        } else {
            hn = (size_t)(hend - p);
            p = hend + 4;
        }
        if (n == max_parts) {
            *why = "too many parts in the form";
            return -1;
        }
        srv_form_part *part = &parts[n];
        memset(part, 0, sizeof *part);
        if (parse_part_headers((const char *)hblock, hn, part, why)) return -1;
        const unsigned char *next = find(p, (size_t)(end - p), delim, dlen);
        if (!next) {
            *why = "the body ends before the closing boundary";
            return -1;
        }
        part->data = p;
        part->len = (size_t)(next - p);
        n++;
        p = next + dlen;
    }
}

const srv_form_part *srv_form_find(const srv_form_part *parts, int n, const char *name) {
    size_t k = strlen(name);
    for (int i = 0; i < n; i++)
        if (parts[i].name_len == k && !memcmp(parts[i].name, name, k)) return &parts[i];
    return NULL;
}
