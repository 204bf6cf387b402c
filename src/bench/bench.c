#include "bench/bench.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/random_checkpoint.h"
#include "core/clock.h"
#include "engine/engine_internal.h"
#include "engine/stream.h"
#include "model/codec_decoder.h"
#include "tensor/conv.h"
#include "tensor/conv_calibrate.h"
#include "tensor/cpu.h"
#include "tensor/interleave.h"
#include "tensor/interleave_calibrate.h"

static const char *const default_text = "Please read this short sentence aloud for the benchmark today.";
static const char *const default_instruct = "A calm, clear voice.";

/* "VmRSS" / "VmHWM" of /proc/self/status in MB; ru_maxrss when unavailable. */
static double rss_mb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kl = strlen(key);
    double kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl) && line[kl] == ':') {
            kb = atof(line + kl + 1);
            break;
        }
    if (f) fclose(f);
    if (kb < 0) {
        struct rusage ru;
        kb = getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss : 0;
    }
    return kb * 1024 / 1e6;
}

void qtts_bench_options_default(qtts_bench_options *o) {
    memset(o, 0, sizeof *o);
    o->size = "0.6b";
    o->variant = QTTS_VARIANT_CUSTOM_VOICE;
    o->wtype = QTTS_Q8_0;
    o->frames = 40;
    o->batch = 1;
    o->runs = 1;
    o->probe = 1;
    o->seed = 1;
    o->overlap = QTTS_OVERLAP_AUTO;
}

/* ---- weight bytes and FLOP from the matrix shapes ---- */

static double mat_bytes(const qtts_mat *m) { return m->data ? (double)m->rows * (double)m->row_bytes : 0; }
static double mat_params(const qtts_mat *m) { return m->data ? (double)m->rows * (double)m->cols : 0; }

/* q/k/v/gate/up are views into the fused matrices when those exist, so the
 * separate ones count each weight once either way. */
static void lm_size(const qtts_lm *lm, double *bytes, double *params) {
    *bytes = *params = 0;
    for (int64_t i = 0; i < lm->cfg.layers; i++) {
        const qtts_lm_layer *l = &lm->layers[i];
        const qtts_mat *ms[7] = {&l->q, &l->k, &l->v, &l->o, &l->gate, &l->up, &l->down};
        for (int k = 0; k < 7; k++) {
            *bytes += mat_bytes(ms[k]);
            *params += mat_params(ms[k]);
        }
    }
}

static void model_costs(const qtts_talker_model *m, qtts_bench_result *r) {
    double tb, tp, cb, cpp;
    lm_size(&m->lm, &tb, &tp);
    lm_size(&m->cp.lm, &cb, &cpp);
    r->talker_weight_bytes = tb + mat_bytes(&m->codec_head);
    r->talker_flop_per_row = 2 * (tp + mat_params(&m->codec_head));
    /* per frame: a 2-row prefill + (G-2) single-row forwards = G LM rows over
     * G-1 weight passes, the projection on the same rows, each head once */
    const double G1 = m->cp.n_groups, rows = G1 + 1;
    double hb = 0, hp = 0;
    for (int g = 0; g < m->cp.n_groups; g++) {
        hb += mat_bytes(&m->cp.heads[g]);
        hp += mat_params(&m->cp.heads[g]);
    }
    const double pb = m->cp.has_proj ? mat_bytes(&m->cp.proj) : 0, pp = m->cp.has_proj ? mat_params(&m->cp.proj) : 0;
    r->cp_weight_bytes = G1 * (cb + pb) + hb;
    r->cp_flop_per_row = 2 * (rows * (cpp + pp) + hp);
}

/* ---- one pass: n requests through the engine, `frames` frames each ---- */

typedef struct {
    double prompt_ms, prefill_ms, ttfa_ms, wall_s;
    double prefill_cpu_ms, ttfa_cpu_ms, cpu_s; /* engine-thread CPU time */
    int64_t frames_out, samples_out, prompt_rows;
    int64_t decode_steps, overlapped_steps;
    qtts_bench_stage talker, cp, decoder;
} pass_result;

/* The per-call figure of a stage over the pass's requests: each request
 * holds its share of every step it took part in, so the shares add up to
 * the steps' times; calls = the steps of the longest request, rows = the
 * requests per step. */
static void stage_of(qtts_bench_stage *s, const engine_request_times *t, int n, size_t member) {
    memset(s, 0, sizeof *s);
    double wall = 0, cpu = 0, part = 0;
    int64_t calls = 0;
    for (int i = 0; i < n; i++) {
        const engine_stage *g = (const engine_stage *)((const char *)&t[i] + member);
        wall += g->wall_ms, cpu += g->cpu_ms, part += (double)g->calls;
        if (g->calls > calls) calls = g->calls;
    }
    if (calls <= 0) return;
    s->calls = calls;
    s->ms = wall / (double)calls;
    s->cpu_ms = cpu / (double)calls;
    s->rows = part / (double)calls;
}

typedef struct {
    qtts_engine *e;
    qtts_voice *voice; /* Base: an x-vector voice */
    const qtts_bench_options *o;
    int64_t frame_samples;
} bench_ctx;

static int read_to_end(qtts_stream *s, int64_t *samples) {
    static float buf[16384]; /* contents unused */
    long n;
    while ((n = qtts_stream_read(s, buf, sizeof buf / sizeof buf[0], -1)) > 0) *samples += n;
    return n == 0 ? 0 : -1;
}

static int run_pass(const bench_ctx *c, int n, pass_result *pr, qtts_err *err) {
    memset(pr, 0, sizeof *pr);
    const qtts_model_info *info = qtts_engine_info(c->e);
    qtts_request rq;
    qtts_request_default(&rq);
    rq.text = c->o->text && *c->o->text ? c->o->text : default_text;
    if (!strcmp(info->variant, "custom_voice")) rq.speaker = info->n_speakers ? info->speakers[0] : NULL;
    if (!strcmp(info->variant, "voice_design")) rq.instruct = default_instruct;
    rq.voice = c->voice;
    rq.x_vector_only = c->voice != NULL;
    rq.has_seed = 1;
    const engine_request_options opt = {.exact_frames = c->o->frames};
    qtts_stream **st = calloc((size_t)n, sizeof *st);
    engine_request_times *t = calloc((size_t)n, sizeof *t);
    int rc = -1;
    if (!st || !t) {
        qtts_fail(err, "bench: out of memory");
        goto done;
    }
    /* all n start together, in one batch */
    const double t0 = qtts_now_ms();
    engine_hold(c->e, 1);
    for (int i = 0; i < n && rc == -1; i++) {
        rq.seed = c->o->seed + (uint64_t)i;
        if (!(st[i] = engine_submit_with(c->e, &rq, &opt, err))) rc = -2;
    }
    engine_hold(c->e, 0);
    if (rc == -2) goto done;
    for (int i = 0; i < n; i++) {
        if (read_to_end(st[i], &pr->samples_out)) {
            qtts_fail(err, "bench: stream %d: %s", i, qtts_stream_error(st[i]));
            goto done;
        }
    }
    pr->wall_s = (qtts_now_ms() - t0) * 1e-3;
    for (int i = 0; i < n; i++) {
        qtts_result r;
        qtts_stream_result(st[i], &r);
        if (engine_stream_times(st[i], &t[i]) || r.n_frames != c->o->frames) {
            qtts_fail(err, "bench: stream %d ended after %d of %d frames (%s)", i, r.n_frames, c->o->frames,
                      qtts_finish_reason_name(r.finished_by));
            goto done;
        }
        pr->frames_out += r.n_frames;
        if (i == 0) pr->ttfa_ms = r.first_audio_ms;
        if (t[i].cpu_ms * 1e-3 > pr->cpu_s) pr->cpu_s = t[i].cpu_ms * 1e-3;
        /* the schedule as every caller of the engine reads it (qtts_result), as the server reports it */
        if (r.decoder_steps > pr->decode_steps) pr->decode_steps = r.decoder_steps;
        if (r.overlapped_decoder_steps > pr->overlapped_steps) pr->overlapped_steps = r.overlapped_decoder_steps;
    }
    pr->prompt_ms = t[0].prompt.wall_ms;
    pr->prefill_ms = t[0].prompt.wall_ms + t[0].prefill.wall_ms;
    pr->prefill_cpu_ms = t[0].prompt.cpu_ms + t[0].prefill.cpu_ms;
    pr->ttfa_cpu_ms = t[0].first_audio_cpu_ms;
    pr->prompt_rows = t[0].prompt_rows;
    stage_of(&pr->talker, t, n, offsetof(engine_request_times, talker));
    stage_of(&pr->cp, t, n, offsetof(engine_request_times, cp));
    /* the first decoder step (one frame, for the first audio) is warm-up, as the first LM step */
    stage_of(&pr->decoder, t, n, offsetof(engine_request_times, decoder));
    if (!pr->decoder.calls) stage_of(&pr->decoder, t, n, offsetof(engine_request_times, first_decode));
    rc = 0;
done:
    for (int i = 0; st && i < n; i++) qtts_stream_free(st[i]);
    free(st);
    free(t);
    return rc;
}

/* Keeps the best (smallest) time of each figure over runs. */
static void keep_min(double *best, double v) {
    if (v < *best) *best = v;
}
static void stage_best(qtts_bench_stage *best, const qtts_bench_stage *s) {
    keep_min(&best->ms, s->ms);
    keep_min(&best->cpu_ms, s->cpu_ms);
}
static void pass_best(pass_result *best, const pass_result *p, int first) {
    if (first) {
        *best = *p;
        return;
    }
    keep_min(&best->prompt_ms, p->prompt_ms);
    keep_min(&best->prefill_ms, p->prefill_ms);
    keep_min(&best->ttfa_ms, p->ttfa_ms);
    keep_min(&best->wall_s, p->wall_s);
    keep_min(&best->prefill_cpu_ms, p->prefill_cpu_ms);
    keep_min(&best->ttfa_cpu_ms, p->ttfa_cpu_ms);
    keep_min(&best->cpu_s, p->cpu_s);
    stage_best(&best->talker, &p->talker);
    stage_best(&best->cp, &p->cp);
    stage_best(&best->decoder, &p->decoder);
}

static int best_of_runs(const bench_ctx *c, int n, pass_result *best, qtts_err *err) {
    pass_result p;
    for (int i = 0; i < c->o->runs; i++) {
        if (run_pass(c, n, &p, err)) return -1;
        pass_best(best, &p, i == 0);
    }
    return 0;
}

static void stage_rates(qtts_bench_stage *s, double bytes, double flop_per_row) {
    s->bytes = bytes;
    s->flop = flop_per_row * s->rows;
    s->gbs = s->ms > 0 ? bytes / s->ms * 1e-6 : 0;
    s->gflops = s->ms > 0 ? s->flop / s->ms * 1e-6 : 0;
    s->gbs_cpu = s->cpu_ms > 0 ? bytes / s->cpu_ms * 1e-6 : 0;
    s->gflops_cpu = s->cpu_ms > 0 ? s->flop / s->cpu_ms * 1e-6 : 0;
}

/* ---- setup: the model file, the engine ---- */

/* Random weights are written as a checkpoint (random_checkpoint.h) to a
 * temporary file the engine loads like any other; the file is unlinked once
 * the engine has mapped it. */
static int random_file(const qtts_bench_options *o, char *path, size_t cap, qtts_err *err) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, cap, "%s/qtts-bench-XXXXXX.gguf", dir && *dir ? dir : "/tmp");
    int fd = mkstemps(path, 5);
    if (fd < 0) return qtts_fail(err, "bench: cannot create a temporary file in %s", dir && *dir ? dir : "/tmp");
    close(fd);
    const qtts_random_checkpoint rc = {.size = o->size, .variant = o->variant, .wtype = o->wtype, .seed = o->seed,
                                       .words = o->text && *o->text ? o->text : default_text};
    if (qtts_random_checkpoint_write(path, &rc, err)) {
        unlink(path);
        return -1;
    }
    return 0;
}

static qtts_engine *open_engine(const qtts_bench_options *o, int threads, qtts_err *err) {
    char tmp[4096];
    const char *path = o->model_path;
    if (!path) {
        if (random_file(o, tmp, sizeof tmp, err)) return NULL;
        path = tmp;
    }
    qtts_engine_params ep;
    qtts_engine_params_default(&ep);
    ep.model_path = path;
    ep.n_threads = threads;
    ep.weight_type = o->model_path && o->wtype != QTTS_DTYPE_INVALID ? qtts_dtype_name(o->wtype) : NULL;
    ep.max_batch = o->batch;
    ep.decoder_precision = o->decoder_precision;
    ep.kv_cache = o->kv_cache;
    ep.device = o->device;
    ep.overlap = o->overlap;
    ep.lora = o->lora;
    ep.n_lora = o->n_lora;
    qtts_error e_err;
    qtts_engine *e = qtts_engine_create(&ep, &e_err);
    if (!o->model_path) unlink(path); /* the mapping stays valid */
    if (!e) qtts_fail(err, "bench: %s", e_err.message);
    return e;
}

/* Base models: an x-vector voice with a fixed synthetic speaker vector. */
static int base_voice(bench_ctx *c, qtts_err *err) {
    const qtts_model_info *info = qtts_engine_info(c->e);
    if (strcmp(info->variant, "base")) return 0;
    const size_t D = (size_t)info->hidden_size;
    float *x = qtts_malloc(D * sizeof *x, err);
    if (!x) return -1;
    for (size_t i = 0; i < D; i++) x[i] = 0.05f * sinf(0.37f * (float)i);
    qtts_error e;
    c->voice = qtts_voice_from_parts(c->e, x, D, NULL, 0, NULL, &e);
    free(x);
    return c->voice ? 0 : qtts_fail(err, "bench: %s", e.message);
}

typedef struct {
    size_t bytes;
    qtts_probe_result *out;
    qtts_err *err;
    int rc;
} probe_job;

static void run_probe(qtts_pool *pool, void *arg) {
    probe_job *j = arg;
    j->rc = qtts_probe_run(pool, j->bytes, j->out, j->err);
}

/* The figures of the 1-stream pass into r. */
static void single_figures(qtts_bench_result *r, const pass_result *best, const pass_result *last, int sample_rate) {
    r->prompt_rows = best->prompt_rows;
    r->prompt_ms = best->prompt_ms;
    r->prefill_ms = best->prefill_ms;
    r->ttfa_ms = best->ttfa_ms;
    r->wall_s = best->wall_s;
    r->frames_out = best->frames_out;
    r->samples_out = best->samples_out;
    r->decode_steps = last->decode_steps;
    r->overlapped_steps = last->overlapped_steps;
    r->audio_s = (double)best->samples_out / (double)sample_rate;
    r->rtf = r->audio_s > 0 ? r->wall_s / r->audio_s : 0;
    r->talker = best->talker;
    r->cp = best->cp;
    r->decoder = best->decoder;
    r->rtf_steady = (r->talker.ms + r->cp.ms + r->decoder.ms) / r->frame_ms;
    r->prefill_cpu_ms = best->prefill_cpu_ms;
    r->ttfa_cpu_ms = best->ttfa_cpu_ms;
    r->rtf_cpu = r->audio_s > 0 ? best->cpu_s / r->audio_s : 0;
    r->rtf_steady_cpu = (r->talker.cpu_ms + r->cp.cpu_ms + r->decoder.cpu_ms) / r->frame_ms;
}

static void batch_figures(qtts_bench_result *r, const pass_result *best, int sample_rate) {
    r->batch_wall_s = best->wall_s;
    r->batch_frames_out = best->frames_out;
    r->batch_samples_out = best->samples_out;
    r->batch_decode_steps = best->decode_steps;
    r->batch_overlapped_steps = best->overlapped_steps;
    r->batch_audio_s = (double)best->samples_out / (double)sample_rate;
    r->aggregate_xrt = r->batch_wall_s > 0 ? r->batch_audio_s / r->batch_wall_s : 0;
    r->aggregate_xrt_cpu = best->cpu_s > 0 ? r->batch_audio_s / best->cpu_s : 0;
    r->talker_b = best->talker;
    r->cp_b = best->cp;
    r->decoder_b = best->decoder;
}

/* Weight bytes, FLOP and rates: a talker step reads its weights once and
 * each stream's KV cache, on average at the middle position of the measured steps. */
static void rates(qtts_bench_result *r, const qtts_engine *e) {
    model_costs(e->talker, r);
    r->decoder_flop_per_frame = 2 * qtts_codec_decoder_macs_per_frame(e->decoder);
    const qtts_lm_config *tc = &e->talker->cfg.talker;
    const double kv_per_pos = (double)tc->layers * 2.0 * (double)(tc->kv_heads * tc->head_dim) *
                              (e->talker->kv_type == QTTS_F16 ? 2.0 : 4.0);
    r->talker_kv_bytes = kv_per_pos * ((double)r->prompt_rows + 0.5 * (double)r->frames);
    stage_rates(&r->talker, r->talker_weight_bytes + r->talker_kv_bytes, r->talker_flop_per_row);
    stage_rates(&r->cp, r->cp_weight_bytes, r->cp_flop_per_row);
    stage_rates(&r->decoder, 0, r->decoder_flop_per_frame);
    stage_rates(&r->talker_b, r->talker_weight_bytes + r->talker_b.rows * r->talker_kv_bytes, r->talker_flop_per_row);
    stage_rates(&r->cp_b, r->cp_weight_bytes, r->cp_flop_per_row);
    stage_rates(&r->decoder_b, 0, r->decoder_flop_per_frame);
}

static int measure(bench_ctx *c, qtts_bench_result *r, qtts_err *err) {
    const qtts_bench_options *o = c->o;
    const qtts_model_info *info = qtts_engine_info(c->e);
    snprintf(r->variant, sizeof r->variant, "%s", info->variant);
    snprintf(r->quant, sizeof r->quant, "%s", info->weight_type);
    snprintf(r->decoder_precision, sizeof r->decoder_precision, "%s", info->decoder_precision);
    r->cal = c->e->tuning.cal; /* the load has ended: the engine thread no longer writes it */
    snprintf(r->kv_cache, sizeof r->kv_cache, "%s", info->kv_cache);
    snprintf(r->device, sizeof r->device, "%s", info->device ? info->device : "cpu");
    r->frame_ms = 1e3 * (double)info->frame_samples / (double)info->sample_rate;
    r->rss_loaded_mb = rss_mb("VmRSS");
    r->peak_rss_load_mb = rss_mb("VmHWM");
    /* restart the high-water mark: the peaks below are those of synthesis
     * (Linux: "5" resets VmHWM to the current RSS; where refused they include the load) */
    FILE *cr = fopen("/proc/self/clear_refs", "w");
    r->peak_reset = cr && fputs("5", cr) >= 0;
    if (cr && fclose(cr)) r->peak_reset = 0;
    if (base_voice(c, err)) return -1;
    /* the prompt's text tokens: the template's 8 around the text's */
    qtts_err terr = {0};
    int32_t *ids = NULL;
    int n_ids = 0;
    if (qtts_tok_encode_template(c->e->tok, QTTS_TEMPLATE_TARGET, o->text && *o->text ? o->text : default_text, &ids,
                                 &n_ids, &terr))
        return qtts_fail(err, "bench: %s", terr.msg);
    free(ids);
    r->prompt_tokens = n_ids;

    pass_result best, last;
    if (best_of_runs(c, 1, &best, err)) return -1;
    last = best;
    single_figures(r, &best, &last, info->sample_rate);
    r->peak_rss_single_mb = rss_mb("VmHWM");
    if (o->batch > 1) {
        if (best_of_runs(c, o->batch, &best, err)) return -1;
        batch_figures(r, &best, info->sample_rate);
    }
    r->peak_rss_mb = rss_mb("VmHWM");
    qtts_engine_stats st;
    qtts_engine_get_stats(c->e, &st);
    r->device_memory_mb = (double)st.device_memory_peak * 1e-6;
    r->device_requests = st.requests_on_device;
    r->lm_host_cpu_ms = r->talker.cpu_ms + r->cp.cpu_ms;
    r->lm_host_cpu_ms_b = r->talker_b.cpu_ms + r->cp_b.cpu_ms;
    rates(r, c->e);
    /* the machine's limits, after the RSS readings (the probe's buffer is not the workload's), on the engine's pool */
    if (o->probe) {
        probe_job j = {o->probe_bytes, &r->probe, err, -1};
        qtts_exec_call(c->e->exec, run_probe, &j);
        if (j.rc) return -1;
        r->probed = 1;
        int one = r->threads == 1;
        r->bw_gbs = one ? r->probe.read_gbs_1 : r->probe.read_gbs_all;
        r->peak_gflops = one ? r->probe.fma_gflops_1 : r->probe.fma_gflops_all;
        r->peak_gflops_decoder = r->peak_gflops;
        if (!strcmp(r->decoder_precision, "bf16"))
            r->peak_gflops_decoder = one ? r->probe.bf16_gflops_1 : r->probe.bf16_gflops_all;
    }
    return 0;
}

int qtts_bench_run(const qtts_bench_options *o, qtts_bench_result *r, qtts_err *err) {
    memset(r, 0, sizeof *r);
    if (o->frames < 1 || o->frames > 100000) return qtts_fail(err, "bench: --frames must be 1..100000 (got %d)", o->frames);
    if (o->batch < 1 || o->batch > QTTS_MAX_BATCH)
        return qtts_fail(err, "bench: --batch must be 1..%d (got %d)", QTTS_MAX_BATCH, o->batch);
    if (o->runs < 1 || o->runs > 100) return qtts_fail(err, "bench: --runs must be 1..100 (got %d)", o->runs);
    if (o->threads < 0 || o->threads > 256) return qtts_fail(err, "bench: --threads must be 1..256 (got %d)", o->threads);
    if (!o->model_path && (!o->size || !*o->size)) return qtts_fail(err, "bench: no model size");
    int threads = o->threads;
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)(n < 256 ? n : 256) : 1;
    }
    snprintf(r->source, sizeof r->source, "%s", o->model_path ? "model" : "random");
    snprintf(r->model, sizeof r->model, "%s", o->model_path ? o->model_path : o->size);
    snprintf(r->isa, sizeof r->isa, "%s", qtts_isa_name(qtts_cpu_isa()));
    r->threads = threads;
    r->frames = o->frames;
    r->batch = o->batch;
    r->runs = o->runs;
    const double t0 = qtts_now_ms();
    bench_ctx c = {.o = o};
    if (!(c.e = open_engine(o, threads, err))) return -1;
    r->load_s = (qtts_now_ms() - t0) * 1e-3;
    int rc = measure(&c, r, err);
    qtts_voice_release(c.voice);
    qtts_engine_free(c.e);
    return rc;
}

/* ---- output ---- */

static double pct(double a, double b) { return b > 0 ? 100 * a / b : 0; }

/* " 37%", or " -" in the column when there is no reference (no probe ran: --no-probe) */
static void put_pct(FILE *f, double a, double b) {
    if (b > 0) fprintf(f, " %4.0f%%", pct(a, b));
    else fprintf(f, " %5s", "-");
}

static void print_stage(FILE *f, const char *name, const qtts_bench_stage *s, const qtts_bench_result *r,
                        double peak) {
    fprintf(f, "  %-20s %9.2f %9.2f", name, s->ms, s->cpu_ms);
    if (s->bytes > 0) {
        fprintf(f, " %7.1f", s->gbs), put_pct(f, s->gbs, r->bw_gbs);
        fprintf(f, " %7.1f", s->gbs_cpu), put_pct(f, s->gbs_cpu, r->bw_gbs);
    } else {
        fprintf(f, " %7s %5s %7s %5s", "-", "-", "-", "-");
    }
    fprintf(f, " %8.1f", s->gflops), put_pct(f, s->gflops, peak);
    fprintf(f, " %8.1f", s->gflops_cpu), put_pct(f, s->gflops_cpu, peak);
    fputc('\n', f);
}

static void print_header(FILE *f, const char *title) {
    fprintf(f, "  %-20s %9s %9s %7s %5s %7s %5s %8s %5s %8s %5s\n", title, "wall ms", "cpu ms", "GB/s", "%bw", "cpuGB/s",
            "%bw", "GFLOP/s", "%pk", "cpuGF/s", "%pk");
}

void qtts_bench_print(FILE *f, const qtts_bench_result *r) {
    fprintf(f, "qtts bench: %s %s %s, weights %s, decoder %s, KV cache %s, %d thread(s), kernels %s, %d frames/stream, "
               "best of %d run(s)\n",
            r->source, r->model, r->variant, r->quant, r->decoder_precision, r->kv_cache, r->threads, r->isa,
            r->frames, r->runs);
    fprintf(f, "  weights built/loaded in %.1f s; weights read per talker step %.1f MB (+ %.1f MB of KV cache per "
               "stream, on average), per code-predictor frame %.1f MB; decoder %.2f GFLOP/frame\n",
            r->load_s, r->talker_weight_bytes * 1e-6, r->talker_kv_bytes * 1e-6, r->cp_weight_bytes * 1e-6,
            r->decoder_flop_per_frame * 1e-9);
    /* the choices made by measurement at load (tensor/interleave_calibrate.h, conv_calibrate.h) */
    const qtts_dtype qt = !strcmp(r->quant, "q8_0") ? QTTS_Q8_0 : !strcmp(r->quant, "q4_k") ? QTTS_Q4_K : QTTS_F32;
    const int have_ic = qt == QTTS_Q8_0 ? r->cal.have_q8_0 : qt == QTTS_Q4_K ? r->cal.have_q4_k : 0;
    if (have_ic && qtts_interleave_kernels()) {
        const qtts_interleave_calibration *ic = qt == QTTS_Q8_0 ? &r->cal.q8_0 : &r->cal.q4_k;
        fprintf(f, "  %s layout: %s%s%s (measured at load: 16-row interleaved %.1f GB/s, GGML rows %.1f GB/s", r->quant,
                ic->faster ? "16-row interleaved" : "GGML rows", ic->prefetch ? ", prefetching" : "",
                ic->lockstep ? ", groups in lockstep" : "", ic->x16_gbs, ic->row_gbs);
        if (qtts_cpu_isa() == QTTS_ISA_AVX2)
            fprintf(f, "; prefetching %.1f / %.1f GB/s, interleaved groups by super-block %.1f", ic->x16_pf_gbs,
                    ic->row_pf_gbs, ic->x16_blocks_gbs);
        fprintf(f, " on %d threads; 8 tokens %.0f / %.0f GFLOP/s)\n", ic->threads, ic->x16_batch_gflops,
                ic->row_batch_gflops);
    }
    const qtts_conv_calibration *cc = &r->cal.conv;
    if (r->cal.have_conv) {
        fprintf(f, "  decoder convolutions measured at load (1 thread, direct-conv FLOPs): f32 %.0f, Winograd %.0f",
                cc->f32_gflops, cc->winograd_gflops);
        if (cc->bf16_available) fprintf(f, ", bf16 %.0f", cc->bf16_gflops);
        if (cc->i16_available)
            fprintf(f, ", Winograd int16 %.0f (%s tile)", cc->i16_gflops, qtts_conv_tile_i16_name(QTTS_CONV_ISA_AUTO));
        fprintf(f, " GFLOP/s (auto takes another path than f32 with quantized weights only at >= 1.1x)\n");
    }
    if (r->probed)
        fprintf(f, "machine (probe, %s, %.0f MiB buffer): read %.1f GB/s on 1 thread, %.1f GB/s on %d; f32 FMA peak "
                   "%.0f GFLOP/s on 1 thread, %.0f on %d (ratios below use the %d-thread figures)\n",
                r->probe.isa, (double)r->probe.buffer_bytes / 1048576.0, r->probe.read_gbs_1, r->probe.read_gbs_all,
                r->probe.threads, r->probe.fma_gflops_1, r->probe.fma_gflops_all, r->probe.threads, r->probe.threads);
    if (r->probed && r->probe.bf16_gflops_all > 0)
        fprintf(f, "  bf16 dot-product peak (vdpbf16ps / bfdot) %.0f GFLOP/s on 1 thread, %.0f on %d%s\n", r->probe.bf16_gflops_1,
                r->probe.bf16_gflops_all, r->probe.threads,
                strcmp(r->decoder_precision, "bf16") ? "" : " (the decoder's %pk below uses it)");
    if (strcmp(r->device, "cpu"))
        fprintf(f, "device: %s (%llu requests ran there); talker and code predictor are one submission per frame, "
                   "reported in the code-predictor rows; device memory peak %.0f MB\n",
                r->device, (unsigned long long)r->device_requests, r->device_memory_mb);
    fprintf(f, "(cpu = CPU time of the engine thread: what the step takes when the machine is not shared)\n");
    fprintf(f, "1 stream (prompt: %lld text tokens -> %lld prefill rows)\n", (long long)r->prompt_tokens,
            (long long)r->prompt_rows);
    fprintf(f, "  prefill %.1f ms (cpu %.1f; prompt build %.1f ms); time to first audio %.1f ms (cpu %.1f)\n",
            r->prefill_ms, r->prefill_cpu_ms, r->prompt_ms, r->ttfa_ms, r->ttfa_cpu_ms);
    fprintf(f, "  RTF %.3f (%.2f s for %.2f s of audio; cpu %.3f), steady-state RTF %.3f (cpu %.3f)\n", r->rtf,
            r->wall_s, r->audio_s, r->rtf_cpu, r->rtf_steady, r->rtf_steady_cpu);
    if (r->overlapped_steps)
        fprintf(f, "  %lld of %lld decoder steps ran beside LM steps, one thread each, the first one done then helping the "
                   "other (--overlap; the steady-state RTF adds stage times that then overlap, and those are mostly "
                   "one-thread times)\n",
                (long long)r->overlapped_steps, (long long)r->decode_steps);
    print_header(f, "per step");
    print_stage(f, "talker step", &r->talker, r, r->peak_gflops);
    print_stage(f, "code predictor frame", &r->cp, r, r->peak_gflops);
    print_stage(f, "decoder frame", &r->decoder, r, r->peak_gflops_decoder);
    fprintf(f, "  host CPU per frame for the talker and code predictor: %.3f ms\n", r->lm_host_cpu_ms);
    if (!strncmp(r->decoder_precision, "winograd", 8))
        fprintf(f, "  (decoder GFLOP/s count the direct convolution's FLOPs; its Winograd form does fewer, so %%pk can "
                   "pass 100)\n");
    if (r->overlapped_steps && r->threads > 1 && r->probed && r->probe.read_gbs_1 > 0)
        fprintf(f, "  against one thread's read rate (%.1f GB/s; the LM steps beside the decoder ran on one thread): "
                   "talker %.0f%%, code predictor %.0f%%\n",
                r->probe.read_gbs_1, pct(r->talker.gbs, r->probe.read_gbs_1), pct(r->cp.gbs, r->probe.read_gbs_1));
    if (r->batch > 1) {
        fprintf(f, "%d streams: %.2f s of audio in %.2f s = %.2fx real time aggregate (cpu %.2fx)\n", r->batch,
                r->batch_audio_s, r->batch_wall_s, r->aggregate_xrt, r->aggregate_xrt_cpu);
        if (r->batch_overlapped_steps)
            fprintf(f, "  %lld of %lld decoder steps ran beside LM steps, one thread each, the first one done then "
                       "helping the other (the stage times below are then mostly one-thread times; %%pk is against the "
                       "%d-thread peak)\n",
                    (long long)r->batch_overlapped_steps, (long long)r->batch_decode_steps, r->threads);
        print_header(f, "per step (all streams)");
        print_stage(f, "talker step", &r->talker_b, r, r->peak_gflops);
        print_stage(f, "code predictor", &r->cp_b, r, r->peak_gflops);
        print_stage(f, "decoder", &r->decoder_b, r, r->peak_gflops_decoder);
        fprintf(f, "  host CPU per frame of all %d streams for the talker and code predictor: %.3f ms\n", r->batch,
                r->lm_host_cpu_ms_b);
    }
    fprintf(f, "memory: peak %.0f MB while loading; RSS %.0f MB after load; peak %s%.0f MB (1 stream), %.0f MB (all passes)\n",
            r->peak_rss_load_mb, r->rss_loaded_mb, r->peak_reset ? "during synthesis " : "incl. loading ",
            r->peak_rss_single_mb, r->peak_rss_mb);
}

/* cJSON adders that remember a failed allocation. */
typedef struct {
    cJSON *o;
    int bad;
} jout;
static void jnum(jout *j, const char *k, double v) {
    if (!cJSON_AddNumberToObject(j->o, k, isfinite(v) ? v : 0)) j->bad = 1;
}
static void jstr(jout *j, const char *k, const char *v) {
    if (!cJSON_AddStringToObject(j->o, k, v)) j->bad = 1;
}

static void json_stage(jout *j, const char *prefix, const qtts_bench_stage *s, const qtts_bench_result *r,
                       double peak) {
    char k[64];
#define ADD(name, v)                                  \
    do {                                              \
        snprintf(k, sizeof k, "%s_%s", prefix, name); \
        jnum(j, k, v);                                \
    } while (0)
    ADD("ms", s->ms);
    ADD("cpu_ms", s->cpu_ms);
    ADD("rows", s->rows);
    ADD("calls", (double)s->calls);
    ADD("weight_bytes", s->bytes);
    ADD("gflop", s->flop * 1e-9);
    ADD("gbs", s->gbs);
    ADD("gflops", s->gflops);
    ADD("pct_bw", s->bytes > 0 ? pct(s->gbs, r->bw_gbs) : 0);
    /* against one thread's read rate: where LM steps ran beside the decoder, the limit they had */
    ADD("pct_bw_1t", s->bytes > 0 && r->probed ? pct(s->gbs, r->probe.read_gbs_1) : 0);
    ADD("pct_peak", pct(s->gflops, peak));
    ADD("gbs_cpu", s->gbs_cpu);
    ADD("gflops_cpu", s->gflops_cpu);
    ADD("pct_bw_cpu", s->bytes > 0 ? pct(s->gbs_cpu, r->bw_gbs) : 0);
    ADD("pct_peak_cpu", pct(s->gflops_cpu, peak));
#undef ADD
}

char *qtts_bench_json(const qtts_bench_result *r) {
    jout j = {cJSON_CreateObject(), 0};
    if (!j.o) return NULL;
    jstr(&j, "source", r->source);
    jstr(&j, "model", r->model);
    jstr(&j, "variant", r->variant);
    jstr(&j, "quant", r->quant);
    jstr(&j, "decoder_precision", r->decoder_precision);
    jstr(&j, "kv_cache", r->kv_cache);
    jstr(&j, "device", r->device);
    jnum(&j, "device_requests", (double)r->device_requests);
    jnum(&j, "device_memory_mb", r->device_memory_mb);
    jnum(&j, "lm_host_cpu_ms", r->lm_host_cpu_ms);
    jnum(&j, "lm_host_cpu_ms_batch", r->lm_host_cpu_ms_b);
    const qtts_conv_calibration *cc = &r->cal.conv; /* what decided "auto" (measured at load or cached) */
    jnum(&j, "conv_cal_f32_gflops", cc->f32_gflops);
    jnum(&j, "conv_cal_winograd_gflops", cc->winograd_gflops);
    jnum(&j, "conv_cal_bf16_gflops", cc->bf16_gflops);
    jnum(&j, "conv_cal_i16_gflops", cc->i16_gflops);
    jstr(&j, "isa", r->isa);
    jnum(&j, "threads", r->threads);
    jnum(&j, "frames", r->frames);
    jnum(&j, "batch", r->batch);
    jnum(&j, "runs", r->runs);
    jnum(&j, "load_s", r->load_s);
    jnum(&j, "prompt_tokens", (double)r->prompt_tokens);
    jnum(&j, "prompt_rows", (double)r->prompt_rows);
    jnum(&j, "talker_weight_bytes", r->talker_weight_bytes);
    jnum(&j, "talker_kv_bytes", r->talker_kv_bytes);
    jnum(&j, "cp_weight_bytes", r->cp_weight_bytes);
    jnum(&j, "decoder_gflop_per_frame", r->decoder_flop_per_frame * 1e-9);
    jnum(&j, "frame_ms", r->frame_ms);
    jnum(&j, "prompt_ms", r->prompt_ms);
    jnum(&j, "prefill_ms", r->prefill_ms);
    jnum(&j, "prefill_cpu_ms", r->prefill_cpu_ms);
    json_stage(&j, "talker", &r->talker, r, r->peak_gflops);
    json_stage(&j, "cp", &r->cp, r, r->peak_gflops);
    json_stage(&j, "decoder", &r->decoder, r, r->peak_gflops_decoder);
    jnum(&j, "ttfa_ms", r->ttfa_ms);
    jnum(&j, "ttfa_cpu_ms", r->ttfa_cpu_ms);
    jnum(&j, "wall_s", r->wall_s);
    jnum(&j, "audio_s", r->audio_s);
    jnum(&j, "rtf", r->rtf);
    jnum(&j, "rtf_steady", r->rtf_steady);
    jnum(&j, "decode_steps", (double)r->decode_steps);
    jnum(&j, "overlapped_steps", (double)r->overlapped_steps);
    jnum(&j, "rtf_cpu", r->rtf_cpu);
    jnum(&j, "rtf_steady_cpu", r->rtf_steady_cpu);
    jnum(&j, "frames_out", (double)r->frames_out);
    jnum(&j, "samples_out", (double)r->samples_out);
    jnum(&j, "batch_wall_s", r->batch_wall_s);
    jnum(&j, "batch_audio_s", r->batch_audio_s);
    jnum(&j, "aggregate_xrt", r->aggregate_xrt);
    jnum(&j, "aggregate_xrt_cpu", r->aggregate_xrt_cpu);
    jnum(&j, "batch_frames_out", (double)r->batch_frames_out);
    jnum(&j, "batch_decode_steps", (double)r->batch_decode_steps);
    jnum(&j, "batch_overlapped_steps", (double)r->batch_overlapped_steps);
    jnum(&j, "batch_samples_out", (double)r->batch_samples_out);
    json_stage(&j, "batch_talker", &r->talker_b, r, r->peak_gflops);
    json_stage(&j, "batch_cp", &r->cp_b, r, r->peak_gflops);
    json_stage(&j, "batch_decoder", &r->decoder_b, r, r->peak_gflops_decoder);
    jnum(&j, "rss_loaded_mb", r->rss_loaded_mb);
    jnum(&j, "peak_rss_load_mb", r->peak_rss_load_mb);
    jnum(&j, "peak_rss_single_mb", r->peak_rss_single_mb);
    jnum(&j, "peak_rss_mb", r->peak_rss_mb);
    if (!cJSON_AddBoolToObject(j.o, "probed", r->probed)) j.bad = 1;
    jnum(&j, "probe_threads", r->probe.threads);
    jstr(&j, "probe_isa", r->probe.isa ? r->probe.isa : "");
    jnum(&j, "probe_buffer_bytes", (double)r->probe.buffer_bytes);
    jnum(&j, "read_gbs_1", r->probe.read_gbs_1);
    jnum(&j, "read_gbs_all", r->probe.read_gbs_all);
    jnum(&j, "fma_gflops_1", r->probe.fma_gflops_1);
    jnum(&j, "fma_gflops_all", r->probe.fma_gflops_all);
    jnum(&j, "bf16_gflops_1", r->probe.bf16_gflops_1);
    jnum(&j, "bf16_gflops_all", r->probe.bf16_gflops_all);
    jnum(&j, "bw_gbs", r->bw_gbs);
    jnum(&j, "peak_gflops", r->peak_gflops);
    char *s = j.bad ? NULL : cJSON_PrintUnformatted(j.o);
    cJSON_Delete(j.o);
    return s;
}
