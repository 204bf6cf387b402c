/* An interrupted or failing `qtts say -o FILE`: SIGINT or SIGTERM in the
 * middle of a long text ends with 128 + the signal, a message, and a file
 * that is whole (container finalized: wav sizes, flac STREAMINFO, the m4a
 * moov, the last aac/mp3 frame) and decodes without an error to the length
 * the message names, or no file at all. A write error (-o /dev/full) names
 * the system's reason and exits 1, and a device given as the output is
 * never removed. The files are decoded with libavformat/libavcodec. */
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "support/test_util.h"

#define CV QTTS_GOLDEN_DIR "/Qwen3-TTS-12Hz-1.7B-CustomVoice-tiny"
#define RATE 24000

/* Decodes the first audio stream of path: samples decoded, and the count of
 * packets or frames the decoder refused. -1 if libavformat cannot open it. */
static int decode_file(const char *path, long *samples, int *errors) {
    AVFormatContext *ic = NULL;
    *samples = 0, *errors = 0;
    if (avformat_open_input(&ic, path, NULL, NULL) < 0) return -1;
    int rc = -1;
    AVCodecContext *dc = NULL;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *fr = av_frame_alloc();
    const AVCodec *dec = NULL;
    int idx = avformat_find_stream_info(ic, NULL) < 0 ? -1 : av_find_best_stream(ic, AVMEDIA_TYPE_AUDIO, -1, -1, &dec, 0);
    if (idx < 0 || !dec || !pkt || !fr) goto done;
    dc = avcodec_alloc_context3(dec);
    if (!dc || avcodec_parameters_to_context(dc, ic->streams[idx]->codecpar) < 0 || avcodec_open2(dc, dec, NULL) < 0)
        goto done;
    dc->err_recognition |= AV_EF_EXPLODE; /* a damaged frame is an error, not concealed */
    for (int eof = 0; !eof;) {
        int k = av_read_frame(ic, pkt);
        if (k < 0) {
            eof = 1;
            avcodec_send_packet(dc, NULL);
        } else {
            if (pkt->stream_index == idx && avcodec_send_packet(dc, pkt) < 0) (*errors)++;
            av_packet_unref(pkt);
        }
        int r;
        while ((r = avcodec_receive_frame(dc, fr)) >= 0) {
            *samples += fr->nb_samples;
            av_frame_unref(fr);
        }
        if (r != AVERROR(EAGAIN) && r != AVERROR_EOF) (*errors)++;
    }
    rc = 0;
done:
    av_frame_free(&fr);
    av_packet_free(&pkt);
    avcodec_free_context(&dc);
    avformat_close_input(&ic);
    return rc;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static off_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) ? -1 : st.st_size;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts say on text.txt into out.EXT, signals it once some audio is in the
 * file, and checks what it leaves. */
static void interrupt_run(const char *dir, const char *ext, int sig) {
    char out[512], errf[512], text[512];
    snprintf(out, sizeof out, "%s/out.%s", dir, ext);
    snprintf(errf, sizeof errf, "%s/err.txt", dir);
    snprintf(text, sizeof text, "%s/text.txt", dir);
    remove(out);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(errf, "w", stderr)) _exit(99);
        execl(QTTS_BINARY, "qtts", "say", "-q", "-m", CV, "--speaker", "ryan", "--seed", "5", "--max-frames", "40",
              "--file", text, "-o", out, (char *)NULL);
        _exit(98);
    }
    /* some audio must be in the file first; the wait is a bound, not a timing check */
    int waited = 0;
    while (file_size(out) < 16384 && waited < 120000) sleep_ms(20), waited += 20;
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    unsigned char *msg = NULL;
    size_t n_msg = 0;
    read_bytes(errf, &msg, &n_msg);
    const char *m = msg ? (const char *)msg : "";
    TEST_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig, "%s: exit %d (signalled: %d), want %d: %s", ext,
               WIFEXITED(status) ? WEXITSTATUS(status) : -1, WIFSIGNALED(status) ? WTERMSIG(status) : 0, 128 + sig, m);
    const char *holds = strstr(m, "holds the ");
    double secs = holds ? atof(holds + strlen("holds the ")) : -1;
    off_t size = file_size(out);
    if (size < 0) {
        TEST_CHECK(strstr(m, "removed") != NULL, "%s: the file is gone and the message says so: %s", ext, m);
    } else {
        TEST_CHECK(strstr(m, sig == SIGINT ? "interrupted (SIGINT)" : "interrupted (SIGTERM)") && secs > 0,
                   "%s: the message names the signal and the audio kept: %s", ext, m);
        long samples = 0;
        int errors = 0;
        int rc = decode_file(out, &samples, &errors);
        TEST_CHECK(rc == 0 && errors == 0, "%s: %lld bytes decode without an error (open %d, %d errors)", ext,
                   (long long)size, rc, errors);
        /* lossy formats add the encoder's priming and pad the last frame (< 0.1 s here) */
        TEST_CHECK(secs > 0 && samples > 0 && (double)samples / RATE > secs - 0.01 && (double)samples / RATE < secs + 0.15,
                   "%s: %ld samples decoded (%.3f s), the message said %.2f s", ext, samples, (double)samples / RATE,
                   secs);
        if (!strcmp(ext, "wav")) {
            unsigned char *b = NULL;
            size_t nb = 0;
            TEST_CHECK(!read_bytes(out, &b, &nb) && nb > 44 && le32(b + 4) == nb - 8 && le32(b + 40) == nb - 44,
                       "wav: RIFF and data sizes match the file (%zu bytes)", nb);
            free(b);
        }
    }
    free(msg);
}

/* -o a full device: the reason is named, the exit is 1, the device stays. */
static void full_device(const char *dir, const char *fmt) {
    struct stat st;
    if (stat("/dev/full", &st) || !S_ISCHR(st.st_mode)) {
        printf("SKIP /dev/full checks: no /dev/full\n");
        return;
    }
    char cmd[2048], msg[2048];
    snprintf(cmd, sizeof cmd, "'%s' say -q -m '%s' --speaker ryan --seed 5 --max-frames 30 --format %s -o /dev/full "
                              "'Hello there, a short one.' 2>'%s/full.txt'",
             QTTS_BINARY, CV, fmt, dir);
    int rc = system(cmd);
    snprintf(cmd, sizeof cmd, "%s/full.txt", dir);
    unsigned char *b = NULL;
    size_t n = 0;
    read_bytes(cmd, &b, &n);
    snprintf(msg, sizeof msg, "%s", b ? (const char *)b : "");
    free(b);
    TEST_CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 1, "%s to /dev/full exits 1 (status %d): %s", fmt, rc, msg);
    TEST_CHECK(strstr(msg, "No space left on device") != NULL, "%s to /dev/full names the reason: %s", fmt, msg);
    TEST_CHECK(!stat("/dev/full", &st) && S_ISCHR(st.st_mode), "%s: /dev/full is still the device", fmt);
}

int main(void) {
    char dir[] = "/tmp/qtts_intrXXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "mkdtemp failed\n");
        return 1;
    }
    /* long enough that no run ends on its own before the signal (each line is one utterance of <= 40 frames) */
    char path[512];
    snprintf(path, sizeof path, "%s/text.txt", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; f && i < 400; i++) fprintf(f, "This is sentence number %d of a long text.\n", i);
    if (f) fclose(f);
    static const char *const exts[] = {"wav", "flac", "m4a", "aac", "mp3"};
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++) interrupt_run(dir, exts[i], SIGINT);
    interrupt_run(dir, "m4a", SIGTERM);
    interrupt_run(dir, "flac", SIGTERM);
    full_device(dir, "wav");
    full_device(dir, "m4a");
    full_device(dir, "flac");
    rm_rf(dir);
    return test_finish("test_cli_interrupt");
}
