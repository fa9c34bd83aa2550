#ifndef APKPATCH_KDF_BYTES_H
#define APKPATCH_KDF_BYTES_H

#include <stddef.h>
#include <stdint.h>

/* Byte helpers both derivations (PBKDF2-SHA256 and the PKCS#12 KDF on SHA-1) share. */

/* Zeroes `length` bytes through a volatile pointer, so the compiler keeps the stores that clear key material. */
static inline void kdf_wipe(void *pointer, size_t length) {
    volatile uint8_t *bytes = pointer;
    while (length--) *bytes++ = 0;
}

/* Writes `count` 32-bit words big-endian, as SHA-1 and SHA-256 give their digests. */
static inline void kdf_store_be(uint8_t *out, const uint32_t *words, size_t count) {
    for (size_t i = 0; i < count; i++) {
        out[4 * i] = (uint8_t)(words[i] >> 24);
        out[4 * i + 1] = (uint8_t)(words[i] >> 16);
        out[4 * i + 2] = (uint8_t)(words[i] >> 8);
        out[4 * i + 3] = (uint8_t)words[i];
    }
}

#endif
