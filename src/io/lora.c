/* PEFT LoRA adapters merged into a model's weights (io/lora.h). */
#include "io/lora.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/json_util.h"
#include "tensor/quant.h"

/* "PATH[:SCALE]": a path that exists is taken whole (a folder may hold a
 * colon), else a number after the last colon is the scale. */
int qtts_lora_spec(const char *spec, char *path, size_t n, double *scale, qtts_err *err) {
    struct stat sb;
    *scale = 1;
    if (snprintf(path, n, "%s", spec) >= (int)n) return qtts_fail(err, "--lora '%.64s...': path too long", spec);
    char *colon = strrchr(path, ':');
    if (stat(path, &sb) == 0 || !colon) return 0;
    char *end;
    errno = 0;
    double x = strtod(colon + 1, &end);
    if (colon[1] == 0 || *end || errno || !isfinite(x))
        return qtts_fail(err, "--lora '%s': expected PATH or PATH:SCALE with SCALE a finite number", spec);
    *colon = 0;
    *scale = x;
    return 0;
}

static const char *const prefixes[] = {"base_model.model.", ""};

/* The model's weight for the adapter module `mod` (a lora_A name less its
 * ".lora_A.weight"), or NULL. */
static const qtts_tensor *target(const qtts_store *st, const char *mod, char *name, size_t n) {
    for (size_t p = 0; p < sizeof prefixes / sizeof *prefixes; p++) {
        size_t pl = strlen(prefixes[p]);
        if (strncmp(mod, prefixes[p], pl)) continue;
        const char *m = mod + pl;
        snprintf(name, n, "%s.weight", m);
        const qtts_tensor *t = qtts_store_find(st, name);
        if (t) return t;
        snprintf(name, n, "talker.%s.weight", m);
        if ((t = qtts_store_find(st, name))) return t;
    }
    return NULL;
}

/* alpha / r (or alpha / sqrt(r)) from adapter_config.json. */
static int read_config(const char *dir, double *factor, int64_t *rank, qtts_err *err) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/adapter_config.json", dir);
    cJSON *cfg = json_load_file(path, err);
    if (!cfg) return -1;
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(cfg, "r");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(cfg, "lora_alpha");
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(cfg, "use_rslora");
    int rc = 0;
    if (!json_is_uint(r) || r->valuedouble < 1 || !cJSON_IsNumber(a))
        rc = qtts_fail(err, "%s: expected integer \"r\" >= 1 and number \"lora_alpha\"", path);
    else {
        *rank = (int64_t)r->valuedouble;
        *factor = cJSON_IsTrue(rs) ? a->valuedouble / sqrt(r->valuedouble) : a->valuedouble / r->valuedouble;
    }
    cJSON_Delete(cfg);
    return rc;
}

/* W rows [begin, end) += s * (B A) rows, each sum in double. */
typedef struct {
    float *w;
    const float *a, *b;
    int64_t cols, rank;
    double s;
} merge_job;

static void merge_rows(void *ctx, int64_t begin, int64_t end, int tid) {
    (void)tid;
    const merge_job *j = ctx;
    for (int64_t o = begin; o < end; o++)
        for (int64_t c = 0; c < j->cols; c++) {
            double acc = 0;
            for (int64_t k = 0; k < j->rank; k++) acc += (double)j->b[o * j->rank + k] * j->a[k * j->cols + c];
            j->w[o * j->cols + c] = (float)(j->w[o * j->cols + c] + j->s * acc);
        }
}

/* The type a merged weight is stored in: the one it had when a kernel runs
 * that type, as PEFT merges in the weight's dtype (a Q8_0 or bf16 model
 * stays one); for the storage-only types (Q5_K, Q6_K...) Q8_0, what the
 * loader requantizes their matrices to anyway. */
static qtts_dtype merged_type(const qtts_tensor *t) {
    return qtts_dtype_runs(t->type) ? t->type : qtts_dtype_fit(QTTS_Q8_0, t->shape[1], QTTS_F32);
}

static void store_rows(qtts_dtype t, const float *src, void *dst, int64_t rows, int64_t cols) {
    const size_t rb = qtts_dtype_row_bytes(t, cols);
    for (int64_t r = 0; r < rows; r++) {
        const float *x = src + r * cols;
        unsigned char *d = (unsigned char *)dst + (size_t)r * rb;
        uint16_t *h = (uint16_t *)d;
        if (t == QTTS_BF16)
            for (int64_t c = 0; c < cols; c++) h[c] = qtts_f32_to_bf16(x[c]);
        else if (t == QTTS_F16)
            for (int64_t c = 0; c < cols; c++) h[c] = qtts_f32_to_f16(x[c]);
        else qtts_quantize_row(t, x, d, cols);
    }
}

int qtts_lora_merge(qtts_store **stp, const char *path, double scale, int keep_f32, qtts_pool *pool, int *n_merged,
                    qtts_err *err) {
    char dir[PATH_MAX], file[PATH_MAX + 32];
    struct stat sb;
    snprintf(dir, sizeof dir, "%s", path);
    if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) { /* the safetensors file: its folder has the config */
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
        snprintf(file, sizeof file, "%s", path);
    } else {
        snprintf(file, sizeof file, "%s/adapter_model.safetensors", dir);
    }
    double factor = 1;
    int64_t rank = 0;
    if (read_config(dir, &factor, &rank, err)) return -1;
    qtts_store *ad = qtts_store_open_safetensors(file, err);
    if (!ad) return -1;
    qtts_store *base = *stp, *out = qtts_store_new(err);
    void **merged = qtts_calloc((size_t)qtts_store_count(base) + 1, sizeof *merged, err);
    /* views of mapped weights stay mapped (their pages can leave the RSS once converted) */
    int rc = out && merged && !qtts_store_borrow_mappings(out, base, err) ? 0 : -1, n = 0;
    const double s = scale * factor;
    /* each lora_A with its lora_B: the weight it changes, merged in double */
    for (int i = 0; !rc && i < qtts_store_count(ad); i++) {
        const qtts_tensor *A = qtts_store_at(ad, i);
        const char *suf = strstr(A->name, ".lora_A.");
        if (!suf) {
            if (!strstr(A->name, ".lora_B."))
                rc = qtts_fail(err,
                               "%s: tensor '%s' is not a LoRA A or B matrix (PEFT names end in "
                               ".lora_A.weight / .lora_B.weight)",
                               file, A->name);
            continue;
        }
        char mod[512], bname[600], wname[600];
        snprintf(mod, sizeof mod, "%.*s", (int)(suf - A->name), A->name);
        snprintf(bname, sizeof bname, "%s.lora_B%s", mod, suf + 7);
        const qtts_tensor *B = qtts_store_find(ad, bname);
        const qtts_tensor *W = target(base, mod, wname, sizeof wname);
        if (!B) {
            rc = qtts_fail(err, "%s: '%s' has no '%s'", file, A->name, bname);
            break;
        }
        if (!W) {
            rc = qtts_fail(err, "%s: the adapter targets '%s', which the model does not have", file, mod);
            break;
        }
        if (A->ndim != 2 || B->ndim != 2 || W->ndim != 2 || A->shape[0] != B->shape[1] || A->shape[1] != W->shape[1] ||
            B->shape[0] != W->shape[0]) {
            rc = qtts_fail(err, "%s: '%s' does not fit '%s' [%lld x %lld]: lora_A [%lld x %lld], lora_B [%lld x %lld]",
                           file, mod, wname, (long long)W->shape[0], (long long)(W->ndim > 1 ? W->shape[1] : 0),
                           (long long)A->shape[0], (long long)(A->ndim > 1 ? A->shape[1] : 0), (long long)B->shape[0],
                           (long long)(B->ndim > 1 ? B->shape[1] : 0));
            break;
        }
        if (A->shape[0] != rank)
            fprintf(stderr, "qtts: warning: %s: '%s' has rank %lld, the config says %lld (its r sets the scale)\n",
                    file, mod, (long long)A->shape[0], (long long)rank);
        int wi = 0;
        while (qtts_store_at(base, wi) != W) wi++;
        if (merged[wi]) {
            rc = qtts_fail(err, "%s: '%s' is adapted twice", file, wname);
            break;
        }
        float *w = qtts_tensor_to_f32(W, err), *a = w ? qtts_tensor_to_f32(A, err) : NULL,
              *b = a ? qtts_tensor_to_f32(B, err) : NULL;
        if (!b) {
            free(w);
            free(a);
            rc = -1;
            break;
        }
        merge_job job = {w, a, b, W->shape[1], A->shape[0], s};
        qtts_parallel_for_work(pool, W->shape[0], 1, (double)W->shape[0] * W->shape[1] * (A->shape[0] + 1), merge_rows,
                               &job);
        free(a);
        free(b);
        void *stored = w;
        const qtts_dtype mt = keep_f32 ? QTTS_F32 : merged_type(W);
        if (mt != QTTS_F32) {
            stored = qtts_malloc(qtts_dtype_row_bytes(mt, W->shape[1]) * (size_t)W->shape[0], err);
            if (!stored) {
                free(w);
                rc = -1;
                break;
            }
            store_rows(mt, w, stored, W->shape[0], W->shape[1]);
            free(w);
        }
        merged[wi] = stored;
        n++;
    }
    for (int i = 0; !rc && i < qtts_store_count(base); i++) {
        const qtts_tensor *t = qtts_store_at(base, i);
        if (merged[i]) {
            rc = qtts_store_add(out, t->name, keep_f32 ? QTTS_F32 : merged_type(t), t->ndim, t->shape, merged[i], 1,
                                err);
            if (!rc) merged[i] = NULL;
        } else {
            rc = qtts_store_add(out, t->name, t->type, t->ndim, t->shape, t->data, 0, err);
        }
    }
    if (!rc) {
        qtts_store_set_source(out, qtts_store_source(base));
        rc = qtts_store_adopt(out, base, err);
    }
    for (int i = 0; merged && i < qtts_store_count(base); i++) free(merged[i]);
    free(merged);
    qtts_store_free(ad);
    if (rc) {
        qtts_store_free(out);
        return -1;
    }
    *stp = out;
    if (n_merged) *n_merged = n;
    return 0;
}
