/* libavcodec, libavformat and libavutil, opened at run time by the AAC and
 * M4A encoder (encoder_aac.c) rather than linked: loading them and the
 * libraries they pull in was most of every process's start, though only
 * those two output formats use them. The headers still give every function's
 * type, and the sonames come from the headers' major versions, so the
 * libraries found are the ones built against. Internal to src/audio. */
#ifndef QTTS_AUDIO_LIBAV_H
#define QTTS_AUDIO_LIBAV_H

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavformat/avio.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/mem.h>

#include "core/err.h"

/* The libraries, by index into qtts_libav.handle. */
enum { QTTS_LIBAV_AVUTIL, QTTS_LIBAV_AVCODEC, QTTS_LIBAV_AVFORMAT, QTTS_LIBAV_COUNT };

/* Every function the encoder calls, with the library that exports it. */
#define QTTS_LIBAV_FUNCTIONS(X)                                                                                        \
    X(AVUTIL, av_calloc)                                                                                               \
    X(AVUTIL, av_channel_layout_copy)                                                                                  \
    X(AVUTIL, av_channel_layout_default)                                                                               \
    X(AVUTIL, av_dict_count)                                                                                           \
    X(AVUTIL, av_dict_free)                                                                                            \
    X(AVUTIL, av_dict_set)                                                                                             \
    X(AVUTIL, av_frame_alloc)                                                                                          \
    X(AVUTIL, av_frame_free)                                                                                           \
    X(AVUTIL, av_frame_get_buffer)                                                                                     \
    X(AVUTIL, av_frame_make_writable)                                                                                  \
    X(AVUTIL, av_free)                                                                                                 \
    X(AVUTIL, av_freep)                                                                                                \
    X(AVUTIL, av_malloc)                                                                                               \
    X(AVUTIL, av_mallocz)                                                                                              \
    X(AVUTIL, av_strerror)                                                                                             \
    X(AVCODEC, av_packet_alloc)                                                                                        \
    X(AVCODEC, av_packet_free)                                                                                         \
    X(AVCODEC, av_packet_rescale_ts)                                                                                   \
    X(AVCODEC, av_packet_unref)                                                                                        \
    X(AVCODEC, avcodec_alloc_context3)                                                                                 \
    X(AVCODEC, avcodec_find_encoder_by_name)                                                                           \
    X(AVCODEC, avcodec_free_context)                                                                                   \
    X(AVCODEC, avcodec_open2)                                                                                          \
    X(AVCODEC, avcodec_parameters_from_context)                                                                        \
    X(AVCODEC, avcodec_receive_packet)                                                                                 \
    X(AVCODEC, avcodec_send_frame)                                                                                     \
    X(AVFORMAT, av_write_frame)                                                                                        \
    X(AVFORMAT, av_write_trailer)                                                                                      \
    X(AVFORMAT, avformat_alloc_output_context2)                                                                        \
    X(AVFORMAT, avformat_free_context)                                                                                 \
    X(AVFORMAT, avformat_new_stream)                                                                                   \
    X(AVFORMAT, avformat_write_header)                                                                                 \
    X(AVFORMAT, avio_alloc_context)                                                                                    \
    X(AVFORMAT, avio_context_free)                                                                                     \
    X(AVFORMAT, avio_flush)

/* One opening: the handles and a pointer of each function's own type. Each
 * encoder holds its own (no process-wide state); the loader counts the
 * openings, and the libraries stay mapped after the last is closed, so only
 * a process's first AAC or M4A output pays for loading them. */
typedef struct {
    void *handle[QTTS_LIBAV_COUNT];
#define QTTS_LIBAV_POINTER(lib, fn) __typeof__(&fn) fn;
    QTTS_LIBAV_FUNCTIONS(QTTS_LIBAV_POINTER)
#undef QTTS_LIBAV_POINTER
} qtts_libav;

/* Opens the three libraries and finds every function; on failure one line
 * names the library or function missing and nothing stays open. */
int qtts_libav_open(qtts_libav *av, qtts_err *err);
/* Closes what qtts_libav_open opened (a zeroed table too). */
void qtts_libav_close(qtts_libav *av);

#endif
