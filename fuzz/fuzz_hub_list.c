/* What `qtts download` takes from the network before writing any file: the
 * hub's JSON file listing (add_entries: paths, sizes, hashes) and the
 * response headers it reads (Content-Range, Link rel="next" paging). Those
 * are static functions of src/net/download.c, so the file is compiled into
 * this target (nothing else of qtts_net is linked; no network is used).
 * First byte: 0 = listing, 1 = headers (lines as libcurl delivers them, each
 * ending in '\n'). Beyond "no crash":
 *  - every accepted path is a plain relative path that stays inside the
 *    download folder (no empty, "." or ".." component, no leading '/', no
 *    backslash or control character) and is not a dotfile;
 *  - hashes are exactly 64 (SHA-256) or 40 (git SHA-1) characters, never both;
 *  - a next-page link is NUL-terminated within its buffer and holds no '<'
 *    or '>'. */
#include "net/download.c"

static void check_path(const char *p) {
    size_t n = strlen(p);
    if (!n || n > 1024 || p[0] == '/' || p[n - 1] == '/') abort();
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f || p[i] == '\\') abort();
    for (const char *c = p; *c;) {
        const char *e = strchr(c, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if (len == 0 || c[0] == '.') abort(); /* empty, ".", ".." or a dotfile */
        c += len + (e ? 1 : 0);
    }
}

static void check_listing(const char *text, size_t len) {
    char *z = malloc(len + 1); /* the real body buffer is NUL-terminated (mem_append) */
    if (!z) return;
    memcpy(z, text, len);
    z[len] = 0;
    cJSON *root = cJSON_Parse(z);
    free(z);
    if (!cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return;
    }
    hub_file *files = NULL;
    int n = 0, cap = 0;
    qtts_err err = {0};
    /* twice, as two pages of one listing */
    int rc = add_entries(root, &files, &n, &cap, &err);
    if (!rc) rc = add_entries(root, &files, &n, &cap, &err);
    if (rc && !err.msg[0]) abort();
    if (n > cap) abort();
    for (int i = 0; i < n; i++) {
        const hub_file *f = &files[i];
        if (!f->path) abort();
        check_path(f->path);
        size_t l256 = strlen(f->sha256), l1 = strlen(f->sha1);
        if ((l256 != 0 && l256 != 64) || (l1 != 0 && l1 != 40) || (l256 && l1)) abort();
    }
    for (int i = 0; i < n; i++) free(files[i].path);
    free(files);
    cJSON_Delete(root);
}

static void check_headers(const char *text, size_t len) {
    xfer x;
    memset(&x, 0, sizeof x);
    x.range_start = -1;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) + 1 : len - pos;
        /* each line in its own buffer, not NUL-terminated (libcurl's contract) */
        char *line = malloc(n + 1);
        if (!line) return;
        memcpy(line, text + pos, n);
        if (!nl) line[n++] = '\n';
        if (on_header(line, 1, n, &x) != n) abort();
        free(line);
        pos += nl ? (size_t)(nl - (text + pos)) + 1 : len - pos;
        if (!memchr(x.next_link, 0, sizeof x.next_link)) abort();
        if (strchr(x.next_link, '<') || strchr(x.next_link, '>')) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *text = (const char *)data + 1;
    if (data[0] & 1) check_headers(text, size - 1);
    else check_listing(text, size - 1);
    return 0;
}
