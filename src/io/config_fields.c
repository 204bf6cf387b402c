#include "io/config_fields.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cfg_value_text(const cJSON *v, char *buf, size_t cap) {
    if (!cap) return;
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;
    if (!s) {
        snprintf(buf, cap, "%s", v ? "?" : "(absent)");
        return;
    }
    if (strlen(s) >= cap && cap > 4) snprintf(buf, cap, "%.*s...", (int)(cap - 4), s);
    else snprintf(buf, cap, "%s", s);
    free(s);
}

static int is_integral(const cJSON *v) {
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble) &&
           fabs(v->valuedouble) < 9.0e15;
}

static int fail_value(qtts_err *err, const char *what, const char *key, const cJSON *v, const char *expected) {
    char text[64];
    cfg_value_text(v, text, sizeof text);
    return qtts_fail(err, "%s.%s: %s, got %s", what, key, expected, text);
}

static int fail_range(qtts_err *err, const char *what, const char *key, const cJSON *v, const cfg_field *f) {
    char expected[96];
    snprintf(expected, sizeof expected, "expected a value in [%.10g, %.10g]", f->lo, f->hi);
    return fail_value(err, what, key, v, expected);
}

static void *slot(void *base, size_t offset) { return offset == CFG_NOT_STORED ? NULL : (char *)base + offset; }

/* `only` holds '|'-separated accepted strings. */
static int one_of(const char *only, const char *s) {
    size_t n = strlen(s);
    for (const char *p = only; *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, s, n)) return 1;
        if (!bar) break;
        p = bar + 1;
    }
    return 0;
}

static int read_list(const cJSON *v, const cfg_field *f, void *base, const char *what, qtts_err *err) {
    int64_t *out = slot(base, f->offset);
    if (!cJSON_IsArray(v)) return fail_value(err, what, f->key, v, "expected a list of integers");
    int n = cJSON_GetArraySize(v);
    int exact = f->count_offset == CFG_NOT_STORED;
    if ((exact && n != f->list_max) || (!exact && (n < 1 || n > f->list_max))) {
        char expected[64];
        if (exact) snprintf(expected, sizeof expected, "expected a list of %d integers", f->list_max);
        else snprintf(expected, sizeof expected, "expected a list of 1 to %d integers", f->list_max);
        return fail_value(err, what, f->key, v, expected);
    }
    int i = 0;
    for (const cJSON *it = v->child; it; it = it->next, i++) {
        if (!is_integral(it)) return fail_value(err, what, f->key, v, "expected a list of integers");
        if (it->valuedouble < f->lo || it->valuedouble > f->hi) return fail_range(err, what, f->key, v, f);
        if (out) out[i] = (int64_t)it->valuedouble;
    }
    if (!exact && out) *(int64_t *)slot(base, f->count_offset) = n;
    return 0;
}

static void set_default(const cfg_field *f, void *base) {
    void *p = slot(base, f->offset);
    if (!p) return;
    switch (f->kind) {
    case CFG_INT: *(int64_t *)p = f->need == CFG_DERIVED ? -1 : (int64_t)f->def; break;
    case CFG_NUM: *(double *)p = f->need == CFG_DERIVED ? -1 : f->def; break;
    case CFG_INT_LIST:
        for (int i = 0; i < f->def_count; i++) ((int64_t *)p)[i] = f->def_list[i];
        if (f->count_offset != CFG_NOT_STORED) *(int64_t *)slot(base, f->count_offset) = f->def_count;
        break;
    case CFG_BOOL: *(int *)p = f->def != 0; break;
    case CFG_STR: break;
    }
}

static int read_one(const cJSON *v, const cfg_field *f, void *base, const char *what, qtts_err *err) {
    void *p = slot(base, f->offset);
    switch (f->kind) {
    case CFG_INT:
        if (!is_integral(v)) return fail_value(err, what, f->key, v, "expected an integer");
        if (v->valuedouble < f->lo || v->valuedouble > f->hi) return fail_range(err, what, f->key, v, f);
        if (p) *(int64_t *)p = (int64_t)v->valuedouble;
        return 0;
    case CFG_NUM:
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return fail_value(err, what, f->key, v, "expected a number");
        if (v->valuedouble < f->lo || v->valuedouble > f->hi) return fail_range(err, what, f->key, v, f);
        if (p) *(double *)p = v->valuedouble;
        return 0;
    case CFG_INT_LIST: return read_list(v, f, base, what, err);
    case CFG_BOOL:
        if (!cJSON_IsBool(v)) return fail_value(err, what, f->key, v, "expected true or false");
        if (f->only && (cJSON_IsTrue(v) != !strcmp(f->only, "true"))) {
            char expected[64];
            snprintf(expected, sizeof expected, "only %s is supported", f->only);
            return fail_value(err, what, f->key, v, expected);
        }
        if (p) *(int *)p = cJSON_IsTrue(v);
        return 0;
    case CFG_STR:
        if (!cJSON_IsString(v)) return fail_value(err, what, f->key, v, "expected a string");
        if (f->only && !one_of(f->only, v->valuestring)) {
            char expected[128];
            snprintf(expected, sizeof expected, "supported: %s", f->only);
            return fail_value(err, what, f->key, v, expected);
        }
        return 0;
    }
    return 0;
}

int cfg_read_fields(const cJSON *obj, const cfg_field *fields, size_t n, void *base, const char *what,
                    qtts_err *err) {
    for (size_t i = 0; i < n; i++) {
        const cfg_field *f = &fields[i];
        const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, f->key) : NULL;
        /* HF writes None as null for unset optional values: null means absent. */
        if (!v || cJSON_IsNull(v)) {
            if (f->need == CFG_REQUIRED) return qtts_fail(err, "%s.%s: missing (required: %s)", what, f->key, f->why);
            set_default(f, base);
            continue;
        }
        if (read_one(v, f, base, what, err)) return -1;
    }
    return 0;
}

int cfg_object(const cJSON *parent, const char *key, int required, const cJSON **out, const char *what,
               qtts_err *err) {
    const char *sep = strchr(what, ':') ? "." : ": "; /* "file: object.key" as in the field messages */
    const cJSON *o = cJSON_IsObject(parent) ? cJSON_GetObjectItemCaseSensitive(parent, key) : NULL;
    *out = NULL;
    if (!o || cJSON_IsNull(o)) return required ? qtts_fail(err, "%s%s%s: missing", what, sep, key) : 0;
    if (!cJSON_IsObject(o)) {
        char text[64];
        cfg_value_text(o, text, sizeof text);
        return qtts_fail(err, "%s%s%s: expected an object, got %s", what, sep, key, text);
    }
    *out = o;
    return 0;
}

static const char *kind_name(cfg_kind k) {
    switch (k) {
    case CFG_INT: return "integer";
    case CFG_NUM: return "number";
    case CFG_INT_LIST: return "integer list";
    case CFG_BOOL: return "bool";
    case CFG_STR: return "string";
    }
    return "?";
}

void cfg_describe_fields(FILE *out, const char *object, const cfg_field *fields, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const cfg_field *f = &fields[i];
        char need[128] = "-", accepted[128] = "";
        if (f->need == CFG_REQUIRED) snprintf(need, sizeof need, "required");
        else if (f->need == CFG_DERIVED) snprintf(need, sizeof need, "derived");
        else if (f->kind == CFG_INT_LIST) {
            size_t len = (size_t)snprintf(need, sizeof need, "default [");
            for (int j = 0; j < f->def_count && len < sizeof need; j++)
                len += (size_t)snprintf(need + len, sizeof need - len, "%s%lld", j ? ", " : "",
                                        (long long)f->def_list[j]);
            if (len < sizeof need) snprintf(need + len, sizeof need - len, "]");
        } else if (f->kind == CFG_BOOL && f->offset != CFG_NOT_STORED)
            snprintf(need, sizeof need, "default %s", f->def != 0 ? "true" : "false");
        else if (f->kind == CFG_INT || f->kind == CFG_NUM) snprintf(need, sizeof need, "default %.10g", f->def);
        if (f->kind == CFG_BOOL || f->kind == CFG_STR) snprintf(accepted, sizeof accepted, "%s", f->only ? f->only : "any");
        else snprintf(accepted, sizeof accepted, "%.10g .. %.10g", f->lo, f->hi);
        fprintf(out, "| %s%s%s | %s | %s | %s | %s |\n", object, *object ? "." : "", f->key, kind_name(f->kind), need,
                accepted, f->why ? f->why : "");
    }
}

int cfg_write_fields(cJSON *obj, const cfg_field *fields, size_t n, const void *base) {
    for (size_t i = 0; i < n; i++) {
        const cfg_field *f = &fields[i];
        const void *p = f->offset == CFG_NOT_STORED ? NULL : (const char *)base + f->offset;
        cJSON *v = NULL;
        switch (f->kind) {
        case CFG_INT:
            if (p) v = cJSON_CreateNumber((double)*(const int64_t *)p);
            break;
        case CFG_NUM:
            if (p) v = cJSON_CreateNumber(*(const double *)p);
            break;
        case CFG_INT_LIST: {
            if (!p) break;
            int64_t count = f->count_offset == CFG_NOT_STORED ? f->list_max
                                                              : *(const int64_t *)((const char *)base + f->count_offset);
            if (!(v = cJSON_CreateArray())) return -1;
            for (int64_t k = 0; k < count; k++)
                if (!cJSON_AddItemToArray(v, cJSON_CreateNumber((double)((const int64_t *)p)[k]))) {
                    cJSON_Delete(v);
                    return -1;
                }
            break;
        }
        case CFG_BOOL:
            if (p) v = cJSON_CreateBool(*(const int *)p);
            else if (f->only) v = cJSON_CreateBool(!strcmp(f->only, "true"));
            break;
        case CFG_STR: /* the first accepted value */
            if (f->only) {
                const char *bar = strchr(f->only, '|');
                char s[128];
                snprintf(s, sizeof s, "%.*s", bar ? (int)(bar - f->only) : (int)strlen(f->only), f->only);
                v = cJSON_CreateString(s);
            }
            break;
        }
        int wanted = f->kind == CFG_STR ? f->only != NULL : f->kind == CFG_BOOL ? p || f->only : p != NULL;
        if (!v) {
            if (wanted) return -1; /* out of memory */
            continue;
        }
        if (!cJSON_AddItemToObject(obj, f->key, v)) {
            cJSON_Delete(v);
            return -1;
        }
    }
    return 0;
}
