#ifndef APKPATCH_LEGACY_CIPHERS_H
#define APKPATCH_LEGACY_CIPHERS_H

#include <stddef.h>
#include <stdint.h>

/* The ciphers of old PKCS#12 keystores that OpenSSL 3 keeps in its legacy provider, a module a statically linked
   libcrypto does not load: RC2 (RFC 2268) in CBC mode and RC4. What `openssl pkcs12 -export -legacy`, OpenSSL 1.x
   and Java 8's keytool wrote (pbeWithSHAAnd40BitRC2-CBC certificate safes), and what Java also offers
   (pbeWithSHAAnd128BitRC2-CBC, pbeWithSHAAnd40/128BitRC4). Decryption only: keystores are read, never written
   this way. */

/* RC2-CBC decryption of `length` bytes (a multiple of 8) with a key of `key_length` bytes (1 to 128) and
   `effective_bits` effective key bits (1 to 1024; PKCS#12's RC2 uses the key's own bit length). No padding is
   removed. Returns 0, or -1 when an argument is out of range (nothing written). */
int apk_rc2_cbc_decrypt(const uint8_t *key, size_t key_length, unsigned effective_bits, const uint8_t iv[8],
                        const uint8_t *in, uint8_t *out, size_t length);

/* RC4 over `length` bytes (its own inverse) with a key of `key_length` bytes (1 to 256). Returns 0 or -1. */
int apk_rc4(const uint8_t *key, size_t key_length, const uint8_t *in, uint8_t *out, size_t length);

#endif
