/* A request's audio stream: the engine thread appends PCM as frames are
 * decoded; the requesting thread reads it. Shared by both sides with a
 * reference count, so either may finish first. */
#ifndef QTTS_ENGINE_STREAM_H
#define QTTS_ENGINE_STREAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "engine/request_times.h"
#include "qtts.h"

typedef enum { STREAM_QUEUED, STREAM_RUNNING, STREAM_DONE, STREAM_FAILED } stream_state;

struct qtts_stream {
    pthread_mutex_t mu;
    pthread_cond_t changed;
    atomic_int refs;
    atomic_int cancelled; /* set by the reader; the engine checks it at frame boundaries */
    stream_state state;
    float *pcm;
    size_t head, tail, cap; /* unread samples are pcm[head..tail) */
    qtts_result result;
    engine_request_times times;
    char error[256];
    qtts_status status; /* of a failed stream */
    int32_t *codes;     /* kept codes (request.keep_codes), frame-major */
    size_t n_code_frames;
    int n_codebooks;
    /* incremental text (request.text_incomplete): appended by the caller,
     * read by the engine thread, which exec wakes */
    int text_incremental, text_closed;
    char *text_in;
    size_t text_len, text_cap, text_max;
    struct qtts_exec *exec;
    /* the reader's wake-up (qtts_stream_set_notify), called under mu */
    qtts_stream_notify_fn notify;
    void *notify_user;
    int notify_fd; /* -1: none */
};

qtts_stream *stream_new(void);
/* Engine side. */
int stream_push(qtts_stream *s, const float *pcm, size_t n); /* -1: out of memory */
void stream_set_running(qtts_stream *s);
void stream_finish(qtts_stream *s, const qtts_result *r, const engine_request_times *t);
void stream_fail(qtts_stream *s, qtts_status status, const char *msg);
/* Hands the kept codes (malloc'd, frame-major) to the stream before stream_finish. */
void stream_set_codes(qtts_stream *s, int32_t *codes, size_t n_frames, int n_codebooks);
/* Incremental text, engine side: appends the bytes after `from` to *buf
 * (malloc'd, grown as needed, NUL-terminated) and says whether the text is
 * complete. Returns the new total length, or -1 when out of memory. */
long stream_text_pull(qtts_stream *s, size_t from, char **buf, size_t *cap, int *closed);
/* A finished stream's stage times, once qtts_stream_read returned 0; -1 before. */
int engine_stream_times(qtts_stream *s, engine_request_times *out);
/* Drops one reference; frees at zero. */
void stream_release(qtts_stream *s);

#endif
