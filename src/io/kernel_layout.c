#include "io/kernel_layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/interleave.h"

/* One table: a stored type and its name suffix. */
static const struct {
    qtts_dtype type;
    const char *suffix;
    size_t group_bytes; /* 16 rows of one block (Q8_0) or super-block (Q4_K) */
} k_forms[] = {
    {QTTS_Q4_K, ".x16_q4_k", QTTS_Q4_K_X16_SUPER},
    {QTTS_Q8_0, ".x16_q8_0", QTTS_Q8_0_X16_BLOCK},
};
enum { N_FORMS = sizeof k_forms / sizeof k_forms[0] };

const char *qtts_kernel_layout_here(void) { return qtts_interleave_kernels() ? "x86-x16" : NULL; }

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

int qtts_kernel_layout_stores(const char *name, qtts_dtype type, int64_t rows, int64_t cols) {
    static const char *const k_layer_mats[] = {
        "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight", "self_attn.o_proj.weight",
        "mlp.gate_proj.weight",    "mlp.up_proj.weight",      "mlp.down_proj.weight",
    };
    if (!qtts_kernel_layout_here() || !qtts_x16_bytes(type, rows, cols)) return 0;
    if (strncmp(name, "talker.", 7) || !strstr(name, ".layers.")) return 0;
    for (size_t i = 0; i < sizeof k_layer_mats / sizeof k_layer_mats[0]; i++)
        if (ends_with(name, k_layer_mats[i])) return 1;
    return 0;
}

int qtts_kernel_layout_add(qtts_store *st, const char *name, qtts_mat *m, qtts_err *err) {
    int f = 0;
    while (f < N_FORMS && k_forms[f].type != m->type) f++;
    if (f == N_FORMS) return qtts_fail(err, "tensor '%s': %s has no interleaved form", name, qtts_dtype_name(m->type));
    if (!m->interleave && qtts_mat_interleave_force(m, err)) return -1; /* into its own memory (a view too) */
    char stored[512];
    if (snprintf(stored, sizeof stored, "%s%s", name, k_forms[f].suffix) >= (int)sizeof stored)
        return qtts_fail(err, "tensor name too long: %s", name);
    const int64_t shape[2] = {m->rows / QTTS_INTERLEAVE,
                              (int64_t)((size_t)(m->cols / qtts_dtype_block_elems(m->type)) * k_forms[f].group_bytes / 4)};
    if (qtts_store_add(st, stored, QTTS_I32, 2, shape, m->owned, 1, err)) return -1;
    m->owned = NULL; /* the store frees it */
    return 0;
}

int qtts_kernel_layout_parse(const qtts_tensor *t, char *base, size_t n, qtts_dtype *type) {
    if (t->type != QTTS_I32 || t->ndim != 2) return 0;
    for (int f = 0; f < N_FORMS; f++) {
        if (!ends_with(t->name, k_forms[f].suffix)) continue;
        size_t len = strlen(t->name) - strlen(k_forms[f].suffix);
        if (len == 0 || len >= n) return 0;
        memcpy(base, t->name, len);
        base[len] = 0;
        *type = k_forms[f].type;
        return 1;
    }
    return 0;
}

int qtts_kernel_layout_load(qtts_store *st, const qtts_tensor *t, int keep, qtts_err *err) {
    char base[512];
    qtts_dtype type;
    if (!qtts_kernel_layout_parse(t, base, sizeof base, &type)) return qtts_fail(err, "tensor '%s': not interleaved", t->name);
    const size_t group = type == QTTS_Q4_K ? QTTS_Q4_K_X16_SUPER : QTTS_Q8_0_X16_BLOCK;
    const int64_t groups = t->shape[0], words = t->shape[1];
    /* from the file's header: a shape that is not whole blocks, or too large to count, is refused */
    if (groups <= 0 || words <= 0 || groups > INT32_MAX || words > INT32_MAX || ((size_t)words * 4) % group)
        return qtts_fail(err, "%s: tensor '%s': shape [%lld, %lld] is not an interleaved %s matrix",
                         qtts_store_source(st), t->name, (long long)groups, (long long)words, qtts_dtype_name(type));
    const int64_t rows = groups * QTTS_INTERLEAVE;
    const int64_t cols = (int64_t)((size_t)words * 4 / group) * qtts_dtype_block_elems(type);
    if (keep) return qtts_store_add_x16(st, base, type, rows, cols, t->data, err);
    const size_t bytes = qtts_dtype_row_bytes(type, cols) * (size_t)rows;
    void *plain = qtts_malloc(bytes, err);
    if (!plain) return -1;
    qtts_x16_to_rows(type, t->data, rows, cols, plain, NULL);
    if (qtts_store_add(st, base, type, 2, (const int64_t[]){rows, cols}, plain, 1, err)) {
        free(plain);
        return -1;
    }
    return 0;
}
