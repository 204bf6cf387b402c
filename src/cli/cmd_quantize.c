/* qtts quantize PATH -o OUT.gguf --type TYPE: one self-contained model file
 * (tensors + config and tokenizer files), dense matrices converted. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "io/model_pack.h"

static void quant_usage(FILE *out) {
    fprintf(out, "usage: qtts quantize PATH -o OUT.gguf [--type q8_0|q4_k|bf16|f32] [--lora ADAPTER[:SCALE]]...\n"
                 "                     [--layout kernel|rows]\n"
                 "  PATH: a Qwen3-TTS model in any layout qtts reads: an official or Transformers-native folder\n"
                 "  (with speech_tokenizer/), a qtts .gguf, or a qwentts.cpp or CrispASR .gguf pair\n"
                 "  The talker and code-predictor matrices are converted (rows that do not hold whole\n"
                 "  Q4_K blocks fall back to Q8_0); norms, biases, the speech tokenizer and the speaker\n"
                 "  encoder stay as stored. The result loads with -m OUT.gguf. Default type q8_0.\n"
                 "  --lora: a PEFT LoRA adapter (its folder or .safetensors, as for say) merged into the weights\n"
                 "  before the conversion (repeatable, in order): OUT.gguf then gives what -m PATH --quant TYPE\n"
                 "  --lora ADAPTER gives, and qtts info OUT.gguf names the adapters.\n"
                 "  --layout kernel (default): on a CPU with the interleaved q8_0/q4_k kernels (x86 AVX2 or\n"
                 "  AVX-512), the LM's layer matrices are stored in their layout, so loading maps them and\n"
                 "  converts nothing; another CPU reads the same file through plain rows. rows: GGML rows only.\n");
}

static void show_progress(void *user, int done, int total) {
    int *last = user;
    int pct = total ? done * 100 / total : 100;
    if (pct != *last) {
        fprintf(stderr, "\rquantizing: %3d%%", pct);
        if (pct == 100) fputc('\n', stderr);
        *last = pct;
    }
}

int cmd_quantize(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *type_name = "q8_0", *layout = "kernel";
    cli_lora_list lora = {{0}, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            quant_usage(stdout);
            return CLI_OK;
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(a, "--type") && i + 1 < argc) {
            type_name = argv[++i];
        } else if (!strcmp(a, "--layout") && i + 1 < argc) {
            layout = argv[++i];
        } else if (!strcmp(a, "--lora") && i + 1 < argc) {
            if (cli_add_lora(&lora, argv[++i])) return CLI_USAGE;
        } else if (a[0] == '-') {
            cli_error("quantize: unknown option or missing value '%s' (see 'qtts quantize --help')", a);
            return CLI_USAGE;
        } else if (!in) {
            in = a;
        } else {
            cli_error("quantize: more than one input ('%s', '%s')", in, a);
            return CLI_USAGE;
        }
    }
    if (!in || !out) {
        cli_error("quantize: need a model folder and -o OUT.gguf (see 'qtts quantize --help')");
        return CLI_USAGE;
    }
    qtts_dtype type = qtts_dtype_from_name(type_name);
    if (type == QTTS_DTYPE_INVALID) {
        cli_error("--type: expected q8_0, q4_k, bf16 or f32, got '%s'", type_name);
        return CLI_USAGE;
    }
    if (strcmp(layout, "kernel") && strcmp(layout, "rows")) {
        cli_error("--layout: expected kernel or rows, got '%s'", layout);
        return CLI_USAGE;
    }
    size_t n = strlen(out);
    if (n < 5 || strcmp(out + n - 5, ".gguf")) {
        cli_error("quantize: the output name must end in .gguf");
        return CLI_USAGE;
    }
    qtts_err err = {0};
    int last = -1;
    qtts_pack_stats st;
    if (qtts_model_pack_lora(in, out, type, !strcmp(layout, "kernel"), lora.spec, lora.n,
                             isatty(2) ? show_progress : NULL, &last, &st, &err)) {
        cli_error("%s", err.msg);
        return CLI_FAIL;
    }
    struct stat fs;
    double mb = stat(out, &fs) ? 0 : (double)fs.st_size / 1e6;
    fprintf(stderr, "qtts quantize: wrote %s (%.1f MB, %d tensors); matrices:", out, mb, st.tensors);
    int other = 0;
    for (int t = 0; t < 32; t++)
        if (st.matrices[t]) {
            fprintf(stderr, " %d %s", st.matrices[t], qtts_dtype_name((qtts_dtype)t));
            other |= t != (int)type;
        }
    fprintf(stderr, "%s\n", other ? " (those not in the type asked for hold no whole block of it per row)" : "");
    for (int i = 0; i < lora.n; i++)
        fprintf(stderr, "qtts quantize: LoRA %s merged before the conversion\n", lora.spec[i]);
    return CLI_OK;
}
