/* The benchmark (src/bench/bench.h, `qtts bench`) driving the engine on the
 * tiny golden CustomVoice model, as a folder and as a .gguf: every figure
 * present and consistent with the frames, streams and weights it ran on, the
 * JSON well-formed, the CLI's errors clear. Timings are not asserted (the
 * machine is shared). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"
#include "harness.h"
#include "support/test_util.h"
#include "io/store.h"
#include "model/codec_decoder.h"
#include "model/codec_random.h"
#include "model/config.h"
#include "model/model_random.h"

static const char *const keys[] = {
    "source", "model", "variant", "quant", "isa", "threads", "frames", "batch", "runs", "load_s", "prompt_tokens",
    "prompt_rows", "talker_weight_bytes", "talker_kv_bytes", "kv_cache", "cp_weight_bytes", "decoder_gflop_per_frame", "frame_ms", "prompt_ms",
    "prefill_ms", "prefill_cpu_ms", "talker_ms", "talker_cpu_ms", "talker_gbs", "talker_pct_bw", "talker_pct_bw_1t", "talker_gflops",
    "talker_pct_peak", "talker_gbs_cpu", "cp_ms", "cp_gbs", "cp_pct_bw", "cp_pct_bw_1t", "cp_gflops", "decoder_ms", "decoder_gflops",
    "decoder_pct_peak", "decoder_gflops_cpu", "ttfa_ms", "ttfa_cpu_ms", "wall_s", "audio_s", "rtf", "rtf_steady",
    "rtf_cpu", "rtf_steady_cpu", "frames_out", "samples_out", "decode_steps", "overlapped_steps", "batch_wall_s", "batch_audio_s", "aggregate_xrt",
    "aggregate_xrt_cpu", "batch_frames_out", "batch_samples_out", "batch_talker_ms", "batch_talker_rows",
    "batch_cp_ms", "batch_cp_rows", "batch_decoder_ms", "batch_decoder_rows", "rss_loaded_mb", "peak_rss_single_mb",
    "peak_rss_mb", "probed", "read_gbs_1", "read_gbs_all", "fma_gflops_1", "fma_gflops_all", "bw_gbs", "peak_gflops"};

static double num(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : -1e300;
}

/* Every key present; numbers finite and >= 0. */
static void check_json_keys(const cJSON *o, const char *what) {
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
        TEST_CHECK(v != NULL, "%s: key %s missing", what, keys[i]);
        if (cJSON_IsNumber(v)) TEST_CHECK(v->valuedouble >= 0, "%s: %s = %g", what, keys[i], v->valuedouble);
    }
}

/* f32 KV cache bytes per position of the talker: 2 (K, V) x layers x k_proj's rows. */
static double talker_kv_bytes_per_position(const qtts_store *st) {
    double b = 0;
    for (int i = 0; i < qtts_store_count(st); i++) {
        const qtts_tensor *t = qtts_store_at(st, i);
        const char *rest = !strncmp(t->name, "talker.model.layers.", 20) ? strchr(t->name + 20, '.') : NULL;
        if (rest && !strcmp(rest, ".self_attn.k_proj.weight")) b += 2.0 * 4.0 * (double)t->shape[0];
    }
    return b;
}

/* Sum of the bytes of the talker's decoder-layer matrices and codec_head in the store. */
static double talker_matrix_bytes(const qtts_store *st) {
    double b = 0;
    for (int i = 0; i < qtts_store_count(st); i++) {
        const qtts_tensor *t = qtts_store_at(st, i);
        int layer_mat = !strncmp(t->name, "talker.model.layers.", 20) && t->ndim == 2;
        if (layer_mat || !strcmp(t->name, "talker.codec_head.weight"))
            b += (double)qtts_dtype_row_bytes(t->type, t->shape[1]) * (double)t->shape[0];
    }
    return b;
}

/* The random checkpoint's config files are written from the loaders' own tables: what is written parses
 * back to the same config. */
static void check_config_round_trip(void) {
    for (int v = 0; v < 2; v++) {
        qtts_model_config a, b;
        qtts_err err = {0};
        int rc = qtts_model_random_config(&a, "1.7b", v ? QTTS_VARIANT_VOICE_DESIGN : QTTS_VARIANT_CUSTOM_VOICE, &err);
        cJSON *j = rc ? NULL : qtts_model_config_to_json(&a);
        rc = j ? qtts_model_config_parse(&b, j, "written config.json", &err) : -1;
        cJSON_Delete(j);
        TEST_CHECK(rc == 0, "config.json round trip: %s", err.msg);
        a.cp_code_groups = a.num_code_groups; /* written once, read into both */
        TEST_CHECK(rc == 0 && b.variant == a.variant && b.talker.hidden == a.talker.hidden &&
                       b.talker.layers == a.talker.layers && b.cp.layers == a.cp.layers && b.text_vocab == a.text_vocab &&
                       b.codec_eos == a.codec_eos && b.assistant == a.assistant && b.n_speakers == a.n_speakers &&
                       b.n_languages == a.n_languages && !strcmp(b.size, a.size) &&
                       (a.n_speakers == 0 || (!strcmp(b.speakers[a.n_speakers - 1].dialect, a.speakers[a.n_speakers - 1].dialect) &&
                                              b.speakers[0].id == a.speakers[0].id)),
                   "config.json round trip (%s): the same config", qtts_variant_name(a.variant));
    }
    qtts_codec_config a, b;
    qtts_err err = {0};
    qtts_codec_config_real(&a);
    cJSON *j = qtts_codec_config_to_json(&a);
    int rc = j ? qtts_codec_config_parse(&b, j, "written speech_tokenizer/config.json", &err) : -1;
    cJSON_Delete(j);
    TEST_CHECK(rc == 0 && b.frame_samples == a.frame_samples && b.dec.layers == a.dec.layers &&
                   b.dec.n_upsample_rates == a.dec.n_upsample_rates && b.dec.upsample_rates[0] == a.dec.upsample_rates[0] &&
                   b.enc.n_ratios == a.enc.n_ratios,
               "speech_tokenizer/config.json round trip: %s", err.msg);
}

int main(void) {
    check_config_round_trip();
    char dir[1024];
    golden_path(dir, sizeof dir, "Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny");
    qtts_err err = {0};
    qtts_codec_decoder *dec = qtts_codec_decoder_open(dir, &err);
    qtts_store *st = qtts_store_open(dir, &err);
    TEST_CHECK(dec && st, "tiny model: %s", err.msg);
    if (!dec || !st) return test_finish("test_bench");
    const int64_t fs = qtts_codec_decoder_frame_samples(dec), sr = qtts_codec_decoder_sample_rate(dec);

    /* library: 5 frames, 1 stream then 3 */
    const int F = 5, B = 3;
    qtts_bench_options o;
    qtts_bench_options_default(&o);
    o.model_path = dir;
    o.wtype = QTTS_DTYPE_INVALID;
    o.frames = F;
    o.batch = B;
    o.threads = 2;
    o.probe_bytes = 4u << 20;
    o.overlap = QTTS_OVERLAP_NEVER; /* the call counts below are those of sequential steps (overlap: checked after) */
    qtts_bench_result r;
    int rc = qtts_bench_run(&o, &r, &err);
    TEST_CHECK(rc == 0, "bench on the tiny model: %s", err.msg);
    if (rc == 0) {
        TEST_CHECK(!strcmp(r.source, "model") && !strcmp(r.variant, "custom_voice") && !strcmp(r.quant, "f32"),
                   "setup: %s %s %s", r.source, r.variant, r.quant);
        TEST_CHECK(r.threads == 2 && r.frames == F && r.batch == B && r.runs == 1, "options echoed");
        TEST_CHECK(r.frames_out == F && r.samples_out == F * fs, "1 stream: %lld frames, %lld samples",
                   (long long)r.frames_out, (long long)r.samples_out);
        TEST_CHECK(r.batch_frames_out == B * F && r.batch_samples_out == B * F * fs, "%d streams: %lld frames", B,
                   (long long)r.batch_frames_out);
        TEST_CHECK(r.frame_ms == 1e3 * (double)fs / (double)sr && r.audio_s == F * r.frame_ms / 1e3, "audio length");
        /* the first frame (prefill, code predictor) is warm-up: each later frame has its talker step (run
           after the frame before it was emitted), code-predictor frame and decoder step */
        TEST_CHECK(r.talker.calls == F - 1 && r.cp.calls == F - 1 && r.decoder.calls == F - 1,
                   "stage calls: talker %lld cp %lld decoder %lld", (long long)r.talker.calls,
                   (long long)r.cp.calls, (long long)r.decoder.calls);
        TEST_CHECK(r.talker.rows == 1 && r.cp.rows == 1 && r.decoder.rows == 1, "1 stream: one row per call");
        TEST_CHECK(r.talker_b.rows == B && r.cp_b.rows == B && r.decoder_b.rows == B, "batch: %d rows per call", B);
        TEST_CHECK(r.talker.ms > 0 && r.cp.ms > 0 && r.decoder.ms > 0 && r.talker.cpu_ms > 0 && r.prefill_ms > 0 &&
                       r.prefill_ms >= r.prompt_ms && r.ttfa_ms >= r.prefill_ms && r.rtf > 0 && r.aggregate_xrt > 0,
                   "times positive and ordered");
        TEST_CHECK(r.prompt_tokens > 8 && r.prompt_rows > 0, "prompt: %lld tokens, %lld rows",
                   (long long)r.prompt_tokens, (long long)r.prompt_rows);
        double tb = talker_matrix_bytes(st);
        TEST_CHECK(tb > 0 && r.talker_weight_bytes == tb, "talker weight bytes %.0f, store %.0f",
                   r.talker_weight_bytes, tb);
        TEST_CHECK(r.cp_weight_bytes > 0 && r.decoder_flop_per_frame > 0, "cp bytes and decoder FLOP");
        /* f32 weights: an f32 KV cache (auto), read at the measured steps' middle position on average */
        const double kvb = talker_kv_bytes_per_position(st) * ((double)r.prompt_rows + 0.5 * F);
        TEST_CHECK(!strcmp(r.kv_cache, "f32") && kvb > 0 && fabs(r.talker_kv_bytes - kvb) <= 1e-9 * kvb,
                   "KV cache %s, %.0f bytes read per step, expected %.0f", r.kv_cache, r.talker_kv_bytes, kvb);
        TEST_CHECK(r.talker.gbs > 0 && r.talker.gbs == (r.talker_weight_bytes + r.talker_kv_bytes) / r.talker.ms * 1e-6,
                   "talker GB/s: weights and KV cache");
        TEST_CHECK(r.decoder.gflops > 0 && r.decoder.flop == r.decoder_flop_per_frame, "decoder GFLOP/s");
        TEST_CHECK(r.decoder_b.flop == B * r.decoder_flop_per_frame, "batched decoder FLOP per step");
        TEST_CHECK(r.rss_loaded_mb > 0 && r.peak_rss_single_mb >= r.rss_loaded_mb &&
                       r.peak_rss_mb >= r.peak_rss_single_mb,
                   "RSS %.1f %.1f %.1f", r.rss_loaded_mb, r.peak_rss_single_mb, r.peak_rss_mb);
        TEST_CHECK(r.probed && r.probe.threads == 2 && r.probe.read_gbs_1 > 0 && r.probe.read_gbs_all > 0 &&
                       r.probe.fma_gflops_1 > 0 && r.probe.fma_gflops_all > 0 && r.bw_gbs == r.probe.read_gbs_all,
                   "probe figures");

        char *js = qtts_bench_json(&r);
        cJSON *o = js ? cJSON_Parse(js) : NULL;
        TEST_CHECK(o && cJSON_IsObject(o), "JSON parses");
        if (o) {
            check_json_keys(o, "library JSON");
            TEST_CHECK(num(o, "frames_out") == F && num(o, "batch_frames_out") == B * F &&
                           num(o, "talker_calls") == F - 1 && num(o, "batch_decoder_rows") == B,
                       "JSON counts match the result");
            const double t1 = 100 * r.talker.gbs / r.probe.read_gbs_1, c1 = 100 * r.cp.gbs / r.probe.read_gbs_1;
            TEST_CHECK(fabs(num(o, "talker_pct_bw_1t") - t1) <= 1e-9 * t1 && fabs(num(o, "cp_pct_bw_1t") - c1) <= 1e-9 * c1,
                       "%% of the 1-thread read rate: talker %.3f (expected %.3f), cp %.3f (expected %.3f)",
                       num(o, "talker_pct_bw_1t"), t1, num(o, "cp_pct_bw_1t"), c1);
        }
        cJSON_Delete(o);
        free(js);
    }

    /* overlap forced (engine/overlap.h), on 2 threads and on 3 (the third one helps): every frame still
       decoded once, some decoder steps beside LM steps */
    for (int threads = 2; threads <= 3; threads++) {
        qtts_bench_options ov = o;
        ov.frames = 12;
        ov.batch = 2;
        ov.probe = 0;
        ov.overlap = QTTS_OVERLAP_ALWAYS;
        ov.threads = threads;
        qtts_bench_result ro;
        rc = qtts_bench_run(&ov, &ro, &err);
        TEST_CHECK(rc == 0, "bench with overlap, %d threads: %s", threads, err.msg);
        if (rc == 0) {
            TEST_CHECK(ro.frames_out == 12 && ro.samples_out == 12 * fs && ro.batch_samples_out == 2 * 12 * fs,
                       "overlap, %d threads: %lld samples (1 stream), %lld (2)", threads, (long long)ro.samples_out,
                       (long long)ro.batch_samples_out);
            TEST_CHECK(ro.overlapped_steps >= 1 && ro.overlapped_steps < ro.decode_steps,
                       "overlap, %d threads: %lld of %lld decoder steps overlapped (not the first)", threads,
                       (long long)ro.overlapped_steps, (long long)ro.decode_steps);
        }
    }

    /* the command line: --json is one object on stdout */
    static char out[1 << 16];
    char args[1400];
    snprintf(args, sizeof args, "-m %s --frames 3 --batch 2 --threads 1 --probe-mib 2 --kv-cache f16 --json", dir);
    rc = test_run_bench(args, out, sizeof out);
    TEST_CHECK(rc == 0, "qtts bench --json exit %d", rc);
    cJSON *j = cJSON_Parse(out);
    TEST_CHECK(j && cJSON_IsObject(j), "CLI JSON parses: %.200s", out);
    if (j) {
        check_json_keys(j, "CLI JSON");
        TEST_CHECK(num(j, "frames_out") == 3 && num(j, "batch_frames_out") == 6 && num(j, "threads") == 1 &&
                       num(j, "samples_out") == 3.0 * (double)fs,
                   "CLI counts");
        /* --kv-cache f16 over f32 weights: half the bytes per position of the library run's f32 cache */
        const cJSON *kv = cJSON_GetObjectItemCaseSensitive(j, "kv_cache");
        const double per_pos = talker_kv_bytes_per_position(st) / 2;
        TEST_CHECK(cJSON_IsString(kv) && !strcmp(kv->valuestring, "f16") &&
                       fabs(num(j, "talker_kv_bytes") - per_pos * (num(j, "prompt_rows") + 1.5)) <= 1e-6 * per_pos,
                   "CLI --kv-cache f16: %s, %.0f bytes per step", cJSON_IsString(kv) ? kv->valuestring : "?",
                   num(j, "talker_kv_bytes"));
    }
    cJSON_Delete(j);
    snprintf(args, sizeof args, "-m %s --frames 2 --no-probe", dir);
    rc = test_run_bench(args, out, sizeof out);
    TEST_CHECK(rc == 0 && strstr(out, "time to first audio") && strstr(out, "talker step") && !strstr(out, "machine ("),
               "text report without probe (exit %d)", rc);
    TEST_CHECK(!strstr(out, " 0%"), "without a probe the %%bw/%%pk columns show '-', not 0%%: %s", out);

    /* a one-file .gguf of the same model */
    char gguf[] = "/tmp/qtts_bench_XXXXXX.gguf", cmd[2400];
    int gfd = mkstemps(gguf, 5);
    if (gfd >= 0) close(gfd);
    snprintf(cmd, sizeof cmd, "%s quantize %s -o %s --type f32 >/dev/null 2>&1", QTTS_BINARY, dir, gguf);
    TEST_CHECK(gfd >= 0 && system(cmd) == 0, "qtts quantize to %s", gguf);
    snprintf(args, sizeof args, "-m %s --frames 3 --threads 1 --no-probe --json", gguf);
    rc = test_run_bench(args, out, sizeof out);
    j = cJSON_Parse(out);
    TEST_CHECK(rc == 0 && j && num(j, "frames_out") == 3 && num(j, "samples_out") == 3.0 * (double)fs,
               "qtts bench -m model.gguf: exit %d, %.200s", rc, out);
    cJSON_Delete(j);
    unlink(gguf);

    /* bad input: one clear error, usage exit 2 / failure exit 1 */
    TEST_CHECK(test_run_bench("--frames 0", out, sizeof out) == 2, "--frames 0");
    TEST_CHECK(test_run_bench("--quant q5_x", out, sizeof out) == 2, "--quant q5_x");
    TEST_CHECK(test_run_bench("--size 3b", out, sizeof out) == 2, "--size 3b");
    TEST_CHECK(test_run_bench("--batch", out, sizeof out) == 2, "--batch without value");
    TEST_CHECK(test_run_bench("--batch 65", out, sizeof out) == 2, "--batch 65 (above the engine's slots)");
    TEST_CHECK(test_run_bench("--variant base --frames 1", out, sizeof out) == 1, "random Base: no encoders");
    TEST_CHECK(test_run_bench("--overlap sometimes", out, sizeof out) == 2, "--overlap sometimes");
    TEST_CHECK(test_run_bench("--kv-cache bf16", out, sizeof out) == 2, "--kv-cache bf16");
    TEST_CHECK(test_run_bench("-m /nonexistent/model --frames 1", out, sizeof out) == 1, "missing model folder");
    o.frames = 0;
    TEST_CHECK(qtts_bench_run(&o, &r, &err) == -1 && strstr(err.msg, "frames"), "library: %s", err.msg);

    qtts_codec_decoder_free(dec);
    qtts_store_free(st);
    return test_finish("test_bench");
}
