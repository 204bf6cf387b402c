/* .rvq files: the speech-tokenizer codes of one utterance, no header.
 *
 * A clip of T frames has n_q codebooks (16 for the 12 Hz tokenizer). The code
 * array is taken in CODEBOOK-MAJOR order, c[q][t] (q = 0..n_q-1, t = 0..T-1,
 * element index i = q*T + t), and written as one little-endian bit stream of
 * 11 bits per code, least significant bit first: bit b of code i is bit
 * (11*i + b) of the stream, and stream bit n is bit (n % 8) of byte n / 8.
 * The file is ceil(n_q*T*11/8) bytes; with n_q = 16 that is exactly 22*T, so
 * a valid file is a non-empty multiple of 22 bytes. Every code must be below
 * the codebook size (2048 = 2^11 for the shipped tokenizer).
 *
 * In memory the API uses FRAME-MAJOR codes, codes[t*n_q + q] (what the talker
 * produces and the decoder consumes). */
#ifndef QTTS_IO_RVQ_H
#define QTTS_IO_RVQ_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

enum { QTTS_RVQ_BITS = 11 };

/* Bytes of a clip: ceil(n_q*T*11/8). */
size_t qtts_rvq_size(int64_t n_q, int64_t T);

/* Packs frame-major codes into buf (qtts_rvq_size bytes). Fails if a code is
 * outside [0, 2^11) or n_q*11 is not a whole number of bytes. */
int qtts_rvq_pack(const int32_t *codes, int64_t n_q, int64_t T, unsigned char *buf, qtts_err *err);
/* Unpacks a buffer; *codes_out (frame-major, malloc'd) and *T_out. label names
 * the source in errors. Checks size and that every code < codebook_size. */
int qtts_rvq_unpack(const unsigned char *buf, size_t size, int64_t n_q, int64_t codebook_size, const char *label,
                    int32_t **codes_out, int64_t *T_out, qtts_err *err);

int qtts_rvq_write(const char *path, const int32_t *codes, int64_t n_q, int64_t T, qtts_err *err);
int qtts_rvq_read(const char *path, int64_t n_q, int64_t codebook_size, int32_t **codes_out, int64_t *T_out,
                  qtts_err *err);

#endif
