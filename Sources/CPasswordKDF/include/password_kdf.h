#ifndef APKPATCH_PASSWORD_KDF_H
#define APKPATCH_PASSWORD_KDF_H

#include <stddef.h>
#include <stdint.h>

/* The password-based key derivations of a PKCS#12 keystore, on SHA-256: PBKDF2-HMAC-SHA256 (RFC 8018 5.2, the
   PBES2 key of keytool's and OpenSSL 3's key and certificate bags) and the PKCS#12 KDF (RFC 7292 appendix B.2,
   the integrity MAC's key). Each iteration is one or two SHA-256 compressions of a single block whose inputs
   are known once (the HMAC key's inner and outer states, the padding), so the iterations run on the
   compression function directly; OpenSSL 3 goes through its provider layer (a fetch, a context, a final) per
   iteration. The derivations of one keystore are independent, so they run side by side on two interleaved
   SHA-NI streams. The PKCS#12 KDF on SHA-1, for older Java's stores, works the same way on SHA-1's compression
   (pkcs12_sha1.c). */

enum {
    APK_KDF_PBKDF2_HMAC_SHA256 = 1,
    APK_KDF_PKCS12_SHA256 = 2,
    /* The PKCS#12 KDF with SHA-1 (u = 20): older Java's keystores (the MAC key, the 3DES and RC2 keys and IVs).
       Outputs longer than 20 bytes (a 3DES key) take further blocks, as RFC 7292 B.2 step 6C makes them. */
    APK_KDF_PKCS12_SHA1 = 3,
};

typedef struct {
    int kind;
    /* PBKDF2: the password's bytes as given. PKCS#12: the BMPString (big-endian UTF-16 with its two
       terminating zero bytes, OPENSSL_utf82uni's form); NULL with length 0 for an absent password. */
    const uint8_t *password;
    size_t password_length;
    const uint8_t *salt;
    size_t salt_length;
    uint32_t iterations;        /* at least 1 */
    uint8_t id;                 /* PKCS#12: 1 key, 2 IV, 3 MAC key */
    uint8_t *out;
    size_t out_length;          /* PBKDF2: 1 to 1024 bytes; PKCS#12 SHA-256: 1 to 32; PKCS#12 SHA-1: 1 to 64 */
} apk_kdf_job;

enum {
    APK_KDF_ENGINE_FASTEST = 0,  /* SHA-NI when the CPU has it, else portable C */
    APK_KDF_ENGINE_PORTABLE = 1, /* portable C only (tests compare the two) */
};

/* Runs the `count` jobs, writing each one's `out`. Returns 0, or -1 (nothing written) when a job's
   parameters are outside what is described above. */
int apk_kdf_run(apk_kdf_job *jobs, size_t count, int engine);

#endif
