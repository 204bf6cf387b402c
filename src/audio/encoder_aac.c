/* AAC through libavcodec + libavformat (see encoder_aac.h), opened by each
 * encoder (audio/libav.h). Every libav object lives in the encoder; nothing
 * here touches libav's global state (no av_register_all, which ffmpeg >= 4
 * no longer needs, and no av_log_set_level: see QUIET_LOG below). */
#include "audio/encoder_aac.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "audio/libav.h"

/* libavformat 61 made the write callback's buffer const. */
#if LIBAVFORMAT_VERSION_MAJOR >= 61
typedef const uint8_t avio_wbuf;
#else
typedef uint8_t avio_wbuf;
#endif

/* av_log's default callback prints to stderr; the native AAC encoder alone
 * prints a "Qavg" line at close. AVCodecContext.log_level_offset raises the
 * level of every message of that one context past AV_LOG_TRACE (56), so the
 * default callback drops them without touching the process-wide log level
 * (the library's callers may use libav themselves). Failures reach the caller
 * as qtts_err lines built from the return codes instead. The muxers print
 * nothing in normal operation (test_audio_aac checks that stderr stays
 * empty); AVFormatContext has no such per-context offset. */
#define QUIET_LOG 64

#define IO_BUF_SIZE 4096
/* Cut a fragment (non-seekable MP4) every half second of audio: the latency
 * of a streamed .m4a, against ~100 bytes of moof per fragment. */
#define FRAG_DURATION_US "500000"

struct qtts_aac_enc {
    qtts_libav av; /* this encoder's opening of libav */
    const qtts_audio_sink *sink; /* the parent encoder's, not a copy (see the header) */
    int m4a, seekable, channels;
    int failed; /* sticky: any failure */
    int sink_failed; /* the sink refused bytes or a seek */
    uint64_t pos, len; /* where the sink's next byte lands; bytes it holds */
    AVCodecContext *cc;
    AVFormatContext *fc;
    AVIOContext *pb;
    AVStream *st;
    AVFrame *frame; /* the 1024-sample frame being filled */
    AVPacket *pkt;
    int fill;
    int64_t next_pts; /* in samples */
};

/* ---- AVIOContext over the sink ---- */

static int io_write(void *opaque, avio_wbuf *buf, int n) {
    qtts_aac_enc *a = opaque;
    if (a->sink_failed) return AVERROR(EIO);
    if (n > 0 && a->sink->write(a->sink->user, buf, (size_t)n)) {
        a->sink_failed = 1;
        return AVERROR(EIO);
    }
    a->pos += (uint64_t)n;
    if (a->pos > a->len) a->len = a->pos;
    return n;
}

/* Only installed for seekable sinks. The sink moves within what it holds. */
static int64_t io_seek(void *opaque, int64_t off, int whence) {
    qtts_aac_enc *a = opaque;
    whence &= ~AVSEEK_FORCE;
    if (whence == AVSEEK_SIZE) return (int64_t)a->len;
    int64_t base = whence == SEEK_SET   ? 0
                   : whence == SEEK_CUR ? (int64_t)a->pos
                   : whence == SEEK_END ? (int64_t)a->len
                                        : -1;
    if (base < 0 || a->sink_failed) return AVERROR(EINVAL);
    int64_t np = base + off;
    if (np < 0 || (uint64_t)np > a->len) return AVERROR(EINVAL);
    if ((uint64_t)np != a->pos && a->sink->seek(a->sink->user, (uint64_t)np)) {
        a->sink_failed = 1;
        return AVERROR(EIO);
    }
    a->pos = (uint64_t)np;
    return np;
}

/* ---- errors ---- */

/* One line for a failed av_* call; a refused sink wins over libav's EIO. */
static int av_fail(qtts_aac_enc *a, qtts_err *err, const char *what, int rc) {
    a->failed = 1;
    if (a->sink_failed) return qtts_fail(err, "audio encoder: output write failed");
    char msg[AV_ERROR_MAX_STRING_SIZE] = {0};
    a->av.av_strerror(rc, msg, sizeof msg);
    return qtts_fail(err, "audio encoder: %s failed: %s", what, msg);
}

/* Bytes the muxer has finished go to the sink now (streaming latency). */
static int io_flush(qtts_aac_enc *a, qtts_err *err) {
    a->av.avio_flush(a->pb);
    if (a->sink_failed || a->pb->error < 0) return av_fail(a, err, "writing the AAC output", a->pb->error);
    return 0;
}

static void free_all(qtts_aac_enc *a) {
    if (a->av.av_frame_free) { /* libav was opened: its objects, each NULL or made */
        a->av.av_frame_free(&a->frame);
        a->av.av_packet_free(&a->pkt);
        a->av.avcodec_free_context(&a->cc);
        if (a->fc) a->av.avformat_free_context(a->fc); /* AVFMT_FLAG_CUSTOM_IO: leaves pb alone */
        if (a->pb) {
            a->av.av_freep(&a->pb->buffer); /* libav may have replaced the buffer we gave it */
            a->av.avio_context_free(&a->pb);
        }
    }
    qtts_libav_close(&a->av);
    free(a);
}

/* ---- encoding ---- */

/* Sends one frame (NULL: end of stream) and muxes every packet it yields. */
static int encode(qtts_aac_enc *a, AVFrame *f, qtts_err *err) {
    if (f) {
        f->pts = a->next_pts;
        a->next_pts += f->nb_samples;
    }
    int rc = a->av.avcodec_send_frame(a->cc, f);
    if (rc < 0) return av_fail(a, err, "AAC encoding", rc);
    for (;;) {
        rc = a->av.avcodec_receive_packet(a->cc, a->pkt);
        if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return 0;
        if (rc < 0) return av_fail(a, err, "AAC encoding", rc);
        a->pkt->stream_index = a->st->index;
        a->av.av_packet_rescale_ts(a->pkt, a->cc->time_base, a->st->time_base);
        rc = a->av.av_write_frame(a->fc, a->pkt); /* one stream: nothing to interleave */
        a->av.av_packet_unref(a->pkt);
        if (rc < 0) return av_fail(a, err, a->m4a ? "writing an M4A packet" : "writing an ADTS frame", rc);
    }
}

/* 64 kbit/s per channel: speech at 24 kHz sounds clean at that rate. Lower
 * sample rates get less so the encoder never hits its bits-per-frame cap. */
static int64_t bitrate_for(int sample_rate, int channels) {
    int64_t per = sample_rate >= 22050 ? 64000 : sample_rate >= 16000 ? 48000 : 24000;
    return per * channels;
}

/* The marks as the muxer's AVChapters (freed with the context). The mov
 * muxer makes its chapter track at the header, so they come first. */
static int add_chapters(const qtts_libav *av, AVFormatContext *fc, int sample_rate, const qtts_audio_chapter *ch,
                        size_t n, qtts_err *err) {
    if (!n) return 0;
    if (n > 65535) return qtts_fail(err, "audio encoder: %zu chapter marks (at most 65535)", n);
    fc->chapters = av->av_calloc(n, sizeof *fc->chapters);
    if (!fc->chapters) return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "audio encoder: out of memory (chapters)");
    for (size_t i = 0; i < n; i++) {
        if (ch[i].end < ch[i].start || (i && ch[i].start < ch[i - 1].end) || ch[i].end > INT64_MAX)
            return qtts_fail(err, "audio encoder: chapter %zu's marks are out of order", i + 1);
        AVChapter *c = av->av_mallocz(sizeof *c);
        if (!c) return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "audio encoder: out of memory (chapters)");
        fc->chapters[fc->nb_chapters++] = c;
        c->id = (int64_t)i;
        c->time_base = (AVRational){1, sample_rate};
        c->start = (int64_t)ch[i].start;
        c->end = (int64_t)ch[i].end;
        if (av->av_dict_set(&c->metadata, "title", ch[i].title ? ch[i].title : "", 0) < 0)
            return qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "audio encoder: out of memory (chapters)");
    }
    return 0;
}

qtts_aac_enc *qtts_aac_open(int m4a, int sample_rate, int channels, const qtts_audio_sink *sink,
                            const qtts_audio_chapter *chapters, size_t n_chapters, qtts_err *err) {
    qtts_aac_enc *a = qtts_calloc(1, sizeof *a, err);
    if (!a) return NULL;
    a->sink = sink, a->m4a = m4a, a->seekable = sink->seek != NULL, a->channels = channels;
    const char *cname = m4a ? "m4a" : "aac";
    if (qtts_libav_open(&a->av, err)) goto fail;

    /* "aac" by name: libavcodec's own encoder, never an external one. */
    const AVCodec *codec = a->av.avcodec_find_encoder_by_name("aac");
    if (!codec) {
        qtts_fail(err, "audio encoder: this libavcodec has no native AAC encoder");
        goto fail;
    }
    a->cc = a->av.avcodec_alloc_context3(codec);
    if (!a->cc) {
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "audio encoder: out of memory (AAC encoder)");
        goto fail;
    }
    a->cc->log_level_offset = QUIET_LOG;
    a->cc->sample_fmt = AV_SAMPLE_FMT_FLTP;
    a->cc->sample_rate = sample_rate;
    a->cc->time_base = (AVRational){1, sample_rate};
    a->cc->bit_rate = bitrate_for(sample_rate, channels);
    a->av.av_channel_layout_default(&a->cc->ch_layout, channels);

    /* The file name is never opened (custom I/O): the ipod muxer warns on
     * stderr when the name does not end in .m4a. */
    int rc = a->av.avformat_alloc_output_context2(&a->fc, NULL, m4a ? "ipod" : "adts",
                                                  m4a ? "stream.m4a" : "stream.aac");
    if (rc < 0 || !a->fc) {
        av_fail(a, err, m4a ? "starting the M4A muxer" : "starting the ADTS muxer", rc < 0 ? rc : AVERROR(ENOMEM));
        goto fail;
    }
    if (n_chapters && (!m4a || add_chapters(&a->av, a->fc, sample_rate, chapters, n_chapters, err))) {
        if (!m4a) qtts_fail(err, "audio encoder: chapter marks need m4a, not ADTS");
        goto fail;
    }
    if (a->fc->oformat->flags & AVFMT_GLOBALHEADER) a->cc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    rc = a->av.avcodec_open2(a->cc, codec, NULL);
    if (rc < 0) {
        /* e.g. a sample rate AAC has no index for, or too many channels */
        qtts_fail(err, "audio encoder: libavcodec cannot encode AAC at %d Hz with %d channel(s)", sample_rate,
                  channels);
        goto fail;
    }
    if (a->cc->frame_size <= 0) {
        qtts_fail(err, "audio encoder: the AAC encoder reports no frame size");
        goto fail;
    }

    a->st = a->av.avformat_new_stream(a->fc, NULL);
    if (!a->st) {
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "audio encoder: out of memory (%s stream)", cname);
        goto fail;
    }
    a->st->time_base = a->cc->time_base;
    rc = a->av.avcodec_parameters_from_context(a->st->codecpar, a->cc);
    if (rc < 0) {
        av_fail(a, err, "copying the AAC parameters", rc);
        goto fail;
    }

    uint8_t *iobuf = a->av.av_malloc(IO_BUF_SIZE);
    if (iobuf) a->pb = a->av.avio_alloc_context(iobuf, IO_BUF_SIZE, 1, a, NULL, io_write, a->seekable ? io_seek : NULL);
    if (!a->pb) {
        a->av.av_free(iobuf);
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "audio encoder: out of memory (%s output)", cname);
        goto fail;
    }
    a->fc->pb = a->pb;
    a->fc->flags |= AVFMT_FLAG_CUSTOM_IO;

    AVDictionary *opts = NULL;
    if (m4a && !a->seekable) {
        /* The moov atom normally comes last, patched by seeking back; a
         * stream gets a moov without samples, then self-contained fragments
         * (default_base_moof: offsets relative to each moof, as MSE wants).
         * delay_moov rather than empty_moov: the moov waits for the first
         * fragment, so its edit list can skip the encoder's priming, as in
         * a seekable file. frag_keyframe would never cut an audio track. */
        if (a->av.av_dict_set(&opts, "movflags", "+delay_moov+default_base_moof", 0) < 0 ||
            a->av.av_dict_set(&opts, "frag_duration", FRAG_DURATION_US, 0) < 0) {
            a->av.av_dict_free(&opts);
            qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "audio encoder: out of memory (m4a options)");
            goto fail;
        }
    }
    rc = a->av.avformat_write_header(a->fc, &opts);
    int unused = a->av.av_dict_count(opts);
    a->av.av_dict_free(&opts);
    if (rc < 0) {
        av_fail(a, err, m4a ? "writing the M4A header" : "starting the ADTS stream", rc);
        goto fail;
    }
    if (unused) {
        qtts_fail(err, "audio encoder: the M4A muxer did not take its fragmentation options");
        goto fail;
    }

    a->frame = a->av.av_frame_alloc();
    a->pkt = a->av.av_packet_alloc();
    if (!a->frame || !a->pkt) {
        qtts_fail_as(err, QTTS_ERR_NO_MEMORY, "audio encoder: out of memory (AAC frame)");
        goto fail;
    }
    a->frame->format = AV_SAMPLE_FMT_FLTP;
    a->frame->nb_samples = a->cc->frame_size;
    a->frame->sample_rate = sample_rate;
    rc = a->av.av_channel_layout_copy(&a->frame->ch_layout, &a->cc->ch_layout);
    if (rc >= 0) rc = a->av.av_frame_get_buffer(a->frame, 0);
    if (rc < 0) {
        av_fail(a, err, "allocating an AAC frame", rc);
        goto fail;
    }
    if (io_flush(a, err)) goto fail;
    return a;
fail:
    free_all(a);
    return NULL;
}

int qtts_aac_write(qtts_aac_enc *a, const float *x, size_t n, qtts_err *err) {
    if (a->failed) return qtts_fail(err, "audio encoder: output failed earlier");
    int ch = a->channels, fs = a->cc->frame_size;
    while (n) {
        if (a->fill == 0) {
            /* The encoder may still hold a reference to the last frame. */
            int rc = a->av.av_frame_make_writable(a->frame);
            if (rc < 0) return av_fail(a, err, "allocating an AAC frame", rc);
        }
        size_t take = (size_t)(fs - a->fill) < n ? (size_t)(fs - a->fill) : n;
        for (int c = 0; c < ch; c++) {
            float *d = (float *)a->frame->extended_data[c] + a->fill;
            /* The encoder fails on non-finite input ("Input contains (near)
             * NaN/+-Inf"): NaN -> 0 and clip to [-1, 1], as the s16 formats do. */
            for (size_t i = 0; i < take; i++) {
                float v = x[i * (size_t)ch + (size_t)c];
                d[i] = isnan(v) ? 0.0f : v > 1.0f ? 1.0f : v < -1.0f ? -1.0f : v;
            }
        }
        a->fill += (int)take;
        x += take * (size_t)ch;
        n -= take;
        if (a->fill == fs) {
            a->fill = 0;
            if (encode(a, a->frame, err)) return -1;
        }
    }
    return io_flush(a, err);
}

int qtts_aac_close(qtts_aac_enc *a, qtts_err *err) {
    int rc = 0;
    if (a->failed) {
        rc = qtts_fail(err, "audio encoder: output failed earlier");
    } else {
        if (a->fill > 0) { /* the short last frame; the encoder pads it */
            a->frame->nb_samples = a->fill;
            rc = encode(a, a->frame, err);
        }
        if (!rc) rc = encode(a, NULL, err); /* drain the encoder's delay */
        if (!rc) {
            int r = a->av.av_write_trailer(a->fc);
            if (r < 0) rc = av_fail(a, err, a->m4a ? "writing the M4A index" : "finishing the ADTS stream", r);
        }
        if (!rc) rc = io_flush(a, err);
    }
    free_all(a);
    return rc;
}

void qtts_aac_abort(qtts_aac_enc *a) {
    if (a) free_all(a);
}

int qtts_aac_available(qtts_err *err) {
    qtts_libav av;
    if (qtts_libav_open(&av, err)) return -1;
    qtts_libav_close(&av);
    return 0;
}
