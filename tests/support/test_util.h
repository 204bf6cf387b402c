/* Small helpers shared by several tests. */
#ifndef QTTS_TEST_UTIL_H
#define QTTS_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A growing float buffer; pcm_collect matches qtts_audio_cb (user = pcm_buf*). */
typedef struct {
    float *d;
    size_t n, cap;
} pcm_buf;
int pcm_collect(void *user, const float *samples, size_t n);

/* Threads of this process (entries of /proc/self/task), or -1. */
int count_threads(void);

/* Runs the shell command cmd: its standard output in out (cut to size - 1
 * bytes, NUL-terminated) and its exit status, or -1. */
int test_run_capture(const char *cmd, char *out, size_t size);
/* Runs `qtts bench ARGS` (stderr dropped), as test_run_capture. */
int test_run_bench(const char *args, char *out, size_t size);

/* Removes a file or a folder tree (no error when absent). Returns 0 or -1. */
int rm_rf(const char *path);

/* The whole file at path (malloc'd); 0 or -1. */
int read_bytes(const char *path, unsigned char **buf, size_t *n);

/* Writes text to path (created or truncated). Returns 0 or -1. */
int write_text_file(const char *path, const char *text);

/* The samples of a sound file as f32 (libsndfile's scaling; malloc'd, with
 * room for one more), *n of them; NULL (and *n = 0) when it cannot be read. */
float *read_wav(const char *path, size_t *n);

/* The value of key=... in a Python call string (the golden fixtures' calls):
 * 'str' or "str" unquoted, else up to the next ',' or ')' (None, True, 5).
 * 0, or -1 when the call has no such key. */
int test_call_arg(const char *call, const char *key, char *out, size_t n);

/* Turns the two-character escapes \n and \t of a table file into a newline
 * and a tab, in place. */
void test_unescape(char *s);

/* A safetensors file of f32 tensors: names[i], shapes[i] (ndim[i] <= 4 dims),
 * data[i]. Returns 0 or -1. */
int write_safetensors_f32(const char *path, int n, const char *const *names, const int *ndim,
                          const int64_t (*shapes)[4], const float *const *data);

#endif
