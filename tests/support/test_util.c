#include "test_util.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

int pcm_collect(void *user, const float *samples, size_t n) {
    pcm_buf *b = user;
    if (b->n + n > b->cap) {
        size_t cap = (b->n + n) * 2;
        float *p = realloc(b->d, cap * sizeof *p);
        if (!p) return 1;
        b->d = p;
        b->cap = cap;
    }
    memcpy(b->d + b->n, samples, n * sizeof *samples);
    b->n += n;
    return 0;
}

int count_threads(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}
