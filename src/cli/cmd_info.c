/* qtts info PATH: what a checkpoint is, read from its files alone. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/model_files.h"
#include "io/gguf.h"
#include "io/lora.h"
#include "io/model_pack.h"
#include "io/store.h"
#include "model/codec_decoder.h"
#include "model/config.h"
#include "io/hub.h"
#include "gpu/gpu.h"
#include "tensor/conv.h"
#include "tensor/conv_calibrate.h"
#include "tensor/cpu.h"
#include "tensor/interleave.h"
#include "tensor/interleave_calibrate.h"

typedef struct {
    const char *prefix;
    const char *label;
    int64_t params;
    size_t bytes;
    int tensors;
    int dtype_count[64];
} group_stats;

static void add_tensor(group_stats *g, const qtts_tensor *t) {
    g->params += qtts_tensor_numel(t);
    g->bytes += t->nbytes;
    g->tensors++;
    if (t->type >= 0 && t->type < 64) g->dtype_count[t->type]++;
}

static void print_group(const group_stats *g) {
    if (!g->tensors) return;
    printf("  %-18s %4d tensors  %9.2f M params  %8.1f MB  dtypes:", g->label, g->tensors, g->params / 1e6,
           g->bytes / 1e6);
    for (int d = 0; d < 64; d++)
        if (g->dtype_count[d]) printf(" %s(%d)", qtts_dtype_name((qtts_dtype)d), g->dtype_count[d]);
    printf("\n");
}

static void summarize(const qtts_store *st, group_stats *groups, int n_groups) {
    for (int i = 0; i < qtts_store_count(st); i++) {
        const qtts_tensor *t = qtts_store_at(st, i);
        for (int g = 0; g < n_groups; g++)
            if (!strncmp(t->name, groups[g].prefix, strlen(groups[g].prefix))) {
                add_tensor(&groups[g], t);
                break;
            }
    }
}

static int summarize_store(const char *path, group_stats *groups, int n_groups) {
    qtts_err err = {0};
    qtts_store *st = qtts_store_open(path, &err);
    if (!st) {
        cli_error("%s", err.msg);
        return -1;
    }
    summarize(st, groups, n_groups);
    qtts_store_free(st);
    return 0;
}

/* store: the file holding the codec tensors, named prefix + "decoder." etc.
 * (or, when given, the opened codec store). */
static int print_codec(const char *dir, const char *shown, const char *store, const char *prefix,
                       const qtts_store *opened) {
    qtts_err err = {0};
    qtts_codec_config c;
    if (qtts_codec_config_load(&c, dir, &err)) {
        cli_error("%s", err.msg);
        return -1;
    }
    printf("speech tokenizer: %s\n", shown); /* a .gguf's is unpacked into a temporary folder: not shown */
    printf("  sample rate %lld Hz, %lld samples per frame, %lld codebooks x %lld\n", (long long)c.sample_rate,
           (long long)c.frame_samples, (long long)c.dec.num_quantizers, (long long)c.dec.codebook_size);
    printf("  decoder: latent %lld, transformer %lld layers x %lld (heads %lld x %lld, window %lld), decoder dim %lld, "
           "upsample",
           (long long)c.dec.latent_dim, (long long)c.dec.layers, (long long)c.dec.hidden, (long long)c.dec.heads,
           (long long)c.dec.head_dim, (long long)c.dec.sliding_window, (long long)c.dec.decoder_dim);
    for (int i = 0; i < c.dec.n_upsampling_ratios; i++) printf(" %lld", (long long)c.dec.upsampling_ratios[i]);
    printf(" +");
    for (int i = 0; i < c.dec.n_upsample_rates; i++) printf(" %lld", (long long)c.dec.upsample_rates[i]);
    printf("\n  encoder: %lld filters, transformer %lld layers x %lld, %lld quantizers (%lld used)\n",
           (long long)c.enc.num_filters, (long long)c.enc.layers, (long long)c.enc.hidden,
           (long long)c.enc.num_quantizers, (long long)c.valid_quantizers);
    char dec[64], enc[64];
    snprintf(dec, sizeof dec, "%sdecoder.", prefix);
    snprintf(enc, sizeof enc, "%sencoder.", prefix);
    group_stats groups[] = {{.prefix = dec, .label = "decoder"}, {.prefix = enc, .label = "encoder"}};
    if (opened) summarize(opened, groups, 2);
    else if (summarize_store(store, groups, 2)) return -1;
    for (int g = 0; g < 2; g++) print_group(&groups[g]);
    return 0;
}

static void print_lm(const char *label, const qtts_lm_config *lm) {
    printf("  %-15s hidden %lld, %lld layers, heads %lld (kv %lld) x %lld, mlp %lld, vocab %lld\n", label,
           (long long)lm->hidden, (long long)lm->layers, (long long)lm->heads, (long long)lm->kv_heads,
           (long long)lm->head_dim, (long long)lm->intermediate, (long long)lm->vocab);
}

/* A model folder's configuration: variant, LM sizes, voices, sampling defaults. */
static int print_model(const char *shown, const char *path) {
    qtts_err err = {0};
    qtts_model_config cfg;
    if (qtts_model_config_load(&cfg, path, &err)) {
        cli_error("%s", err.msg);
        return -1;
    }
    qtts_generation_config gen;
    if (qtts_generation_config_load(&gen, path, &err)) {
        cli_error("%s", err.msg);
        return -1;
    }
    printf("model: %s\n", shown);
    printf("  variant         %s (size tag %s)\n", qtts_variant_name(cfg.variant), cfg.size[0] ? cfg.size : "?");
    print_lm("talker", &cfg.talker);
    print_lm("code predictor", &cfg.cp);
    printf("  text            vocab %lld, embedding width %lld, %lld code groups\n", (long long)cfg.text_vocab,
           (long long)cfg.text_hidden, (long long)cfg.num_code_groups);
    if (cfg.has_speaker_encoder)
        printf("  speaker encoder mel %lld, channels %lld..%lld, x-vector %lld\n", (long long)cfg.spk_mel_dim,
               (long long)cfg.spk_channels[0], (long long)cfg.spk_channels[4], (long long)cfg.spk_enc_dim);
    printf("  languages       auto");
    for (int i = 0; i < cfg.n_languages; i++)
        if (!strstr(cfg.languages[i].name, "dialect")) printf(", %s", cfg.languages[i].name);
    printf("\n  speakers        ");
    if (!cfg.n_speakers) printf("(none: %s)", cfg.variant == QTTS_VARIANT_BASE ? "clones a reference voice"
                                                                                 : "voice from --instruct");
    for (int i = 0; i < cfg.n_speakers; i++)
        printf("%s%s%s%s%s", i ? ", " : "", cfg.speakers[i].name, cfg.speakers[i].dialect[0] ? " (" : "",
               cfg.speakers[i].dialect, cfg.speakers[i].dialect[0] ? ")" : "");
    printf("\n  sampling        %s, temperature %.2f, top-k %lld, top-p %.2f, repetition penalty %.2f\n",
           gen.do_sample ? "on" : "greedy", gen.temperature, (long long)gen.top_k, gen.top_p, gen.repetition_penalty);
    return 0;
}

/* A model folder or an unpacked .gguf (path: what the user gave). */
static int print_folder(const char *path, const cli_model_files *m) {
    qtts_err err = {0};
    qtts_codec_config probe;
    int gguf = m->model_store != NULL;
    if (!gguf && qtts_codec_config_load(&probe, path, &err) == 0) { /* a bare tokenizer folder */
        char store[PATH_MAX];
        snprintf(store, sizeof store, "%s/model.safetensors", path);
        return print_codec(path, path, store, "", NULL) ? CLI_FAIL : CLI_OK;
    }
    if (print_model(path, m->dir)) return CLI_FAIL;
    printf("  layout          %s%s (%s)\n", m->layout, !strcmp(m->layout, "qtts") ? " one-file model, qtts quantize" : "",
           m->files);
    if (m->note[0]) printf("  at load         %s\n", m->note);
    group_stats groups[] = {
        {.prefix = "talker.code_predictor.", .label = "code predictor"},
        {.prefix = "talker.model.text_embedding.", .label = "text embedding"},
        {.prefix = "talker.", .label = "talker"},
        {.prefix = "speaker_encoder.", .label = "speaker encoder"},
        {.prefix = QTTS_PACK_CODEC_PREFIX, .label = "(speech tokenizer)"}, /* .gguf only: listed below */
        {.prefix = "", .label = "other"},
    };
    if (gguf) summarize(m->model_store, groups, 6);
    else if (summarize_store(path, groups, 6)) return CLI_FAIL;
    int64_t total = 0;
    for (int g = 0; g < 6; g++) {
        if (g == 4) continue;
        print_group(&groups[g]);
        total += groups[g].params;
    }
    printf("  total           %.2f M parameters\n", total / 1e6);
    char tok_dir[PATH_MAX + 32], store[PATH_MAX + 64];
    snprintf(tok_dir, sizeof tok_dir, "%s/speech_tokenizer", m->dir);
    snprintf(store, sizeof store, "%s/model.safetensors", tok_dir);
    struct stat sb;
    if (stat(tok_dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        char inside[PATH_MAX + 16];
        snprintf(inside, sizeof inside, "(inside %s)", path);
        if (print_codec(tok_dir, gguf ? inside : tok_dir, store, "", gguf ? m->codec_store : NULL)) return CLI_FAIL;
    } else {
        printf("speech tokenizer: missing (%s)\n", tok_dir);
    }
    return CLI_OK;
}

/* qtts info --cpu: what was detected, what runs, and why. */
static void print_cpu(void) {
    char feat[256];
    qtts_cpu_features_describe(qtts_cpu_features_get(), feat, sizeof feat);
    const char *cap = getenv("QTTS_ISA");
    printf("cpu features: %s\n", feat);
    printf("kernels: %s%s%s%s (dense layers); convolutions: %s\n", qtts_isa_name(qtts_cpu_isa()),
           cap && *cap ? " (QTTS_ISA=" : "", cap && *cap ? cap : "", cap && *cap ? ")" : "",
           qtts_conv_isa_name(QTTS_CONV_ISA_AUTO));
    /* measured as an engine of every online CPU would (an engine measures on its own pool at load, or reads
     * its per-CPU cache) */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    qtts_err perr = {0};
    qtts_pool *pool = qtts_interleave_kernels() ? qtts_pool_create(ncpu < 1 ? 1 : (int)ncpu, &perr) : NULL;
    for (int i = 0; i < 2 && pool; i++) {
        const qtts_dtype t = i ? QTTS_Q4_K : QTTS_Q8_0;
        qtts_interleave_calibration cal;
        qtts_interleave_measure(pool, t, &cal);
        const qtts_interleave_calibration *ic = &cal;
        const char *env = getenv("QTTS_INTERLEAVE"), *penv = getenv("QTTS_PREFETCH"), *lenv = getenv("QTTS_LOCKSTEP");
        char pf_x16[96] = "", pf_row[48] = "";
        if (qtts_cpu_isa() == QTTS_ISA_AVX2) {
            snprintf(pf_x16, sizeof pf_x16, " (prefetching %.1f; its groups by super-block, not in lockstep, %.1f)",
                     ic->x16_pf_gbs, ic->x16_blocks_gbs);
            snprintf(pf_row, sizeof pf_row, " (prefetching %.1f)", ic->row_pf_gbs);
        }
        printf("%s weights: 16-row interleaved layout %.1f GB/s%s vs GGML rows %.1f GB/s%s (%d threads, %.0f MB from "
               "DRAM); 8 tokens %.0f vs %.0f GFLOP/s (%.0f ms) -> %s%s%s%s%s%s\n",
               qtts_dtype_name(t), ic->x16_gbs, pf_x16, ic->row_gbs, pf_row, ic->threads, ic->buffer_mb,
               ic->x16_batch_gflops, ic->row_batch_gflops, ic->ms,
               ic->faster ? "interleaved" : "GGML rows", ic->prefetch ? ", prefetching" : "",
               ic->lockstep ? ", groups in lockstep" : "",
               env && (!strcmp(env, "0") || !strcmp(env, "1")) ? " (overridden by QTTS_INTERLEAVE)" : "",
               penv && (!strcmp(penv, "0") || !strcmp(penv, "1")) ? " (prefetch overridden by QTTS_PREFETCH)" : "",
               lenv && (!strcmp(lenv, "0") || !strcmp(lenv, "1")) ? " (lockstep overridden by QTTS_LOCKSTEP)" : "");
    }
    qtts_pool_free(pool);
    qtts_conv_calibration conv;
    qtts_conv_measure(&conv);
    const qtts_conv_calibration *c = &conv;
    printf("decoder convolutions, measured on one thread (%.1f ms, direct-conv FLOPs): f32 %.1f GFLOP/s, "
           "f32 Winograd %.1f (x%.2f)",
           c->ms, c->f32_gflops, c->winograd_gflops, c->f32_gflops > 0 ? c->winograd_gflops / c->f32_gflops : 0);
    if (c->bf16_available)
        printf(", bf16 %.1f (x%.2f)", c->bf16_gflops, c->f32_gflops > 0 ? c->bf16_gflops / c->f32_gflops : 0);
    else
        printf("; no bf16 convolutions with these kernels");
    if (c->i16_available)
        printf(", Winograd with int16 products %.1f (x%.2f; %s tile)", c->i16_gflops,
               c->f32_gflops > 0 ? c->i16_gflops / c->f32_gflops : 0, qtts_conv_tile_i16_name(QTTS_CONV_ISA_AUTO));
    else
        printf("; no int16 convolutions with these kernels");
    qtts_decoder_precision chosen = QTTS_DECODER_F32; /* what the engine takes: its own chooser */
    qtts_decoder_precision_choose("auto", QTTS_Q8_0, c, &chosen, &perr); /* "auto" cannot fail */
    printf("\ndecoder precision auto: %s with q8_0/q4_k weights (a path that changes the arithmetic only when at "
           "least 1.1x faster than its f32 form), f32 otherwise\n",
           qtts_decoder_precision_name(chosen));
}

/* The adapters a model was made with (qtts quantize --lora), and those given
 * with --lora merged into its weights as stored: what each changes, or why
 * it does not fit. */
static int print_lora(const char *path, cli_model_files *m, const cli_lora_list *lora) {
    char *note = qtts_pack_lora_note(path);
    if (note) {
        printf("LoRA merged in the file:\n");
        for (const char *line = note; *line;) {
            size_t len = strcspn(line, "\n");
            printf("  %.*s\n", (int)len, line);
            line += len + (line[len] == '\n');
        }
        free(note);
    }
    if (!lora->n) return CLI_OK;
    qtts_err err = {0};
    qtts_store *st = m->model_store;
    if (!st && !(st = qtts_store_open(path, &err))) {
        cli_error("%s", err.msg);
        return CLI_FAIL;
    }
    int rc = CLI_OK;
    printf("LoRA adapters (--lora, merged as at load):\n");
    for (int i = 0; i < lora->n && rc == CLI_OK; i++) {
        char file[PATH_MAX];
        double scale;
        int n = 0;
        if (qtts_lora_spec(lora->spec[i], file, sizeof file, &scale, &err) ||
            qtts_lora_merge(&st, file, scale, 0, NULL, &n, &err)) {
            cli_error("LoRA adapter %s", err.msg);
            rc = CLI_FAIL;
        } else {
            printf("  %s scale %g, %d weights\n", file, scale, n);
        }
    }
    if (m->model_store) m->model_store = st; /* the merged store owns the one it was made from */
    else qtts_store_free(st);
    return rc;
}

int cmd_info(int argc, char **argv) {
    cli_lora_list lora = {{0}, 0};
    while (argc > 3 && !strcmp(argv[argc - 2], "--lora")) {
        if (cli_add_lora(&lora, argv[argc - 1])) return CLI_USAGE;
        argc -= 2;
    }
    for (int i = 0, j = lora.n - 1; i < j; i++, j--) { /* read from the end: back into the order given */
        const char *t = lora.spec[i];
        lora.spec[i] = lora.spec[j], lora.spec[j] = t;
    }
    if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        FILE *out = argc == 2 ? stdout : stderr;
        fprintf(out, "usage: qtts info PATH [--lora ADAPTER[:SCALE]]...\n"
                     "       qtts info --config-keys\n"
                     "       qtts info --cpu\n"
                     "       qtts info --devices\n"
                     "  PATH: a Qwen3-TTS model folder (official or Transformers-native), a bare speech-tokenizer folder,\n"
                     "        a qtts .gguf, or a qwentts.cpp or CrispASR .gguf (its companion file next to it)\n"
                     "  --lora: merge a PEFT LoRA adapter into PATH's weights as a load would and say what it changes\n"
                     "        (a .gguf made by qtts quantize --lora names the adapters merged in it)\n"
                     "  --config-keys: every config key qtts reads, with its default or why it is required\n"
                     "  --cpu: the CPU features found, the kernels in use and the measured decoder convolution choice (f32, Winograd, bf16)\n"
                     "  --devices: the Vulkan devices (name, driver, memory, subgroup size, the features qtts uses)\n");
        return argc == 2 ? CLI_OK : CLI_USAGE;
    }
    if (!strcmp(argv[1], "--config-keys")) {
        qtts_config_describe(stdout);
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--cpu")) {
        print_cpu();
        return CLI_OK;
    }
    if (!strcmp(argv[1], "--devices")) {
        qtts_err err = {0};
        if (qtts_gpu_list_devices(stdout, &err)) {
            cli_error("info --devices: %s", err.msg);
            return CLI_FAIL;
        }
        return CLI_OK;
    }
    if (argv[1][0] == '-') {
        cli_error("info: unknown option '%s' (see 'qtts info --help')", argv[1]);
        return CLI_USAGE;
    }
    const char *path = argv[1];
    char resolved[PATH_MAX];
    struct stat sb;
    if (stat(path, &sb) != 0) {
        /* not a path: maybe the name of a downloaded model */
        const char *r = qtts_resolve_model(path, resolved, sizeof resolved);
        if (!r || stat(r, &sb) != 0) {
            cli_error("%s: no such file or folder, nor a downloaded model", path);
            return CLI_FAIL;
        }
        path = r;
    }
    if (!S_ISDIR(sb.st_mode) && !qtts_gguf_is_path(path)) {
        size_t n = strlen(path);
        if (n < 12 || strcmp(path + n - 12, ".safetensors")) {
            cli_error("%s: not a model folder, a .gguf or a .safetensors file", path);
            return CLI_FAIL;
        }
        group_stats all = {.prefix = "", .label = "tensors"};
        if (summarize_store(path, &all, 1)) return CLI_FAIL;
        printf("file: %s\n", path);
        print_group(&all);
        return CLI_OK;
    }
    qtts_err err = {0};
    cli_model_files m;
    if (qtts_model_files_open(&m, path, 0, &err)) { /* as stored: info converts nothing */
        cli_error("%s", err.msg);
        return CLI_FAIL;
    }
    int rc = print_folder(path, &m);
    if (rc == CLI_OK) rc = print_lora(path, &m, &lora);
    cli_model_files_close(&m);
    return rc;
}
