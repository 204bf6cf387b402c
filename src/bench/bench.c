#include "bench/bench.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "engine/decode_policy.h"
#include "engine/overlap.h"
#include "engine/overlap_policy.h"
#include "engine/executor.h"
#include "io/gguf.h"
#include "io/store.h"
#include "model/codec_decoder.h"
#include "model/codec_random.h"
#include "model/generate.h"
#include "model/model_random.h"
#include "model/prompt.h"
#include "tensor/conv.h"
#include "tensor/conv_calibrate.h"
#include "tensor/cpu.h"
#include "tensor/interleave.h"
#include "tensor/interleave_calibrate.h"
#include "text/tokenizer.h"

static const char *const default_text = "Please read this short sentence aloud for the benchmark today.";
static const char *const default_instruct = "A calm, clear voice.";

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

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
    o->overlap = -1;
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

/* ---- one pass: n streams, frames each ---- */

typedef struct {
    int32_t *pending; /* frames waiting for the decoder [n_pending x G] */
    int64_t n_pending, cap;
    int due;               /* decoded in this step */
    double t_first_audio;  /* ms (now_ms) */
    int64_t G;
    int oom;
    qtts_codec_stream *dec;
    float *pcm;
    int64_t frames_out, samples_out;
    int32_t *decoding; /* an overlapped decoder step's frames (swapped out of pending) */
    int64_t cap_decoding;
} bstream;

/* The LM side of an overlapped decoder step (engine/overlap.h). */
typedef struct {
    qtts_batch *b;
    const bstream *st;
    int n;
} bench_lm;

static int bench_lm_step(void *ctx, qtts_pool *lane, qtts_err *err) {
    return qtts_batch_step(((bench_lm *)ctx)->b, lane, err);
}

static int bench_lm_pause(void *ctx) { /* a frame that could not be kept fails the pass */
    const bench_lm *l = ctx;
    for (int i = 0; i < l->n; i++)
        if (l->st[i].oom) return 1;
    return 0;
}

static void on_frame(void *user, qtts_gen_request *req, int64_t frame, const int32_t *codes, int64_t n) {
    (void)req, (void)frame;
    bstream *s = user;
    if (s->n_pending == s->cap) {
        int64_t cap = s->cap ? 2 * s->cap : 4;
        int32_t *p = realloc(s->pending, (size_t)(cap * n) * sizeof *p);
        if (!p) {
            s->oom = 1;
            return;
        }
        s->pending = p;
        s->cap = cap;
    }
    memcpy(s->pending + s->n_pending * n, codes, (size_t)n * sizeof *codes);
    s->n_pending++;
    s->frames_out++;
}

typedef struct {
    const qtts_bench_options *o;
    qtts_bench_result *r;
    qtts_err *err;
    int rc;
    qtts_talker_model *m;
    qtts_store *codec_store; /* random codec weights (outlive the decoder) */
    qtts_codec_decoder *dec;
    qtts_tokenizer *tok;
    int32_t *text_ids, *instr_ids;
    int n_text, n_instr;
    float *xvec;
    const char *speaker;
    qtts_mode mode;
} bench_ctx;

typedef struct {
    double prompt_ms, prefill_ms, ttfa_ms, wall_s;
    double prompt_cpu_ms, prefill_cpu_ms, ttfa_cpu_ms, cpu_s; /* engine-thread CPU time */
    int64_t frames_out, samples_out, prompt_rows;
    int64_t decode_steps, overlapped_steps;
    qtts_bench_stage talker, cp, decoder;
} pass_result;

static void stage_from(qtts_bench_stage *s, const qtts_stage_time *t) {
    memset(s, 0, sizeof *s);
    if (t->calls <= 0) return;
    s->calls = t->calls;
    s->ms = (double)t->wall_ns * 1e-6 / (double)t->calls;
    s->cpu_ms = (double)t->cpu_ns * 1e-6 / (double)t->calls;
    s->rows = (double)t->rows / (double)t->calls;
}

static void add_time(qtts_stage_time *a, const qtts_stage_time *b) {
    a->wall_ns += b->wall_ns;
    a->cpu_ns += b->cpu_ns;
    a->calls += b->calls;
    a->rows += b->rows;
}

static int run_pass(bench_ctx *c, qtts_pool *pool, int n, pass_result *pr) {
    qtts_err *err = c->err;
    const qtts_talker_model *m = c->m;
    const int64_t G = m->cfg.num_code_groups, fs = qtts_codec_decoder_frame_samples(c->dec);
    memset(pr, 0, sizeof *pr);
    int rc = -1;
    bstream *st = calloc((size_t)n, sizeof *st);
    qtts_gen_request **req = calloc((size_t)n, sizeof *req);
    qtts_codec_stream **ds = calloc((size_t)n, sizeof *ds);
    const int32_t **cs = calloc((size_t)n, sizeof *cs);
    int64_t *nf = calloc((size_t)n, sizeof *nf);
    float **outs = calloc((size_t)n, sizeof *outs);
    qtts_batch *b = qtts_batch_new(m, err);
    if (!st || !req || !ds || !cs || !nf || !outs || !b) {
        if (b) qtts_fail(err, "bench: out of memory");
        goto done;
    }
    qtts_gen_params gp;
    qtts_gen_params_from_config(&gp, &m->gen);
    gp.max_frames = c->o->frames;
    gp.min_new_tokens = (int64_t)c->o->frames + 2; /* EOS masked: exactly `frames` frames */
    qtts_prompt_spec spec = {.mode = c->mode,
                             .text_ids = c->text_ids,
                             .n_text_ids = c->n_text,
                             .instruct_ids = c->instr_ids,
                             .n_instruct_ids = c->n_instr,
                             .xvector = c->xvec,
                             .speaker = c->speaker,
                             .non_streaming = -1};

    const double t_start = qtts_now_ms(), c_start = thread_cpu_ms();
    qtts_stage_time dec_steady = {0, 0, 0, 0};
    qtts_overlap_stats ostats = {{0, 0}, 0};
    double cycle_t0 = 0; /* end of the last decoder step (the first cycle holds the prefill: not recorded) */
    int64_t cycle_frames0 = 0;
    for (int i = 0; i < n; i++) {
        st[i].G = G;
        gp.seed = c->o->seed + (uint64_t)i;
        gp.stream = (uint64_t)i;
        double t0 = qtts_now_ms(), c0 = thread_cpu_ms();
        qtts_prompt p;
        if (qtts_prompt_build(m, pool, &spec, &p, err)) goto done;
        if (i == 0) {
            pr->prompt_ms = qtts_now_ms() - t0;
            pr->prompt_cpu_ms = thread_cpu_ms() - c0;
        }
        pr->prompt_rows = p.n_rows;
        req[i] = qtts_gen_request_from_prompt(m, &p, &gp, err);
        qtts_prompt_free(&p);
        if (!req[i]) goto done;
        qtts_gen_request_set_callback(req[i], on_frame, &st[i]);
        if (!(st[i].dec = qtts_codec_stream_new(c->dec, err)) ||
            !(st[i].pcm = qtts_malloc((size_t)fs * sizeof(float), err)) || qtts_batch_add(b, req[i], err))
            goto done;
    }
    for (int step = 0;; step++) {
        int left = qtts_batch_step(b, pool, err);
        if (left < 0) goto done;
        if (step == 0) {
            qtts_batch_timing t;
            qtts_batch_get_timing(b, &t);
            pr->prefill_ms = pr->prompt_ms + (double)t.prefill.wall_ns * 1e-6;
            pr->prefill_cpu_ms = pr->prompt_cpu_ms + (double)t.prefill.cpu_ns * 1e-6;
            /* time to first audio on an undisturbed machine: everything before the first decode */
            pr->ttfa_cpu_ms = pr->prompt_cpu_ms + (double)(t.prefill.cpu_ns + t.cp.cpu_ns + t.talker.cpu_ns) * 1e-6;
            /* with more frames to come, the first frame is warm-up: measure the rest */
            if (c->o->frames > 2) qtts_batch_reset_timing(b);
        }
        /* decode the due streams' new frames in one batched step (the engine's policy) */
        int k = 0;
        const double now = qtts_now_ms();
        for (int i = 0; i < n; i++) {
            if (st[i].oom) {
                qtts_fail(err, "bench: out of memory collecting frames");
                goto done;
            }
            st[i].due = qtts_decode_due(st[i].n_pending, qtts_gen_request_finished(req[i]), st[i].samples_out, fs,
                                        qtts_codec_decoder_sample_rate(c->dec), t_start, st[i].t_first_audio, now);
            if (!st[i].due) continue;
            if (st[i].n_pending > 1) {
                float *p = realloc(st[i].pcm, (size_t)(st[i].n_pending * fs) * sizeof(float));
                if (!p) {
                    qtts_fail(err, "bench: out of memory");
                    goto done;
                }
                st[i].pcm = p;
            }
            ds[k] = st[i].dec;
            cs[k] = st[i].pending;
            nf[k] = st[i].n_pending;
            outs[k] = st[i].pcm;
            k++;
        }
        /* as the engine: with two threads or more, maybe beside more LM steps (engine/overlap_policy.h) */
        int possible = k && c->o->overlap != 0 && qtts_pool_size(pool) >= 2;
        for (int i = 0; i < n && possible; i++)
            if (qtts_gen_request_finished(req[i]) || (st[i].due && !st[i].samples_out)) possible = 0;
        const int overlap = possible && (c->o->overlap == 1 || qtts_overlap_choose(&ostats));
        if (overlap) {
            for (int i = 0, q = 0; i < n; i++) {
                if (!st[i].due) continue;
                int32_t *codes = st[i].pending;
                int64_t cap = st[i].cap;
                st[i].pending = st[i].decoding;
                st[i].cap = st[i].cap_decoding;
                st[i].decoding = codes;
                st[i].cap_decoding = cap;
                st[i].n_pending = 0;
                cs[q++] = codes;
            }
            bench_lm lm = {b, st, n};
            qtts_overlap_step ov = {.dec = c->dec, .streams = ds, .codes = cs, .n_frames = nf, .n = k, .out = outs,
                                    .lm_step = bench_lm_step, .lm_pause = bench_lm_pause, .lm_ctx = &lm};
            if (qtts_overlap_run(pool, &ov, err)) goto done;
            if (ov.lm_steps) left = ov.lm_left;
            int64_t frames = 0, steps = 0;
            for (int i = 0, q = 0; i < n; i++) {
                if (!st[i].due) continue;
                if (nf[q] > steps) steps = nf[q];
                st[i].samples_out += nf[q] * fs;
                frames += nf[q];
                q++;
            }
            qtts_stage_time one = {(int64_t)(ov.decoder_ms * 1e6), (int64_t)(ov.decoder_ms * 1e6), steps, frames};
            add_time(&dec_steady, &one);
            pr->overlapped_steps++;
        } else if (k) {
            double t0 = qtts_now_ms(), c0 = thread_cpu_ms();
            if (qtts_codec_decode_step_batch(c->dec, pool, ds, cs, nf, k, outs, err)) goto done;
            double t1 = qtts_now_ms(), c1 = thread_cpu_ms();
            if (pr->ttfa_ms == 0) {
                pr->ttfa_ms = t1 - t_start;
                pr->ttfa_cpu_ms += c1 - c0;
            }
            int64_t frames = 0, steps = 0; /* steps: frames per stream in this call (the figures are per frame step) */
            for (int i = 0; i < n; i++) {
                if (!st[i].due) continue;
                if (st[i].n_pending > steps) steps = st[i].n_pending;
                if (!st[i].samples_out) st[i].t_first_audio = t1;
                st[i].samples_out += st[i].n_pending * fs;
                frames += st[i].n_pending;
                st[i].n_pending = 0;
            }
            if (step > 0 || c->o->frames <= 2) {
                qtts_stage_time one = {(int64_t)((t1 - t0) * 1e6), (int64_t)((c1 - c0) * 1e6), steps, frames};
                add_time(&dec_steady, &one);
            }
        }
        if (k) { /* a decode cycle ends: from the last decoder step to this one, per frame generated */
            pr->decode_steps++;
            const double end = qtts_now_ms();
            int64_t total = 0;
            for (int i = 0; i < n; i++) total += st[i].frames_out;
            if (possible && c->o->overlap < 0 && cycle_t0 > 0 && total > cycle_frames0)
                qtts_overlap_record(&ostats, overlap, (end - cycle_t0) / (double)(total - cycle_frames0));
            cycle_t0 = end;
            cycle_frames0 = total;
        }
        int pending = 0; /* frames the LM steps beside an overlapped decoder step left */
        for (int i = 0; i < n; i++) pending |= st[i].n_pending > 0;
        if (left == 0 && !pending) break;
    }
    pr->wall_s = (qtts_now_ms() - t_start) * 1e-3;
    pr->cpu_s = (thread_cpu_ms() - c_start) * 1e-3;
    qtts_batch_timing t;
    qtts_batch_get_timing(b, &t);
    stage_from(&pr->talker, &t.talker);
    stage_from(&pr->cp, &t.cp);
    stage_from(&pr->decoder, &dec_steady);
    for (int i = 0; i < n; i++) {
        if (qtts_gen_request_stop_reason(req[i]) != QTTS_STOP_MAX_FRAMES) {
            qtts_fail(err, "bench: stream %d stopped early (reason %d) after %lld frames", i,
                      (int)qtts_gen_request_stop_reason(req[i]), (long long)st[i].frames_out);
            goto done;
        }
        pr->frames_out += st[i].frames_out;
        pr->samples_out += st[i].samples_out;
    }
    rc = 0;
done:
    if (b) qtts_batch_free(b);
    for (int i = 0; st && i < n; i++) {
        if (req) qtts_gen_request_free(req[i]);
        qtts_codec_stream_free(st[i].dec);
        free(st[i].pending);
        free(st[i].decoding);
        free(st[i].pcm);
    }
    free(st);
    free(req);
    free(ds);
    free(cs);
    free(nf);
    free(outs);
    return rc;
}

/* Keeps the best (smallest) time of each figure over runs. */
static void keep_min(double *best, double v, int first) {
    if (first || v < *best) *best = v;
}
static void stage_best(qtts_bench_stage *best, const qtts_bench_stage *s, int first) {
    if (first) {
        *best = *s;
        return;
    }
    keep_min(&best->ms, s->ms, 0);
    keep_min(&best->cpu_ms, s->cpu_ms, 0);
}
static void pass_best(pass_result *best, const pass_result *p, int first) {
    if (first) {
        *best = *p;
        return;
    }
    keep_min(&best->prompt_ms, p->prompt_ms, 0);
    keep_min(&best->prefill_ms, p->prefill_ms, 0);
    keep_min(&best->ttfa_ms, p->ttfa_ms, 0);
    keep_min(&best->wall_s, p->wall_s, 0);
    keep_min(&best->prompt_cpu_ms, p->prompt_cpu_ms, 0);
    keep_min(&best->prefill_cpu_ms, p->prefill_cpu_ms, 0);
    keep_min(&best->ttfa_cpu_ms, p->ttfa_cpu_ms, 0);
    keep_min(&best->cpu_s, p->cpu_s, 0);
    stage_best(&best->talker, &p->talker, 0);
    stage_best(&best->cp, &p->cp, 0);
    stage_best(&best->decoder, &p->decoder, 0);
}

static void stage_rates(qtts_bench_stage *s, double bytes, double flop_per_row) {
    s->bytes = bytes;
    s->flop = flop_per_row * s->rows;
    s->gbs = s->ms > 0 ? bytes / s->ms * 1e-6 : 0;
    s->gflops = s->ms > 0 ? s->flop / s->ms * 1e-6 : 0;
    s->gbs_cpu = s->cpu_ms > 0 ? bytes / s->cpu_ms * 1e-6 : 0;
    s->gflops_cpu = s->cpu_ms > 0 ? s->flop / s->cpu_ms * 1e-6 : 0;
}

/* ---- setup: model, decoder, prompt inputs ---- */

/* Random weights go through a file, as a checkpoint would: written to an
 * unlinked temporary GGUF and mapped back, so the loader makes the same
 * views and copies, and the engine's page release after load applies (the
 * RSS figures then mean what they mean for a real model). On failure (no
 * space) the in-memory store is kept and *note says so. */
static qtts_store *through_file(qtts_store *st, const char **note, qtts_err *err) {
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/qtts-bench-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        *note = "random weights kept in memory (no temporary file)";
        return st;
    }
    close(fd);
    qtts_err werr = {0};
    if (qtts_gguf_write(path, st, NULL, 0, &werr)) {
        unlink(path);
        *note = "random weights kept in memory (temporary file not written)";
        return st;
    }
    qtts_store *mapped = qtts_gguf_open(path, err);
    unlink(path); /* the mapping stays valid */
    qtts_store_free(st);
    return mapped;
}

static int setup(bench_ctx *c, qtts_pool *pool) {
    const qtts_bench_options *o = c->o;
    qtts_bench_result *r = c->r;
    qtts_err *err = c->err;
    double t0 = qtts_now_ms();
    /* the loader's decisions, measured on this pool as the engine loader does (engine_tuning.c) */
    qtts_weight_layout layout = {{0, 0, 0}, {0, 0, 0}};
    if (o->wtype == QTTS_Q8_0 || o->wtype == QTTS_Q4_K) {
        qtts_interleave_measure(pool, o->wtype, &r->interleave_cal);
        *(o->wtype == QTTS_Q8_0 ? &layout.q8_0 : &layout.q4_k) = qtts_interleave_calibration_choice(&r->interleave_cal);
    }
    qtts_conv_measure(&r->conv_cal);
    qtts_talker_options opt = {.weight_type = o->wtype, .pool = pool, .layout = &layout};
    if (o->model_path) {
        if (!(c->m = qtts_talker_model_load(o->model_path, &opt, err)) ||
            !(c->dec = qtts_codec_decoder_open(o->model_path, err)) || !(c->tok = qtts_tok_load(o->model_path, err)))
            return -1;
    } else {
        qtts_codec_config cc;
        qtts_codec_config_real(&cc);
        qtts_model_config mc;
        qtts_store *st = NULL;
        /* both checkpoints written before either is loaded: random weights built in memory beside a
         * loaded model would add to the peak RSS what loading a real checkpoint does not */
        if (qtts_model_random_config(&mc, o->size, o->variant, err) ||
            !(st = qtts_model_random_store(&mc, o->wtype, o->seed, err)) ||
            !(st = through_file(st, &r->weights_note, err)) ||
            !(c->codec_store = qtts_codec_random_store(&cc, o->seed, err)) ||
            !(c->codec_store = through_file(c->codec_store, &r->weights_note, err))) {
            qtts_store_free(st);
            return -1;
        }
        opt.weight_type = QTTS_DTYPE_INVALID; /* generated as o->wtype */
        if (!(c->m = qtts_talker_model_from_store(st, &mc, NULL, &opt, err)) ||
            !(c->dec = qtts_codec_decoder_load(c->codec_store, &cc, err)))
            return -1;
    }
    /* as the engine does after load: mapped originals that were converted leave the RSS, and the heap's
     * holes go back to the system before and after the decoder's conversion (engine_load.c) */
    qtts_store_release_pages(c->m->store);
    qtts_store_release_pages(c->codec_store);
    qtts_store_release_pages(qtts_codec_decoder_owned_store(c->dec));
    qtts_heap_trim();
    qtts_decoder_precision prec;
    if (qtts_decoder_precision_choose(o->decoder_precision, c->m->lm.layers[0].q.type, &r->conv_cal, &prec, err) ||
        qtts_codec_decoder_set_precision(c->dec, prec, err))
        return -1;
    snprintf(r->decoder_precision, sizeof r->decoder_precision, "%s", qtts_decoder_precision_name(prec));
    if (qtts_kv_type_choose(o->kv_cache, c->m->lm.layers[0].q.type, &c->m->kv_type, err)) return -1;
    snprintf(r->kv_cache, sizeof r->kv_cache, "%s", qtts_dtype_name(c->m->kv_type));
    qtts_heap_trim();
    r->load_s = (qtts_now_ms() - t0) * 1e-3;
    const qtts_model_config *cfg = &c->m->cfg;
    snprintf(r->variant, sizeof r->variant, "%s", qtts_variant_name(cfg->variant));
    const qtts_dtype q = c->m->lm.layers[0].q.type;
    snprintf(r->quant, sizeof r->quant, "%s", qtts_dtype_name(q));

    /* the prompt: a 10-word sentence in the chat template */
    if (c->tok) {
        const char *text = o->text && *o->text ? o->text : default_text;
        if (qtts_tok_encode_template(c->tok, QTTS_TEMPLATE_TARGET, text, &c->text_ids, &c->n_text, err)) return -1;
        if (cfg->variant == QTTS_VARIANT_VOICE_DESIGN &&
            qtts_tok_encode_template(c->tok, QTTS_TEMPLATE_INSTRUCT, default_instruct, &c->instr_ids, &c->n_instr, err))
            return -1;
    } else {
        /* no tokenizer with random weights: the template around 12 word-piece
         * ids (what a 10-word sentence tokenizes to) from the rows that hold
         * random values */
        enum { WORDS = 12 };
        if (!(c->text_ids = qtts_malloc((WORDS + 8) * sizeof(int32_t), err)) ||
            !(c->instr_ids = qtts_malloc(10 * sizeof(int32_t), err)))
            return -1;
        int32_t *t = c->text_ids, k = 0;
        t[k++] = (int32_t)cfg->im_start, t[k++] = (int32_t)cfg->assistant, t[k++] = 198;
        for (int i = 0; i < WORDS; i++) t[k++] = 1000 + 211 * i % 3000;
        t[k++] = (int32_t)cfg->im_end, t[k++] = 198;
        t[k++] = (int32_t)cfg->im_start, t[k++] = (int32_t)cfg->assistant, t[k++] = 198;
        c->n_text = k;
        if (cfg->variant == QTTS_VARIANT_VOICE_DESIGN) {
            int32_t *u = c->instr_ids;
            k = 0;
            u[k++] = (int32_t)cfg->im_start, u[k++] = 872 /* "user" */, u[k++] = 198;
            for (int i = 0; i < 5; i++) u[k++] = 2000 + 97 * i;
            u[k++] = (int32_t)cfg->im_end, u[k++] = 198;
            c->n_instr = k;
        }
    }
    if (cfg->variant != QTTS_VARIANT_VOICE_DESIGN) c->n_instr = 0;
    r->prompt_tokens = c->n_text;
    switch (cfg->variant) {
    case QTTS_VARIANT_CUSTOM_VOICE:
        if (cfg->n_speakers < 1) return qtts_fail(err, "bench: the CustomVoice model lists no speaker");
        c->mode = QTTS_MODE_CUSTOM_VOICE;
        c->speaker = cfg->speakers[0].name;
        break;
    case QTTS_VARIANT_VOICE_DESIGN: c->mode = QTTS_MODE_VOICE_DESIGN; break;
    default: {
        /* Base: an x-vector clone prompt with a fixed synthetic speaker vector */
        const int64_t D = cfg->talker.hidden;
        if (!(c->xvec = qtts_malloc((size_t)D * sizeof(float), err))) return -1;
        for (int64_t i = 0; i < D; i++) c->xvec[i] = 0.05f * sinf(0.37f * (float)i);
        c->mode = QTTS_MODE_CLONE_XVEC;
    }
    }
    (void)pool;
    model_costs(c->m, r);
    r->decoder_flop_per_frame = 2 * qtts_codec_decoder_macs_per_frame(c->dec);
    r->frame_ms = 1e3 * (double)qtts_codec_decoder_frame_samples(c->dec) / (double)qtts_codec_decoder_sample_rate(c->dec);
    return 0;
}

static void job(qtts_pool *pool, void *arg) {
    bench_ctx *c = arg;
    const qtts_bench_options *o = c->o;
    qtts_bench_result *r = c->r;
    c->rc = -1;
    if (setup(c, pool)) return;
    r->rss_loaded_mb = rss_mb("VmRSS");
    r->peak_rss_load_mb = rss_mb("VmHWM");
    /* restart the high-water mark: the peaks below are those of synthesis
     * (Linux: "5" resets VmHWM to the current RSS; where refused they include the load) */
    FILE *cr = fopen("/proc/self/clear_refs", "w");
    r->peak_reset = cr && fputs("5", cr) >= 0;
    if (cr && fclose(cr)) r->peak_reset = 0;

    pass_result best, p;
    memset(&best, 0, sizeof best);
    for (int i = 0; i < o->runs; i++) {
        if (run_pass(c, pool, 1, &p)) return;
        pass_best(&best, &p, i == 0);
    }
    r->prompt_rows = best.prompt_rows;
    r->prompt_ms = best.prompt_ms;
    r->prefill_ms = best.prefill_ms;
    r->ttfa_ms = best.ttfa_ms;
    r->wall_s = best.wall_s;
    r->frames_out = best.frames_out;
    r->samples_out = best.samples_out;
    r->decode_steps = p.decode_steps;
    r->overlapped_steps = p.overlapped_steps;
    r->audio_s = (double)best.samples_out / (double)qtts_codec_decoder_sample_rate(c->dec);
    r->rtf = r->audio_s > 0 ? r->wall_s / r->audio_s : 0;
    r->talker = best.talker;
    r->cp = best.cp;
    r->decoder = best.decoder;
    r->rtf_steady = (r->talker.ms + r->cp.ms + r->decoder.ms) / r->frame_ms;
    r->prefill_cpu_ms = best.prefill_cpu_ms;
    r->ttfa_cpu_ms = best.ttfa_cpu_ms;
    r->rtf_cpu = r->audio_s > 0 ? best.cpu_s / r->audio_s : 0;
    r->rtf_steady_cpu = (r->talker.cpu_ms + r->cp.cpu_ms + r->decoder.cpu_ms) / r->frame_ms;
    r->peak_rss_single_mb = rss_mb("VmHWM");

    if (o->batch > 1) {
        for (int i = 0; i < o->runs; i++) {
            if (run_pass(c, pool, o->batch, &p)) return;
            pass_best(&best, &p, i == 0);
        }
        r->batch_wall_s = best.wall_s;
        r->batch_frames_out = best.frames_out;
        r->batch_samples_out = best.samples_out;
        r->batch_decode_steps = best.decode_steps;
        r->batch_overlapped_steps = best.overlapped_steps;
        r->batch_audio_s = (double)best.samples_out / (double)qtts_codec_decoder_sample_rate(c->dec);
        r->aggregate_xrt = r->batch_wall_s > 0 ? r->batch_audio_s / r->batch_wall_s : 0;
        r->aggregate_xrt_cpu = best.cpu_s > 0 ? r->batch_audio_s / best.cpu_s : 0;
        r->talker_b = best.talker;
        r->cp_b = best.cp;
        r->decoder_b = best.decoder;
    }
    r->peak_rss_mb = rss_mb("VmHWM");

    /* rates, then the machine's limits (after the RSS reading: the probe's buffer is not the workload's).
     * A talker step reads its weights once and each stream's KV cache, on average at the middle
     * position of the measured steps. */
    const qtts_lm_config *tc = &c->m->cfg.talker;
    const double kv_per_pos = (double)tc->layers * 2.0 * (double)(tc->kv_heads * tc->head_dim) *
                              (c->m->kv_type == QTTS_F16 ? 2.0 : 4.0);
    r->talker_kv_bytes = kv_per_pos * ((double)r->prompt_rows + 0.5 * (double)r->frames);
    stage_rates(&r->talker, r->talker_weight_bytes + r->talker_kv_bytes, r->talker_flop_per_row);
    stage_rates(&r->cp, r->cp_weight_bytes, r->cp_flop_per_row);
    stage_rates(&r->decoder, 0, r->decoder_flop_per_frame);
    stage_rates(&r->talker_b, r->talker_weight_bytes + r->talker_b.rows * r->talker_kv_bytes, r->talker_flop_per_row);
    stage_rates(&r->cp_b, r->cp_weight_bytes, r->cp_flop_per_row);
    stage_rates(&r->decoder_b, 0, r->decoder_flop_per_frame);
    if (o->probe) {
        if (qtts_probe_run(pool, o->probe_bytes, &r->probe, c->err)) return;
        r->probed = 1;
        int one = qtts_pool_size(pool) == 1;
        r->bw_gbs = one ? r->probe.read_gbs_1 : r->probe.read_gbs_all;
        r->peak_gflops = one ? r->probe.fma_gflops_1 : r->probe.fma_gflops_all;
        r->peak_gflops_decoder = r->peak_gflops;
        if (!strcmp(r->decoder_precision, "bf16"))
            r->peak_gflops_decoder = one ? r->probe.bf16_gflops_1 : r->probe.bf16_gflops_all;
    }
    c->rc = 0;
}

int qtts_bench_run(const qtts_bench_options *o, qtts_bench_result *r, qtts_err *err) {
    memset(r, 0, sizeof *r);
    if (o->frames < 1 || o->frames > 100000) return qtts_fail(err, "bench: --frames must be 1..100000 (got %d)", o->frames);
    if (o->batch < 1 || o->batch > 256) return qtts_fail(err, "bench: --batch must be 1..256 (got %d)", o->batch);
    if (o->runs < 1 || o->runs > 100) return qtts_fail(err, "bench: --runs must be 1..100 (got %d)", o->runs);
    if (o->threads < 0 || o->threads > 256) return qtts_fail(err, "bench: --threads must be 1..256 (got %d)", o->threads);
    if (!o->model_path && (!o->size || !*o->size)) return qtts_fail(err, "bench: no model size");
    int threads = o->threads;
    if (threads == 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)(n < 256 ? n : 256) : 1;
    }
    snprintf(r->source, sizeof r->source, "%s", o->model_path ? "folder" : "random");
    snprintf(r->model, sizeof r->model, "%s", o->model_path ? o->model_path : o->size);
    snprintf(r->isa, sizeof r->isa, "%s", qtts_isa_name(qtts_cpu_isa()));
    r->threads = threads;
    r->frames = o->frames;
    r->batch = o->batch;
    r->runs = o->runs;

    qtts_exec *ex = qtts_exec_create(threads, err);
    if (!ex) return -1;
    bench_ctx c;
    memset(&c, 0, sizeof c);
    c.o = o;
    c.r = r;
    c.err = err;
    qtts_exec_call(ex, job, &c);
    /* freeing touches no compute; the engine thread is stopped first */
    qtts_exec_free(ex);
    qtts_talker_model_free(c.m);
    qtts_codec_decoder_free(c.dec);
    qtts_store_free(c.codec_store);
    if (c.tok) qtts_tok_free(c.tok);
    free(c.text_ids);
    free(c.instr_ids);
    free(c.xvec);
    return c.rc;
}

/* ---- output ---- */

static double pct(double a, double b) { return b > 0 ? 100 * a / b : 0; }

static void print_stage(FILE *f, const char *name, const qtts_bench_stage *s, const qtts_bench_result *r,
                        double peak) {
    fprintf(f, "  %-20s %9.2f %9.2f", name, s->ms, s->cpu_ms);
    if (s->bytes > 0)
        fprintf(f, " %7.1f %4.0f%% %7.1f %4.0f%%", s->gbs, pct(s->gbs, r->bw_gbs), s->gbs_cpu, pct(s->gbs_cpu, r->bw_gbs));
    else
        fprintf(f, " %7s %5s %7s %5s", "-", "-", "-", "-");
    fprintf(f, " %8.1f %4.0f%% %8.1f %4.0f%%\n", s->gflops, pct(s->gflops, peak), s->gflops_cpu,
            pct(s->gflops_cpu, peak));
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
    if (r->weights_note) fprintf(f, "  note: %s\n", r->weights_note);
    /* the choices made by measurement at load (tensor/interleave_calibrate.h, conv_calibrate.h) */
    const qtts_dtype qt = !strcmp(r->quant, "q8_0") ? QTTS_Q8_0 : !strcmp(r->quant, "q4_k") ? QTTS_Q4_K : QTTS_F32;
    if (qt != QTTS_F32 && qtts_interleave_kernels()) {
        const qtts_interleave_calibration *ic = &r->interleave_cal;
        fprintf(f, "  %s layout: %s%s%s (measured at load: 16-row interleaved %.1f GB/s, GGML rows %.1f GB/s", r->quant,
                ic->faster ? "16-row interleaved" : "GGML rows", ic->prefetch ? ", prefetching" : "",
                ic->lockstep ? ", groups in lockstep" : "", ic->x16_gbs, ic->row_gbs);
        if (qtts_cpu_isa() == QTTS_ISA_AVX2)
            fprintf(f, "; prefetching %.1f / %.1f GB/s, interleaved groups by super-block %.1f", ic->x16_pf_gbs,
                    ic->row_pf_gbs, ic->x16_blocks_gbs);
        fprintf(f, " on %d threads; 8 tokens %.0f / %.0f GFLOP/s)\n", ic->threads, ic->x16_batch_gflops,
                ic->row_batch_gflops);
    }
    const qtts_conv_calibration *cc = &r->conv_cal;
    fprintf(f, "  decoder convolutions measured at load (1 thread, direct-conv FLOPs): f32 %.0f, Winograd %.0f", cc->f32_gflops,
            cc->winograd_gflops);
    if (cc->bf16_available) fprintf(f, ", bf16 %.0f", cc->bf16_gflops);
    if (cc->i16_available)
        fprintf(f, ", Winograd int16 %.0f (%s tile)", cc->i16_gflops, qtts_conv_tile_i16_name(QTTS_CONV_ISA_AUTO));
    fprintf(f, " GFLOP/s (auto takes another path than f32 with quantized weights only at >= 1.1x)\n");
    if (r->probed)
        fprintf(f, "machine (probe, %s, %.0f MiB buffer): read %.1f GB/s on 1 thread, %.1f GB/s on %d; f32 FMA peak "
                   "%.0f GFLOP/s on 1 thread, %.0f on %d (ratios below use the %d-thread figures)\n",
                r->probe.isa, (double)r->probe.buffer_bytes / 1048576.0, r->probe.read_gbs_1, r->probe.read_gbs_all,
                r->probe.threads, r->probe.fma_gflops_1, r->probe.fma_gflops_all, r->probe.threads, r->probe.threads);
    if (r->probed && r->probe.bf16_gflops_all > 0)
        fprintf(f, "  bf16 dot-product peak (vdpbf16ps / bfdot) %.0f GFLOP/s on 1 thread, %.0f on %d%s\n", r->probe.bf16_gflops_1,
                r->probe.bf16_gflops_all, r->probe.threads,
                strcmp(r->decoder_precision, "bf16") ? "" : " (the decoder's %pk below uses it)");
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
    const qtts_conv_calibration *cc = &r->conv_cal; /* what decided "auto" */
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
