/* EPUB -> chapters (see epub.h) with libzip (the container) and libxml2
 * (its XML parser for container.xml, the OPF and the NCX; its HTML parser,
 * which recovers from the broken markup real books carry, for XHTML). */
#include "text/epub.h"

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zip.h>

#include "text/strbuf.h"

#define XML_OPTS (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING)
#define HTML_OPTS (HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING)
#define MAX_DEPTH 256 /* elements deeper than this are not walked (libxml2 stops at 256 too) */

int qtts_epub_supported(void) { return 1; }

/* ---- the container ---- */

/* The whole entry `name` (NUL-terminated, malloc'd), at most QTTS_EPUB_MAX_ENTRY bytes. */
static char *read_entry(zip_t *z, const char *name, size_t *len, qtts_err *err) {
    zip_file_t *f = zip_fopen(z, name, 0);
    if (!f) {
        qtts_fail_as(err, QTTS_ERR_INVALID, "EPUB: no file '%.200s' in the archive", name);
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = qtts_malloc(cap + 1, err);
    while (buf) {
        if (n == cap) {
            if (cap >= QTTS_EPUB_MAX_ENTRY) {
                qtts_fail_as(err, QTTS_ERR_INVALID, "EPUB: '%.200s' is larger than %zu MB uncompressed", name,
                             QTTS_EPUB_MAX_ENTRY >> 20);
                break;
            }
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "EPUB: out of memory");
                break;
            }
            buf = nb;
        }
        zip_int64_t got = zip_fread(f, buf + n, cap - n);
        if (got < 0) {
            qtts_fail_as(err, QTTS_ERR_INVALID, "EPUB: '%.200s' does not decompress: %s", name,
                         zip_strerror(z));
            break;
        }
        if (got == 0) {
            zip_fclose(f);
            buf[n] = 0;
            *len = n;
            return buf;
        }
        n += (size_t)got;
    }
    free(buf);
    zip_fclose(f);
    return NULL;
}

/* ---- paths ---- */

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* base's folder (up to its last '/') joined with the relative href, its
 * %XX escapes decoded, fragment dropped, "." and ".." resolved. */
static char *resolve(const char *base, const char *href, qtts_err *err) {
    const char *slash = strrchr(base, '/');
    size_t dir = slash ? (size_t)(slash - base) + 1 : 0;
    size_t hn = strcspn(href, "#?");
    char *p = qtts_malloc(dir + hn + 1, err);
    if (!p) return NULL;
    memcpy(p, base, dir);
    size_t n = dir;
    for (size_t i = 0; i < hn; i++) {
        char c = href[i];
        int hi = i + 2 < hn ? hex_digit(href[i + 1]) : -1, lo = i + 2 < hn ? hex_digit(href[i + 2]) : -1;
        if (c == '%' && hi >= 0 && lo >= 0 && (hi || lo)) {
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        p[n++] = c;
    }
    p[n] = 0;
    if (href[0] == '/') memmove(p, p + dir + 1, n - dir); /* absolute: from the archive's root */
    /* segments: "." dropped, ".." removes the one before */
    char *out = p, *seg = p;
    size_t o = 0;
    while (*seg) {
        size_t len = strcspn(seg, "/");
        int last = seg[len] == 0;
        if (len == 1 && seg[0] == '.') {
        } else if (len == 2 && seg[0] == '.' && seg[1] == '.') {
            if (o) {
                o--;
                while (o && out[o - 1] != '/') o--;
            }
        } else if (len) {
            memmove(out + o, seg, len);
            o += len;
            if (!last) out[o++] = '/';
        }
        seg += len + !last;
    }
    out[o] = 0;
    return p;
}

/* ---- XML helpers ---- */

static const char *local_name(const xmlNode *n) {
    const char *s = (const char *)n->name;
    const char *c = s ? strrchr(s, ':') : NULL;
    return c ? c + 1 : s ? s : "";
}

static int is_elem(const xmlNode *n, const char *name) {
    return n->type == XML_ELEMENT_NODE && !strcasecmp(local_name(n), name);
}

/* An attribute by local name (namespaced or not), malloc'd by libxml2, or NULL. */
static char *attr(const xmlNode *n, const char *name) {
    for (const xmlAttr *a = n->properties; a; a = a->next) {
        const char *an = (const char *)a->name;
        const char *c = strrchr(an, ':');
        if (!strcasecmp(c ? c + 1 : an, name)) return (char *)xmlNodeGetContent((const xmlNode *)a);
    }
    return NULL;
}

/* The first element named name in document order under n (depth-limited). */
static const xmlNode *find(const xmlNode *n, const char *name, int depth) {
    for (; n && depth < MAX_DEPTH; n = n->next) {
        if (is_elem(n, name)) return n;
        const xmlNode *c = find(n->children, name, depth + 1);
        if (c) return c;
    }
    return NULL;
}

/* ---- text extraction ---- */

typedef struct {
    qtts_strbuf *b;
    int space; /* a space is owed before the next word */
} text_out;

static int is_block(const char *name) {
    static const char *const blocks[] = {"p",     "div",   "h1",      "h2",     "h3",     "h4",  "h5",
                                         "h6",    "li",    "blockquote", "section", "article", "tr", "dt",
                                         "dd",    "pre",   "hr",      "figcaption", "aside", "header",
                                         "footer", "table", "ul",     "ol",     "nav",    "body", "dl"};
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        if (!strcasecmp(name, blocks[i])) return 1;
    return 0;
}

static int is_skipped(const char *name) {
    static const char *const skipped[] = {"script", "style", "head", "noscript", "svg", "math", "rt", "rp"};
    for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++)
        if (!strcasecmp(name, skipped[i])) return 1;
    return 0;
}

/* Ends the paragraph: the text so far ends with a blank line. */
static void paragraph(text_out *t) {
    qtts_strbuf *b = t->b;
    t->space = 0;
    if (!b->len) return;
    size_t nl = 0;
    while (nl < b->len && nl < 2 && b->s[b->len - 1 - nl] == '\n') nl++;
    qtts_strbuf_add(b, "\n\n", 2 - nl);
}

static void words(text_out *t, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            t->space = 1;
            continue;
        }
        if (t->space && t->b->len && t->b->s[t->b->len - 1] != '\n') qtts_strbuf_add(t->b, " ", 1);
        t->space = 0;
        qtts_strbuf_add(t->b, s, 1);
    }
}

static void walk_text(text_out *t, const xmlNode *n, int depth) {
    for (; n && depth < MAX_DEPTH && !t->b->failed; n = n->next) {
        if (n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) {
            if (n->content) words(t, (const char *)n->content);
            continue;
        }
        if (n->type != XML_ELEMENT_NODE) continue;
        const char *name = local_name(n);
        if (is_skipped(name)) continue;
        if (!strcasecmp(name, "br")) {
            if (t->b->len && t->b->s[t->b->len - 1] != '\n') qtts_strbuf_add(t->b, "\n", 1);
            t->space = 0;
            continue;
        }
        int block = is_block(name);
        if (block) paragraph(t);
        walk_text(t, n->children, depth + 1);
        if (block) paragraph(t);
    }
}

/* n's text, whitespace collapsed and trimmed (malloc'd; "" when none). */
static char *text_of(const xmlNode *n, size_t max, qtts_err *err) {
    qtts_strbuf b;
    qtts_strbuf_init(&b, max);
    text_out t = {&b, 0};
    qtts_strbuf_add(&b, "", 0);
    walk_text(&t, n, 0);
    if (b.failed) {
        qtts_strbuf_free(&b);
        qtts_fail_as(err, QTTS_ERR_INVALID, "EPUB: the text is larger than %zu MB (or out of memory)",
                     QTTS_EPUB_MAX_TEXT >> 20);
        return NULL;
    }
    size_t a = 0, e = b.len;
    while (a < e && (b.s[a] == '\n' || b.s[a] == ' ')) a++;
    while (e > a && (b.s[e - 1] == '\n' || b.s[e - 1] == ' ')) e--;
    memmove(b.s, b.s + a, e - a);
    b.s[e - a] = 0;
    return b.s;
}

/* ---- the package ---- */

typedef struct {
    char *id, *path, *type, *props;
} item;

typedef struct {
    zip_t *z;
    item *items;
    size_t n_items;
    char **spine; /* [n_spine] resolved paths */
    int *spine_pos; /* [n_spine] 1-based position among the spine's itemrefs */
    size_t n_spine;
    char **toc_path, **toc_title; /* [n_toc] first entry per document */
    size_t n_toc, cap_toc;
    char *opf;
    qtts_err *err;
} epub;

static const item *item_by_id(const epub *e, const char *id) {
    for (size_t i = 0; id && i < e->n_items; i++)
        if (e->items[i].id && !strcmp(e->items[i].id, id)) return &e->items[i];
    return NULL;
}

static const char *toc_title(const epub *e, const char *path) {
    for (size_t i = 0; i < e->n_toc; i++)
        if (!strcmp(e->toc_path[i], path)) return e->toc_title[i];
    return NULL;
}

/* One table-of-contents entry: the first title of each document is kept. */
static int add_toc(epub *e, const char *base, const char *href, char *title) {
    if (!href || !*href || !title || !*title) {
        free(title);
        return 0;
    }
    char *path = resolve(base, href, e->err);
    if (!path) {
        free(title);
        return -1;
    }
    if (toc_title(e, path)) {
        free(path);
        free(title);
        return 0;
    }
    if (e->n_toc == e->cap_toc) {
        size_t nc = e->cap_toc ? e->cap_toc * 2 : 32;
        char **a = realloc(e->toc_path, nc * sizeof *a);
        if (a) e->toc_path = a;
        char **b = a ? realloc(e->toc_title, nc * sizeof *b) : NULL;
        if (b) e->toc_title = b;
        if (!a || !b) {
            free(path);
            free(title);
            return qtts_fail_as(e->err, QTTS_ERR_NO_MEMORY, "EPUB: out of memory");
        }
        e->cap_toc = nc;
    }
    e->toc_path[e->n_toc] = path;
    e->toc_title[e->n_toc++] = title;
    return 0;
}

/* EPUB 3: the <a href> entries of <nav epub:type="toc"> (or the first <nav>). */
static int read_nav(epub *e, const char *path) {
    size_t len = 0;
    char *buf = read_entry(e->z, path, &len, e->err);
    if (!buf) return -1;
    htmlDocPtr doc = htmlReadMemory(buf, (int)len, NULL, "UTF-8", HTML_OPTS);
    free(buf);
    if (!doc) return 0; /* unreadable contents: the documents' own headings */
    const xmlNode *root = xmlDocGetRootElement(doc), *nav = NULL;
    for (const xmlNode *n = find(root, "nav", 0); n && !nav; n = n->next) {
        if (!is_elem(n, "nav")) continue;
        char *type = attr(n, "type");
        if (type && strstr(type, "toc")) nav = n;
        xmlFree(type);
    }
    if (!nav) nav = find(root, "nav", 0);
    int rc = 0;
    /* every <a> under it, in order: an explicit stack of siblings to visit */
    const xmlNode *stack[MAX_DEPTH];
    int sp = 0;
    if (nav) stack[sp++] = nav->children;
    while (sp && !rc) {
        const xmlNode *n = stack[--sp];
        if (!n) continue;
        stack[sp++] = n->next;
        if (n->type != XML_ELEMENT_NODE) continue;
        if (is_elem(n, "a")) {
            char *href = attr(n, "href");
            char *title = text_of(n->children, 4096, e->err);
            if (!title) rc = -1;
            else rc = add_toc(e, path, href, title);
            xmlFree(href);
        } else if (sp < MAX_DEPTH) {
            stack[sp++] = n->children;
        }
    }
    xmlFreeDoc(doc);
    return rc;
}

/* EPUB 2: the NCX's navPoints (navLabel/text, content@src), nested in order. */
static int read_ncx_points(epub *e, const char *path, const xmlNode *n, int depth) {
    for (; n && depth < MAX_DEPTH; n = n->next) {
        if (!is_elem(n, "navPoint")) {
            if (n->type == XML_ELEMENT_NODE && read_ncx_points(e, path, n->children, depth + 1)) return -1;
            continue;
        }
        const xmlNode *label = NULL, *content = NULL;
        for (const xmlNode *c = n->children; c; c = c->next) {
            if (!label && is_elem(c, "navLabel")) label = c;
            if (!content && is_elem(c, "content")) content = c;
        }
        if (label && content) {
            const xmlNode *t = find(label->children, "text", 0);
            char *src = attr(content, "src");
            char *title = t ? text_of(t->children, 4096, e->err) : NULL;
            int rc = t && !title ? -1 : add_toc(e, path, src, title);
            xmlFree(src);
            if (rc) return -1;
        }
        if (read_ncx_points(e, path, n->children, depth + 1)) return -1;
    }
    return 0;
}

static int read_ncx(epub *e, const char *path) {
    size_t len = 0;
    char *buf = read_entry(e->z, path, &len, e->err);
    if (!buf) return -1;
    xmlDocPtr doc = xmlReadMemory(buf, (int)len, NULL, NULL, XML_OPTS);
    free(buf);
    if (!doc) return 0;
    int rc = read_ncx_points(e, path, xmlDocGetRootElement(doc), 0);
    xmlFreeDoc(doc);
    return rc;
}

/* The OPF: manifest, spine, and which contents document to read. */
static int read_package(epub *e) {
    size_t len = 0;
    char *buf = read_entry(e->z, "META-INF/container.xml", &len, e->err);
    if (!buf) return -1;
    xmlDocPtr doc = xmlReadMemory(buf, (int)len, NULL, NULL, XML_OPTS);
    free(buf);
    const xmlNode *rf = doc ? find(xmlDocGetRootElement(doc), "rootfile", 0) : NULL;
    char *full = rf ? attr(rf, "full-path") : NULL;
    if (full && *full) e->opf = strdup(full);
    xmlFree(full);
    xmlFreeDoc(doc);
    if (!e->opf)
        return qtts_fail_as(e->err, QTTS_ERR_INVALID, "EPUB: META-INF/container.xml names no package (rootfile)");
    if (!(buf = read_entry(e->z, e->opf, &len, e->err))) return -1;
    doc = xmlReadMemory(buf, (int)len, NULL, NULL, XML_OPTS);
    free(buf);
    if (!doc) return qtts_fail_as(e->err, QTTS_ERR_INVALID, "EPUB: the package %.200s is not XML", e->opf);
    const xmlNode *root = xmlDocGetRootElement(doc);
    const xmlNode *manifest = find(root, "manifest", 0), *spine = find(root, "spine", 0);
    int rc = 0;
    size_t n_items = 0, n_refs = 0;
    for (const xmlNode *c = manifest ? manifest->children : NULL; c; c = c->next) n_items += is_elem(c, "item");
    for (const xmlNode *c = spine ? spine->children : NULL; c; c = c->next) n_refs += is_elem(c, "itemref");
    if (!n_refs) rc = qtts_fail_as(e->err, QTTS_ERR_INVALID, "EPUB: the package has an empty spine (no reading order)");
    else if (n_refs > QTTS_EPUB_MAX_SPINE)
        rc = qtts_fail_as(e->err, QTTS_ERR_INVALID, "EPUB: %zu documents in the spine (at most %d)", n_refs,
                          QTTS_EPUB_MAX_SPINE);
    if (!rc && (!(e->items = qtts_calloc(n_items ? n_items : 1, sizeof *e->items, e->err)) ||
                !(e->spine = qtts_calloc(n_refs, sizeof *e->spine, e->err)) ||
                !(e->spine_pos = qtts_calloc(n_refs, sizeof *e->spine_pos, e->err))))
        rc = -1;
    for (const xmlNode *c = manifest && !rc ? manifest->children : NULL; c && !rc; c = c->next) {
        if (!is_elem(c, "item")) continue;
        item *it = &e->items[e->n_items++];
        it->id = attr(c, "id");
        it->type = attr(c, "media-type");
        it->props = attr(c, "properties");
        char *href = attr(c, "href");
        if (href && !(it->path = resolve(e->opf, href, e->err))) rc = -1;
        xmlFree(href);
    }
    int pos = 0;
    for (const xmlNode *c = spine && !rc ? spine->children : NULL; c && !rc; c = c->next) {
        if (!is_elem(c, "itemref")) continue;
        pos++;
        char *idref = attr(c, "idref");
        const item *it = item_by_id(e, idref);
        xmlFree(idref);
        if (it && it->type && !strstr(it->type, "html")) continue; /* an image or SVG page: nothing to read */
        if (!it || !it->path) continue;
        e->spine_pos[e->n_spine] = pos;
        if (!(e->spine[e->n_spine++] = strdup(it->path)))
            rc = qtts_fail_as(e->err, QTTS_ERR_NO_MEMORY, "EPUB: out of memory");
    }
    if (!rc && !e->n_spine)
        rc = qtts_fail_as(e->err, QTTS_ERR_INVALID, "EPUB: no document of the spine is in the manifest");
    /* the contents: EPUB 3's nav, else the spine's NCX */
    const item *nav = NULL;
    for (size_t i = 0; !rc && i < e->n_items && !nav; i++)
        if (e->items[i].props && strstr(e->items[i].props, "nav") && e->items[i].path) nav = &e->items[i];
    char *toc = spine ? attr(spine, "toc") : NULL;
    const item *ncx = item_by_id(e, toc);
    xmlFree(toc);
    if (!rc && nav) rc = read_nav(e, nav->path);
    if (!rc && !e->n_toc && ncx && ncx->path) rc = read_ncx(e, ncx->path);
    xmlFreeDoc(doc);
    return rc;
}

/* ---- chapters ---- */

typedef struct {
    qtts_book *b;
    size_t cap;
    qtts_strbuf text; /* the open chapter's prose */
    char *title;
    int line, open;
} chapters;

static int close_chapter(chapters *c, qtts_err *err) {
    if (!c->open) return 0;
    c->open = 0;
    if (c->text.failed)
        return qtts_fail_as(err, QTTS_ERR_INVALID, "EPUB: the text is larger than %zu MB (or out of memory)",
                            QTTS_EPUB_MAX_TEXT >> 20);
    char *prose = c->text.s;
    size_t n = c->text.len;
    c->text.s = NULL;
    c->text.len = c->text.cap = 0;
    if (!n) { /* nothing to read */
        free(prose);
        free(c->title);
        c->title = NULL;
        return 0;
    }
    if (c->b->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 16;
        qtts_chapter *a = realloc(c->b->ch, nc * sizeof *a);
        if (!a) {
            free(prose);
            return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "EPUB: out of memory");
        }
        c->b->ch = a;
        c->cap = nc;
    }
    /* "Title." first, its own sentence (as text/book.c reads a heading); a
     * document's own heading of the same words is not read twice */
    size_t tn = strlen(c->title), skip = 0;
    if (!strncmp(prose, c->title, tn) && (prose[tn] == '\n' || !prose[tn])) {
        skip = tn;
        while (prose[skip] == '\n') skip++;
    }
    int punct = tn && strchr(".!?:;", c->title[tn - 1]) != NULL;
    size_t size = tn + 3 + (n - skip) + 1;
    char *text = qtts_malloc(size, err);
    if (!text) {
        free(prose);
        return -1;
    }
    snprintf(text, size, "%s%s%s%s", c->title, punct ? "" : ".", prose[skip] ? "\n\n" : "", prose + skip);
    free(prose);
    c->b->ch[c->b->n++] = (qtts_chapter){.title = c->title, .text = text, .line = c->line};
    c->title = NULL;
    return 0;
}

static int open_chapter(chapters *c, const char *title, int line, qtts_err *err) {
    if (close_chapter(c, err)) return -1;
    if (!(c->title = strdup(title))) return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "EPUB: out of memory");
    qtts_strbuf_free(&c->text);
    qtts_strbuf_init(&c->text, QTTS_EPUB_MAX_TEXT);
    c->line = line;
    c->open = 1;
    return 0;
}

/* A document's own title: its first h1-h3, else <title>. */
static char *own_title(const xmlNode *root, qtts_err *err) {
    static const char *const heads[] = {"h1", "h2", "h3", "title"};
    for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
        const xmlNode *h = find(root, heads[i], 0);
        char *t = h ? text_of(h->children, 4096, err) : NULL;
        if (h && !t) return NULL;
        if (t && *t) {
            for (char *p = t; *p; p++)
                if (*p == '\n') *p = ' ';
            return t;
        }
        free(t);
    }
    return calloc(1, 1);
}

static int read_document(epub *e, chapters *c, size_t i, size_t *total) {
    size_t len = 0;
    char *buf = read_entry(e->z, e->spine[i], &len, e->err);
    if (!buf) return -1;
    htmlDocPtr doc = htmlReadMemory(buf, (int)len, NULL, "UTF-8", HTML_OPTS);
    free(buf);
    if (!doc) return 0; /* nothing readable: skipped as an image page would be */
    const xmlNode *root = xmlDocGetRootElement(doc);
    const xmlNode *body = find(root, "body", 0);
    int rc = 0;
    char *prose = text_of(body ? body : root, QTTS_EPUB_MAX_TEXT, e->err);
    if (!prose) rc = -1;
    if (!rc && *prose) {
        const char *named = toc_title(e, e->spine[i]);
        if (named) {
            rc = open_chapter(c, named, e->spine_pos[i], e->err);
        } else if (!e->n_toc) { /* no contents: every document is a chapter */
            char *mine = own_title(root, e->err), fallback[32];
            snprintf(fallback, sizeof fallback, "Chapter %zu", c->b->n + (size_t)c->open + 1);
            rc = mine ? open_chapter(c, *mine ? mine : fallback, e->spine_pos[i], e->err) : -1;
            free(mine);
        } else if (!c->open) {
            rc = open_chapter(c, "Opening", e->spine_pos[i], e->err);
        }
        *total += strlen(prose);
        if (!rc && *total > QTTS_EPUB_MAX_TEXT)
            rc = qtts_fail_as(e->err, QTTS_ERR_INVALID, "EPUB: the text is larger than %zu MB",
                              QTTS_EPUB_MAX_TEXT >> 20);
        if (!rc && c->text.len) qtts_strbuf_add(&c->text, "\n\n", 2);
        if (!rc) qtts_strbuf_adds(&c->text, prose);
    }
    free(prose);
    xmlFreeDoc(doc);
    return rc;
}

static void epub_free(epub *e) {
    for (size_t i = 0; i < e->n_items; i++) {
        xmlFree(e->items[i].id);
        xmlFree(e->items[i].type);
        xmlFree(e->items[i].props);
        free(e->items[i].path);
    }
    free(e->items);
    for (size_t i = 0; i < e->n_spine; i++) free(e->spine[i]);
    free(e->spine);
    free(e->spine_pos);
    for (size_t i = 0; i < e->n_toc; i++) {
        free(e->toc_path[i]);
        free(e->toc_title[i]);
    }
    free(e->toc_path);
    free(e->toc_title);
    free(e->opf);
    if (e->z) zip_discard(e->z);
}

int qtts_epub_parse(const void *data, size_t len, qtts_book *out, qtts_err *err) {
    memset(out, 0, sizeof *out);
    epub e;
    memset(&e, 0, sizeof e);
    e.err = err;
    zip_error_t ze;
    zip_error_init(&ze);
    zip_source_t *src = len ? zip_source_buffer_create(data, len, 0, &ze) : NULL;
    if (src && !(e.z = zip_open_from_source(src, ZIP_RDONLY, &ze))) zip_source_free(src);
    int rc = 0;
    if (!e.z) rc = qtts_fail_as(err, QTTS_ERR_INVALID, "EPUB: not a ZIP archive (%s)", len ? zip_error_strerror(&ze) : "empty");
    zip_error_fini(&ze);
    if (!rc) rc = read_package(&e);
    chapters c;
    memset(&c, 0, sizeof c);
    c.b = out;
    qtts_strbuf_init(&c.text, QTTS_EPUB_MAX_TEXT);
    size_t total = 0;
    for (size_t i = 0; !rc && i < e.n_spine; i++) rc = read_document(&e, &c, i, &total);
    if (!rc) rc = close_chapter(&c, err);
    if (!rc && !out->n) rc = qtts_fail_as(err, QTTS_ERR_INVALID, "EPUB: no text in any document of the spine");
    free(c.title);
    qtts_strbuf_free(&c.text);
    epub_free(&e);
    if (rc) qtts_book_free(out);
    return rc;
}
