/* .rvq code files: exact bit layout, round trips, and malformed inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "io/rvq.h"

static void write_bytes(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    if (n) fwrite(b, 1, n, f);
    fclose(f);
}

int main(void) {
    qtts_err err = {0};
    char path[256];
    snprintf(path, sizeof path, "/tmp/qtts_test_rvq_%d.rvq", (int)getpid());

    /* bit order: codebook-major element i occupies stream bits 11i..11i+10, LSB first */
    {
        int32_t c[2 * 16] = {0};
        c[1 * 16 + 0] = 1;    /* t=1, q=0 -> element 1 -> bit 11 -> byte 1, bit 3 */
        c[0 * 16 + 1] = 1;    /* t=0, q=1 -> element 2 -> bit 22 -> byte 2, bit 6 */
        c[1 * 16 + 15] = 0x7FF; /* t=1, q=15 -> element 31 -> bits 341..351 = last 11 bits */
        unsigned char buf[44];
        TEST_CHECK(qtts_rvq_size(16, 2) == 44, "size of 2 frames = %zu", qtts_rvq_size(16, 2));
        TEST_CHECK(qtts_rvq_pack(c, 16, 2, buf, &err) == 0, "pack: %s", err.msg);
        TEST_CHECK(buf[0] == 0 && buf[1] == 0x08 && buf[2] == 0x40, "bytes 0..2 = %02x %02x %02x", buf[0], buf[1],
                   buf[2]);
        TEST_CHECK(buf[43] == 0xFF && buf[42] == 0xE0, "last bytes %02x %02x", buf[42], buf[43]);
        int nonzero = 0;
        for (int i = 3; i < 42; i++) nonzero += buf[i] != 0;
        TEST_CHECK(nonzero == 0, "unexpected bits set in the middle");
    }

    /* round trips through a file, several lengths */
    unsigned s = 5;
    for (int64_t T = 1; T <= 301; T += 50) {
        int32_t *c = malloc(sizeof(int32_t) * (size_t)(16 * T));
        for (int64_t i = 0; i < 16 * T; i++) {
            s = s * 1664525u + 1013904223u;
            c[i] = (int32_t)(s >> 21); /* 11 bits */
        }
        c[0] = 2047;
        TEST_CHECK(qtts_rvq_write(path, c, 16, T, &err) == 0, "write: %s", err.msg);
        int32_t *back = NULL;
        int64_t T2 = 0;
        TEST_CHECK(qtts_rvq_read(path, 16, 2048, &back, &T2, &err) == 0, "read: %s", err.msg);
        TEST_CHECK(T2 == T, "T %lld -> %lld", (long long)T, (long long)T2);
        if (back && T2 == T) TEST_EQUAL_I32(back, c, (size_t)(16 * T), "rvq round trip");
        FILE *f = fopen(path, "rb");
        fseek(f, 0, SEEK_END);
        TEST_CHECK(ftell(f) == 22 * T, "file of %lld frames is %ld bytes", (long long)T, ftell(f));
        fclose(f);
        free(back);
        free(c);
    }

    /* malformed files give one clear error */
    unsigned char junk[45];
    memset(junk, 0xFF, sizeof junk);
    struct {
        size_t n;
        int64_t cb;
        const char *expect;
    } bad[] = {{0, 2048, "empty"}, {21, 2048, "not a multiple of 22"}, {23, 2048, "not a multiple of 22"},
               {45, 2048, "not a multiple of 22"}, {22, 2000, "out of range"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_bytes(path, junk, bad[i].n);
        int32_t *c = NULL;
        int64_t T = 0;
        err.msg[0] = 0;
        int rc = qtts_rvq_read(path, 16, bad[i].cb, &c, &T, &err);
        TEST_CHECK(rc == -1 && c == NULL && strstr(err.msg, bad[i].expect) && strstr(err.msg, path),
                   "case %zu: rc %d, msg '%s' (want '%s')", i, rc, err.msg, bad[i].expect);
        free(c);
    }
    {
        int32_t *c = NULL;
        int64_t T = 0;
        TEST_CHECK(qtts_rvq_read("/nonexistent/x.rvq", 16, 2048, &c, &T, &err) == -1 && strstr(err.msg, "cannot open"),
                   "missing file: '%s'", err.msg);
        int32_t big[16] = {0};
        big[3] = 2048;
        TEST_CHECK(qtts_rvq_write(path, big, 16, 1, &err) == -1 && strstr(err.msg, "11 bits"), "2048 packed: '%s'",
                   err.msg);
        big[3] = -1;
        TEST_CHECK(qtts_rvq_write(path, big, 16, 1, &err) == -1, "-1 packed");
        TEST_CHECK(qtts_rvq_write(path, big, 12, 1, &err) == -1 && strstr(err.msg, "multiple of 8"),
                   "12 codebooks: '%s'", err.msg);
    }
    unlink(path);
    return test_finish("test_rvq");
}
