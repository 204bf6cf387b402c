#include "npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

int npy_load(const char *path, npy_array *out) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "npy: cannot open %s\n", path);
        return -1;
    }
    unsigned char magic[10];
    if (fread(magic, 1, 10, f) != 10 || memcmp(magic, "\x93NUMPY", 6)) {
        fprintf(stderr, "npy: %s: bad magic\n", path);
        fclose(f);
        return -1;
    }
    uint32_t hlen;
    if (magic[6] == 1) {
        hlen = magic[8] | (magic[9] << 8);
    } else {
        unsigned char b[2];
        if (fread(b, 1, 2, f) != 2) { fclose(f); return -1; }
        hlen = magic[8] | (magic[9] << 8) | ((uint32_t)b[0] << 16) | ((uint32_t)b[1] << 24);
    }
    char *hdr = calloc(hlen + 1, 1);
    if (!hdr || fread(hdr, 1, hlen, f) != hlen) {
        fprintf(stderr, "npy: %s: short header\n", path);
        free(hdr);
        fclose(f);
        return -1;
    }
    int elem = 0;
    if (strstr(hdr, "'<f4'")) { out->kind = 'f'; elem = 4; }
    else if (strstr(hdr, "'<i4'")) { out->kind = 'i'; elem = 4; }
    else if (strstr(hdr, "'<i8'")) { out->kind = 'i'; elem = 8; }
    if (!elem || strstr(hdr, "'fortran_order': True")) {
        fprintf(stderr, "npy: %s: unsupported dtype/order: %s\n", path, hdr);
        free(hdr);
        fclose(f);
        return -1;
    }
    char *sp = strstr(hdr, "'shape': (");
    out->numel = 1;
    if (sp) {
        sp += 10;
        while (*sp && *sp != ')') {
            while (*sp == ' ' || *sp == ',') sp++;
            if (*sp == ')') break;
            long long v = strtoll(sp, &sp, 10);
            out->shape[out->ndim++] = v;
            out->numel *= v;
        }
    }
    free(hdr);
    void *raw = malloc((size_t)out->numel * elem + 1);
    if (!raw || fread(raw, (size_t)elem, (size_t)out->numel, f) != (size_t)out->numel) {
        fprintf(stderr, "npy: %s: short data\n", path);
        free(raw);
        fclose(f);
        return -1;
    }
    fclose(f);
    if (out->kind == 'f') {
        out->f = raw;
    } else if (elem == 4) {
        out->i = raw;
    } else {
        int32_t *n = malloc((size_t)out->numel * 4 + 1);
        if (!n) { free(raw); return -1; }
        for (int64_t k = 0; k < out->numel; k++) n[k] = (int32_t)((int64_t *)raw)[k];
        free(raw);
        out->i = n;
    }
    return 0;
}

int npy_load_fixture(const char *name, npy_array *out) {
    char path[1024], rel[512];
    snprintf(rel, sizeof rel, "fixtures/%s.npy", name);
    return npy_load(golden_path(path, sizeof path, rel), out);
}

void npy_free(npy_array *a) {
    free(a->f);
    free(a->i);
    memset(a, 0, sizeof *a);
}

float *npy_fixture_f32(const char *name, int64_t *n) {
    npy_array a;
    if (npy_load_fixture(name, &a)) {
        TEST_CHECK(0, "cannot load fixture %s", name);
        return NULL;
    }
    *n = a.numel;
    return a.f;
}

int32_t *npy_fixture_codes(const char *name, int64_t *T, int64_t nq) {
    npy_array a;
    if (npy_load_fixture(name, &a)) {
        TEST_CHECK(0, "cannot load fixture %s", name);
        return NULL;
    }
    TEST_CHECK(a.kind == 'i' && a.ndim == 2 && a.shape[1] == nq, "%s: expected int codes [T][%lld]", name,
               (long long)nq);
    *T = a.shape[0];
    return a.i;
}
