/* Table-driven reading of one JSON config object (one HuggingFace config
 * class). Each field names its key, its type, what happens when it is absent
 * (the official class default, an error, or a value the caller derives) and
 * the range the engine accepts. A key that is present with the wrong type or
 * an out-of-range value is an error naming the file, the key and the value;
 * keys no table names are ignored (save_pretrained writes many we never use). */
#ifndef QTTS_IO_CONFIG_FIELDS_H
#define QTTS_IO_CONFIG_FIELDS_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"

typedef enum {
    CFG_INT,      /* stored as int64_t */
    CFG_NUM,      /* stored as double */
    CFG_INT_LIST, /* stored as int64_t[]; see list_max / count_offset */
    CFG_BOOL,     /* stored as int (0/1) when offset is set; must equal `only` when that is set */
    CFG_STR,      /* checked only: must be one of `only` ("a|b") when present */
} cfg_kind;

typedef enum {
    CFG_DEFAULT,  /* absent or null: the official class default (def / def_list) */
    CFG_REQUIRED, /* absent or null: an error (why says why there is no usable default) */
    CFG_DERIVED,  /* absent or null: left as -1 for the caller to compute (why says how) */
} cfg_need;

enum { CFG_NOT_STORED = (size_t)-1 };

typedef struct {
    const char *key;
    cfg_kind kind;
    cfg_need need;
    size_t offset;             /* into the caller's struct, or CFG_NOT_STORED */
    double def;                /* CFG_INT / CFG_NUM / CFG_BOOL default */
    const int64_t *def_list;   /* CFG_INT_LIST default (def_count entries) */
    int def_count;
    int list_max;              /* CFG_INT_LIST: capacity of the array */
    size_t count_offset;       /* CFG_INT_LIST: int64_t entry count, or CFG_NOT_STORED = exactly list_max */
    double lo, hi;             /* accepted range (each entry of a list) */
    const char *only;          /* CFG_BOOL: "true"/"false"; CFG_STR: accepted values, '|'-separated */
    const char *why;           /* one line for docs and `qtts info --config-keys` */
} cfg_field;

/* Reads every field of the table from obj into base. what = "<file>: <object path>"
 * (e.g. "config.json: talker_config"); messages read "<what>.<key>: ...". */
int cfg_read_fields(const cJSON *obj, const cfg_field *fields, size_t n, void *base, const char *what,
                    qtts_err *err);

/* The inverse: adds every field of the table that base stores (and the
 * fixed value of those that must equal one) to obj, so that reading obj back
 * gives base. -1 when out of memory. */
int cfg_write_fields(cJSON *obj, const cfg_field *fields, size_t n, const void *base);

/* The sub-object parent[key] (a nested config class) into *out: NULL when
 * absent or null (an error only if required), an error naming what.key when
 * it is not an object. what: a file name or "<file>: <object path>". */
int cfg_object(const cJSON *parent, const char *key, int required, const cJSON **out, const char *what,
               qtts_err *err);

/* One markdown row per field: | key | type | required / default (value) / derived | range | why | */
void cfg_describe_fields(FILE *out, const char *object, const cfg_field *fields, size_t n);

/* The value as short JSON text for messages ("\"28\"", "[1,2]", "null"). */
void cfg_value_text(const cJSON *v, char *buf, size_t cap);

#endif
