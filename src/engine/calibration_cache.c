#include "engine/calibration_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/hub.h"
#include "tensor/cpu.h"

#define MAGIC "qtts-calibration 1"

/* The first "vendor_id", "cpu family", "model" and "model name" of
 * /proc/cpuinfo ("unknown" elsewhere): a different CPU model behind the same
 * cache dir (a moved container, a resized VM) measures again. */
void qtts_calibration_key_here(qtts_calibration_key *k, int threads) {
    memset(k, 0, sizeof *k);
    static const char *const fields[] = {"vendor_id", "cpu family", "model", "model name"};
    char vals[4][96] = {{0}};
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        size_t klen = (size_t)(colon - line);
        while (klen && (line[klen - 1] == ' ' || line[klen - 1] == '\t')) klen--;
        for (int i = 0; i < 4; i++)
            if (!vals[i][0] && strlen(fields[i]) == klen && !strncmp(line, fields[i], klen)) {
                const char *v = colon + 1 + (colon[1] == ' ');
                snprintf(vals[i], sizeof vals[i], "%.*s", (int)strcspn(v, "\n"), v);
            }
    }
    if (f) fclose(f);
    snprintf(k->cpu, sizeof k->cpu, "%s/%s/%s/%s", vals[0][0] ? vals[0] : "unknown", vals[1], vals[2], vals[3]);
    snprintf(k->isa, sizeof k->isa, "%s", qtts_isa_name(qtts_cpu_isa()));
    k->kernels = QTTS_CALIBRATION_KERNELS;
    k->threads = threads;
}

int qtts_calibration_cache_path(char *buf, size_t size, int threads, qtts_err *err) {
    char dir[4096];
    if (qtts_cache_dir(dir, sizeof dir, err)) return -1;
    if ((size_t)snprintf(buf, size, "%s/calibration-t%d.txt", dir, threads) >= size)
        return qtts_fail(err, "calibration cache path too long");
    return 0;
}

static void write_interleave(FILE *f, const char *name, const qtts_interleave_calibration *c) {
    fprintf(f, "%s %d %d %d %d %.6g %.6g %.6g %.6g %.6g %.6g %.6g %d %.6g %.6g\n", name, c->measured, c->faster,
            c->prefetch, c->lockstep, c->row_gbs, c->x16_gbs, c->row_pf_gbs, c->x16_pf_gbs, c->x16_blocks_gbs,
            c->row_batch_gflops, c->x16_batch_gflops, c->threads, c->buffer_mb, c->ms);
}

static int read_interleave(const char *rest, qtts_interleave_calibration *c) {
    memset(c, 0, sizeof *c);
    return sscanf(rest, "%d %d %d %d %lg %lg %lg %lg %lg %lg %lg %d %lg %lg", &c->measured, &c->faster, &c->prefetch,
                  &c->lockstep, &c->row_gbs, &c->x16_gbs, &c->row_pf_gbs, &c->x16_pf_gbs, &c->x16_blocks_gbs,
                  &c->row_batch_gflops, &c->x16_batch_gflops, &c->threads, &c->buffer_mb, &c->ms) == 14 &&
                   (unsigned)c->measured <= 1 && (unsigned)c->faster <= 1 && (unsigned)c->prefetch <= 1 &&
                   (unsigned)c->lockstep <= 1
               ? 0
               : -1;
}

static int read_conv(const char *rest, qtts_conv_calibration *c) {
    memset(c, 0, sizeof *c);
    return sscanf(rest, "%d %d %d %d %d %lg %lg %lg %lg %lg", &c->bf16_available, &c->winograd_faster, &c->bf16_faster,
                  &c->i16_available, &c->i16_faster, &c->f32_gflops, &c->winograd_gflops, &c->bf16_gflops,
                  &c->i16_gflops, &c->ms) == 10 &&
                   (unsigned)c->bf16_available <= 1 && (unsigned)c->winograd_faster <= 1 &&
                   (unsigned)c->bf16_faster <= 1 && (unsigned)c->i16_available <= 1 && (unsigned)c->i16_faster <= 1
               ? 0
               : -1;
}

int qtts_calibration_cache_read(const char *path, const qtts_calibration_key *k, qtts_calibration_set *s, char *why,
                                size_t why_size) {
    memset(s, 0, sizeof *s);
    FILE *f = fopen(path, "r");
    if (!f) return 1;
    char line[512];
    int ok = fgets(line, sizeof line, f) && !strncmp(line, MAGIC "\n", sizeof MAGIC);
    int same = 1, lines = 0;
    const char *bad = ok ? NULL : "not a calibration file";
    qtts_calibration_set got = {0};
    while (ok && fgets(line, sizeof line, f)) {
        if (!strchr(line, '\n')) {
            bad = "a line too long";
            ok = 0;
            break;
        }
        line[strcspn(line, "\n")] = 0;
        char *sp = strchr(line, ' ');
        if (!sp) {
            bad = "a line without a value";
            ok = 0;
            break;
        }
        *sp = 0;
        const char *key = line, *val = sp + 1;
        int n;
        lines++;
        if (!strcmp(key, "cpu")) same &= !strcmp(val, k->cpu);
        else if (!strcmp(key, "isa")) same &= !strcmp(val, k->isa);
        else if (!strcmp(key, "kernels") || !strcmp(key, "threads")) {
            char *end;
            errno = 0;
            long v = strtol(val, &end, 10);
            if (*end || errno || end == val) {
                bad = "a malformed number";
                ok = 0;
                break;
            }
            n = (int)v;
            same &= n == (!strcmp(key, "kernels") ? k->kernels : k->threads);
        } else if (!strcmp(key, "q8_0")) {
            if (read_interleave(val, &got.q8_0)) bad = "a malformed q8_0 line", ok = 0;
            got.have_q8_0 = ok;
        } else if (!strcmp(key, "q4_k")) {
            if (read_interleave(val, &got.q4_k)) bad = "a malformed q4_k line", ok = 0;
            got.have_q4_k = ok;
        } else if (!strcmp(key, "conv")) {
            if (read_conv(val, &got.conv)) bad = "a malformed conv line", ok = 0;
            got.have_conv = ok;
        } else {
            bad = "an unknown line";
            ok = 0;
        }
    }
    if (ok && ferror(f)) bad = "a read error", ok = 0;
    fclose(f);
    if (ok && lines < 4) bad = "no key", ok = 0;
    if (!ok) {
        snprintf(why, why_size, "%s: %s", path, bad ? bad : "malformed");
        return -1;
    }
    if (same) *s = got;
    return 0;
}

static int make_dirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc && errno != EEXIST) return -1;
    }
    return 0;
}

int qtts_calibration_cache_write(const char *path, const qtts_calibration_key *k, const qtts_calibration_set *s,
                                 qtts_err *err) {
    char tmp[4200];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= sizeof tmp)
        return qtts_fail(err, "calibration cache path too long");
    if (make_dirs(tmp)) return qtts_fail(err, "%s: cannot make its folder: %s", path, strerror(errno));
    FILE *f = fopen(tmp, "w");
    if (!f) return qtts_fail(err, "%s: %s", tmp, strerror(errno));
    fprintf(f, MAGIC "\ncpu %s\nisa %s\nkernels %d\nthreads %d\n", k->cpu, k->isa, k->kernels, k->threads);
    if (s->have_q8_0) write_interleave(f, "q8_0", &s->q8_0);
    if (s->have_q4_k) write_interleave(f, "q4_k", &s->q4_k);
    if (s->have_conv) {
        const qtts_conv_calibration *c = &s->conv;
        fprintf(f, "conv %d %d %d %d %d %.6g %.6g %.6g %.6g %.6g\n", c->bf16_available, c->winograd_faster,
                c->bf16_faster, c->i16_available, c->i16_faster, c->f32_gflops, c->winograd_gflops, c->bf16_gflops,
                c->i16_gflops, c->ms);
    }
    int bad = ferror(f);
    if (fclose(f) || bad || rename(tmp, path)) {
        int e = errno;
        unlink(tmp);
        return qtts_fail(err, "%s: %s", path, strerror(e));
    }
    return 0;
}
