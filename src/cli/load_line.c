/* "Loading" line on stderr (see load_line.h). */
#include "cli/load_line.h"

#include <string.h>
#include <unistd.h>

#include "core/clock.h"

int cli_load_line_format(const char *step, double done, double elapsed_s, char *buf, size_t size) {
    /* steps that count (the LM weights' layers) show their share; the others begin at 0 */
    if (done > 0 && done < 1) return snprintf(buf, size, "qtts: loading: %s %.0f%% (%.1f s)", step, done * 100.0, elapsed_s);
    return snprintf(buf, size, "qtts: loading: %s (%.1f s)", step, elapsed_s);
}

static void on_progress(void *user, const char *step, double done) {
    cli_load_line *l = user;
    const double now = qtts_now_s();
    if (!strcmp(step, "ready")) {
        cli_load_line_clear(l);
        return;
    }
    if (l->drawn && done > 0 && now - l->last_draw < 0.1) return; /* a new step is always drawn */
    char line[160];
    cli_load_line_format(step, done, now - l->t0, line, sizeof line);
    fprintf(l->out, "\r%s\033[K", line);
    fflush(l->out);
    l->drawn = 1;
    l->last_draw = now;
}

void cli_load_line_attach(cli_load_line *l, qtts_engine_params *ep) {
    memset(l, 0, sizeof *l);
    l->out = stderr;
    l->t0 = qtts_now_s();
    if (!isatty(fileno(stderr))) return;
    ep->load_progress = on_progress;
    ep->load_progress_user = l;
}

void cli_load_line_clear(cli_load_line *l) {
    if (!l->drawn) return;
    fprintf(l->out, "\r\033[K");
    fflush(l->out);
    l->drawn = 0;
}
