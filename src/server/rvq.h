/* The .rvq and .spk file formats (design.md contract), in memory.
 * .rvq: 16 codebooks x T frames of 11-bit codes, layout [16][T] row-major,
 *       packed LSB-first into one bit stream, 22 bytes per frame, no header.
 * .spk: the x-vector as little-endian float32, no header. */
#ifndef QTTS_SERVER_RVQ_H
#define QTTS_SERVER_RVQ_H

#include <stddef.h>
#include <stdint.h>

#define SRV_RVQ_CODEBOOKS 16
#define SRV_RVQ_BITS 11
#define SRV_RVQ_FRAME_BYTES 22

/* Unpacks size bytes into codes [n_frames][16] (the engine's order).
 * Returns a malloc'd array or NULL (why says: bad size / out of memory). */
int32_t *srv_rvq_unpack(const void *data, size_t size, size_t *n_frames, const char **why);
/* Packs codes [n_frames][16] (each 0..2047) into a malloc'd buffer of
 * 22*n_frames bytes; NULL if a code is out of range or out of memory. */
unsigned char *srv_rvq_pack(const int32_t *codes, size_t n_frames, size_t *size, const char **why);

/* Little-endian float32 <-> host floats. */
float *srv_spk_unpack(const void *data, size_t size, size_t *n, const char **why);
unsigned char *srv_spk_pack(const float *x, size_t n, size_t *size);

#endif
