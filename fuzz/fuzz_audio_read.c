/* Reference-audio uploads: arbitrary bytes through the in-memory reader
 * (libsndfile virtual I/O, downmix, soxr resampling) and the .spk parser. */
#include <stdint.h>
#include <stdlib.h>

#include "audio/audio_read.h"
#include "io/spk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    qtts_err err = {0};
    qtts_audio_opts o;
    qtts_audio_opts_default(&o);
    o.max_seconds = 2.0; /* keeps every run small whatever the header claims */
    o.min_samples = 1920;
    qtts_audio a;
    if (qtts_audio_read_memory(data, size, "fuzz", &o, &a, &err) == 0) qtts_audio_free(&a);
    int64_t dim = 0;
    free(qtts_spk_from_bytes(data, size, 0, "fuzz", &dim, &err));
    free(qtts_spk_from_bytes(data, size, 32, "fuzz", &dim, &err));
    return 0;
}
