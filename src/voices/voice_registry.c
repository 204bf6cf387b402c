/* The registered voices of include/qtts.h (qtts_voices_*): the library's
 * face of the voices directory (voice_files.h, which the server and the CLI
 * use), with its failures classified as qtts_status. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/err.h"
#include "qtts.h"
#include "voices/voice_files.h"

/* The directory exists: QTTS_OK, else QTTS_ERR_NOT_FOUND or QTTS_ERR_INVALID with err. */
static qtts_status check_dir(const char *dir, qtts_error *err) {
    if (!dir || !*dir) return qtts_error_set(err, QTTS_ERR_INVALID, "no voices directory given");
    struct stat st;
    if (stat(dir, &st) != 0)
        return qtts_error_set(err, errno == ENOENT ? QTTS_ERR_NOT_FOUND : QTTS_ERR_INTERNAL, "voices dir %s: %s", dir,
                              strerror(errno));
    if (!S_ISDIR(st.st_mode)) return qtts_error_set(err, QTTS_ERR_INVALID, "voices dir %s: not a directory", dir);
    return QTTS_OK;
}

static qtts_status check_name(const char *name, qtts_error *err) {
    if (name && srv_voice_name_ok(name)) return QTTS_OK;
    return qtts_error_set(err, QTTS_ERR_INVALID,
                          "invalid voice name '%.64s' (1-64 of A-Za-z0-9_.-, starting with a letter or digit, no '..')",
                          name ? name : "(null)");
}

qtts_status qtts_voices_list(const char *dir, qtts_voice_entry **out, size_t *n_out, qtts_error *err) {
    *out = NULL;
    *n_out = 0;
    qtts_status st = check_dir(dir, err);
    if (st) return st;
    srv_voice_file_info *list = NULL;
    size_t n = 0;
    char msg[512];
    if (srv_voice_files_list(dir, &list, &n, msg, sizeof msg)) return qtts_error_set(err, QTTS_ERR_INTERNAL, "%s", msg);
    qtts_voice_entry *entries = n ? calloc(n, sizeof *entries) : NULL;
    if (n && !entries) {
        srv_voice_files_list_free(list, n);
        return qtts_error_set(err, QTTS_ERR_NO_MEMORY, "out of memory");
    }
    int oom = 0;
    for (size_t i = 0; i < n; i++) {
        const srv_voice_file_info *f = &list[i];
        qtts_voice_entry *v = &entries[i];
        snprintf(v->name, sizeof v->name, "%s", f->name);
        v->xvec_len = f->xvec_len;
        v->has_codes = f->has_codes;
        v->n_frames = f->n_frames;
        v->in_context = f->in_context;
        v->ref_text = f->ref_text; /* taken over */
        list[i].ref_text = NULL;
        if (f->error[0] && !(v->error = strdup(f->error))) oom = 1;
    }
    srv_voice_files_list_free(list, n);
    if (oom) {
        qtts_voices_list_free(entries, n);
        return qtts_error_set(err, QTTS_ERR_NO_MEMORY, "out of memory");
    }
    *out = entries;
    *n_out = n;
    return QTTS_OK;
}

void qtts_voices_list_free(qtts_voice_entry *list, size_t n) {
    for (size_t i = 0; list && i < n; i++) {
        free((char *)list[i].ref_text);
        free((char *)list[i].error);
    }
    free(list);
}

qtts_voice *qtts_voices_load(qtts_engine *e, const char *dir, const char *name, qtts_error *err) {
    if (check_dir(dir, err) || check_name(name, err)) return NULL;
    srv_voice_file_info info;
    char msg[512];
    int rc = srv_voice_files_info(dir, name, &info, msg, sizeof msg);
    if (rc == -2) {
        qtts_error_set(err, QTTS_ERR_NOT_FOUND, "unknown voice '%s' in %s", name, dir);
        return NULL;
    }
    if (rc) {
        qtts_error_set(err, QTTS_ERR_INTERNAL, "%s", msg);
        return NULL;
    }
    int corrupt = info.error[0] != 0;
    if (corrupt) qtts_error_set(err, QTTS_ERR_INVALID, "voice '%s' in %s does not load: %s", name, dir, info.error);
    srv_voice_files_info_free(&info);
    if (corrupt) return NULL;
    /* what fails now is the files against this model (its size, its codes) */
    qtts_voice *v = srv_voice_files_load(e, dir, name, msg, sizeof msg);
    if (!v) qtts_error_set(err, QTTS_ERR_INVALID, "voice '%s' in %s does not load: %s", name, dir, msg);
    return v;
}

qtts_status qtts_voices_add(qtts_engine *e, const char *dir, const char *name, const qtts_voice *v, qtts_error *err) {
    qtts_status st = check_dir(dir, err);
    if (st || (st = check_name(name, err))) return st;
    if (!v) return qtts_error_set(err, QTTS_ERR_INVALID, "no voice given");
    size_t xlen = 0;
    qtts_voice_xvector(v, &xlen);
    int hidden = qtts_engine_info(e)->hidden_size;
    if (xlen != (size_t)hidden)
        return qtts_error_set(err, QTTS_ERR_INVALID, "the voice's x-vector has %zu values; this model's voices have %d",
                              xlen, hidden);
    /* Temp file names only need to differ between writers running at the
     * same time; in one process those are different threads, whose stacks
     * (so this variable's address) differ. Each write advances it by 3 at
     * most. */
    unsigned long tmp_counter = 0;
    tmp_counter = (unsigned long)(uintptr_t)&tmp_counter;
    struct stat stt;
    char msg[512];
    int rc = srv_voice_files_write(e, dir, name, (qtts_voice *)v, &tmp_counter, &stt, msg, sizeof msg);
    if (rc == -2) return qtts_error_set(err, QTTS_ERR_EXISTS, "voice '%s' already exists in %s", name, dir);
    if (rc) return qtts_error_set(err, errno == ENOMEM ? QTTS_ERR_NO_MEMORY : QTTS_ERR_INTERNAL, "%s", msg);
    return QTTS_OK;
}

qtts_status qtts_voices_remove(const char *dir, const char *name, qtts_error *err) {
    qtts_status st = check_dir(dir, err);
    if (st) return st;
    if (!name || !srv_voice_name_ok(name))
        return qtts_error_set(err, QTTS_ERR_NOT_FOUND, "unknown voice '%.64s' in %s", name ? name : "(null)", dir);
    char msg[512];
    int rc = srv_voice_files_delete(dir, name, msg, sizeof msg);
    if (rc == -2) return qtts_error_set(err, QTTS_ERR_NOT_FOUND, "unknown voice '%s' in %s", name, dir);
    if (rc) return qtts_error_set(err, QTTS_ERR_INTERNAL, "%s", msg);
    return QTTS_OK;
}
