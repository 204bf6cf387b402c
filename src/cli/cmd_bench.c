/* qtts bench: the end-to-end benchmark (src/bench/bench.h) at real model
 * dimensions with random weights, or on a model folder. This thread only
 * parses options and prints; the benchmark runs on its engine thread. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/args.h"
#include "cli/cli.h"

static void bench_usage(FILE *out) {
    fprintf(out,
            "usage: qtts bench [options]\n"
            "  Runs the engine on 1 request of exactly N frames (end of speech disabled), then on B\n"
            "  requests at once, and reports the engine's stage times, RTF, time to first audio,\n"
            "  peak RSS and GB/s / GFLOP/s against this machine's measured limits.\n"
            "      --size S              random weights at the real size: 0.6b (default) or 1.7b\n"
            "      --variant V           random: custom_voice (default), base, voice_design (1.7b)\n"
            "      --quant TYPE          weights as f32, bf16, q8_0 or q4_k (random default q8_0;\n"
            "                            with -m default: as stored)\n"
            "      --decoder-precision P auto (with q8_0/q4_k the fastest measured, see info --cpu), f32, winograd,\n"
            "                            winograd-f16, winograd-i16, bf16\n"
            "      --kv-cache T          the talker's KV cache: auto (f16 with q8_0/q4_k, else f32), f32, f16\n"
            "      --device D            cpu (default), vulkan, vulkan:N, auto: where the talker and code\n"
            "                            predictor run\n"
            "      --overlap MODE        auto (default: measured while running), on, off: decoder steps beside\n"
            "                            LM steps (2 threads or more)\n"
            "      --lora PATH[:SCALE]   with -m: merge a PEFT LoRA adapter into the talker at load\n"
            "                            (SCALE default 1, times its alpha/r); repeatable\n"
            "  -m, --model PATH          benchmark a model (folder or .gguf) instead of random weights\n"
            "      --frames N            frames per stream, 80 ms each (default 40)\n"
            "      --batch B             concurrent streams of the second pass, up to 64 (default 1: none)\n"
            "      --threads N           compute threads (default: all CPUs)\n"
            "      --runs R              repeat each pass R times, keep the best times (default 1)\n"
            "      --seed N              weights and sampling seed (default 1)\n"
            "      --text TEXT           prompt sentence with -m (default: a 10-word sentence)\n"
            "      --no-probe            skip the bandwidth / FMA-peak probe\n"
            "      --probe-mib N         probe buffer in MiB (default 512)\n"
            "      --json                print one JSON object instead of the report\n");
}

enum { O_SIZE = 256, O_VARIANT, O_QUANT, O_FRAMES, O_BATCH, O_THREADS, O_RUNS, O_SEED, O_TEXT, O_NO_PROBE, O_PROBE_MIB,
       O_LORA, O_JSON, O_HELP, O_DECPREC, O_OVERLAP, O_KVCACHE, O_DEVICE };

static const struct option bench_options[] = {
    {"size", required_argument, 0, O_SIZE},       {"variant", required_argument, 0, O_VARIANT},
    {"quant", required_argument, 0, O_QUANT},     {"model", required_argument, 0, 'm'},
    {"frames", required_argument, 0, O_FRAMES},   {"batch", required_argument, 0, O_BATCH},
    {"threads", required_argument, 0, O_THREADS}, {"runs", required_argument, 0, O_RUNS},
    {"seed", required_argument, 0, O_SEED},       {"text", required_argument, 0, O_TEXT},
    {"no-probe", no_argument, 0, O_NO_PROBE},     {"probe-mib", required_argument, 0, O_PROBE_MIB},
    {"json", no_argument, 0, O_JSON},             {"help", no_argument, 0, O_HELP},
    {"decoder-precision", required_argument, 0, O_DECPREC},
    {"overlap", required_argument, 0, O_OVERLAP},
    {"kv-cache", required_argument, 0, O_KVCACHE},
    {"lora", required_argument, 0, O_LORA},
    {"device", required_argument, 0, O_DEVICE},
    {0, 0, 0, 0}};

static int parse_size(const char *v) {
    if (strcmp(v, "0.6b") && strcmp(v, "1.7b") && strcmp(v, "0b6") && strcmp(v, "1b7")) {
        cli_error("--size must be 0.6b or 1.7b (got '%s')", v);
        return -1;
    }
    return 0;
}

static int parse_variant(const char *v, qtts_variant *out) {
    if (!strcmp(v, "base")) *out = QTTS_VARIANT_BASE;
    else if (!strcmp(v, "custom_voice") || !strcmp(v, "customvoice")) *out = QTTS_VARIANT_CUSTOM_VOICE;
    else if (!strcmp(v, "voice_design") || !strcmp(v, "voicedesign")) *out = QTTS_VARIANT_VOICE_DESIGN;
    else {
        cli_error("--variant must be base, custom_voice or voice_design (got '%s')", v);
        return -1;
    }
    return 0;
}

/* Options into o (and -m / --quant / --json, applied by the caller). */
static int bench_parse_args(int argc, char **argv, qtts_bench_options *o, const char **model, const char **quant,
                            int *json, cli_lora_list *lora) {
    long long v;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "m:h", bench_options, NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case 'm': *model = optarg; break;
        case O_DECPREC: bad = cli_check_decoder_precision(optarg); o->decoder_precision = optarg; break;
        case O_KVCACHE: bad = cli_check_kv_cache(optarg); o->kv_cache = optarg; break;
        case O_LORA:
            bad = cli_add_lora(lora, optarg);
            o->lora = lora->spec;
            o->n_lora = lora->n;
            break;
        case O_DEVICE: bad = cli_check_device(optarg); o->device = optarg; break;
        case O_OVERLAP:
            bad = cli_parse_overlap(optarg, &o->overlap);
            break;
        case O_SIZE: bad = parse_size(optarg); o->size = optarg; break;
        case O_VARIANT: bad = parse_variant(optarg, &o->variant); break;
        case O_QUANT: *quant = optarg; break;
        case O_FRAMES: bad = cli_int_to("--frames", optarg, 1, 100000, &o->frames); break;
        case O_BATCH: bad = cli_int_to("--batch", optarg, 1, 64, &o->batch); break;
        case O_THREADS: bad = cli_int_to("--threads", optarg, 1, 256, &o->threads); break;
        case O_RUNS: bad = cli_int_to("--runs", optarg, 1, 100, &o->runs); break;
        case O_SEED:
            if (!(bad = cli_int("--seed", optarg, 0, 0x7fffffff, &v))) o->seed = (uint64_t)v;
            break;
        case O_TEXT: o->text = optarg; break;
        case O_NO_PROBE: o->probe = 0; break;
        case O_PROBE_MIB:
            if (!(bad = cli_int("--probe-mib", optarg, 1, 65536, &v))) o->probe_bytes = (size_t)v << 20;
            break;
        case O_JSON: *json = 1; break;
        case 'h':
        case O_HELP: bench_usage(stdout); return CLI_OK;
        default:
            cli_error("bench: unknown or incomplete option '%s' (see 'qtts bench --help')", argv[optind - 1]);
            return CLI_USAGE;
        }
        if (bad) return CLI_USAGE; /* the parser printed why */
    }
    if (optind < argc) {
        cli_error("bench: unexpected argument '%s' (see 'qtts bench --help')", argv[optind]);
        return CLI_USAGE;
    }
    return CLI_CONTINUE;
}

int cmd_bench(int argc, char **argv) {
    qtts_bench_options o;
    qtts_bench_options_default(&o);
    const char *model = NULL, *quant = NULL;
    int json = 0;
    cli_lora_list lora = {{0}, 0};
    int rc = bench_parse_args(argc, argv, &o, &model, &quant, &json, &lora);
    if (rc != CLI_CONTINUE) return rc;
    if (lora.n && !model) {
        cli_error("bench: --lora needs a model (-m): random weights have no adapter to fit");
        return CLI_USAGE;
    }
    char path[4096];
    if (model) {
        if (!(o.model_path = cli_resolve_model(model, path, sizeof path))) return CLI_FAIL;
        o.wtype = QTTS_DTYPE_INVALID;
    }
    if (quant) {
        o.wtype = qtts_dtype_from_name(quant);
        if (o.wtype != QTTS_F32 && o.wtype != QTTS_BF16 && o.wtype != QTTS_Q8_0 && o.wtype != QTTS_Q4_K) {
            cli_error("--quant must be f32, bf16, q8_0 or q4_k (got '%s')", quant);
            return CLI_USAGE;
        }
    }
    qtts_err err = {0};
    qtts_bench_result r;
    if (!json) fprintf(stderr, "qtts bench: running (weights are built first; this takes a while)...\n");
    if (qtts_bench_run(&o, &r, &err)) {
        cli_error("%s", err.msg);
        return CLI_FAIL;
    }
    if (json) {
        char *s = qtts_bench_json(&r);
        if (!s) {
            cli_error("bench: out of memory writing JSON");
            return CLI_FAIL;
        }
        printf("%s\n", s);
        free(s);
    } else {
        qtts_bench_print(stdout, &r);
    }
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
}
