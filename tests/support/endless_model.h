/* A model that never ends, for tests of what happens when generation runs
 * on: a copy of a model folder whose talker.codec_head is zeroed, so every
 * greedy step picks codebook-0 token 0 (all logits tie; EOS is never the
 * first maximum). The other files are symlinks to the original. */
#ifndef QTTS_TEST_ENDLESS_MODEL_H
#define QTTS_TEST_ENDLESS_MODEL_H

/* Creates dst (must not exist) from the model folder src. Returns 0 or -1. */
int endless_model_write(const char *src, const char *dst);

#endif
