/* qtts: Qwen3-TTS inference engine. The one public header.
 *
 * All model computation runs on the engine's own thread and worker pool;
 * calls from any other thread queue a job and wait for it. */
#ifndef QTTS_H
#define QTTS_H

#ifdef __cplusplus
extern "C" {
#endif

#define QTTS_VERSION "0.1.0"

#ifdef __cplusplus
}
#endif

#endif
