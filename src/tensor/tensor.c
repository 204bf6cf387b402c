#include "tensor/tensor.h"

#include <math.h>
#include <stdlib.h>
#include <strings.h>

int64_t qtts_dtype_block_elems(qtts_dtype t) {
    switch (t) {
    case QTTS_Q8_0:
    case QTTS_Q4_0:
    case QTTS_Q4_1:
    case QTTS_Q5_0:
    case QTTS_Q5_1: return 32;
    case QTTS_Q4_K:
    case QTTS_Q2_K:
    case QTTS_Q3_K:
    case QTTS_Q5_K:
    case QTTS_Q6_K: return 256;
    default: return 1;
    }
}

size_t qtts_dtype_block_bytes(qtts_dtype t) {
    switch (t) {
    case QTTS_F32:
    case QTTS_I32: return 4;
    case QTTS_F16:
    case QTTS_BF16: return 2;
    case QTTS_Q8_0: return 34;  /* f16 scale + 32 int8 */
    case QTTS_Q4_K: return 144; /* f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes */
    case QTTS_Q4_0: return 18;  /* f16 d + 16 nibble bytes */
    case QTTS_Q4_1: return 20;  /* f16 d, f16 m + 16 nibble bytes */
    case QTTS_Q5_0: return 22;  /* f16 d, 4 high-bit bytes, 16 nibble bytes */
    case QTTS_Q5_1: return 24;  /* f16 d, f16 m, 4 high-bit bytes, 16 nibble bytes */
    case QTTS_Q2_K: return 84;  /* 16 scale bytes, 64 2-bit bytes, f16 d, f16 dmin */
    case QTTS_Q3_K: return 110; /* 32 high-bit bytes, 64 2-bit bytes, 12 scale bytes, f16 d */
    case QTTS_Q5_K: return 176; /* f16 d, f16 dmin, 12 scale bytes, 32 high-bit bytes, 128 nibble bytes */
    case QTTS_Q6_K: return 210; /* 128 low-nibble bytes, 64 high-bit bytes, 16 int8 scales, f16 d */
    default: return 0;
    }
}

size_t qtts_dtype_row_bytes(qtts_dtype t, int64_t n) {
    int64_t be = qtts_dtype_block_elems(t);
    if (n < 0 || be <= 0 || n % be) return 0;
    return (size_t)(n / be) * qtts_dtype_block_bytes(t);
}

const char *qtts_dtype_name(qtts_dtype t) {
    switch (t) {
    case QTTS_F32: return "f32";
    case QTTS_F16: return "f16";
    case QTTS_BF16: return "bf16";
    case QTTS_Q8_0: return "q8_0";
    case QTTS_Q4_K: return "q4_k";
    case QTTS_Q4_0: return "q4_0";
    case QTTS_Q4_1: return "q4_1";
    case QTTS_Q5_0: return "q5_0";
    case QTTS_Q5_1: return "q5_1";
    case QTTS_Q2_K: return "q2_k";
    case QTTS_Q3_K: return "q3_k";
    case QTTS_Q5_K: return "q5_k";
    case QTTS_Q6_K: return "q6_k";
    case QTTS_I32: return "i32";
    default: return "invalid";
    }
}

qtts_dtype qtts_dtype_from_name(const char *name) {
    static const qtts_dtype all[] = {QTTS_F32, QTTS_F16, QTTS_BF16, QTTS_Q8_0, QTTS_Q4_K};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcasecmp(name, qtts_dtype_name(all[i]))) return all[i];
    return QTTS_DTYPE_INVALID;
}

int qtts_dtype_runs(qtts_dtype t) {
    return t == QTTS_F32 || t == QTTS_F16 || t == QTTS_BF16 || t == QTTS_Q8_0 || t == QTTS_Q4_K;
}

int qtts_dtype_known(qtts_dtype t) { return qtts_dtype_block_bytes(t) != 0; }

int64_t qtts_tensor_numel(const qtts_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

void qtts_mat_free(qtts_mat *m) {
    if (!m) return;
    free(m->owned);
    m->owned = NULL;
    m->data = NULL;
}

float qtts_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    int exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t u;
    if (exp == 0) {
        if (mant == 0) {
            u = sign;
        } else { /* subnormal */
            float f = ldexpf((float)mant, -24);
            return sign ? -f : f;
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (mant << 13);
    } else {
        u = sign | ((uint32_t)(exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t qtts_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t absu = u & 0x7fffffffu;
    if (absu > 0x7f800000u) return (uint16_t)(sign | 0x7e00u); /* NaN */
    if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* overflow -> inf */
    if (absu < 0x38800000u) { /* subnormal or zero: round to nearest even */
        float a;
        memcpy(&a, &absu, sizeof a);
        float scaled = a * 16777216.0f; /* 2^24 */
        uint32_t m = (uint32_t)lrintf(scaled);
        return (uint16_t)(sign | m);
    }
    uint32_t mant = absu & 0x7fffffu;
    int exp = (int)(absu >> 23) - 127 + 15;
    uint32_t h = ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}
