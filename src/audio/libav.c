/* libav opened at run time (see libav.h). */
#include "audio/libav.h"

#include <dlfcn.h>
#include <string.h>

#include <libavutil/macros.h>

/* The sonames of the major versions the headers are from. */
#if defined(__APPLE__)
#define LIBAV_SONAME(name, major) "lib" name "." AV_STRINGIFY(major) ".dylib"
#else
#define LIBAV_SONAME(name, major) "lib" name ".so." AV_STRINGIFY(major)
#endif

static const char *const libav_soname[QTTS_LIBAV_COUNT] = {
    [QTTS_LIBAV_AVUTIL] = LIBAV_SONAME("avutil", LIBAVUTIL_VERSION_MAJOR),
    [QTTS_LIBAV_AVCODEC] = LIBAV_SONAME("avcodec", LIBAVCODEC_VERSION_MAJOR),
    [QTTS_LIBAV_AVFORMAT] = LIBAV_SONAME("avformat", LIBAVFORMAT_VERSION_MAJOR),
};

int qtts_libav_open(qtts_libav *av, qtts_err *err) {
    memset(av, 0, sizeof *av);
    for (int i = 0; i < QTTS_LIBAV_COUNT; i++) {
        /* RTLD_NODELETE: a later encoder finds them loaded */
        if (!(av->handle[i] = dlopen(libav_soname[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE))) {
            const char *why = dlerror();
            /* before the closing below, which may reuse dlerror's buffer */
            qtts_fail(err, "audio encoder: AAC and M4A need %s (FFmpeg's libraries): %s", libav_soname[i],
                      why ? why : "not found");
            qtts_libav_close(av);
            return -1;
        }
    }
#define QTTS_LIBAV_FIND(lib, fn)                                                                                       \
    if (!(av->fn = (__typeof__(av->fn))dlsym(av->handle[QTTS_LIBAV_##lib], #fn))) {                                 \
        qtts_libav_close(av);                                                                                          \
        return qtts_fail(err, "audio encoder: %s has no %s", libav_soname[QTTS_LIBAV_##lib], #fn);                    \
    }
    QTTS_LIBAV_FUNCTIONS(QTTS_LIBAV_FIND)
#undef QTTS_LIBAV_FIND
    return 0;
}

void qtts_libav_close(qtts_libav *av) {
    for (int i = QTTS_LIBAV_COUNT - 1; i >= 0; i--)
        if (av->handle[i]) dlclose(av->handle[i]);
    memset(av, 0, sizeof *av);
}
