#include "voices/voice_files.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/file.h"
#include "io/rvq.h"
#include "io/spk.h"
#include "engine/voice_lexicon.h"
#include "text/lexicon.h"

/* a voice's .json is tiny; a cap keeps a stray large file from being read */
#define MAX_VOICE_FILE_BYTES ((size_t)1 << 20)

int srv_voice_name_ok(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n > 64) return 0;
    if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
          (name[0] >= '0' && name[0] <= '9')))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                 c == '.';
        if (!ok) return 0;
    }
    return strstr(name, "..") == NULL;
}

int srv_voice_spk_name(const char *file, char name[72]) {
    size_t len = strlen(file);
    if (len < 5 || len - 4 >= 72 || strcmp(file + len - 4, ".spk") || file[0] == '.') return 0;
    memcpy(name, file, len - 4);
    name[len - 4] = 0;
    return srv_voice_name_ok(name);
}

static void path_of(const char *dir, const char *name, const char *ext, char *out, size_t size) {
    snprintf(out, size, "%s/%s.%s", dir, name, ext);
}

int srv_voice_files_stat(const char *dir, const char *name, struct stat *st) {
    char path[4096];
    path_of(dir, name, "spk", path, sizeof path);
    return stat(path, st);
}

/* NAME.json's transcript into *out (NULL when absent, unreadable, not JSON or
 * empty: the voice then has no transcript). -1 only when out of memory. */
static int read_ref_text(const char *dir, const char *name, char **out) {
    char path[4096];
    *out = NULL;
    path_of(dir, name, "json", path, sizeof path);
    if (access(path, F_OK) != 0) return 0;
    char *js;
    size_t size = 0;
    qtts_err qe = {0};
    if (qtts_read_file(path, MAX_VOICE_FILE_BYTES, &js, &size, &qe)) return 0;
    cJSON *root = cJSON_ParseWithLength(js, size);
    free(js);
    const cJSON *rt = root ? cJSON_GetObjectItemCaseSensitive(root, "ref_text") : NULL;
    int rc = 0;
    if (cJSON_IsString(rt) && rt->valuestring[0] && !(*out = strdup(rt->valuestring))) rc = -1;
    cJSON_Delete(root);
    return rc;
}

/* NAME.rvq's codes (frame-major) when present: 0 with *codes NULL if absent. */
static int read_codes(const char *dir, const char *name, int64_t n_q, int64_t codebook_size, int32_t **codes,
                      int64_t *n_frames, char *err, size_t err_size) {
    char path[4096];
    qtts_err qe = {0};
    *codes = NULL;
    *n_frames = 0;
    path_of(dir, name, "rvq", path, sizeof path);
    if (access(path, F_OK) == 0) {
        if (qtts_rvq_read(path, n_q, codebook_size, codes, n_frames, &qe)) {
            snprintf(err, err_size, "%s", qe.msg);
            return -1;
        }
    } else if (errno != ENOENT) {
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

qtts_voice *srv_voice_files_load(qtts_engine *e, const char *dir, const char *name, char *err, size_t err_size) {
    char path[4096];
    qtts_err qe = {0};
    path_of(dir, name, "spk", path, sizeof path);
    int64_t xlen = 0;
    float *x = qtts_spk_read(path, 0, &xlen, &qe); /* the length is checked against the model below */
    if (!x) {
        snprintf(err, err_size, "%s", qe.msg);
        return NULL;
    }
    const qtts_model_info *mi = qtts_engine_info(e);
    int32_t *codes = NULL;
    int64_t n_frames = 0;
    char *ref_text = NULL;
    qtts_voice *v = NULL;
    if (read_codes(dir, name, mi->n_codebooks, mi->codebook_size, &codes, &n_frames, err, err_size)) goto done;
    if (read_ref_text(dir, name, &ref_text)) {
        snprintf(err, err_size, "out of memory");
        goto done;
    }
    qtts_error e2 = {0};
    v = qtts_voice_from_parts(e, x, (size_t)xlen, codes, (size_t)n_frames, ref_text, &e2);
    if (!v) snprintf(err, err_size, "voice '%s': %s", name, e2.message);
    qtts_lexicon *lx = NULL;
    char lerr[512];
    if (v && srv_voice_files_lexicon(dir, name, &lx, lerr, sizeof lerr) == 0) qtts_voice_set_lexicon(v, lx);
    qtts_lexicon_release(lx); /* a bad one is left out: the voice works without it (info says why) */
done:
    free(x);
    free(codes);
    free(ref_text);
    return v;
}

int srv_voice_files_info(const char *dir, const char *name, srv_voice_file_info *info, char *err, size_t err_size) {
    memset(info, 0, sizeof *info);
    snprintf(info->name, sizeof info->name, "%.64s", name);
    struct stat st;
    int e = !srv_voice_name_ok(name) ? ENOENT : srv_voice_files_stat(dir, name, &st) == 0 ? 0 : errno;
    if (e) {
        struct stat dst;
        if (stat(dir, &dst) != 0) e = errno; /* the directory itself is missing */
        else if (!S_ISDIR(dst.st_mode)) e = ENOTDIR;
        else if (e == ENOENT) {
            snprintf(err, err_size, "unknown voice '%.64s'", name);
            return -2;
        }
        snprintf(err, err_size, "voices dir %s: %s", dir, strerror(e));
        return -1;
    }
    char path[4096];
    qtts_err qe = {0};
    int64_t xlen = 0;
    path_of(dir, name, "spk", path, sizeof path);
    float *x = qtts_spk_read(path, 0, &xlen, &qe);
    if (!x) snprintf(info->error, sizeof info->error, "%s", qe.msg);
    info->xvec_len = x ? (size_t)xlen : 0;
    free(x);
    /* the 12 Hz tokenizer's geometry: any 11-bit code is in range, so this checks the size */
    int32_t *codes = NULL;
    int64_t n_frames = 0;
    char e2[512];
    if (read_codes(dir, name, SRV_VOICE_FILE_CODEBOOKS, SRV_VOICE_FILE_CODE_VALUES, &codes, &n_frames, e2, sizeof e2)) {
        if (!info->error[0]) snprintf(info->error, sizeof info->error, "%s", e2);
    }
    info->has_codes = codes && n_frames;
    info->n_frames = (size_t)n_frames;
    free(codes);
    if (read_ref_text(dir, name, &info->ref_text)) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    info->in_context = info->has_codes && info->ref_text; /* the engine's rule (engine_submit.c) */
    path_of(dir, name, "lexicon", path, sizeof path);
    info->has_lexicon = access(path, F_OK) == 0;
    qtts_lexicon *lx = NULL;
    if (info->has_lexicon && srv_voice_files_lexicon(dir, name, &lx, info->lexicon_error, sizeof info->lexicon_error) == 0)
        info->lexicon_entries = qtts_lexicon_size(lx);
    qtts_lexicon_release(lx);
    return 0;
}

int srv_voice_files_lexicon(const char *dir, const char *name, qtts_lexicon **out, char *err, size_t err_size) {
    char path[4096];
    *out = NULL;
    path_of(dir, name, "lexicon", path, sizeof path);
    if (access(path, F_OK) != 0) return 0;
    qtts_err qe = {0};
    if (!(*out = qtts_lexicon_load_file(path, &qe))) {
        snprintf(err, err_size, "%s", qe.msg);
        return -1;
    }
    return 0;
}

int srv_voice_files_request_lexicon(const char *dir, const char *name, const qtts_lexicon *global,
                                    qtts_lexicon **out, char *warn, size_t warn_size) {
    qtts_lexicon *own = NULL;
    warn[0] = 0;
    if (dir && name && srv_voice_name_ok(name) && srv_voice_files_lexicon(dir, name, &own, warn, warn_size))
        own = NULL; /* warn says why; the voice goes on without it */
    qtts_err qe = {0};
    *out = qtts_lexicon_merge(own, global, &qe);
    int failed = !*out && (own || global);
    qtts_lexicon_release(own);
    if (failed) snprintf(warn, warn_size, "%s", qe.msg);
    return failed ? -1 : 0;
}


void srv_voice_files_info_free(srv_voice_file_info *info) {
    if (!info) return;
    free(info->ref_text);
    info->ref_text = NULL;
}

static int cmp_info(const void *a, const void *b) {
    return strcmp(((const srv_voice_file_info *)a)->name, ((const srv_voice_file_info *)b)->name);
}

int srv_voice_files_list(const char *dir, srv_voice_file_info **out, size_t *n_out, char *err, size_t err_size) {
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, err_size, "voices dir %s: %s", dir, strerror(errno));
        return -1;
    }
    srv_voice_file_info *list = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        char name[72];
        if (!srv_voice_spk_name(de->d_name, name)) continue;
        if (n == cap) {
            size_t c2 = cap ? cap * 2 : 16;
            srv_voice_file_info *p = realloc(list, c2 * sizeof *p);
            if (!p) {
                snprintf(err, err_size, "out of memory");
                rc = -1;
                break;
            }
            list = p;
            cap = c2;
        }
        int r = srv_voice_files_info(dir, name, &list[n], err, err_size);
        if (r == 0) n++;
        else if (r == -1) rc = -1; /* -2: deleted since readdir saw it */
    }
    closedir(d);
    if (rc) {
        srv_voice_files_list_free(list, n);
        return -1;
    }
    if (n) qsort(list, n, sizeof *list, cmp_info);
    *out = list;
    *n_out = n;
    return 0;
}

void srv_voice_files_list_free(srv_voice_file_info *list, size_t n) {
    for (size_t i = 0; list && i < n; i++) srv_voice_files_info_free(&list[i]);
    free(list);
}

/* Failures below leave errno at the cause (ENOSPC, EDQUOT, EFBIG, EROFS,
 * EACCES, ...) when they return -1: the server tells "disk full" (507) from
 * "not writable" (500) by it. Cleanup calls would overwrite it, so each
 * failure path saves and restores it. */
static int fail_errno(int e, char *err, size_t err_size, const char *path) {
    snprintf(err, err_size, "%s: %s", path, strerror(e));
    errno = e;
    return -1;
}

/* Temp names are ".tmp.PID.N" in dir (srv_voice_spk_name skips dot files, so
 * one a crash leaves behind is never taken for a voice). */
static int write_file_atomic(const char *dir, unsigned long *tmp_counter, const char *final_path, const void *data,
                             size_t size, int exclusive, char *err, size_t err_size) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/.tmp.%ld.%lu", dir, (long)getpid(), (*tmp_counter)++);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return fail_errno(errno, err, err_size, tmp);
    const unsigned char *p = data;
    size_t left = size;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC; /* 0 bytes written: no room */
            close(fd);
            unlink(tmp);
            return fail_errno(e, err, err_size, tmp);
        }
        p += w;
        left -= (size_t)w;
    }
    /* The data is on disk before any name points at it. */
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return fail_errno(e, err, err_size, tmp);
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return fail_errno(e, err, err_size, tmp);
    }
    if (exclusive) {
        /* link() fails with EEXIST instead of replacing: the commit point. */
        int rc = link(tmp, final_path);
        int e = errno;
        unlink(tmp);
        if (rc != 0) {
            fail_errno(e, err, err_size, final_path);
            return e == EEXIST ? -2 : -1;
        }
    } else if (rename(tmp, final_path) != 0) {
        int e = errno;
        unlink(tmp);
        return fail_errno(e, err, err_size, final_path);
    }
    return 0;
}

/* Makes dir's entries (renames, links, unlinks) durable. 0, or -1 with errno;
 * a file system that cannot sync directories (EINVAL) counts as done. */
static int fsync_dir(const char *dir, char *err, size_t err_size) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return fail_errno(errno, err, err_size, dir);
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL) return fail_errno(e, err, err_size, dir);
    return 0;
}

/* Removes what a failed registration put in place (NAME.rvq, NAME.json),
 * keeping errno. Not if NAME.spk exists: then another writer sharing the
 * directory committed NAME meanwhile, and the parts are its own. */
static void unlink_parts(const char *dir, const char *name) {
    int e = errno;
    char path[4096];
    struct stat st;
    if (srv_voice_files_stat(dir, name, &st) == 0) {
        errno = e;
        return;
    }
    path_of(dir, name, "rvq", path, sizeof path);
    unlink(path);
    path_of(dir, name, "json", path, sizeof path);
    unlink(path);
    errno = e;
}

int srv_voice_files_write(qtts_engine *e, const char *dir, const char *name, qtts_voice *v, unsigned long *tmp_counter,
                          struct stat *st, char *err, size_t err_size) {
    size_t n_frames = 0, xlen = 0;
    const int32_t *codes = qtts_voice_codes(v, &n_frames);
    const float *x = qtts_voice_xvector(v, &xlen);
    return srv_voice_files_write_parts(dir, name, x, xlen, codes, n_frames, qtts_engine_info(e)->n_codebooks,
                                       qtts_voice_ref_text(v), tmp_counter, st, err, err_size);
}

int srv_voice_files_write_parts(const char *dir, const char *name, const float *x, size_t xlen, const int32_t *codes,
                                size_t n_frames, int64_t n_q, const char *rt, unsigned long *tmp_counter,
                                struct stat *st, char *err, size_t err_size) {
    char path[4096];
    if (srv_voice_files_stat(dir, name, st) == 0) {
        snprintf(err, err_size, "voice '%s' already exists", name);
        return -2;
    }
    path_of(dir, name, "lexicon", path, sizeof path);
    unlink(path); /* an orphan of an earlier deletion cut short: a new voice starts with none */
    size_t size = 0;
    qtts_err qe = {0};
    path_of(dir, name, "rvq", path, sizeof path);
    if (codes && n_frames) {
        size = qtts_rvq_size(n_q, (int64_t)n_frames);
        unsigned char *rvq = malloc(size);
        /* the file is codebook-major: pack takes frame-major codes */
        if (!rvq || qtts_rvq_pack(codes, n_q, (int64_t)n_frames, rvq, &qe)) {
            snprintf(err, err_size, "voice '%s': %s", name, rvq ? qe.msg : "out of memory");
            free(rvq);
            return -1;
        }
        int rc = write_file_atomic(dir, tmp_counter, path, rvq, size, 0, err, err_size);
        int eno = errno;
        free(rvq);
        errno = eno;
        if (rc) return rc;
    } else {
        unlink(path); /* an orphan of an earlier crashed registration */
    }
    cJSON *root = cJSON_CreateObject();
    if (!root || !cJSON_AddStringToObject(root, "name", name) ||
        !(rt ? cJSON_AddStringToObject(root, "ref_text", rt) : cJSON_AddNullToObject(root, "ref_text"))) {
        cJSON_Delete(root);
        unlink_parts(dir, name);
        snprintf(err, err_size, "out of memory");
        errno = ENOMEM;
        return -1;
    }
    char *js = cJSON_Print(root);
    cJSON_Delete(root);
    if (!js) {
        unlink_parts(dir, name);
        snprintf(err, err_size, "out of memory");
        errno = ENOMEM;
        return -1;
    }
    path_of(dir, name, "json", path, sizeof path);
    int rc = write_file_atomic(dir, tmp_counter, path, js, strlen(js), 0, err, err_size);
    int eno = errno;
    free(js);
    errno = eno;
    /* NAME.rvq and NAME.json must be durable before NAME.spk can name a voice
     * that needs them: without this sync a crash could keep the link below
     * and lose the renames. */
    if (rc == 0) rc = fsync_dir(dir, err, err_size);
    if (rc) {
        unlink_parts(dir, name); /* no NAME.spk yet: nobody uses these */
        return rc;
    }
    unsigned char *spk = qtts_spk_to_bytes(x, (int64_t)xlen, &size, &qe);
    if (!spk) {
        unlink_parts(dir, name);
        snprintf(err, err_size, "voice '%s': %s", name, qe.msg);
        errno = ENOMEM;
        return -1;
    }
    path_of(dir, name, "spk", path, sizeof path);
    rc = write_file_atomic(dir, tmp_counter, path, spk, size, 1, err, err_size);
    eno = errno;
    free(spk);
    errno = eno;
    if (rc == -2) snprintf(err, err_size, "voice '%s' already exists", name);
    else if (rc) unlink_parts(dir, name);
    if (rc) return rc;
    /* The commit point is durable before the caller answers 201. If that
     * cannot be made sure, the voice is taken back: a client told "failed"
     * must not find it after a crash, nor now. */
    if (fsync_dir(dir, err, err_size) != 0) {
        eno = errno;
        unlink(path);
        unlink_parts(dir, name);
        errno = eno;
        return -1;
    }
    if (stat(path, st) != 0) return fail_errno(errno, err, err_size, path);
    return 0;
}

int srv_voice_files_delete(const char *dir, const char *name, char *err, size_t err_size) {
    if (!srv_voice_name_ok(name)) {
        snprintf(err, err_size, "unknown voice '%.64s'", name);
        return -2;
    }
    char path[4096];
    path_of(dir, name, "spk", path, sizeof path);
    if (unlink(path) != 0) { /* NAME.spk first: the voice is gone from then on */
        if (errno == ENOENT) {
            snprintf(err, err_size, "unknown voice '%s'", name);
            return -2;
        }
        return fail_errno(errno, err, err_size, path);
    }
    /* NAME.spk's removal is durable before its parts go: a crash in between
     * leaves orphan parts (overwritten by the next registration of NAME),
     * never a voice without its codes. The deletion is visible either way, so
     * a failed directory sync is not reported. */
    char e2[256];
    fsync_dir(dir, e2, sizeof e2);
    path_of(dir, name, "rvq", path, sizeof path);
    unlink(path);
    path_of(dir, name, "json", path, sizeof path);
    unlink(path);
    path_of(dir, name, "lexicon", path, sizeof path);
    unlink(path);
    fsync_dir(dir, e2, sizeof e2);
    return 0;
}

int srv_voice_files_write_lexicon(const char *dir, const char *name, const char *text, size_t len,
                                  const char *source, unsigned long *tmp_counter, char *err, size_t err_size) {
    qtts_err qe = {0};
    qtts_lexicon *lx = qtts_lexicon_parse_text(text, len, source, &qe);
    if (!lx) {
        snprintf(err, err_size, "%s", qe.msg);
        return -1;
    }
    qtts_lexicon_release(lx);
    char path[4096];
    path_of(dir, name, "lexicon", path, sizeof path);
    if (write_file_atomic(dir, tmp_counter, path, text, len, 0, err, err_size)) return -1;
    return fsync_dir(dir, err, err_size);
}
