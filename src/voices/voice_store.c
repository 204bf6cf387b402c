#include "voices/voice_store.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "voices/voice_files.h" /* the files; this is the cache over them */

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

static int stat_spk(srv_voices *vs, const char *name, struct stat *st) {
    return srv_voice_files_stat(vs->dir, name, st);
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
    qtts_voice *v = srv_voice_files_load(vs->e, vs->dir, name, err, err_size);
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

/* Temp files (".tmp.PID.N", voice_files.c) that a killed writer left behind.
 * Only old ones go: another instance sharing the directory may be writing
 * its own right now, and no write takes anywhere near this long. */
#define STALE_TMP_SECONDS 3600

static void remove_stale_tmp(const char *dir, const char *file) {
    if (strncmp(file, ".tmp.", 5) != 0) return;
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && time(NULL) - st.st_mtime > STALE_TMP_SECONDS) unlink(path);
}

/* mkdir -p: the folder and its missing parents (qtts voices add makes them too). */
static int mkdir_parents(const char *dir) {
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(path, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
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
    if (mkdir_parents(dir) != 0) {
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
            char name[72];
            remove_stale_tmp(dir, de->d_name);
            if (!srv_voice_spk_name(de->d_name, name)) continue;
            char e2[512];
            int unknown;
            pthread_mutex_lock(&vs->mu);
            entry *en = lookup_locked(vs, name, &unknown, e2, sizeof e2);
            pthread_mutex_unlock(&vs->mu);
            if (!en && warn) warn(warn_user, e2);
            qtts_lexicon *lx = NULL;
            char e3[700];
            if (en && warn && srv_voice_files_lexicon(dir, name, &lx, e2, sizeof e2)) {
                snprintf(e3, sizeof e3, "voice '%s': lexicon not used: %s", name, e2);
                warn(warn_user, e3);
            }
            qtts_lexicon_release(lx);
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

int srv_voices_add(srv_voices *vs, const char *name, qtts_voice *v, char *err, size_t err_size) {
    if (!srv_voice_name_ok(name)) {
        snprintf(err, err_size, "invalid voice name");
        return -1;
    }
    pthread_mutex_lock(&vs->mu);
    int rc = 0, e = 0;
    struct stat st;
    errno = 0;
    if (vs->dir) {
        rc = srv_voice_files_write(vs->e, vs->dir, name, v, &vs->tmp_counter, &st, err, err_size);
        e = errno; /* on -1: why (the caller tells a full disk from a read-only one) */
    } else if (find(vs, name)) {
        snprintf(err, err_size, "voice '%s' already exists", name);
        rc = -2;
    }
    if (rc == 0) {
        entry *en = insert(vs, name, v);
        if (!en) {
            snprintf(err, err_size, "out of memory");
            rc = -1;
            e = ENOMEM;
        } else if (vs->dir) {
            remember_identity(en, &st);
        }
    }
    pthread_mutex_unlock(&vs->mu);
    errno = e;
    return rc;
}

int srv_voices_delete(srv_voices *vs, const char *name, char *err, size_t err_size) {
    if (!srv_voice_name_ok(name)) {
        snprintf(err, err_size, "unknown voice '%.64s'", name);
        return -2;
    }
    pthread_mutex_lock(&vs->mu);
    entry *en = find(vs, name);
    int rc = 0, e = 0;
    if (vs->dir) {
        errno = 0;
        rc = srv_voice_files_delete(vs->dir, name, err, err_size);
        e = errno; /* on -1: why (EROFS, EACCES, ...) */
    } else if (!en) {
        rc = -2;
        snprintf(err, err_size, "unknown voice '%s'", name);
    }
    if (en && rc != -1) drop(vs, en);
    pthread_mutex_unlock(&vs->mu);
    errno = e;
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
                char name[72], e2[256];
                int unknown;
                if (srv_voice_spk_name(de->d_name, name)) lookup_locked(vs, name, &unknown, e2, sizeof e2);
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
