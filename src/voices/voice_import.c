/* Other programs' voice files into registered voices' parts (voice_import.h). */
#include "voices/voice_import.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/gguf.h"
#include "io/rvq.h"
#include "io/spk.h"
#include "voices/voice_files.h"

static const char pack_arch[] = "qwen3tts.voicepack";
static const char spk_prefix[] = "voicepack.spk.", spk_suffix[] = ".embd";
static const char code_prefix[] = "voicepack.code.", code_suffix[] = ".codes";

void voice_import_free(voice_import_set *s) {
    for (int i = 0; s->items && i < s->n; i++) {
        free(s->items[i].xvec);
        free(s->items[i].codes);
        free(s->items[i].ref_text);
    }
    free(s->items);
    memset(s, 0, sizeof *s);
}

static voice_import_item *add_item(voice_import_set *s, qtts_err *err) {
    voice_import_item *n = realloc(s->items, (size_t)(s->n + 1) * sizeof *n);
    if (!n) {
        qtts_fail(err, "out of memory");
        return NULL;
    }
    s->items = n;
    memset(&n[s->n], 0, sizeof *n);
    return &n[s->n++];
}

/* The tensor named prefix NAME suffix, for the NAME between them. */
static const qtts_tensor *pack_tensor(const qtts_gguf *g, const char *prefix, const char *name, const char *suffix) {
    char want[256];
    snprintf(want, sizeof want, "%s%s%s", prefix, name, suffix);
    for (int i = 0; i < qtts_gguf_n_tensors(g); i++)
        if (!strcmp(qtts_gguf_tensor(g, i)->name, want)) return qtts_gguf_tensor(g, i);
    return NULL;
}

/* One voice of a pack: its x-vector, codes and transcript. */
static int pack_voice(const qtts_gguf *g, const char *label, const char *name, uint64_t index, voice_import_item *it,
                      qtts_err *err) {
    snprintf(it->name, sizeof it->name, "%s", name);
    const qtts_tensor *x = pack_tensor(g, spk_prefix, name, spk_suffix);
    const qtts_tensor *c = pack_tensor(g, code_prefix, name, code_suffix);
    if (!x || x->type != QTTS_F32 || x->ndim != 1 || x->shape[0] < 1)
        return qtts_fail(err, "%s: voice '%s': expected an F32 vector %s%s%s", label, name, spk_prefix, name,
                         spk_suffix);
    it->xvec_len = (size_t)x->shape[0];
    if (!(it->xvec = qtts_malloc(it->xvec_len * sizeof(float), err))) return -1;
    memcpy(it->xvec, x->data, it->xvec_len * sizeof(float));
    for (size_t i = 0; i < it->xvec_len; i++)
        if (!isfinite(it->xvec[i]))
            return qtts_fail(err, "%s: voice '%s': x-vector value %zu is not finite", label, name, i);
    if (c) {
        if (c->type != QTTS_I32 || c->ndim != 2 || c->shape[1] != SRV_VOICE_FILE_CODEBOOKS || c->shape[0] < 1)
            return qtts_fail(err, "%s: voice '%s': expected codes %s%s%s as I32 [frames x %d]", label, name,
                             code_prefix, name, code_suffix, SRV_VOICE_FILE_CODEBOOKS);
        it->n_frames = (size_t)c->shape[0];
        size_t n = it->n_frames * SRV_VOICE_FILE_CODEBOOKS;
        if (!(it->codes = qtts_malloc(n * sizeof(int32_t), err))) return -1;
        memcpy(it->codes, c->data, n * sizeof(int32_t));
        for (size_t i = 0; i < n; i++)
            if (it->codes[i] < 0 || it->codes[i] >= SRV_VOICE_FILE_CODE_VALUES)
                return qtts_fail(err, "%s: voice '%s': code %d at frame %zu is outside [0, %d)", label, name,
                                 (int)it->codes[i], i / SRV_VOICE_FILE_CODEBOOKS, SRV_VOICE_FILE_CODE_VALUES);
    }
    size_t len = 0;
    const char *t = qtts_gguf_get_arr_str(g, "voicepack.ref_texts", index, &len);
    if (t && len) {
        if (memchr(t, 0, len)) return qtts_fail(err, "%s: voice '%s': its transcript holds a NUL byte", label, name);
        if (!(it->ref_text = qtts_malloc(len + 1, err))) return -1;
        memcpy(it->ref_text, t, len);
        it->ref_text[len] = 0;
    }
    return 0;
}

static int parse_pack(const unsigned char *buf, size_t size, const char *label, voice_import_set *out, qtts_err *err) {
    qtts_gguf *g = qtts_gguf_parse(buf, size, label, err);
    if (!g) return -1;
    size_t alen = 0;
    const char *arch = qtts_gguf_get_str(g, "general.architecture", &alen);
    int rc = 0;
    qtts_gguf_type elem;
    uint64_t count = 0;
    const void *data;
    if (!arch || alen != strlen(pack_arch) || memcmp(arch, pack_arch, alen)) {
        rc = qtts_fail(err,
                       "%s: a GGUF file but not a voice pack: general.architecture is '%.*s', expected '%s' "
                       "(models go to -m, not to voices import)",
                       label, arch ? (int)(alen < 48 ? alen : 48) : 4, arch ? arch : "none", pack_arch);
    } else if (qtts_gguf_get_arr(g, "voicepack.names", &elem, &count, &data, err) || elem != QTTS_GGUF_STRING ||
               count < 1) {
        rc = qtts_fail(err, "%s: voice pack without a string array voicepack.names of at least one name", label);
    }
    out->format = "CrispASR voice pack";
    for (uint64_t i = 0; !rc && i < count; i++) {
        size_t len = 0;
        const char *nm = qtts_gguf_get_arr_str(g, "voicepack.names", i, &len);
        char name[72];
        if (!nm || len == 0 || len >= sizeof name || memchr(nm, 0, len)) {
            rc = qtts_fail(err, "%s: voicepack.names[%llu] is empty or longer than 64 bytes", label,
                           (unsigned long long)i);
            break;
        }
        memcpy(name, nm, len);
        name[len] = 0;
        voice_import_item *it = add_item(out, err);
        rc = it ? pack_voice(g, label, name, i, it, err) : -1;
    }
    qtts_gguf_free(g);
    return rc;
}

/* A little-endian u32 at *pos, advancing it; -1 when the file ends first. */
static int take_u32(const unsigned char *buf, size_t size, size_t *pos, uint32_t *v) {
    if (size - *pos < 4) return -1;
    memcpy(v, buf + *pos, 4); /* little-endian hosts only, as the rest of qtts */
    *pos += 4;
    return 0;
}

/* gm-C's .qvoice as its main.c writes and reads it (v2, v3): "QVCE", u32
 * version, u32 dim, dim f32 x-vector, u32 transcript length + its bytes, u32
 * frames + frames x 16 i32 codes (frame-major); v3 then adds sections (META:
 * language and name; TPAD/WOVR/WDLT: the source model's embeddings and
 * weights, for loading a voice into another model) that a registered voice
 * has no place for: they are not read. */
static int parse_qvoice(const unsigned char *buf, size_t size, const char *label, voice_import_set *out,
                        qtts_err *err) {
    out->format = "qvoice";
    uint32_t version, dim, text_len, frames;
    size_t pos = 4;
    if (take_u32(buf, size, &pos, &version) || take_u32(buf, size, &pos, &dim))
        return qtts_fail(err, "%s: .qvoice header truncated (%zu bytes)", label, size);
    if (version < 2 || version > 3)
        return qtts_fail(err, "%s: .qvoice version %u; versions 2 and 3 are read (version 1 has no x-vector size)",
                         label, version);
    if (dim < 1 || dim > 65536 || (size_t)dim * 4 > size - pos)
        return qtts_fail(err, "%s: .qvoice x-vector of %u values does not fit its %zu bytes", label, dim, size);
    voice_import_item *it = add_item(out, err);
    if (!it) return -1;
    int64_t got = 0;
    it->xvec = qtts_spk_from_bytes(buf + pos, (size_t)dim * 4, dim, label, &got, err);
    if (!it->xvec) return -1;
    it->xvec_len = (size_t)got;
    pos += (size_t)dim * 4;
    size_t rest = size - pos;
    if (take_u32(buf, size, &pos, &text_len) || text_len > size - pos)
        return qtts_fail(err, "%s: .qvoice transcript does not fit the file (%zu bytes after the x-vector)", label,
                         rest);
    const unsigned char *text = buf + pos;
    pos += text_len;
    if (memchr(text, 0, text_len)) return qtts_fail(err, "%s: .qvoice transcript holds a NUL byte", label);
    rest = size - pos;
    if (take_u32(buf, size, &pos, &frames) || (size_t)frames > (size - pos) / (4 * SRV_VOICE_FILE_CODEBOOKS))
        return qtts_fail(err, "%s: .qvoice reference codes do not fit the file (%zu bytes after the transcript)", label,
                         rest);
    if (!frames) return 0; /* a voice saved without reference audio: the x-vector alone */
    size_t n = (size_t)frames * SRV_VOICE_FILE_CODEBOOKS;
    if (!(it->codes = qtts_malloc(n * sizeof(int32_t), err))) return -1;
    memcpy(it->codes, buf + pos, n * sizeof(int32_t));
    it->n_frames = frames;
    for (size_t i = 0; i < n; i++)
        if (it->codes[i] < 0 || it->codes[i] >= SRV_VOICE_FILE_CODE_VALUES)
            return qtts_fail(err, "%s: .qvoice code %d at frame %zu is outside [0, %d)", label, (int)it->codes[i],
                             i / SRV_VOICE_FILE_CODEBOOKS, SRV_VOICE_FILE_CODE_VALUES);
    if (text_len) {
        if (!(it->ref_text = qtts_malloc((size_t)text_len + 1, err))) return -1;
        memcpy(it->ref_text, text, text_len);
        it->ref_text[text_len] = 0;
    }
    return 0;
}

static int parse_raw(const unsigned char *buf, size_t size, const unsigned char *rvq, size_t rvq_size,
                     const char *label, voice_import_set *out, qtts_err *err) {
    out->format = "raw f32 x-vector";
    voice_import_item *it = add_item(out, err);
    if (!it) return -1;
    int64_t got = 0;
    if (!(it->xvec = qtts_spk_from_bytes(buf, size, 0, label, &got, err))) return -1;
    it->xvec_len = (size_t)got;
    if (!rvq) return 0;
    int64_t T = 0;
    if (qtts_rvq_unpack(rvq, rvq_size, SRV_VOICE_FILE_CODEBOOKS, SRV_VOICE_FILE_CODE_VALUES, "the .rvq codes",
                        &it->codes, &T, err))
        return -1;
    it->n_frames = (size_t)T;
    return 0;
}

int voice_import_parse(const unsigned char *buf, size_t size, const unsigned char *rvq, size_t rvq_size,
                       const char *label, voice_import_set *out, qtts_err *err) {
    memset(out, 0, sizeof *out);
    int rc;
    int is_pack = size >= 4 && !memcmp(buf, "GGUF", 4), is_qvoice = size >= 4 && !memcmp(buf, "QVCE", 4);
    if ((is_pack || is_qvoice) && rvq)
        rc = qtts_fail(err, "%s: --rvq goes with a raw x-vector file; this is a %s", label,
                       is_pack ? "voice pack (its codes are inside)" : ".qvoice");
    else if (is_pack) rc = parse_pack(buf, size, label, out, err);
    else if (is_qvoice) rc = parse_qvoice(buf, size, label, out, err);
    else rc = parse_raw(buf, size, rvq, rvq_size, label, out, err);
    if (rc) {
        const char *f = out->format;
        voice_import_free(out);
        out->format = f;
    }
    return rc;
}
