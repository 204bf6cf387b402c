/* A .gguf in the kernels' layout (io/kernel_layout.h):
 * - the interleaved form puts back the exact GGML bytes it read (q8_0, q4_k);
 * - `qtts quantize` stores the LM's layer matrices interleaved on a CPU with
 *   those kernels, and a reader asked to keep them gets views into the file,
 *   one not asked (or on another CPU, or for another layout version: a
 *   crafted header) the same bytes as a plain file's;
 * - the engine loads it to audio bit-identical to the folder with the same
 *   --quant, whether the weight layout interleaves (the views run as they lie)
 *   or not (put back into rows), through the QTTS_KERNEL_LAYOUT=rows
 *   fallback, and from a plain (older) .gguf. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "io/gguf.h"
#include "io/kernel_layout.h"
#include "io/model_pack.h"
#include "io/store.h"
#include "qtts.h"
#include "support/test_util.h"
#include "tensor/interleave.h"

static uint32_t rng = 12345;
static float frand(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

/* interleaving then putting back gives the quantized bytes exactly */
static void check_roundtrip(qtts_dtype type, int64_t rows, int64_t cols) {
    qtts_err err = {0};
    float *w = malloc(sizeof(float) * (size_t)(rows * cols));
    if (!w) return;
    for (int64_t i = 0; i < rows * cols; i++) w[i] = frand() * (1 + (float)(i % 7));
    qtts_tensor t = {.name = "w", .type = QTTS_F32, .ndim = 2, .shape = {rows, cols}, .data = w,
                     .nbytes = sizeof(float) * (size_t)(rows * cols)};
    qtts_mat q, x;
    TEST_CHECK(qtts_mat_from_tensor(&q, &t, type, &err) == 0 && qtts_mat_from_tensor(&x, &t, type, &err) == 0,
               "quantize: %s", err.msg);
    const size_t bytes = q.row_bytes * (size_t)rows;
    TEST_CHECK(qtts_mat_interleave_force(&x, &err) == 0 && x.interleave == QTTS_INTERLEAVE, "interleave: %s",
               err.msg);
    TEST_CHECK(qtts_x16_bytes(type, rows, cols) == x.row_bytes * (size_t)rows, "%s: interleaved size",
               qtts_dtype_name(type));
    char *back = malloc(bytes);
    if (back) {
        qtts_x16_to_rows(type, x.data, rows, cols, back, NULL);
        TEST_CHECK(!memcmp(back, q.data, bytes), "%s %lldx%lld: rows put back differ from the quantized bytes",
                   qtts_dtype_name(type), (long long)rows, (long long)cols);
    }
    TEST_CHECK(qtts_mat_deinterleave_pool(&x, NULL, &err) == 0 && !x.interleave && x.row_bytes == q.row_bytes &&
                   !memcmp(x.data, q.data, bytes),
               "%s: de-interleaved matrix differs", qtts_dtype_name(type));
    free(back);
    free(w);
    qtts_mat_free(&q);
    qtts_mat_free(&x);
}

static int synth(const char *model, const char *quant, pcm_buf *out) {
    qtts_engine_params p;
    qtts_engine_params_default(&p);
    p.model_path = model;
    p.n_threads = 2;
    p.weight_type = quant;
    /* the decoder in a form whose bits do not depend on how frames are grouped into decoder steps (a timing
       choice: see engine/decode_policy.h); "auto" may pick a Winograd one, which tiles time per step */
    p.decoder_precision = "f32";
    qtts_error err = {0};
    memset(out, 0, sizeof *out);
    qtts_engine *e = qtts_engine_create(&p, &err);
    TEST_CHECK(e != NULL, "load %s: %s", model, err.message);
    if (!e) return -1;
    qtts_request r;
    qtts_request_default(&r);
    r.text = "Hello world, this is a test.";
    r.speaker = "ryan";
    r.max_frames = 8;
    r.greedy = 1;
    r.has_seed = 1;
    r.seed = 7;
    int rc = qtts_synthesize(e, &r, pcm_collect, out, NULL, &err);
    TEST_CHECK(rc == 0, "synthesize from %s: %s", model, err.message);
    qtts_engine_free(e);
    return rc;
}

static int same_pcm(const pcm_buf *a, const pcm_buf *b) {
    return a->n == b->n && a->n > 0 && !memcmp(a->d, b->d, a->n * sizeof(float));
}

/* The tensors of the kernel-layout file read with keep, against the plain file's: every x16 one a view
 * (keep and a matching layout) or the plain bytes. Returns how many were interleaved views. */
static int compare_stores(const char *kernel_gguf, const char *plain_gguf, int keep, const char *what) {
    qtts_err err = {0};
    qtts_store *k = qtts_gguf_open_kernel(kernel_gguf, keep, &err), *p = qtts_gguf_open(plain_gguf, &err);
    TEST_CHECK(k && p, "%s: open: %s", what, err.msg);
    int views = 0, bad = 0;
    for (int i = 0; k && p && i < qtts_store_count(p); i++) {
        const qtts_tensor *b = qtts_store_at(p, i), *a = qtts_store_find(k, b->name);
        if (!a || a->type != b->type || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof a->shape)) {
            bad++;
            fprintf(stderr, "%s: %s missing or of another type or shape\n", what, b->name);
            continue;
        }
        if (a->interleave) {
            views++;
            if (!a->mapped || qtts_x16_bytes(a->type, a->shape[0], a->shape[1]) != a->nbytes) bad++;
        } else if (a->nbytes != b->nbytes || memcmp(a->data, b->data, a->nbytes)) {
            bad++;
            fprintf(stderr, "%s: %s differs from the plain file's bytes\n", what, b->name);
        }
    }
    TEST_CHECK(bad == 0, "%s: %d tensors wrong", what, bad);
    qtts_store_free(k);
    qtts_store_free(p);
    return views;
}

/* A copy of the kernel-layout file with its layout version changed (another qtts's). */
static int write_other_version(const char *from, const char *to) {
    qtts_err err = {0};
    qtts_gguf *g = qtts_gguf_load(from, &err);
    qtts_store *st = qtts_gguf_open(from, &err); /* rows: what the file holds is rewritten below */
    int rc = -1;
    if (g && st) {
        /* the raw x16 tensors, as the file holds them */
        qtts_store *raw = qtts_store_new(&err);
        for (int i = 0; raw && i < qtts_gguf_n_tensors(g); i++) {
            const qtts_tensor *t = qtts_gguf_tensor(g, i);
            if (qtts_store_add(raw, t->name, t->type, t->ndim, t->shape, t->data, 0, &err)) goto out;
        }
        qtts_gguf_kv kv[64];
        int n = 0;
        for (int i = 0; i < qtts_gguf_n_kv(g) && n < 62; i++) {
            const char *key = qtts_gguf_kv_key(g, i);
            size_t len = 0;
            const char *s = qtts_gguf_get_str(g, key, &len);
            if (s) kv[n++] = qtts_gguf_kv_str(key, s, len);
        }
        kv[n++] = qtts_gguf_kv_u32(QTTS_GGUF_KEY_KERNEL_LAYOUT_VERSION, QTTS_KERNEL_LAYOUT_VERSION + 1);
        rc = qtts_gguf_write(to, raw, kv, n, &err);
    out:
        qtts_store_free(raw);
    }
    TEST_CHECK(rc == 0, "write a file of another layout version: %s", err.msg);
    qtts_store_free(st);
    qtts_gguf_free(g);
    return rc;
}

int main(void) {
    check_roundtrip(QTTS_Q8_0, 32, 96);
    check_roundtrip(QTTS_Q8_0, 48, 1024);
    check_roundtrip(QTTS_Q4_K, 32, 512);
    check_roundtrip(QTTS_Q4_K, 16, 1024);

    char home[] = "/tmp/qtts-test-klayout-XXXXXX", model[1024], kfile[1200], pfile[1200], vfile[1200];
    if (!mkdtemp(home)) return 1;
    setenv("QTTS_HOME", home, 1); /* a private calibration cache */
    unsetenv("QTTS_KERNEL_LAYOUT");
    golden_path(model, sizeof model, "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny");
    const int here = qtts_kernel_layout_here() != NULL;
    printf("  kernel layout on this CPU: %s\n", here ? qtts_kernel_layout_here() : "(none: files are plain)");

    const char *quants[] = {"q8_0", "q4_k"};
    for (int qi = 0; qi < 2; qi++) {
        const qtts_dtype type = qtts_dtype_from_name(quants[qi]);
        qtts_err err = {0};
        snprintf(kfile, sizeof kfile, "%s/%s-kernel.gguf", home, quants[qi]);
        snprintf(pfile, sizeof pfile, "%s/%s-rows.gguf", home, quants[qi]);
        snprintf(vfile, sizeof vfile, "%s/%s-other-version.gguf", home, quants[qi]);
        setenv("QTTS_INTERLEAVE", "1", 1); /* stored interleaved whatever this CPU measures (as forced) */
        TEST_CHECK(qtts_model_pack(model, kfile, type, 1, NULL, NULL, NULL, &err) == 0 &&
                       qtts_model_pack(model, pfile, type, 0, NULL, NULL, NULL, &err) == 0,
                   "pack %s: %s", quants[qi], err.msg);
        unsetenv("QTTS_INTERLEAVE");
        qtts_gguf *g = qtts_gguf_load(kfile, &err);
        TEST_CHECK(g && (qtts_gguf_find_key(g, QTTS_GGUF_KEY_KERNEL_LAYOUT) >= 0) == here,
                   "%s: the layout section is written where the CPU has one", quants[qi]);
        TEST_CHECK(g && qtts_gguf_kernel_layout_matches(g) == here, "%s: the layout matches this CPU", quants[qi]);
        qtts_gguf_free(g);

        /* the file's tensors: views where kept, else the plain file's exact bytes */
        const int views = compare_stores(kfile, pfile, 1, "kept");
        TEST_CHECK(here ? views > 0 : views == 0, "%s: %d interleaved views", quants[qi], views);
        TEST_CHECK(compare_stores(kfile, pfile, 0, "not kept") == 0, "not kept: no views");
        if (here && write_other_version(kfile, vfile) == 0)
            TEST_CHECK(compare_stores(vfile, pfile, 1, "another layout version") == 0,
                       "a file of another layout version is read through its rows");
        printf("  %s: %d matrices stored interleaved\n", quants[qi], views);

        /* the engine: folder + --quant, the kernel file, its rows fallback and the plain file give the same
         * audio, with the weight layout interleaving (views run as they lie) and not (rows put back) */
        for (int il = 0; il < 2; il++) {
            setenv("QTTS_INTERLEAVE", il ? "1" : "0", 1);
            pcm_buf folder, kern, fallback, plain;
            synth(model, quants[qi], &folder);
            synth(kfile, NULL, &kern);
            setenv("QTTS_KERNEL_LAYOUT", "rows", 1);
            synth(kfile, NULL, &fallback);
            unsetenv("QTTS_KERNEL_LAYOUT");
            synth(pfile, NULL, &plain);
            TEST_CHECK(same_pcm(&folder, &kern), "%s interleave=%d: kernel-layout .gguf audio differs from the "
                       "folder's (%zu vs %zu samples)", quants[qi], il, kern.n, folder.n);
            TEST_CHECK(same_pcm(&folder, &fallback), "%s interleave=%d: the rows fallback differs", quants[qi], il);
            TEST_CHECK(same_pcm(&folder, &plain), "%s interleave=%d: the plain .gguf differs", quants[qi], il);
            free(folder.d);
            free(kern.d);
            free(fallback.d);
            free(plain.d);
        }
        unsetenv("QTTS_INTERLEAVE");
    }
    rm_rf(home);
    return test_finish("test_kernel_layout");
}
