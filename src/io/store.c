#include "io/store.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "tensor/interleave.h"
#include "tensor/quant.h"

typedef struct {
    void *addr;
    size_t len;
    int file_backed; /* its pages can be dropped and re-read */
    int borrowed;    /* another store's (qtts_store_borrow_mappings): not unmapped with this one */
    int fd;          /* the mapped file from offset 0 (-1: none), for qtts_store_read */
} mapping;

struct qtts_store {
    qtts_tensor *tensors;
    int count, cap;
    int *buckets; /* open addressing, -1 = empty */
    int n_buckets;
    void **owned;
    int n_owned, cap_owned;
    mapping *maps;
    int n_maps, cap_maps;
    qtts_store **adopted; /* stores freed with this one (their mappings back some of its tensors) */
    int n_adopted;
    char source[512];
};

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

qtts_store *qtts_store_new(qtts_err *err) {
    qtts_store *st = qtts_calloc(1, sizeof *st, err);
    if (st) snprintf(st->source, sizeof st->source, "(memory)");
    return st;
}

void qtts_store_free(qtts_store *st) {
    if (!st) return;
    for (int i = 0; i < st->count; i++) free((void *)st->tensors[i].name);
    for (int i = 0; i < st->n_owned; i++) free(st->owned[i]);
    for (int i = 0; i < st->n_maps; i++)
        if (!st->maps[i].borrowed) {
            munmap(st->maps[i].addr, st->maps[i].len);
            if (st->maps[i].fd >= 0) close(st->maps[i].fd);
        }
    free(st->tensors);
    free(st->buckets);
    free(st->owned);
    free(st->maps);
    for (int i = 0; i < st->n_adopted; i++) qtts_store_free(st->adopted[i]);
    free(st->adopted);
    free(st);
}

int qtts_store_adopt(qtts_store *st, qtts_store *other, qtts_err *err) {
    qtts_store **n = realloc(st->adopted, (size_t)(st->n_adopted + 1) * sizeof *n);
    if (!n) return qtts_fail(err, "out of memory");
    st->adopted = n;
    st->adopted[st->n_adopted++] = other;
    return 0;
}

/* The store's file mapping p lies in, or NULL. */
static const mapping *file_mapping(const qtts_store *st, const void *p) {
    for (int i = 0; i < st->n_maps; i++)
        if (st->maps[i].file_backed && (const char *)p >= (const char *)st->maps[i].addr &&
            (const char *)p < (const char *)st->maps[i].addr + st->maps[i].len)
            return &st->maps[i];
    return NULL;
}

static int in_mapping(const qtts_store *st, const void *p) { return file_mapping(st, p) != NULL; }

/* file_mapping of st or of a store it adopted. */
static const mapping *any_file_mapping(const qtts_store *st, const void *p) {
    const mapping *m = file_mapping(st, p);
    for (int i = 0; !m && i < st->n_adopted; i++) m = any_file_mapping(st->adopted[i], p);
    return m;
}

static int in_any_mapping(const qtts_store *st, const void *p) { return any_file_mapping(st, p) != NULL; }

void qtts_store_read(const qtts_store *st, const void *p, size_t n, void *dst) {
    const mapping *m = st && n ? any_file_mapping(st, p) : NULL;
    size_t done = 0;
    if (m && m->fd >= 0 && (const char *)p + n <= (const char *)m->addr + m->len) {
        const off_t at = (off_t)((const char *)p - (const char *)m->addr);
        while (done < n) {
            ssize_t r = pread(m->fd, (char *)dst + done, n - done, at + (off_t)done);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break; /* the rest through the mapping, as before */
            done += (size_t)r;
        }
    }
    if (done < n) memcpy((char *)dst + done, (const char *)p + done, n - done);
}

/* Drops the whole pages of a mapped tensor's data from the RSS (a later read
 * faults them back in from the file). */
static void release_range(const void *p, size_t bytes) {
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t b = ((uintptr_t)p + page - 1) & ~(page - 1), e = ((uintptr_t)p + bytes) & ~(page - 1);
    if (e > b) madvise((void *)b, e - b, MADV_DONTNEED);
}

static void release_tensor_pages(const qtts_tensor *t) {
    if (!t->mapped || !t->nbytes) return;
    release_range(t->data, t->nbytes);
}

int qtts_weight_arena_alloc(qtts_weight_arena *a, qtts_err *err) {
    const size_t huge = (size_t)2 << 20, bytes = (a->size + huge - 1) / huge * huge;
    a->used = 0;
    if (!(a->base = aligned_alloc(huge, bytes ? bytes : huge)))
        return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "out of memory for %zu bytes of weights", a->size);
    qtts_advise_huge(a->base, bytes ? bytes : huge);
    return 0;
}

void qtts_mat_own_mapped(qtts_mat *m, const qtts_store *st, qtts_weight_arena *a) {
    if (m->owned || !m->data || !in_any_mapping(st, m->data)) return;
    const size_t bytes = m->row_bytes * (size_t)m->rows, slot = (bytes + 63) / 64 * 64;
    if (!a->base) {
        a->size += slot;
        return;
    }
    const void *view = m->data;
    qtts_store_read(st, view, bytes, a->base + a->used);
    m->data = a->base + a->used;
    a->used += slot;
    release_range(view, bytes); /* whatever the source had resident leaves the RSS: one copy */
}

void qtts_tensor_release_lookup(const qtts_tensor *t) {
    if (!t->mapped || t->viewed) return;
    /* the whole table, not a window around the row: how much one fault maps is the kernel's choice (64 KiB of
     * fault-around, or a whole large folio: ~390 KiB for one 2 KiB row on Linux 6.18), and where little is
     * mapped the page-table walk is short */
    release_tensor_pages(t);
}

void qtts_store_release_pages(qtts_store *st) {
    if (!st || !st->n_maps) return;
    for (int i = 0; i < st->count; i++) {
        const qtts_tensor *t = &st->tensors[i];
        /* views in use would only fault straight back in; in-memory tensors must never be dropped */
        if (!t->viewed) release_tensor_pages(t);
    }
}

void qtts_store_release_all_pages(qtts_store *st) {
    if (!st) return;
    for (int i = 0; i < st->count; i++) {
        st->tensors[i].viewed = 0;
        release_tensor_pages(&st->tensors[i]);
    }
    for (int i = 0; i < st->n_adopted; i++) qtts_store_release_all_pages(st->adopted[i]);
}

const char *qtts_store_source(const qtts_store *st) { return st->source; }
void qtts_store_set_source(qtts_store *st, const char *source) {
    snprintf(st->source, sizeof st->source, "%s", source);
}

static int rehash(qtts_store *st, int n_buckets, qtts_err *err) {
    int *b = qtts_malloc((size_t)n_buckets * sizeof *b, err);
    if (!b) return -1;
    for (int i = 0; i < n_buckets; i++) b[i] = -1;
    for (int i = 0; i < st->count; i++) {
        uint64_t h = hash_name(st->tensors[i].name) & (uint64_t)(n_buckets - 1);
        while (b[h] >= 0) h = (h + 1) & (uint64_t)(n_buckets - 1);
        b[h] = i;
    }
    free(st->buckets);
    st->buckets = b;
    st->n_buckets = n_buckets;
    return 0;
}

const qtts_tensor *qtts_store_find(const qtts_store *st, const char *name) {
    if (!st || !st->n_buckets) return NULL;
    uint64_t mask = (uint64_t)(st->n_buckets - 1);
    for (uint64_t h = hash_name(name) & mask;; h = (h + 1) & mask) {
        int i = st->buckets[h];
        if (i < 0) return NULL;
        if (!strcmp(st->tensors[i].name, name)) return &st->tensors[i];
    }
}

static int keep_owned(qtts_store *st, void *p, qtts_err *err) {
    if (st->n_owned == st->cap_owned) {
        int cap = st->cap_owned ? st->cap_owned * 2 : 64;
        void **n = realloc(st->owned, (size_t)cap * sizeof *n);
        if (!n) return qtts_fail(err, "out of memory");
        st->owned = n;
        st->cap_owned = cap;
    }
    st->owned[st->n_owned++] = p;
    return 0;
}

int qtts_store_keep_mapping(qtts_store *st, void *addr, size_t len, int fd, qtts_err *err) {
    if (st->n_maps == st->cap_maps) {
        int cap = st->cap_maps ? st->cap_maps * 2 : 4;
        mapping *n = realloc(st->maps, (size_t)cap * sizeof *n);
        if (!n) return qtts_fail(err, "out of memory");
        st->maps = n;
        st->cap_maps = cap;
    }
    st->maps[st->n_maps++] = (mapping){addr, len, fd != QTTS_ANONYMOUS_MAPPING, 0, fd};
    for (int i = 0; i < st->count; i++) st->tensors[i].mapped |= in_mapping(st, st->tensors[i].data);
    return 0;
}

int qtts_store_borrow_mappings(qtts_store *st, const qtts_store *from, qtts_err *err) {
    for (int i = 0; i < from->n_maps; i++) {
        const int fd = from->maps[i].file_backed ? from->maps[i].fd : QTTS_ANONYMOUS_MAPPING;
        if (qtts_store_keep_mapping(st, from->maps[i].addr, from->maps[i].len, fd, err)) return -1;
        st->maps[st->n_maps - 1].borrowed = 1;
    }
    return 0;
}

static int cmp_span(const void *a, const void *b) {
    const qtts_span *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

int qtts_spans_check_disjoint(qtts_span *spans, size_t n, const char *label, qtts_err *err) {
    qsort(spans, n, sizeof *spans, cmp_span);
    for (size_t i = 1; i < n; i++)
        if (spans[i].begin < spans[i - 1].end)
            return qtts_fail(err, "%s: tensors '%s' and '%s' overlap in the file", label, spans[i - 1].name,
                             spans[i].name);
    return 0;
}

int qtts_store_add(qtts_store *st, const char *name, qtts_dtype type, int ndim, const int64_t *shape,
                   const void *data, int take_ownership, qtts_err *err) {
    if (ndim < 0 || ndim > QTTS_MAX_DIMS)
        return qtts_fail(err, "%s: tensor '%s' has %d dimensions (at most %d supported)", st->source, name, ndim,
                         QTTS_MAX_DIMS);
    if (qtts_store_find(st, name)) return qtts_fail(err, "%s: tensor '%s' appears twice", st->source, name);
    /* Shapes come from file headers: a count that does not fit (huge
     * dimensions, possibly next to a zero one) is refused, not overflowed. */
    int64_t numel = 1;
    for (int i = 0; i < ndim; i++)
        if (shape[i] <= 0) numel = 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return qtts_fail(err, "%s: tensor '%s' has a negative dimension", st->source, name);
        if (numel && shape[i] > INT64_MAX / numel)
            return qtts_fail(err, "%s: tensor '%s' has too many elements", st->source, name);
        if (numel) numel *= shape[i];
    }
    int64_t be = qtts_dtype_block_elems(type);
    size_t block_bytes = qtts_dtype_block_bytes(type);
    if (block_bytes && (uint64_t)(numel / be) > SIZE_MAX / block_bytes)
        return qtts_fail(err, "%s: tensor '%s' is too large", st->source, name);
    if (st->count == st->cap) {
        int cap = st->cap ? st->cap * 2 : 256;
        qtts_tensor *n = realloc(st->tensors, (size_t)cap * sizeof *n);
        if (!n) return qtts_fail(err, "out of memory");
        st->tensors = n;
        st->cap = cap;
    }
    if ((st->count + 1) * 2 > st->n_buckets && rehash(st, st->n_buckets ? st->n_buckets * 2 : 512, err)) return -1;
    char *copy = strdup(name);
    if (!copy) return qtts_fail(err, "out of memory");
    if (take_ownership && keep_owned(st, (void *)data, err)) {
        free(copy);
        return -1;
    }
    qtts_tensor *t = &st->tensors[st->count];
    memset(t, 0, sizeof *t);
    t->name = copy;
    t->type = type;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    t->data = data;
    t->nbytes = (size_t)(numel / be) * block_bytes;
    t->mapped = in_mapping(st, data);
    uint64_t mask = (uint64_t)(st->n_buckets - 1);
    uint64_t h = hash_name(copy) & mask;
    while (st->buckets[h] >= 0) h = (h + 1) & mask;
    st->buckets[h] = st->count;
    st->count++;
    return 0;
}

int qtts_store_count(const qtts_store *st) { return st->count; }
const qtts_tensor *qtts_store_at(const qtts_store *st, int i) {
    return i >= 0 && i < st->count ? &st->tensors[i] : NULL;
}

static void format_shape(char *buf, size_t size, int ndim, const int64_t *shape) {
    size_t off = 0;
    off += (size_t)snprintf(buf + off, size - off, "[");
    for (int i = 0; i < ndim && off < size; i++)
        off += (size_t)snprintf(buf + off, size - off, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (off < size) snprintf(buf + off, size - off, "]");
}

const qtts_tensor *qtts_store_get(const qtts_store *st, const char *name, int ndim, const int64_t *shape,
                                  qtts_err *err) {
    const qtts_tensor *t = qtts_store_find(st, name);
    if (!t) {
        qtts_fail(err, "%s: missing tensor '%s'", st->source, name);
        return NULL;
    }
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++)
        if (shape[i] >= 0 && shape[i] != t->shape[i]) ok = 0;
    if (!ok) {
        char got[128], want[128];
        format_shape(got, sizeof got, t->ndim, t->shape);
        format_shape(want, sizeof want, ndim, shape);
        qtts_fail(err, "%s: tensor '%s' has shape %s, expected %s", st->source, name, got, want);
        return NULL;
    }
    return t;
}

const qtts_tensor *qtts_store_get1(const qtts_store *st, const char *name, int64_t d0, qtts_err *err) {
    int64_t s[1] = {d0};
    return qtts_store_get(st, name, 1, s, err);
}
const qtts_tensor *qtts_store_get2(const qtts_store *st, const char *name, int64_t d0, int64_t d1, qtts_err *err) {
    int64_t s[2] = {d0, d1};
    return qtts_store_get(st, name, 2, s, err);
}
const qtts_tensor *qtts_store_get3(const qtts_store *st, const char *name, int64_t d0, int64_t d1, int64_t d2,
                                   qtts_err *err) {
    int64_t s[3] = {d0, d1, d2};
    return qtts_store_get(st, name, 3, s, err);
}

int qtts_convert_to_f32(qtts_dtype t, const void *src, float *dst, int64_t n, qtts_err *err) {
    if (!qtts_dtype_known(t)) return qtts_fail(err, "cannot convert dtype %d to f32", (int)t);
    if (n % qtts_dtype_block_elems(t))
        return qtts_fail(err, "%lld elements is not a whole number of %s blocks", (long long)n, qtts_dtype_name(t));
    qtts_dequantize_row(t, src, dst, n);
    return 0;
}

int qtts_store_add_x16(qtts_store *st, const char *name, qtts_dtype type, int64_t rows, int64_t cols,
                       const void *data, qtts_err *err) {
    const size_t bytes = qtts_x16_bytes(type, rows, cols);
    if (!bytes)
        return qtts_fail(err, "%s: tensor '%s': a %lld x %lld %s matrix has no interleaved form", st->source, name,
                         (long long)rows, (long long)cols, qtts_dtype_name(type));
    if (qtts_store_add(st, name, type, 2, (const int64_t[]){rows, cols}, data, 0, err)) return -1;
    qtts_tensor *t = &st->tensors[st->count - 1];
    t->interleave = QTTS_INTERLEAVE;
    t->nbytes = bytes;
    return 0;
}

/* Readers of GGML rows refuse an interleaved tensor (the matrix loader reads it). */
static int rows_only(const qtts_tensor *t, qtts_err *err) {
    if (!t->interleave) return 0;
    return qtts_fail(err, "tensor '%s' is stored in the kernels' interleaved form: only the matrix loader reads it",
                     t->name);
}

int qtts_store_tensor_f32_into(const qtts_store *st, const qtts_tensor *t, float *dst, qtts_err *err) {
    if (rows_only(t, err)) return -1;
    const int64_t n = qtts_tensor_numel(t);
    if (t->type == QTTS_F32 && t->mapped) {
        qtts_store_read(st, t->data, (size_t)n * sizeof(float), dst);
        return 0;
    }
    if (qtts_convert_to_f32(t->type, t->data, dst, n, err)) return qtts_fail_prefix(err, "tensor '%s'", t->name);
    return 0;
}

float *qtts_store_tensor_to_f32(const qtts_store *st, const qtts_tensor *t, qtts_err *err) {
    if (rows_only(t, err)) return NULL;
    const size_t bytes = (size_t)qtts_tensor_numel(t) * sizeof(float);
    float *out = qtts_malloc(bytes, err);
    if (!out) return NULL;
    qtts_advise_huge(out, bytes); /* a large weight: fewer page faults to fill it */
    if (qtts_store_tensor_f32_into(st, t, out, err)) {
        free(out);
        return NULL;
    }
    if (!t->viewed) release_tensor_pages(t); /* copied: as in qtts_mat_from_tensor_kernel */
    return out;
}

float *qtts_tensor_to_f32(const qtts_tensor *t, qtts_err *err) { return qtts_store_tensor_to_f32(NULL, t, err); }

void qtts_tensor_f32_done(const qtts_tensor *t, float *copy) {
    free(copy);
    if (!t->viewed) release_tensor_pages(t); /* read once: as in qtts_tensor_to_f32 */
}

qtts_dtype qtts_dtype_fit(qtts_dtype want, int64_t cols, qtts_dtype fallback) {
    if (qtts_dtype_row_bytes(want, cols)) return want;
    if (want == QTTS_Q4_K && qtts_dtype_row_bytes(QTTS_Q8_0, cols)) return QTTS_Q8_0;
    if (want == QTTS_Q4_K || want == QTTS_Q8_0) return fallback;
    return want;
}

static int mat_from_tensor(qtts_mat *m, const qtts_tensor *t, qtts_dtype want, qtts_pool *pool, const qtts_store *st,
                           qtts_err *err);

int qtts_mat_from_tensor_plan(qtts_mat *m, const qtts_tensor *t, const qtts_weight_plan *plan, qtts_err *err) {
    const qtts_dtype want = plan ? plan->type : QTTS_DTYPE_INVALID;
    if (mat_from_tensor(m, t, want, plan ? plan->pool : NULL, plan ? plan->store : NULL, err) ||
        qtts_mat_fit_layout(m, plan ? plan->layout : NULL, plan ? plan->pool : NULL, err) ||
        qtts_mat_interleave_pool(m, plan ? plan->layout : NULL, plan ? plan->pool : NULL, err)) {
        qtts_mat_free(m);
        return -1;
    }
    qtts_tensor_mat_done(t, m);
    return 0;
}

void qtts_tensor_mat_done(const qtts_tensor *t, const qtts_mat *m) {
    if (m->data == t->data) ((qtts_tensor *)t)->viewed = 1; /* the store's own array: see qtts_store_release_pages */
    /* converted or repacked: the original leaves the RSS now rather than after the whole load (a q8_0
     * model repacked for the interleaved kernels held both copies: peak 2.2 GB for 0.6B instead of 1.2) */
    else if (!t->viewed) release_tensor_pages(t);
}

int qtts_mat_from_tensor_kernel(qtts_mat *m, const qtts_tensor *t, qtts_dtype want, qtts_err *err) {
    const qtts_weight_plan plan = {.type = want};
    return qtts_mat_from_tensor_plan(m, t, &plan, err);
}

int qtts_mat_from_tensor(qtts_mat *m, const qtts_tensor *t, qtts_dtype want, qtts_err *err) {
    return qtts_mat_from_tensor_pool(m, t, want, NULL, err);
}

/* Rows [begin, end) of a conversion, through one f32 row. */
typedef struct {
    const qtts_tensor *t;
    const qtts_store *st; /* reads t's rows from its file where t is mapped */
    qtts_mat *m;
    size_t src_row;
    atomic_int failed; /* out of memory for a row buffer */
} convert_job;

static void convert_rows(void *ctx, int64_t begin, int64_t end, int tid) {
    convert_job *j = ctx;
    (void)tid;
    const qtts_mat *m = j->m;
    /* a mapped source is read from the file a chunk of rows at a time (see qtts_store_read) */
    const int64_t chunk = j->st && j->t->mapped ? (int64_t)((256u << 10) / j->src_row) + 1 : 0;
    float *row = malloc((size_t)m->cols * sizeof(float));
    char *buf = chunk ? malloc((size_t)chunk * j->src_row) : NULL;
    if (!row || (chunk && !buf)) {
        free(row), free(buf);
        atomic_store(&j->failed, 1);
        return;
    }
    for (int64_t r = begin; r < end; r++) {
        const char *src = (const char *)j->t->data + (size_t)r * j->src_row;
        if (buf) {
            const int64_t at = (r - begin) % chunk, n = end - r < chunk - at ? end - r : chunk - at;
            if (at == 0) qtts_store_read(j->st, src, (size_t)n * j->src_row, buf);
            src = buf + (size_t)at * j->src_row;
        }
        char *dst = (char *)m->owned + (size_t)r * m->row_bytes;
        qtts_dequantize_row(j->t->type, src, row, m->cols);
        switch (m->type) {
        case QTTS_F32: memcpy(dst, row, (size_t)m->cols * sizeof(float)); break;
        case QTTS_BF16:
            for (int64_t i = 0; i < m->cols; i++) ((uint16_t *)(void *)dst)[i] = qtts_f32_to_bf16(row[i]);
            break;
        case QTTS_F16:
            for (int64_t i = 0; i < m->cols; i++) ((uint16_t *)(void *)dst)[i] = qtts_f32_to_f16(row[i]);
            break;
        default: qtts_quantize_row(m->type, row, dst, m->cols); break;
        }
    }
    free(row);
    free(buf);
}

int qtts_mat_fit_layout(qtts_mat *m, const qtts_weight_layout *layout, qtts_pool *pool, qtts_err *err) {
    if (!m->interleave || (qtts_interleave_kernels() && qtts_weight_layout_for(layout, m->type)->interleave)) return 0;
    return qtts_mat_deinterleave_pool(m, pool, err);
}

/* A matrix from a tensor in the kernels' interleaved form: a view where it
 * keeps its type, else converted from its GGML rows (put back first). */
static int mat_from_x16(qtts_mat *m, const qtts_tensor *t, qtts_dtype want, qtts_pool *pool, qtts_err *err) {
    const int64_t rows = t->shape[0], cols = t->shape[1];
    if (t->ndim != 2 || qtts_x16_bytes(t->type, rows, cols) != t->nbytes)
        return qtts_fail(err, "tensor '%s': not an interleaved %s matrix", t->name, qtts_dtype_name(t->type));
    if (want == QTTS_DTYPE_INVALID) want = t->type;
    if (qtts_dtype_fit(want, cols, t->type) == t->type) {
        *m = (qtts_mat){.type = t->type, .rows = rows, .cols = cols, .row_bytes = t->nbytes / (size_t)rows,
                        .data = t->data, .interleave = t->interleave};
        return 0;
    }
    const size_t bytes = qtts_dtype_row_bytes(t->type, cols) * (size_t)rows;
    void *plain = malloc(bytes);
    if (!plain) return qtts_fail(err, "out of memory converting tensor '%s' (%zu bytes)", t->name, bytes);
    qtts_x16_to_rows(t->type, t->data, rows, cols, plain, pool);
    qtts_tensor rows_t = *t;
    rows_t.data = plain;
    rows_t.nbytes = bytes;
    rows_t.interleave = 0;
    rows_t.mapped = 0;
    int rc = qtts_mat_from_tensor_pool(m, &rows_t, want, pool, err);
    free(plain);
    return rc;
}

int qtts_mat_from_tensor_pool(qtts_mat *m, const qtts_tensor *t, qtts_dtype want, qtts_pool *pool, qtts_err *err) {
    return mat_from_tensor(m, t, want, pool, NULL, err);
}

static int mat_from_tensor(qtts_mat *m, const qtts_tensor *t, qtts_dtype want, qtts_pool *pool, const qtts_store *st,
                           qtts_err *err) {
    memset(m, 0, sizeof *m);
    if (t->interleave) return mat_from_x16(m, t, want, pool, err);
    if (t->ndim < 2) return qtts_fail(err, "tensor '%s' is not a matrix", t->name);
    int64_t rows = t->shape[0], cols = 1;
    for (int i = 1; i < t->ndim; i++) cols *= t->shape[i];
    if (want == QTTS_DTYPE_INVALID) want = t->type;
    if (!qtts_dtype_runs(want))
        return qtts_fail(err, "tensor '%s' is stored as %s, which no kernel runs (the model loader converts it)",
                         t->name, qtts_dtype_name(want));
    want = qtts_dtype_fit(want, cols, t->type);
    m->rows = rows;
    m->cols = cols;
    m->type = want;
    m->row_bytes = qtts_dtype_row_bytes(want, cols);
    if (!m->row_bytes)
        return qtts_fail(err, "tensor '%s': %lld columns cannot be stored as %s (block size %lld)", t->name,
                         (long long)cols, qtts_dtype_name(want), (long long)qtts_dtype_block_elems(want));
    if (want == t->type) {
        m->data = t->data;
        return 0;
    }
    if (!qtts_dtype_known(t->type)) return qtts_fail(err, "tensor '%s': cannot convert dtype %d to f32", t->name, (int)t->type);
    if (cols % qtts_dtype_block_elems(t->type))
        return qtts_fail(err, "tensor '%s': %lld columns is not a whole number of %s blocks", t->name, (long long)cols,
                         qtts_dtype_name(t->type));
    /* 64-aligned: the interleaving and stacking that may follow use whole-vector loads */
    const size_t bytes = m->row_bytes * (size_t)rows, alloc = (bytes + 63) / 64 * 64;
    m->owned = aligned_alloc(64, alloc ? alloc : 64);
    if (!m->owned) return qtts_fail(err, "out of memory converting tensor '%s' (%zu bytes)", t->name, bytes);
    m->data = m->owned;
    qtts_advise_huge(m->owned, alloc);
    convert_job j = {.t = t, .st = st, .m = m, .src_row = qtts_dtype_row_bytes(t->type, cols)};
    atomic_init(&j.failed, 0);
    /* a row's conversion is about as much work as a matrix-vector product reading it (a Q4_K fit: far more) */
    qtts_parallel_for_work(pool, rows, 16, (double)rows * (double)cols, convert_rows, &j);
    if (atomic_load(&j.failed)) {
        qtts_mat_free(m);
        return qtts_fail(err, "out of memory converting tensor '%s'", t->name);
    }
    return 0;
}

int qtts_tensor_rows_f32(const qtts_tensor *t, const int32_t *rows, int64_t n, float *out, qtts_err *err) {
    if (rows_only(t, err)) return -1;
    size_t rb = t->ndim == 2 ? qtts_dtype_row_bytes(t->type, t->shape[1]) : 0;
    if (t->ndim == 2 && !rb)
        return qtts_fail(err, "tensor '%s': rows are not whole %s blocks", t->name, qtts_dtype_name(t->type));
    int rc = 0;
    for (int64_t i = 0; i < n; i++) {
        if (t->ndim != 2 || rows[i] < 0 || rows[i] >= t->shape[0]) {
            rc = qtts_fail(err, "tensor '%s': row %lld out of range (%lld rows)", t->name, (long long)rows[i],
                           (long long)(t->ndim ? t->shape[0] : 0));
            break;
        }
        const char *src = (const char *)t->data + (size_t)rows[i] * rb;
        if (qtts_convert_to_f32(t->type, src, out + i * t->shape[1], t->shape[1], err)) {
            rc = qtts_fail_prefix(err, "tensor '%s'", t->name);
            break;
        }
    }
    qtts_tensor_release_lookup(t); /* once per call, not per row: each release is a system call */
    return rc;
}

int qtts_tensor_row_f32(const qtts_tensor *t, int64_t row, float *out, qtts_err *err) {
    if (row < INT32_MIN || row > INT32_MAX)
        return qtts_fail(err, "tensor '%s': row %lld out of range", t->name, (long long)row);
    const int32_t r = (int32_t)row;
    return qtts_tensor_rows_f32(t, &r, 1, out, err);
}
