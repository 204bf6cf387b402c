/* CLI progress line: formatting, RTF/ETA arithmetic, silence when disabled.
 * progress.c belongs to the qtts binary, not the library, so it is compiled
 * into this test directly. */
#include <string.h>

#include "cli/progress.c"
#include "harness.h"

int main(void) {
    cli_progress p;
    char line[256];
    cli_progress_init(&p, 0, 4, 400);
    p.t_job = 100.0;
    cli_progress_begin(&p, 0, 100);
    p.t_utt = 100.0;
    p.frames = 125, p.audio_s = 10.0;
    cli_progress_format(&p, 104.0, 0, line, sizeof line);
    /* RTF 4/10; no utterance done: 1/14 s per unit -> 400/14 - 10 = 18.57 s left * 0.4 = 7.4 s */
    TEST_CHECK(!strcmp(line, "[1/4] 125 frames  10.0 s audio  RTF 0.40  ETA ~0:07"), "running line: [%s]", line);
    cli_progress_format(&p, 104.0, 1, line, sizeof line);
    TEST_CHECK(!strcmp(line, "[1/4] done: 125 frames, 10.0 s audio in 4.0 s (RTF 0.40)"), "final line: [%s]", line);

    /* After one utterance of 100 units gave 10 s: 0.1 s/unit; 300 units left -> 30 s of audio. */
    p.done_units = 100, p.done_audio_s = 10.0;
    cli_progress_begin(&p, 1, 100);
    p.t_utt = 104.0;
    p.frames = 25, p.audio_s = 2.0;
    cli_progress_format(&p, 105.0, 0, line, sizeof line);
    /* job: 5 s for 12 s of audio; left (300 * 0.1 - 2) = 28 s * 5/12 = 11.7 s */
    TEST_CHECK(!strcmp(line, "[2/4] 25 frames  2.0 s audio  RTF 0.50  ETA ~0:12"), "second line: [%s]", line);

    /* One utterance, unknown size: no prefix, no ETA. */
    cli_progress_init(&p, 0, 1, 0);
    cli_progress_begin(&p, 0, 0);
    p.t_utt = 0;
    p.frames = 0, p.audio_s = 0;
    cli_progress_format(&p, 1.0, 0, line, sizeof line);
    TEST_CHECK(!strcmp(line, "0 frames  0.0 s audio"), "bare line: [%s]", line);

    /* Disabled: nothing written. */
    FILE *f = tmpfile();
    cli_progress_init(&p, 0, 2, 10);
    p.out = f;
    cli_progress_begin(&p, 0, 5);
    cli_progress_update(&p, 10, 0.8);
    cli_progress_end(&p, 12, 0.96);
    cli_progress_clear(&p);
    TEST_CHECK(ftell(f) == 0, "disabled progress wrote %ld bytes", ftell(f));
    TEST_CHECK(p.done_units == 5 && p.done_audio_s > 0.95, "end() accounts the utterance");
    /* Enabled: \r-rewritten line, final newline. */
    cli_progress_init(&p, 1, 2, 10);
    p.out = f;
    cli_progress_begin(&p, 0, 5);
    cli_progress_update(&p, 10, 0.8);
    cli_progress_end(&p, 12, 0.96);
    long n = ftell(f);
    char got[512] = {0};
    rewind(f);
    size_t k = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    TEST_CHECK(n > 0 && got[0] == '\r' && got[k - 1] == '\n' && strstr(got, "[1/2] done: 12 frames"),
               "enabled output: [%s]", got);
    return test_finish("test_progress");
}
