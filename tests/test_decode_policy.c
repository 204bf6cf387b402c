/* The engine's decoder-step policy (src/engine/decode_policy.h): first frame
 * at once, larger steps only with enough lead, largest when already behind.
 * And the property it relies on: a real-time listener never starves, i.e.
 * whenever a step of c > 1 frames is chosen, the lead covers 1.25x the time
 * the c frames take at the stream's pace. */
#include "engine/decode_policy.h"
#include "engine/overlap_policy.h"
#include "harness.h"

int main(void) {
    TEST_CHECK(qtts_decode_chunk_target(0, 0, 50) == 1, "first frame must be decoded at once");
    TEST_CHECK(qtts_decode_chunk_target(0, -500, 50) == 1, "first frame at once even when behind");
    TEST_CHECK(qtts_decode_chunk_target(3, -1, 50) == QTTS_DECODE_MAX_CHUNK, "behind real time: largest steps");
    TEST_CHECK(qtts_decode_chunk_target(3, 100, 50) == 1, "lead 100 ms at 50 ms/frame: 1 frame (2 need 125)");
    TEST_CHECK(qtts_decode_chunk_target(3, 125, 50) == 2, "lead 125 ms at 50 ms/frame: 2 frames");
    TEST_CHECK(qtts_decode_chunk_target(3, 249, 50) == 2, "lead 249 ms at 50 ms/frame: 2 frames (4 need 250)");
    TEST_CHECK(qtts_decode_chunk_target(3, 250, 50) == 4, "lead 250 ms at 50 ms/frame: 4 frames");
    TEST_CHECK(qtts_decode_chunk_target(3, 1e6, 50) == QTTS_DECODE_MAX_CHUNK, "never above the maximum");
    int safe = 1;
    for (int lead = 0; lead <= 2000; lead += 7)
        for (int pace = 1; pace <= 400; pace += 3) {
            int64_t c = qtts_decode_chunk_target(5, lead, pace);
            if (c < 1 || c > QTTS_DECODE_MAX_CHUNK || (c > 1 && lead < 1.25 * (double)c * pace)) safe = 0;
        }
    TEST_CHECK(safe, "a step of c > 1 frames was chosen without a lead of 1.25 x c x pace");
    /* the per-stream wrapper: nothing pending, a finished stream, the first frame */
    TEST_CHECK(!qtts_decode_due(0, 1, 1920, 1920, 24000, 0, 10, 100), "nothing pending is never due");
    TEST_CHECK(qtts_decode_due(1, 1, 19200, 1920, 24000, 0, 10, 100), "a finished stream always flushes");
    TEST_CHECK(qtts_decode_due(1, 0, 0, 1920, 24000, 0, 0, 100), "the first frame is due at once");
    /* 10 frames out (800 ms of audio) 200 ms after the first audio, 30 ms per frame: lead 600 >= 1.25 x 4 x 30 */
    TEST_CHECK(!qtts_decode_due(3, 0, 19200, 1920, 24000, 0, 190, 390), "3 of 4 frames: not yet");
    TEST_CHECK(qtts_decode_due(4, 0, 19200, 1920, 24000, 0, 190, 390), "4 frames: due");
    /* overlap (engine/overlap_policy.h): sequential measured first, then overlap once, then the faster mode,
       with the slower one measured again every QTTS_OVERLAP_PROBE_EVERY cycles */
    qtts_overlap_stats ov = {{0, 0}, 0};
    TEST_CHECK(qtts_overlap_choose(&ov) == 0, "nothing measured: sequential first");
    qtts_overlap_record(&ov, 0, 90.0);
    TEST_CHECK(qtts_overlap_choose(&ov) == 1, "sequential measured: overlap is tried");
    qtts_overlap_record(&ov, 1, 75.0);
    TEST_CHECK(qtts_overlap_choose(&ov) == 1, "overlap faster: kept");
    int probes = 0, cycles = 0;
    for (; cycles < 3 * QTTS_OVERLAP_PROBE_EVERY + 3; cycles++) {
        int m = qtts_overlap_choose(&ov);
        probes += m == 0;
        qtts_overlap_record(&ov, m, m ? 75.0 : 90.0);
    }
    TEST_CHECK(probes == 3, "the slower mode is measured again once per %d cycles (%d probes in %d)",
               QTTS_OVERLAP_PROBE_EVERY, probes, cycles);
    for (int i = 0; i < 20; i++) qtts_overlap_record(&ov, 1, 120.0); /* the machine got busy: overlap now slower */
    TEST_CHECK(ov.ms[1] > ov.ms[0] && qtts_overlap_choose(&ov) == 0, "a slower overlap is dropped (%.1f vs %.1f ms)",
               ov.ms[1], ov.ms[0]);
    qtts_overlap_record(&ov, 0, 0.0);
    qtts_overlap_record(&ov, 0, -1.0);
    TEST_CHECK(ov.ms[0] > 0 && ov.ms[0] < 100, "empty cycles are not recorded");
    return test_finish("test_decode_policy");
}
