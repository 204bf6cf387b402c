/* Streaming audio encoder (see encoder.h). WAV and raw PCM are written here
 * so that they stream sample-exact with no buffering; flac, opus, vorbis and
 * mp3 go through libsndfile's virtual I/O, adapted to a write-only sink; aac
 * and m4a through libavcodec/libavformat (encoder_aac.c). */
#include "audio/encoder.h"
#include "audio/audio_write.h"
#include "audio/encoder_aac.h"

#include <errno.h>
#include <math.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

struct qtts_encoder {
    qtts_audio_format fmt;
    qtts_sample_format sfmt;
    int sample_rate, channels;
    qtts_audio_sink sink;
    int failed;
    int sink_errno; /* the file sink's errno when a write or seek failed (0: none, or not a file) */
    uint64_t frames;
    /* Byte positions in the stream as libsndfile sees it (pos) and as the
     * sink has received it (len = bytes emitted; sink_pos = where the sink's
     * next write lands, != len only after a seek on a seekable sink). */
    uint64_t pos, len, sink_pos;
    uint64_t vlen; /* libsndfile's idea of the stream length (== len unless bytes were dropped) */
    SNDFILE *sf;
    qtts_aac_enc *aac; /* aac, m4a; it writes through &sink, so repointing sink.user reaches it */
    /* MP3 on a non-seekable sink: the first frame is LAME's Xing/Info
     * placeholder, only meaningful once patched at close. Hold it back and
     * drop it when it is one (it carries no audio). */
    int mp3_first_done;
    size_t hold_n;
    uint8_t hold[2048];
    /* file convenience */
    FILE *file;
    int file_is_stdout;
    off_t file_base;
};

static const struct {
    const char *name;
    qtts_audio_format fmt;
} format_names[] = {
    {"wav", QTTS_AUDIO_WAV},   {"wave", QTTS_AUDIO_WAV},     {"pcm", QTTS_AUDIO_PCM},   {"raw", QTTS_AUDIO_PCM},
    {"flac", QTTS_AUDIO_FLAC}, {"opus", QTTS_AUDIO_OPUS},    {"vorbis", QTTS_AUDIO_VORBIS},
    {"ogg", QTTS_AUDIO_VORBIS}, {"oga", QTTS_AUDIO_VORBIS}, {"mp3", QTTS_AUDIO_MP3},
    {"aac", QTTS_AUDIO_AAC},   {"m4a", QTTS_AUDIO_M4A},      {"mp4", QTTS_AUDIO_M4A},
    {"m4b", QTTS_AUDIO_M4A},
};

int qtts_audio_format_parse(const char *name, qtts_audio_format *out, qtts_err *err) {
    if (name)
        for (size_t i = 0; i < sizeof format_names / sizeof format_names[0]; i++)
            if (!strcasecmp(name, format_names[i].name)) {
                *out = format_names[i].fmt;
                return 0;
            }
    return qtts_fail(err, "unknown audio format '%s' (expected wav, flac, mp3, opus, vorbis, aac, m4a or pcm)",
                     name ? name : "(null)");
}

int qtts_audio_format_from_path(const char *path, qtts_audio_format *out, qtts_err *err) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (dot && dot != base && dot[1]) {
        qtts_err tmp;
        if (!qtts_audio_format_parse(dot + 1, out, &tmp)) return 0;
    }
    return qtts_fail(err, "%s: cannot tell the audio format from the file name (use .wav .flac .mp3 .opus .ogg "
                          ".aac .m4a .m4b .pcm or give a format)", path);
}

int qtts_audio_format_available(qtts_audio_format f, qtts_err *err) {
    return f == QTTS_AUDIO_AAC || f == QTTS_AUDIO_M4A ? qtts_aac_available(err) : 0;
}

const char *qtts_audio_format_name(qtts_audio_format f) {
    switch (f) {
    case QTTS_AUDIO_WAV: return "wav";
    case QTTS_AUDIO_PCM: return "pcm";
    case QTTS_AUDIO_FLAC: return "flac";
    case QTTS_AUDIO_OPUS: return "opus";
    case QTTS_AUDIO_VORBIS: return "vorbis";
    case QTTS_AUDIO_MP3: return "mp3";
    case QTTS_AUDIO_AAC: return "aac";
    case QTTS_AUDIO_M4A: return "m4a";
    default: return "?";
    }
}

/* ---- sink plumbing ---- */

/* A failed output names the system's reason when the sink is a file
 * (No space left on device, Input/output error), else what failed. */
static int fail_output(const qtts_encoder *e, qtts_err *err) {
    if (e->sink_errno)
        return qtts_fail(err, "audio encoder: writing the %s output failed: %s", qtts_audio_format_name(e->fmt),
                         strerror(e->sink_errno));
    return qtts_fail(err, "audio encoder: writing the %s output failed", qtts_audio_format_name(e->fmt));
}

static int sink_emit(qtts_encoder *e, const void *bytes, size_t n) {
    if (e->failed) return -1;
    if (n && e->sink.write(e->sink.user, bytes, n)) {
        e->failed = 1;
        return -1;
    }
    e->sink_pos += n;
    if (e->sink_pos > e->len) e->len = e->sink_pos;
    return 0;
}

static int sink_seek(qtts_encoder *e, uint64_t off) {
    if (e->failed) return -1;
    if (e->sink_pos == off) return 0;
    if (!e->sink.seek) return -1;
    if (e->sink.seek(e->sink.user, off)) {
        e->failed = 1;
        return -1;
    }
    e->sink_pos = off;
    return 0;
}

static void put_le16(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put_le32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- WAV / PCM written by hand ---- */

static size_t bytes_per_sample(const qtts_encoder *e) { return e->sfmt == QTTS_SAMPLE_F32 ? 4 : 2; }

/* Builds the header; data_bytes == UINT64_MAX means "unknown" (streaming). */
static size_t wav_header(const qtts_encoder *e, uint64_t data_bytes, uint8_t *h) {
    int is_float = e->sfmt == QTTS_SAMPLE_F32;
    uint32_t bps = (uint32_t)bytes_per_sample(e);
    uint32_t fmt_size = is_float ? 18 : 16; /* non-PCM needs cbSize and a fact chunk */
    size_t hdr = 12 + 8 + fmt_size + (is_float ? 12 : 0) + 8;
    uint32_t data32, riff32, fact32;
    if (data_bytes == UINT64_MAX || data_bytes + hdr - 8 > 0xFFFFFFFFu) {
        data32 = riff32 = fact32 = 0xFFFFFFFFu;
        if (data_bytes != UINT64_MAX) fact32 = (uint32_t)(e->frames > 0xFFFFFFFFu ? 0xFFFFFFFFu : e->frames);
    } else {
        data32 = (uint32_t)data_bytes;
        riff32 = (uint32_t)(data_bytes + hdr - 8);
        fact32 = (uint32_t)e->frames;
    }
    uint8_t *p = h;
    memcpy(p, "RIFF", 4), put_le32(p + 4, riff32), memcpy(p + 8, "WAVE", 4), p += 12;
    memcpy(p, "fmt ", 4), put_le32(p + 4, fmt_size), p += 8;
    put_le16(p, is_float ? 3 : 1);
    put_le16(p + 2, (uint32_t)e->channels);
    put_le32(p + 4, (uint32_t)e->sample_rate);
    put_le32(p + 8, (uint32_t)e->sample_rate * (uint32_t)e->channels * bps);
    put_le16(p + 12, (uint32_t)e->channels * bps);
    put_le16(p + 14, bps * 8);
    if (is_float) put_le16(p + 16, 0);
    p += fmt_size;
    if (is_float) memcpy(p, "fact", 4), put_le32(p + 4, 4), put_le32(p + 8, fact32), p += 12;
    memcpy(p, "data", 4), put_le32(p + 4, data32), p += 8;
    return (size_t)(p - h);
}

static int raw_write(qtts_encoder *e, const float *x, size_t n) {
    uint8_t buf[8192];
    size_t bps = bytes_per_sample(e), per = sizeof buf / bps;
    while (n) {
        size_t m = n < per ? n : per;
        for (size_t i = 0; i < m; i++) {
            float v = x[i];
            if (e->sfmt == QTTS_SAMPLE_F32) {
                uint32_t u;
                memcpy(&u, &v, 4);
                put_le32(buf + 4 * i, u);
            } else {
                put_le16(buf + 2 * i, (uint32_t)(uint16_t)qtts_f32_to_s16(v));
            }
        }
        if (sink_emit(e, buf, m * bps)) return -1;
        x += m;
        n -= m;
    }
    return 0;
}

/* ---- libsndfile virtual I/O over the sink ---- */

/* Length in bytes of the MPEG audio frame whose header starts at h, and the
 * offset of a Xing/Info tag inside it; 0 if h is not a Layer III header. */
static size_t mp3_frame_len(const uint8_t *h, size_t *tag_off) {
    static const int br_v1[16] = {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0};
    static const int br_v2[16] = {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 0};
    static const int sr_v1[3] = {44100, 48000, 32000};
    if (h[0] != 0xFF || (h[1] & 0xE0) != 0xE0 || ((h[1] >> 1) & 3) != 1) return 0;
    int ver = (h[1] >> 3) & 3; /* 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5 */
    int bri = h[2] >> 4, sri = (h[2] >> 2) & 3, pad = (h[2] >> 1) & 1, mono = (h[3] >> 6) == 3;
    if (ver == 1 || sri == 3) return 0;
    int br = (ver == 3 ? br_v1 : br_v2)[bri] * 1000;
    int sr = sr_v1[sri] / (ver == 3 ? 1 : ver == 2 ? 2 : 4);
    if (br <= 0) return 0;
    *tag_off = 4 + (ver == 3 ? (mono ? 17 : 32) : (mono ? 9 : 17));
    return (size_t)((ver == 3 ? 144 : 72) * br / sr + pad);
}

/* Appends stream bytes for the sink, filtering the MP3 placeholder frame. */
static int emit_stream(qtts_encoder *e, const uint8_t *p, size_t n) {
    if (e->fmt != QTTS_AUDIO_MP3 || e->sink.seek || e->mp3_first_done) return sink_emit(e, p, n);
    while (n && !e->mp3_first_done) {
        size_t take = sizeof e->hold - e->hold_n < n ? sizeof e->hold - e->hold_n : n;
        memcpy(e->hold + e->hold_n, p, take);
        e->hold_n += take, p += take, n -= take;
        if (e->hold_n < 4) return 0;
        size_t tag = 0, flen = mp3_frame_len(e->hold, &tag);
        if (flen && e->hold_n < flen && e->hold_n < sizeof e->hold) return 0; /* need the whole frame */
        e->mp3_first_done = 1;
        /* LAME's placeholder is a header followed by zeros (the tag is only
         * filled in at close); a filled-in tag frame is dropped as well. */
        size_t drop = 0;
        if (flen && flen <= e->hold_n && tag + 4 <= flen) {
            int zeros = 1;
            for (size_t i = 4; i < flen && zeros; i++) zeros = e->hold[i] == 0;
            if (zeros || !memcmp(e->hold + tag, "Xing", 4) || !memcmp(e->hold + tag, "Info", 4)) drop = flen;
        }
        if (sink_emit(e, e->hold + drop, e->hold_n - drop)) return -1;
        e->hold_n = 0;
    }
    return n ? sink_emit(e, p, n) : 0;
}

static sf_count_t vio_filelen(void *u) { return (sf_count_t)((qtts_encoder *)u)->vlen; }

static sf_count_t vio_seek(sf_count_t off, int whence, void *u) {
    qtts_encoder *e = u;
    int64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? (int64_t)e->pos : (int64_t)e->vlen;
    int64_t np = base + (int64_t)off;
    if (np < 0) return -1;
    e->pos = (uint64_t)np; /* applied lazily by the next write */
    return (sf_count_t)np;
}

static sf_count_t vio_read(void *ptr, sf_count_t n, void *u) {
    (void)ptr, (void)n, (void)u;
    return 0; /* write-only */
}

static sf_count_t vio_write(const void *ptr, sf_count_t n, void *u) {
    qtts_encoder *e = u;
    const uint8_t *p = ptr;
    uint64_t cnt = (uint64_t)n;
    /* A failed sink is reported through e->failed, never to libsndfile: its
     * error paths leak (Ogg/Vorbis) and print to stdout. Once failed, every
     * later write is swallowed and qtts_encoder_write/close report it. */
    if (e->failed || n < 0) return n < 0 ? 0 : n;
    if (e->sink.seek) { /* seekable: stream and sink coordinates are the same */
        if (sink_seek(e, e->pos > e->len ? e->len : e->pos)) return n;
        static const uint8_t zeros[256];
        while (e->pos > e->len) { /* a seek past the end: fill the gap */
            uint64_t z = e->pos - e->len;
            if (sink_emit(e, zeros, z < sizeof zeros ? (size_t)z : sizeof zeros)) return n;
        }
        if (sink_emit(e, p, (size_t)cnt)) return n;
        e->pos += cnt;
        e->vlen = e->len;
        return n;
    }
    if (e->pos < e->vlen) { /* rewriting bytes already sent (a header patch): drop */
        uint64_t skip = e->vlen - e->pos;
        if (skip >= cnt) {
            e->pos += cnt;
            return n;
        }
        p += skip, cnt -= skip, e->pos += skip;
    }
    static const uint8_t zeros[256];
    while (e->pos > e->vlen) {
        uint64_t z = e->pos - e->vlen;
        size_t zn = z < sizeof zeros ? (size_t)z : sizeof zeros;
        if (emit_stream(e, zeros, zn)) return n;
        e->vlen += zn;
    }
    if (emit_stream(e, p, (size_t)cnt)) return n;
    e->pos += cnt;
    e->vlen = e->pos;
    return n;
}

static sf_count_t vio_tell(void *u) { return (sf_count_t)((qtts_encoder *)u)->pos; }

static int sf_major(qtts_audio_format f, qtts_sample_format sfmt) {
    switch (f) {
    case QTTS_AUDIO_FLAC: return SF_FORMAT_FLAC | (sfmt == QTTS_SAMPLE_F32 ? SF_FORMAT_PCM_24 : SF_FORMAT_PCM_16);
    case QTTS_AUDIO_OPUS: return SF_FORMAT_OGG | SF_FORMAT_OPUS;
    case QTTS_AUDIO_VORBIS: return SF_FORMAT_OGG | SF_FORMAT_VORBIS;
    case QTTS_AUDIO_MP3: return SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III;
    default: return 0;
    }
}

/* ---- public ---- */

static qtts_encoder *open_marked(qtts_audio_format fmt, qtts_sample_format sfmt, int sample_rate, int channels,
                                 const qtts_audio_sink *sink, const qtts_audio_chapter *chapters, size_t n_chapters,
                                 qtts_err *err) {
    if (!sink || !sink->write) {
        qtts_fail(err, "audio encoder: no output sink");
        return NULL;
    }
    if ((int)fmt < 0 || fmt >= QTTS_AUDIO_N_FORMATS) {
        qtts_fail(err, "audio encoder: invalid format %d", (int)fmt);
        return NULL;
    }
    if (sfmt != QTTS_SAMPLE_S16 && sfmt != QTTS_SAMPLE_F32) {
        qtts_fail(err, "audio encoder: invalid sample format %d", (int)sfmt);
        return NULL;
    }
    if (sample_rate <= 0 || sample_rate > 768000 || channels < 1 || channels > 64) {
        qtts_fail(err, "audio encoder: invalid sample rate %d or channel count %d", sample_rate, channels);
        return NULL;
    }
    if (n_chapters && fmt != QTTS_AUDIO_M4A) {
        qtts_fail(err, "audio encoder: chapter marks need m4a (or m4b), not %s", qtts_audio_format_name(fmt));
        return NULL;
    }
    qtts_encoder *e = qtts_calloc(1, sizeof *e, err);
    if (!e) return NULL;
    e->fmt = fmt, e->sfmt = sfmt, e->sample_rate = sample_rate, e->channels = channels, e->sink = *sink;
    if (fmt == QTTS_AUDIO_WAV) {
        uint8_t h[64];
        size_t hn = wav_header(e, UINT64_MAX, h);
        if (sink_emit(e, h, hn)) {
            qtts_fail(err, "audio encoder: writing the WAV header failed");
            free(e);
            return NULL;
        }
        return e;
    }
    if (fmt == QTTS_AUDIO_PCM) return e;
    if (fmt == QTTS_AUDIO_AAC || fmt == QTTS_AUDIO_M4A) {
        e->aac = qtts_aac_open(fmt == QTTS_AUDIO_M4A, sample_rate, channels, &e->sink, chapters, n_chapters, err);
        if (!e->aac) {
            free(e);
            return NULL;
        }
        return e;
    }

    SF_INFO info = {0};
    info.samplerate = sample_rate;
    info.channels = channels;
    info.format = sf_major(fmt, sfmt);
    if (!sf_format_check(&info)) {
        qtts_fail(err, "audio encoder: libsndfile cannot write %s at %d Hz with %d channel(s)",
                  qtts_audio_format_name(fmt), sample_rate, channels);
        free(e);
        return NULL;
    }
    SF_VIRTUAL_IO vio = {vio_filelen, vio_seek, vio_read, vio_write, vio_tell};
    e->sf = sf_open_virtual(&vio, SFM_WRITE, &info, e);
    if (!e->sf) {
        qtts_fail(err, "audio encoder: cannot start %s at %d Hz: %s", qtts_audio_format_name(fmt), sample_rate,
                  e->failed ? "output write failed" : sf_strerror(NULL));
        free(e);
        return NULL;
    }
    if (e->failed) {
        sf_close(e->sf);
        qtts_fail(err, "audio encoder: writing the %s header failed", qtts_audio_format_name(fmt));
        free(e);
        return NULL;
    }
    sf_command(e->sf, SFC_SET_CLIPPING, NULL, SF_TRUE);
    if (fmt == QTTS_AUDIO_MP3 && !sink->seek) {
        /* Without the Xing/Info tag a reader can only estimate the length
         * from the first frame's bitrate, which is right only for CBR: use
         * 64 kbit/s constant bitrate (libsndfile maps compression c to
         * 160 - 152c kbit/s at 16-24 kHz, 320 - 288c at 32-48 kHz). */
        int mode = SF_BITRATE_MODE_CONSTANT;
        double c = sample_rate >= 32000 ? (320.0 - 96.0) / 288.0 : sample_rate >= 16000 ? (160.0 - 64.0) / 152.0 : 0.0;
        sf_command(e->sf, SFC_SET_BITRATE_MODE, &mode, sizeof mode);
        sf_command(e->sf, SFC_SET_COMPRESSION_LEVEL, &c, sizeof c);
    }
    return e;
}

qtts_encoder *qtts_encoder_open(qtts_audio_format fmt, qtts_sample_format sfmt, int sample_rate, int channels,
                                const qtts_audio_sink *sink, qtts_err *err) {
    return open_marked(fmt, sfmt, sample_rate, channels, sink, NULL, 0, err);
}

int qtts_encoder_write(qtts_encoder *e, const float *samples, size_t n_frames, qtts_err *err) {
    if (!e) return qtts_fail(err, "audio encoder: not open");
    if (e->failed) return qtts_fail(err, "audio encoder: output failed earlier");
    if (!n_frames) return 0;
    if (!samples) return qtts_fail(err, "audio encoder: no samples");
    if (e->aac) {
        if (qtts_aac_write(e->aac, samples, n_frames, err)) {
            e->failed = 1;
            return e->sink_errno ? fail_output(e, err) : -1;
        }
    } else if (e->sf) {
        sf_count_t w = sf_writef_float(e->sf, samples, (sf_count_t)n_frames);
        if (w != (sf_count_t)n_frames || e->failed) {
            int sink_failed = e->failed;
            e->failed = 1;
            if (sink_failed || !sf_error(e->sf)) return fail_output(e, err);
            return qtts_fail(err, "audio encoder: %s", sf_strerror(e->sf));
        }
    } else if (raw_write(e, samples, n_frames * (size_t)e->channels)) {
        return fail_output(e, err);
    }
    e->frames += n_frames;
    return 0;
}

static int file_finish(qtts_encoder *e, qtts_err *err, int ok) {
    int rc = 0;
    if (!e->file) return 0;
    if (e->file_is_stdout) {
        if (fflush(e->file) && ok) rc = qtts_fail(err, "writing to stdout failed: %s", strerror(errno));
    } else if (fclose(e->file) && ok) {
        rc = qtts_fail(err, "writing the output file failed: %s", strerror(errno));
    }
    e->file = NULL;
    return rc;
}

int qtts_encoder_close(qtts_encoder *e, qtts_err *err) {
    if (!e) return 0;
    int rc = 0;
    if (e->aac) {
        rc = qtts_aac_close(e->aac, err);
        e->aac = NULL;
        if (rc) e->failed = 1;
    } else if (e->sf) {
        int sfrc = sf_close(e->sf);
        e->sf = NULL;
        if (!e->mp3_first_done && e->hold_n && !e->failed) { /* tiny stream: never saw a full frame */
            e->mp3_first_done = 1;
            sink_emit(e, e->hold, e->hold_n);
        }
        if (sfrc && !e->failed) rc = qtts_fail(err, "audio encoder: finishing the %s stream failed: %s",
                                               qtts_audio_format_name(e->fmt), sf_error_number(sfrc));
    } else if (e->fmt == QTTS_AUDIO_WAV && e->sink.seek && !e->failed) {
        uint8_t h[64];
        uint64_t end = e->len;
        size_t hn = wav_header(e, e->frames * (uint64_t)e->channels * bytes_per_sample(e), h);
        if (sink_seek(e, 0) || sink_emit(e, h, hn) || sink_seek(e, end)) e->failed = 1;
    }
    if (e->failed && (!rc || e->sink_errno)) rc = fail_output(e, err);
    if (file_finish(e, err, rc == 0)) rc = -1;
    free(e);
    return rc;
}

void qtts_encoder_abort(qtts_encoder *e) {
    if (!e) return;
    e->failed = 1; /* sf_close may still try to flush: make those writes no-ops */
    if (e->sf) sf_close(e->sf);
    qtts_aac_abort(e->aac);
    file_finish(e, NULL, 0);
    free(e);
}

uint64_t qtts_encoder_frames(const qtts_encoder *e) { return e ? e->frames : 0; }

/* ---- file convenience ---- */

static int file_write(void *u, const void *bytes, size_t n) {
    qtts_encoder *e = u;
    errno = 0;
    if (fwrite(bytes, 1, n, e->file) == n) return 0;
    e->sink_errno = errno ? errno : EIO;
    return -1;
}

/* A seek flushes the stdio buffer: a full disk often shows here first. */
static int file_seek(void *u, uint64_t off) {
    qtts_encoder *e = u;
    errno = 0;
    if (!fseeko(e->file, e->file_base + (off_t)off, SEEK_SET)) return 0;
    e->sink_errno = errno ? errno : EIO;
    return -1;
}

static qtts_encoder *open_file_marked(const char *path, const char *format_name, qtts_sample_format sfmt,
                                      int sample_rate, int channels, const qtts_audio_chapter *chapters,
                                      size_t n_chapters, qtts_err *err) {
    qtts_audio_format fmt;
    int is_stdout = path && !strcmp(path, "-");
    if (!path || !*path) {
        qtts_fail(err, "no output file given");
        return NULL;
    }
    if (format_name) {
        if (qtts_audio_format_parse(format_name, &fmt, err)) return NULL;
    } else if (is_stdout) {
        fmt = QTTS_AUDIO_WAV;
    } else if (qtts_audio_format_from_path(path, &fmt, err)) {
        return NULL;
    }
    FILE *f = is_stdout ? stdout : fopen(path, "wb");
    if (!f) {
        qtts_fail(err, "%s: cannot create: %s", path, strerror(errno));
        return NULL;
    }
    /* Seekable only when it is a regular file where fseeko works. */
    struct stat stt;
    off_t base = -1;
    if (!fstat(fileno(f), &stt) && S_ISREG(stt.st_mode)) base = ftello(f);
    /* The sink's user pointer must be the encoder, which does not exist yet:
     * open with a placeholder and repoint it before any byte is written. */
    qtts_encoder *proto = qtts_calloc(1, sizeof *proto, err);
    if (!proto) {
        if (!is_stdout) fclose(f);
        return NULL;
    }
    proto->file = f;
    proto->file_base = base < 0 ? 0 : base;
    qtts_audio_sink sink = {file_write, base >= 0 ? file_seek : NULL, proto};
    qtts_encoder *e = open_marked(fmt, sfmt, sample_rate, channels, &sink, chapters, n_chapters, err);
    if (!e) {
        if (proto->sink_errno) qtts_fail(err, "cannot write: %s", strerror(proto->sink_errno));
        free(proto);
        if (!is_stdout) {
            fclose(f);
            remove(path);
        }
        qtts_fail_prefix(err, "%s", path);
        return NULL;
    }
    /* Header bytes (if any) went through proto->file == f, which is fine;
     * from now on the encoder itself carries the file. */
    e->file = f;
    e->file_is_stdout = is_stdout;
    e->file_base = proto->file_base;
    e->sink.user = e;
    free(proto);
    return e;
}

qtts_encoder *qtts_encoder_open_file(const char *path, const char *format_name, qtts_sample_format sfmt,
                                     int sample_rate, int channels, qtts_err *err) {
    return open_file_marked(path, format_name, sfmt, sample_rate, channels, NULL, 0, err);
}

qtts_encoder *qtts_encoder_open_file_chapters(const char *path, const char *format_name, qtts_sample_format sfmt,
                                              int sample_rate, int channels, const qtts_audio_chapter *chapters,
                                              size_t n_chapters, qtts_err *err) {
    return open_file_marked(path, format_name, sfmt, sample_rate, channels, chapters, n_chapters, err);
}

int qtts_audio_write_file(const char *path, const char *format_name, qtts_sample_format sfmt, const float *samples,
                          size_t n_frames, int sample_rate, int channels, qtts_err *err) {
    qtts_encoder *e = qtts_encoder_open_file(path, format_name, sfmt, sample_rate, channels, err);
    if (!e) return -1;
    if (qtts_encoder_write(e, samples, n_frames, err)) {
        qtts_encoder_abort(e);
        return qtts_fail_prefix(err, "%s", path);
    }
    if (qtts_encoder_close(e, err)) return qtts_fail_prefix(err, "%s", path);
    return 0;
}
