/* Progress line on stderr (see progress.h). */
#include "cli/progress.h"
#include "core/clock.h"

#include <unistd.h>

#define DEFAULT_SECONDS_PER_UNIT (1.0 / 14.0) /* ~14 characters of English per second */

void cli_progress_init(cli_progress *p, int mode, int n_utts, size_t total_units) {
    p->out = stderr;
    p->enabled = mode < 0 ? isatty(fileno(stderr)) : mode > 0;
    p->n_utts = n_utts;
    p->total_units = total_units;
    p->done_units = 0;
    p->done_audio_s = 0;
    p->utt = 0;
    p->utt_units = 0;
    p->frames = 0;
    p->audio_s = 0;
    p->t_job = p->t_utt = qtts_now_s();
    p->last_draw = 0;
    p->drawn = 0;
}

void cli_progress_begin(cli_progress *p, int index, size_t units) {
    p->utt = index;
    p->utt_units = units;
    p->frames = 0;
    p->audio_s = 0;
    p->t_utt = qtts_now_s();
    p->last_draw = 0;
}

static void fmt_time(double s, char *buf, size_t size) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
}

int cli_progress_format(const cli_progress *p, double now, int final, char *buf, size_t size) {
    char prefix[32] = "";
    if (p->n_utts > 1) snprintf(prefix, sizeof prefix, "[%d/%d] ", p->utt + 1, p->n_utts);
    double el = now - p->t_utt;
    double rtf = p->audio_s > 0 ? el / p->audio_s : 0;
    if (final)
        return snprintf(buf, size, "%sdone: %d frames, %.1f s audio in %.1f s (RTF %.2f)", prefix, p->frames,
                        p->audio_s, el, rtf);
    int n = snprintf(buf, size, "%s%d frames  %.1f s audio", prefix, p->frames, p->audio_s);
    if (n < 0 || (size_t)n >= size) return n;
    if (p->audio_s > 0) n += snprintf(buf + n, size - (size_t)n, "  RTF %.2f", rtf);
    if ((size_t)n >= size) return n;
    /* ETA over the whole job */
    double job_el = now - p->t_job, job_audio = p->done_audio_s + p->audio_s;
    if (p->total_units && job_audio > 0.5) {
        double spu = p->done_units ? p->done_audio_s / (double)p->done_units : DEFAULT_SECONDS_PER_UNIT;
        double left_audio = (double)(p->total_units - (p->done_units < p->total_units ? p->done_units : p->total_units)) *
                                spu - p->audio_s;
        if (left_audio < 0) left_audio = 0;
        char t[32];
        fmt_time(left_audio * (job_el / job_audio), t, sizeof t);
        n += snprintf(buf + n, size - (size_t)n, "  ETA ~%s", t);
    }
    return n;
}

static void draw(cli_progress *p, int final) {
    char line[256];
    cli_progress_format(p, qtts_now_s(), final, line, sizeof line);
    fprintf(p->out, "\r\033[K%s%s", line, final ? "\n" : "");
    fflush(p->out);
    p->drawn = !final;
}

void cli_progress_update(cli_progress *p, int frames, double audio_seconds) {
    p->frames = frames;
    p->audio_s = audio_seconds;
    if (!p->enabled) return;
    double t = qtts_now_s();
    if (t - p->last_draw < 0.1) return;
    p->last_draw = t;
    draw(p, 0);
}

void cli_progress_end(cli_progress *p, int frames, double audio_seconds) {
    p->frames = frames;
    p->audio_s = audio_seconds;
    if (p->enabled) draw(p, 1);
    p->done_units += p->utt_units;
    p->done_audio_s += audio_seconds;
}

void cli_progress_clear(cli_progress *p) {
    if (p->enabled && p->drawn) {
        fputs("\r\033[K", p->out);
        fflush(p->out);
    }
    p->drawn = 0;
}
