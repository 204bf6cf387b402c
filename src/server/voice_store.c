#include "server/voice_store.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/file.h"
#include "io/rvq.h"
#include "io/spk.h"

typedef struct {
    char name[72];
    qtts_voice *voice;
    dev_t dev; /* identity of NAME.spk when loaded from the directory */
    ino_t ino;
    struct timespec mtime;
} entry;

struct srv_voices {
    qtts_engine *e;
    char *dir;
    pthread_mutex_t mu;
    entry *items;
    size_t n, cap;
    unsigned long tmp_counter;
};

int srv_voice_name_ok(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n > 64) return 0;
    if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= '0' && name[0] <= '9')))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                 c == '.';
        if (!ok) return 0;
    }
    return strstr(name, "..") == NULL;
}

static entry *find(srv_voices *vs, const char *name) {
    for (size_t i = 0; i < vs->n; i++)
        if (!strcmp(vs->items[i].name, name)) return &vs->items[i];
    return NULL;
}

static void drop(srv_voices *vs, entry *en) {
    qtts_voice_release(en->voice);
    size_t i = (size_t)(en - vs->items);
    memmove(&vs->items[i], &vs->items[i + 1], (vs->n - i - 1) * sizeof *en);
    vs->n--;
}

static entry *insert(srv_voices *vs, const char *name, qtts_voice *v) {
    entry *en = find(vs, name);
    if (en) {
        qtts_voice_release(en->voice);
    } else {
        if (vs->n == vs->cap) {
            size_t cap = vs->cap ? vs->cap * 2 : 16;
            entry *p = realloc(vs->items, cap * sizeof *p);
            if (!p) return NULL;
            vs->items = p;
            vs->cap = cap;
        }
        en = &vs->items[vs->n++];
        memset(en, 0, sizeof *en);
        snprintf(en->name, sizeof en->name, "%s", name);
    }
    en->voice = qtts_voice_retain(v);
    return en;
}

/* a voice's .json is tiny; a cap keeps a stray large file from being read */
#define MAX_VOICE_FILE_BYTES ((size_t)1 << 20)

static void path_of(const srv_voices *vs, const char *name, const char *ext, char *out, size_t size) {
    snprintf(out, size, "%s/%s.%s", vs->dir, name, ext);
}

/* *missing: the file does not exist (an optional part of a voice). */
static char *read_all(const char *path, size_t *size, int *missing, qtts_err *err) {
    *size = 0;
    *missing = access(path, F_OK) != 0 && errno == ENOENT;
    if (*missing) return NULL;
    char *data;
    return qtts_read_file(path, MAX_VOICE_FILE_BYTES, &data, size, err) ? NULL : data;
}
/* Loads NAME from the directory; st is NAME.spk's stat. */
static qtts_voice *load_from_dir(srv_voices *vs, const char *name, char *err, size_t err_size) {
    char path[4096];
    size_t size;
    int missing;
    qtts_err qe = {0};
    path_of(vs, name, "spk", path, sizeof path);
    int64_t xlen = 0;
    float *x = qtts_spk_read(path, 0, &xlen, &qe);
    if (!x) {
        snprintf(err, err_size, "%s", qe.msg);
        return NULL;
    }
    path_of(vs, name, "rvq", path, sizeof path);
    int32_t *codes = NULL;
    int64_t n_frames = 0;
    const qtts_model_info *mi = qtts_engine_info(vs->e);
    if (access(path, F_OK) == 0) {
        if (qtts_rvq_read(path, mi->n_codebooks, mi->codebook_size, &codes, &n_frames, &qe)) {
            snprintf(err, err_size, "%s", qe.msg);
            free(x);
            return NULL;
        }
    } else if (errno != ENOENT) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        free(x);
        return NULL;
    }
    char *ref_text = NULL;
    path_of(vs, name, "json", path, sizeof path);
    char *js = read_all(path, &size, &missing, &qe);
    if (js) {
        cJSON *root = cJSON_ParseWithLength(js, size);
        free(js);
        const cJSON *rt = root ? cJSON_GetObjectItemCaseSensitive(root, "ref_text") : NULL;
        if (cJSON_IsString(rt) && rt->valuestring[0]) ref_text = strdup(rt->valuestring);
        cJSON_Delete(root);
    }
    qtts_error e2 = {0};
    qtts_voice *v = qtts_voice_from_parts(vs->e, x, (size_t)xlen, codes, (size_t)n_frames, ref_text, &e2);
    if (!v) snprintf(err, err_size, "voice '%s': %s", name, e2.message);
    free(x);
    free(codes);
    free(ref_text);
    return v;
}

static int write_file_atomic(srv_voices *vs, const char *final_path, const void *data, size_t size, int exclusive,
                             char *err, size_t err_size) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/.tmp.%ld.%lu", vs->dir, (long)getpid(), vs->tmp_counter++);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, err_size, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    const unsigned char *p = data;
    size_t left = size;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            snprintf(err, err_size, "%s: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        snprintf(err, err_size, "%s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (exclusive) {
        /* link() fails with EEXIST instead of replacing: the commit point. */
        int rc = link(tmp, final_path);
        int e = errno;
        unlink(tmp);
        if (rc != 0) {
            snprintf(err, err_size, "%s: %s", final_path, strerror(e));
            return e == EEXIST ? -2 : -1;
        }
    } else if (rename(tmp, final_path) != 0) {
        snprintf(err, err_size, "%s: %s", final_path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static void fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static int stat_spk(srv_voices *vs, const char *name, struct stat *st) {
    char path[4096];
    path_of(vs, name, "spk", path, sizeof path);
    return stat(path, st);
}

static void remember_identity(entry *en, const struct stat *st) {
    en->dev = st->st_dev;
    en->ino = st->st_ino;
    en->mtime = st->st_mtim;
}

static int same_identity(const entry *en, const struct stat *st) {
    return en->dev == st->st_dev && en->ino == st->st_ino && en->mtime.tv_sec == st->st_mtim.tv_sec &&
           en->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* With vs->mu held. Returns the entry for name, reloading from disk when needed. */
static entry *lookup_locked(srv_voices *vs, const char *name, int *unknown, char *err, size_t err_size) {
    entry *en = find(vs, name);
    *unknown = 0;
    if (!vs->dir) {
        if (!en) *unknown = 1, snprintf(err, err_size, "unknown voice '%s'", name);
        return en;
    }
    struct stat st;
    if (stat_spk(vs, name, &st) != 0) { /* deleted, possibly by another instance */
        if (en) drop(vs, en);
        *unknown = 1;
        snprintf(err, err_size, "unknown voice '%s'", name);
        return NULL;
    }
    if (en && same_identity(en, &st)) return en;
    qtts_voice *v = load_from_dir(vs, name, err, err_size);
    if (!v) return NULL;
    en = insert(vs, name, v);
    qtts_voice_release(v);
    if (!en) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    remember_identity(en, &st);
    return en;
}

srv_voices *srv_voices_open(qtts_engine *e, const char *dir, void (*warn)(void *, const char *), void *warn_user,
                            char *err, size_t err_size) {
    srv_voices *vs = calloc(1, sizeof *vs);
    if (!vs) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    vs->e = e;
    pthread_mutex_init(&vs->mu, NULL);
    if (!dir || !*dir) return vs;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, err_size, "voices dir %s: %s", dir, strerror(errno));
        srv_voices_free(vs);
        return NULL;
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | R_OK | X_OK) != 0) {
        snprintf(err, err_size, "voices dir %s: not a writable directory", dir);
        srv_voices_free(vs);
        return NULL;
    }
    vs->dir = strdup(dir);
    if (!vs->dir) {
        snprintf(err, err_size, "out of memory");
        srv_voices_free(vs);
        return NULL;
    }
    /* Load everything now so the first request does not pay for it. */
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            size_t len = strlen(de->d_name);
            if (len < 5 || strcmp(de->d_name + len - 4, ".spk") || de->d_name[0] == '.') continue;
            char name[72];
            if (len - 4 >= sizeof name) continue;
            memcpy(name, de->d_name, len - 4);
            name[len - 4] = 0;
            if (!srv_voice_name_ok(name)) continue;
            char e2[512];
            int unknown;
            pthread_mutex_lock(&vs->mu);
            entry *en = lookup_locked(vs, name, &unknown, e2, sizeof e2);
            pthread_mutex_unlock(&vs->mu);
            if (!en && warn) warn(warn_user, e2);
        }
        closedir(d);
    }
    return vs;
}

void srv_voices_free(srv_voices *vs) {
    if (!vs) return;
    for (size_t i = 0; i < vs->n; i++) qtts_voice_release(vs->items[i].voice);
    free(vs->items);
    free(vs->dir);
    pthread_mutex_destroy(&vs->mu);
    free(vs);
}

int srv_voices_get(srv_voices *vs, const char *name, qtts_voice **out, char *err, size_t err_size) {
    *out = NULL;
    if (!srv_voice_name_ok(name)) {
        snprintf(err, err_size, "unknown voice '%.64s'", name);
        return -2;
    }
    int unknown;
    pthread_mutex_lock(&vs->mu);
    entry *en = lookup_locked(vs, name, &unknown, err, err_size);
    if (en) *out = qtts_voice_retain(en->voice);
    pthread_mutex_unlock(&vs->mu);
    return en ? 0 : unknown ? -2 : -1;
}

static int persist(srv_voices *vs, const char *name, qtts_voice *v, struct stat *st, char *err, size_t err_size) {
    char path[4096];
    if (stat_spk(vs, name, st) == 0) {
        snprintf(err, err_size, "voice '%s' already exists", name);
        return -2;
    }
    size_t n_frames = 0, xlen = 0, size = 0;
    const int32_t *codes = qtts_voice_codes(v, &n_frames);
    const float *x = qtts_voice_xvector(v, &xlen);
    int64_t n_q = qtts_engine_info(vs->e)->n_codebooks;
    qtts_err qe = {0};
    path_of(vs, name, "rvq", path, sizeof path);
    if (codes && n_frames) {
        size = qtts_rvq_size(n_q, (int64_t)n_frames);
        unsigned char *rvq = malloc(size);
        /* the file is codebook-major: pack takes frame-major codes */
        if (!rvq || qtts_rvq_pack(codes, n_q, (int64_t)n_frames, rvq, &qe)) {
            snprintf(err, err_size, "voice '%s': %s", name, rvq ? qe.msg : "out of memory");
            free(rvq);
            return -1;
        }
        int rc = write_file_atomic(vs, path, rvq, size, 0, err, err_size);
        free(rvq);
        if (rc) return rc;
    } else {
        unlink(path); /* an orphan of an earlier crashed registration */
    }
    cJSON *root = cJSON_CreateObject();
    const char *rt = qtts_voice_ref_text(v);
    if (!root || !cJSON_AddStringToObject(root, "name", name) ||
        !(rt ? cJSON_AddStringToObject(root, "ref_text", rt) : cJSON_AddNullToObject(root, "ref_text"))) {
        cJSON_Delete(root);
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    char *js = cJSON_Print(root);
    cJSON_Delete(root);
    if (!js) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    path_of(vs, name, "json", path, sizeof path);
    int rc = write_file_atomic(vs, path, js, strlen(js), 0, err, err_size);
    free(js);
    if (rc) return rc;
    unsigned char *spk = qtts_spk_to_bytes(x, (int64_t)xlen, &size, &qe);
    if (!spk) {
        snprintf(err, err_size, "voice '%s': %s", name, qe.msg);
        return -1;
    }
    path_of(vs, name, "spk", path, sizeof path);
    rc = write_file_atomic(vs, path, spk, size, 1, err, err_size);
    free(spk);
    if (rc == -2) snprintf(err, err_size, "voice '%s' already exists", name);
    if (rc) return rc;
    fsync_dir(vs->dir);
    if (stat(path, st) != 0) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

int srv_voices_add(srv_voices *vs, const char *name, qtts_voice *v, char *err, size_t err_size) {
    if (!srv_voice_name_ok(name)) {
        snprintf(err, err_size, "invalid voice name");
        return -1;
    }
    pthread_mutex_lock(&vs->mu);
    int rc = 0;
    struct stat st;
    if (vs->dir) {
        rc = persist(vs, name, v, &st, err, err_size);
    } else if (find(vs, name)) {
        snprintf(err, err_size, "voice '%s' already exists", name);
        rc = -2;
    }
    if (rc == 0) {
        entry *en = insert(vs, name, v);
        if (!en) {
            snprintf(err, err_size, "out of memory");
            rc = -1;
        } else if (vs->dir) {
            remember_identity(en, &st);
        }
    }
    pthread_mutex_unlock(&vs->mu);
    return rc;
}

int srv_voices_delete(srv_voices *vs, const char *name, char *err, size_t err_size) {
    if (!srv_voice_name_ok(name)) {
        snprintf(err, err_size, "unknown voice '%.64s'", name);
        return -2;
    }
    pthread_mutex_lock(&vs->mu);
    entry *en = find(vs, name);
    int rc = 0;
    if (vs->dir) {
        char path[4096];
        path_of(vs, name, "spk", path, sizeof path);
        if (unlink(path) != 0) { /* NAME.spk first: the voice is gone from then on */
            if (errno == ENOENT) {
                rc = -2;
                snprintf(err, err_size, "unknown voice '%s'", name);
            } else {
                rc = -1;
                snprintf(err, err_size, "%s: %s", path, strerror(errno));
            }
        } else {
            path_of(vs, name, "rvq", path, sizeof path);
            unlink(path);
            path_of(vs, name, "json", path, sizeof path);
            unlink(path);
            fsync_dir(vs->dir);
        }
    } else if (!en) {
        rc = -2;
        snprintf(err, err_size, "unknown voice '%s'", name);
    }
    if (en && rc != -1) drop(vs, en);
    pthread_mutex_unlock(&vs->mu);
    return rc;
}

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const srv_voice_entry *)a)->name, ((const srv_voice_entry *)b)->name);
}

int srv_voices_list(srv_voices *vs, srv_voice_entry **out, size_t *n_out) {
    *out = NULL;
    *n_out = 0;
    pthread_mutex_lock(&vs->mu);
    if (vs->dir) { /* pick up registrations and deletions of other instances */
        DIR *d = opendir(vs->dir);
        if (d) {
            struct dirent *de;
            while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                if (len < 5 || len - 4 >= 72 || strcmp(de->d_name + len - 4, ".spk") || de->d_name[0] == '.')
                    continue;
                char name[72], e2[256];
                int unknown;
                memcpy(name, de->d_name, len - 4);
                name[len - 4] = 0;
                if (srv_voice_name_ok(name)) lookup_locked(vs, name, &unknown, e2, sizeof e2);
            }
            closedir(d);
        }
        for (size_t i = 0; i < vs->n;) { /* drop what disappeared */
            struct stat st;
            if (stat_spk(vs, vs->items[i].name, &st) != 0) drop(vs, &vs->items[i]);
            else i++;
        }
    }
    srv_voice_entry *list = calloc(vs->n ? vs->n : 1, sizeof *list);
    int rc = list ? 0 : -1;
    for (size_t i = 0; list && i < vs->n; i++) {
        snprintf(list[i].name, sizeof list[i].name, "%s", vs->items[i].name);
        size_t nf = 0;
        const int32_t *c = qtts_voice_codes(vs->items[i].voice, &nf);
        list[i].has_codes = c && nf;
        list[i].n_frames = nf;
        const char *rt = qtts_voice_ref_text(vs->items[i].voice);
        list[i].ref_text = rt ? strdup(rt) : NULL;
    }
    size_t n = vs->n;
    pthread_mutex_unlock(&vs->mu);
    if (list) {
        qsort(list, n, sizeof *list, cmp_entry);
        *out = list;
        *n_out = n;
    }
    return rc;
}

void srv_voices_list_free(srv_voice_entry *list, size_t n) {
    for (size_t i = 0; list && i < n; i++) free(list[i].ref_text);
    free(list);
}
