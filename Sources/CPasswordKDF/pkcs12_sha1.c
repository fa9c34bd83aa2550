#include "pkcs12_sha1.h"
#include "kdf_bytes.h"

#include <stdlib.h>
#include <string.h>

/* The PKCS#12 KDF (RFC 7292 appendix B.2) on SHA-1 (u = 20, v = 64), for the keystores older Java writes
   (keytool -J-Dkeystore.pkcs12.legacy, JDK 8 to 11): the integrity MAC's key (id 3), and the key (id 1) and IV
   (id 2) of pbeWithSHA1And3-KeyTripleDES-CBC and pbeWithSHA1And40BitRC2-CBC. After the first hash of D || S || P,
   each of the r - 1 iterations hashes the 20-byte digest alone: one compression of a block whose padding never
   changes, from SHA-1's initial state. OpenSSL 3 spends most of each iteration in its provider layer (a fetch, a
   context, a final); here it is the compression alone, two derivations interleaved when the CPU has SHA-NI
   (sha1rnds4 is latency-bound, so a second independent stream costs little more than the first). */

static const uint32_t SHA1_IV[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};

static uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

/* FIPS 180-4 6.1.2, one 64-byte block. */
static void sha1_portable_block(uint32_t state[5], const uint8_t *data) {
    uint32_t w[80];
    for (int t = 0; t < 16; t++) {
        w[t] = (uint32_t)data[4 * t] << 24 | (uint32_t)data[4 * t + 1] << 16 | (uint32_t)data[4 * t + 2] << 8 | data[4 * t + 3];
    }
    for (int t = 16; t < 80; t++) w[t] = rotl(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3], e = state[4];
    for (int t = 0; t < 80; t++) {
        uint32_t f, k;
        if (t < 20) { f = (b & c) | (~b & d); k = 0x5a827999; }
        else if (t < 40) { f = b ^ c ^ d; k = 0x6ed9eba1; }
        else if (t < 60) { f = (b & c) | (b & d) | (c & d); k = 0x8f1bbcdc; }
        else { f = b ^ c ^ d; k = 0xca62c1d6; }
        uint32_t temp = rotl(a, 5) + f + e + k + w[t];
        e = d; d = c; c = rotl(b, 30); b = a; a = temp;
    }
    state[0] += a; state[1] += b; state[2] += c; state[3] += d; state[4] += e;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <sha256x16.h>

#define SHANI __attribute__((target("sha,sse4.1,ssse3")))

/* Intel's SHA-NI sequence for SHA-1 ("Intel SHA Extensions", 2013): four rounds per sha1rnds4, the message
   schedule by sha1msg1/sha1msg2 four words at a time. ABCD is kept word-reversed, E in the top lane. */
SHANI static void sha1_shani_block(uint32_t state[5], const uint8_t *data) {
    const __m128i mask = _mm_set_epi64x(0x0001020304050607ULL, 0x08090a0b0c0d0e0fULL);
    __m128i abcdA = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)state), 0x1b);
    __m128i e0A = _mm_set_epi32((int)state[4], 0, 0, 0);
    const __m128i abcdsaveA = abcdA, e0saveA = e0A;
    __m128i m0A, m1A, m2A, m3A, e1A;
    m0A = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 0)), mask);
    e0A = _mm_add_epi32(e0A, m0A);
    e1A = abcdA;
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 0);
    m1A = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16)), mask);
    e1A = _mm_sha1nexte_epu32(e1A, m1A);
    e0A = abcdA;
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 0);
    m0A = _mm_sha1msg1_epu32(m0A, m1A);
    m2A = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 32)), mask);
    e0A = _mm_sha1nexte_epu32(e0A, m2A);
    e1A = abcdA;
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 0);
    m1A = _mm_sha1msg1_epu32(m1A, m2A);
    m0A = _mm_xor_si128(m0A, m2A);
    m3A = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 48)), mask);
    e1A = _mm_sha1nexte_epu32(e1A, m3A);
    e0A = abcdA;
    m0A = _mm_sha1msg2_epu32(m0A, m3A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 0);
    m2A = _mm_sha1msg1_epu32(m2A, m3A);
    m1A = _mm_xor_si128(m1A, m3A);
    e0A = _mm_sha1nexte_epu32(e0A, m0A);
    e1A = abcdA;
    m1A = _mm_sha1msg2_epu32(m1A, m0A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 0);
    m3A = _mm_sha1msg1_epu32(m3A, m0A);
    m2A = _mm_xor_si128(m2A, m0A);
    e1A = _mm_sha1nexte_epu32(e1A, m1A);
    e0A = abcdA;
    m2A = _mm_sha1msg2_epu32(m2A, m1A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 1);
    m0A = _mm_sha1msg1_epu32(m0A, m1A);
    m3A = _mm_xor_si128(m3A, m1A);
    e0A = _mm_sha1nexte_epu32(e0A, m2A);
    e1A = abcdA;
    m3A = _mm_sha1msg2_epu32(m3A, m2A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 1);
    m1A = _mm_sha1msg1_epu32(m1A, m2A);
    m0A = _mm_xor_si128(m0A, m2A);
    e1A = _mm_sha1nexte_epu32(e1A, m3A);
    e0A = abcdA;
    m0A = _mm_sha1msg2_epu32(m0A, m3A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 1);
    m2A = _mm_sha1msg1_epu32(m2A, m3A);
    m1A = _mm_xor_si128(m1A, m3A);
    e0A = _mm_sha1nexte_epu32(e0A, m0A);
    e1A = abcdA;
    m1A = _mm_sha1msg2_epu32(m1A, m0A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 1);
    m3A = _mm_sha1msg1_epu32(m3A, m0A);
    m2A = _mm_xor_si128(m2A, m0A);
    e1A = _mm_sha1nexte_epu32(e1A, m1A);
    e0A = abcdA;
    m2A = _mm_sha1msg2_epu32(m2A, m1A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 1);
    m0A = _mm_sha1msg1_epu32(m0A, m1A);
    m3A = _mm_xor_si128(m3A, m1A);
    e0A = _mm_sha1nexte_epu32(e0A, m2A);
    e1A = abcdA;
    m3A = _mm_sha1msg2_epu32(m3A, m2A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 2);
    m1A = _mm_sha1msg1_epu32(m1A, m2A);
    m0A = _mm_xor_si128(m0A, m2A);
    e1A = _mm_sha1nexte_epu32(e1A, m3A);
    e0A = abcdA;
    m0A = _mm_sha1msg2_epu32(m0A, m3A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 2);
    m2A = _mm_sha1msg1_epu32(m2A, m3A);
    m1A = _mm_xor_si128(m1A, m3A);
    e0A = _mm_sha1nexte_epu32(e0A, m0A);
    e1A = abcdA;
    m1A = _mm_sha1msg2_epu32(m1A, m0A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 2);
    m3A = _mm_sha1msg1_epu32(m3A, m0A);
    m2A = _mm_xor_si128(m2A, m0A);
    e1A = _mm_sha1nexte_epu32(e1A, m1A);
    e0A = abcdA;
    m2A = _mm_sha1msg2_epu32(m2A, m1A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 2);
    m0A = _mm_sha1msg1_epu32(m0A, m1A);
    m3A = _mm_xor_si128(m3A, m1A);
    e0A = _mm_sha1nexte_epu32(e0A, m2A);
    e1A = abcdA;
    m3A = _mm_sha1msg2_epu32(m3A, m2A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 2);
    m1A = _mm_sha1msg1_epu32(m1A, m2A);
    m0A = _mm_xor_si128(m0A, m2A);
    e1A = _mm_sha1nexte_epu32(e1A, m3A);
    e0A = abcdA;
    m0A = _mm_sha1msg2_epu32(m0A, m3A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 3);
    m2A = _mm_sha1msg1_epu32(m2A, m3A);
    m1A = _mm_xor_si128(m1A, m3A);
    e0A = _mm_sha1nexte_epu32(e0A, m0A);
    e1A = abcdA;
    m1A = _mm_sha1msg2_epu32(m1A, m0A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 3);
    m3A = _mm_sha1msg1_epu32(m3A, m0A);
    m2A = _mm_xor_si128(m2A, m0A);
    e1A = _mm_sha1nexte_epu32(e1A, m1A);
    e0A = abcdA;
    m2A = _mm_sha1msg2_epu32(m2A, m1A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 3);
    m3A = _mm_xor_si128(m3A, m1A);
    e0A = _mm_sha1nexte_epu32(e0A, m2A);
    e1A = abcdA;
    m3A = _mm_sha1msg2_epu32(m3A, m2A);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 3);
    e1A = _mm_sha1nexte_epu32(e1A, m3A);
    e0A = abcdA;
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 3);
    e0A = _mm_sha1nexte_epu32(e0A, e0saveA);
    abcdA = _mm_add_epi32(abcdA, abcdsaveA);
    _mm_storeu_si128((__m128i *)state, _mm_shuffle_epi32(abcdA, 0x1b));
    state[4] = (uint32_t)_mm_extract_epi32(e0A, 3);
}

/* Two independent blocks, `a` into `stateA` and `b` into `stateB`, their instructions interleaved. */
SHANI static void sha1_shani_x2_block(uint32_t stateA[5], uint32_t stateB[5], const uint8_t *a, const uint8_t *b) {
    const __m128i mask = _mm_set_epi64x(0x0001020304050607ULL, 0x08090a0b0c0d0e0fULL);
    __m128i abcdA = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)stateA), 0x1b);
    __m128i abcdB = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)stateB), 0x1b);
    __m128i e0A = _mm_set_epi32((int)stateA[4], 0, 0, 0), e0B = _mm_set_epi32((int)stateB[4], 0, 0, 0);
    const __m128i abcdsaveA = abcdA, e0saveA = e0A, abcdsaveB = abcdB, e0saveB = e0B;
    __m128i m0A, m1A, m2A, m3A, e1A;
    __m128i m0B, m1B, m2B, m3B, e1B;
    m0A = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(a + 0)), mask);
    m0B = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(b + 0)), mask);
    e0A = _mm_add_epi32(e0A, m0A);
    e0B = _mm_add_epi32(e0B, m0B);
    e1A = abcdA;
    e1B = abcdB;
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 0);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e0B, 0);
    m1A = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(a + 16)), mask);
    m1B = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(b + 16)), mask);
    e1A = _mm_sha1nexte_epu32(e1A, m1A);
    e1B = _mm_sha1nexte_epu32(e1B, m1B);
    e0A = abcdA;
    e0B = abcdB;
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 0);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e1B, 0);
    m0A = _mm_sha1msg1_epu32(m0A, m1A);
    m0B = _mm_sha1msg1_epu32(m0B, m1B);
    m2A = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(a + 32)), mask);
    m2B = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(b + 32)), mask);
    e0A = _mm_sha1nexte_epu32(e0A, m2A);
    e0B = _mm_sha1nexte_epu32(e0B, m2B);
    e1A = abcdA;
    e1B = abcdB;
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 0);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e0B, 0);
    m1A = _mm_sha1msg1_epu32(m1A, m2A);
    m1B = _mm_sha1msg1_epu32(m1B, m2B);
    m0A = _mm_xor_si128(m0A, m2A);
    m0B = _mm_xor_si128(m0B, m2B);
    m3A = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(a + 48)), mask);
    m3B = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(b + 48)), mask);
    e1A = _mm_sha1nexte_epu32(e1A, m3A);
    e1B = _mm_sha1nexte_epu32(e1B, m3B);
    e0A = abcdA;
    e0B = abcdB;
    m0A = _mm_sha1msg2_epu32(m0A, m3A);
    m0B = _mm_sha1msg2_epu32(m0B, m3B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 0);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e1B, 0);
    m2A = _mm_sha1msg1_epu32(m2A, m3A);
    m2B = _mm_sha1msg1_epu32(m2B, m3B);
    m1A = _mm_xor_si128(m1A, m3A);
    m1B = _mm_xor_si128(m1B, m3B);
    e0A = _mm_sha1nexte_epu32(e0A, m0A);
    e0B = _mm_sha1nexte_epu32(e0B, m0B);
    e1A = abcdA;
    e1B = abcdB;
    m1A = _mm_sha1msg2_epu32(m1A, m0A);
    m1B = _mm_sha1msg2_epu32(m1B, m0B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 0);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e0B, 0);
    m3A = _mm_sha1msg1_epu32(m3A, m0A);
    m3B = _mm_sha1msg1_epu32(m3B, m0B);
    m2A = _mm_xor_si128(m2A, m0A);
    m2B = _mm_xor_si128(m2B, m0B);
    e1A = _mm_sha1nexte_epu32(e1A, m1A);
    e1B = _mm_sha1nexte_epu32(e1B, m1B);
    e0A = abcdA;
    e0B = abcdB;
    m2A = _mm_sha1msg2_epu32(m2A, m1A);
    m2B = _mm_sha1msg2_epu32(m2B, m1B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 1);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e1B, 1);
    m0A = _mm_sha1msg1_epu32(m0A, m1A);
    m0B = _mm_sha1msg1_epu32(m0B, m1B);
    m3A = _mm_xor_si128(m3A, m1A);
    m3B = _mm_xor_si128(m3B, m1B);
    e0A = _mm_sha1nexte_epu32(e0A, m2A);
    e0B = _mm_sha1nexte_epu32(e0B, m2B);
    e1A = abcdA;
    e1B = abcdB;
    m3A = _mm_sha1msg2_epu32(m3A, m2A);
    m3B = _mm_sha1msg2_epu32(m3B, m2B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 1);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e0B, 1);
    m1A = _mm_sha1msg1_epu32(m1A, m2A);
    m1B = _mm_sha1msg1_epu32(m1B, m2B);
    m0A = _mm_xor_si128(m0A, m2A);
    m0B = _mm_xor_si128(m0B, m2B);
    e1A = _mm_sha1nexte_epu32(e1A, m3A);
    e1B = _mm_sha1nexte_epu32(e1B, m3B);
    e0A = abcdA;
    e0B = abcdB;
    m0A = _mm_sha1msg2_epu32(m0A, m3A);
    m0B = _mm_sha1msg2_epu32(m0B, m3B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 1);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e1B, 1);
    m2A = _mm_sha1msg1_epu32(m2A, m3A);
    m2B = _mm_sha1msg1_epu32(m2B, m3B);
    m1A = _mm_xor_si128(m1A, m3A);
    m1B = _mm_xor_si128(m1B, m3B);
    e0A = _mm_sha1nexte_epu32(e0A, m0A);
    e0B = _mm_sha1nexte_epu32(e0B, m0B);
    e1A = abcdA;
    e1B = abcdB;
    m1A = _mm_sha1msg2_epu32(m1A, m0A);
    m1B = _mm_sha1msg2_epu32(m1B, m0B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 1);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e0B, 1);
    m3A = _mm_sha1msg1_epu32(m3A, m0A);
    m3B = _mm_sha1msg1_epu32(m3B, m0B);
    m2A = _mm_xor_si128(m2A, m0A);
    m2B = _mm_xor_si128(m2B, m0B);
    e1A = _mm_sha1nexte_epu32(e1A, m1A);
    e1B = _mm_sha1nexte_epu32(e1B, m1B);
    e0A = abcdA;
    e0B = abcdB;
    m2A = _mm_sha1msg2_epu32(m2A, m1A);
    m2B = _mm_sha1msg2_epu32(m2B, m1B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 1);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e1B, 1);
    m0A = _mm_sha1msg1_epu32(m0A, m1A);
    m0B = _mm_sha1msg1_epu32(m0B, m1B);
    m3A = _mm_xor_si128(m3A, m1A);
    m3B = _mm_xor_si128(m3B, m1B);
    e0A = _mm_sha1nexte_epu32(e0A, m2A);
    e0B = _mm_sha1nexte_epu32(e0B, m2B);
    e1A = abcdA;
    e1B = abcdB;
    m3A = _mm_sha1msg2_epu32(m3A, m2A);
    m3B = _mm_sha1msg2_epu32(m3B, m2B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 2);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e0B, 2);
    m1A = _mm_sha1msg1_epu32(m1A, m2A);
    m1B = _mm_sha1msg1_epu32(m1B, m2B);
    m0A = _mm_xor_si128(m0A, m2A);
    m0B = _mm_xor_si128(m0B, m2B);
    e1A = _mm_sha1nexte_epu32(e1A, m3A);
    e1B = _mm_sha1nexte_epu32(e1B, m3B);
    e0A = abcdA;
    e0B = abcdB;
    m0A = _mm_sha1msg2_epu32(m0A, m3A);
    m0B = _mm_sha1msg2_epu32(m0B, m3B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 2);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e1B, 2);
    m2A = _mm_sha1msg1_epu32(m2A, m3A);
    m2B = _mm_sha1msg1_epu32(m2B, m3B);
    m1A = _mm_xor_si128(m1A, m3A);
    m1B = _mm_xor_si128(m1B, m3B);
    e0A = _mm_sha1nexte_epu32(e0A, m0A);
    e0B = _mm_sha1nexte_epu32(e0B, m0B);
    e1A = abcdA;
    e1B = abcdB;
    m1A = _mm_sha1msg2_epu32(m1A, m0A);
    m1B = _mm_sha1msg2_epu32(m1B, m0B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 2);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e0B, 2);
    m3A = _mm_sha1msg1_epu32(m3A, m0A);
    m3B = _mm_sha1msg1_epu32(m3B, m0B);
    m2A = _mm_xor_si128(m2A, m0A);
    m2B = _mm_xor_si128(m2B, m0B);
    e1A = _mm_sha1nexte_epu32(e1A, m1A);
    e1B = _mm_sha1nexte_epu32(e1B, m1B);
    e0A = abcdA;
    e0B = abcdB;
    m2A = _mm_sha1msg2_epu32(m2A, m1A);
    m2B = _mm_sha1msg2_epu32(m2B, m1B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 2);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e1B, 2);
    m0A = _mm_sha1msg1_epu32(m0A, m1A);
    m0B = _mm_sha1msg1_epu32(m0B, m1B);
    m3A = _mm_xor_si128(m3A, m1A);
    m3B = _mm_xor_si128(m3B, m1B);
    e0A = _mm_sha1nexte_epu32(e0A, m2A);
    e0B = _mm_sha1nexte_epu32(e0B, m2B);
    e1A = abcdA;
    e1B = abcdB;
    m3A = _mm_sha1msg2_epu32(m3A, m2A);
    m3B = _mm_sha1msg2_epu32(m3B, m2B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 2);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e0B, 2);
    m1A = _mm_sha1msg1_epu32(m1A, m2A);
    m1B = _mm_sha1msg1_epu32(m1B, m2B);
    m0A = _mm_xor_si128(m0A, m2A);
    m0B = _mm_xor_si128(m0B, m2B);
    e1A = _mm_sha1nexte_epu32(e1A, m3A);
    e1B = _mm_sha1nexte_epu32(e1B, m3B);
    e0A = abcdA;
    e0B = abcdB;
    m0A = _mm_sha1msg2_epu32(m0A, m3A);
    m0B = _mm_sha1msg2_epu32(m0B, m3B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 3);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e1B, 3);
    m2A = _mm_sha1msg1_epu32(m2A, m3A);
    m2B = _mm_sha1msg1_epu32(m2B, m3B);
    m1A = _mm_xor_si128(m1A, m3A);
    m1B = _mm_xor_si128(m1B, m3B);
    e0A = _mm_sha1nexte_epu32(e0A, m0A);
    e0B = _mm_sha1nexte_epu32(e0B, m0B);
    e1A = abcdA;
    e1B = abcdB;
    m1A = _mm_sha1msg2_epu32(m1A, m0A);
    m1B = _mm_sha1msg2_epu32(m1B, m0B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 3);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e0B, 3);
    m3A = _mm_sha1msg1_epu32(m3A, m0A);
    m3B = _mm_sha1msg1_epu32(m3B, m0B);
    m2A = _mm_xor_si128(m2A, m0A);
    m2B = _mm_xor_si128(m2B, m0B);
    e1A = _mm_sha1nexte_epu32(e1A, m1A);
    e1B = _mm_sha1nexte_epu32(e1B, m1B);
    e0A = abcdA;
    e0B = abcdB;
    m2A = _mm_sha1msg2_epu32(m2A, m1A);
    m2B = _mm_sha1msg2_epu32(m2B, m1B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 3);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e1B, 3);
    m3A = _mm_xor_si128(m3A, m1A);
    m3B = _mm_xor_si128(m3B, m1B);
    e0A = _mm_sha1nexte_epu32(e0A, m2A);
    e0B = _mm_sha1nexte_epu32(e0B, m2B);
    e1A = abcdA;
    e1B = abcdB;
    m3A = _mm_sha1msg2_epu32(m3A, m2A);
    m3B = _mm_sha1msg2_epu32(m3B, m2B);
    abcdA = _mm_sha1rnds4_epu32(abcdA, e0A, 3);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e0B, 3);
    e1A = _mm_sha1nexte_epu32(e1A, m3A);
    e1B = _mm_sha1nexte_epu32(e1B, m3B);
    e0A = abcdA;
    e0B = abcdB;
    abcdA = _mm_sha1rnds4_epu32(abcdA, e1A, 3);
    abcdB = _mm_sha1rnds4_epu32(abcdB, e1B, 3);
    e0A = _mm_sha1nexte_epu32(e0A, e0saveA);
    e0B = _mm_sha1nexte_epu32(e0B, e0saveB);
    abcdA = _mm_add_epi32(abcdA, abcdsaveA);
    abcdB = _mm_add_epi32(abcdB, abcdsaveB);
    _mm_storeu_si128((__m128i *)stateA, _mm_shuffle_epi32(abcdA, 0x1b));
    stateA[4] = (uint32_t)_mm_extract_epi32(e0A, 3);
    _mm_storeu_si128((__m128i *)stateB, _mm_shuffle_epi32(abcdB, 0x1b));
    stateB[4] = (uint32_t)_mm_extract_epi32(e0B, 3);
}

static int shani_available(void) { return apk_sha256_shani_available(); }
#else
static void sha1_shani_block(uint32_t state[5], const uint8_t *data) { sha1_portable_block(state, data); }
static void sha1_shani_x2_block(uint32_t stateA[5], uint32_t stateB[5], const uint8_t *a, const uint8_t *b) {
    sha1_portable_block(stateA, a);
    sha1_portable_block(stateB, b);
}
static int shani_available(void) { return 0; }
#endif

static void portable_x2_block(uint32_t stateA[5], uint32_t stateB[5], const uint8_t *a, const uint8_t *b) {
    sha1_portable_block(stateA, a);
    sha1_portable_block(stateB, b);
}

struct sha1_engine {
    void (*one)(uint32_t state[5], const uint8_t *data);
    void (*two)(uint32_t stateA[5], uint32_t stateB[5], const uint8_t *a, const uint8_t *b);
};

/* One derivation. I = S || P (each repeated to a multiple of 64 bytes) is kept: an output longer than 20 bytes
   takes further blocks A_2, A_3, ... from I updated with the previous block (B.2 step 6C). */
struct sha1_chain {
    const apk_kdf_job *job;
    uint8_t *input;          /* I */
    size_t input_length;
    uint32_t state[5];
    uint8_t block[64];       /* A_i so far, then SHA-1's padding for a 20-byte message */
    uint64_t left;           /* iterations still to run for the current output block */
    size_t produced;         /* output bytes written */
};

/* A_i's first hash, H(D || I), from SHA-1's initial state; `left` then counts the r - 1 iterations to go. */
static void chain_begin_block(struct sha1_chain *c, const struct sha1_engine *e) {
    uint8_t buffer[64];
    uint32_t state[5];
    memcpy(state, SHA1_IV, sizeof state);
    memset(buffer, c->job->id, sizeof buffer);
    e->one(state, buffer);
    for (size_t offset = 0; offset < c->input_length; offset += 64) e->one(state, c->input + offset);
    uint64_t bits = (64 + (uint64_t)c->input_length) * 8;
    memset(buffer, 0, sizeof buffer);
    buffer[0] = 0x80;
    for (int i = 0; i < 8; i++) buffer[63 - i] = (uint8_t)(bits >> (8 * i));
    e->one(state, buffer);
    memset(c->block, 0, sizeof c->block);
    kdf_store_be(c->block, state, 5);
    c->block[20] = 0x80;
    c->block[62] = 0x00;
    c->block[63] = 0xa0;    /* 160 bits */
    kdf_wipe(state, sizeof state);
    c->left = (uint64_t)c->job->iterations - 1;
}

static void chain_prepare(struct sha1_chain *c) { memcpy(c->state, SHA1_IV, sizeof c->state); }

static void chain_advance(struct sha1_chain *c) {
    kdf_store_be(c->block, c->state, 5);
    c->left--;
}

/* A_i is done: its bytes go out, and when more are wanted I becomes I + B + 1 block by block (B: A_i repeated to
   64 bytes, each block read as a big-endian integer mod 2^512), and A_(i+1) begins. Returns whether the chain
   has more to run. */
static int chain_end_block(struct sha1_chain *c, const struct sha1_engine *e) {
    size_t take = c->job->out_length - c->produced < 20 ? c->job->out_length - c->produced : 20;
    memcpy(c->job->out + c->produced, c->block, take);
    c->produced += take;
    if (c->produced == c->job->out_length) return 0;
    uint8_t b[64];
    for (int i = 0; i < 64; i++) b[i] = c->block[i % 20];
    for (size_t offset = 0; offset < c->input_length; offset += 64) {
        unsigned carry = 1;
        for (int i = 63; i >= 0; i--) {
            carry += (unsigned)c->input[offset + (size_t)i] + b[i];
            c->input[offset + (size_t)i] = (uint8_t)carry;
            carry >>= 8;
        }
    }
    kdf_wipe(b, sizeof b);
    chain_begin_block(c, e);
    return 1;
}

static size_t repeated_length(size_t length) { return 64 * ((length + 63) / 64); }

int apk_pkcs12_sha1_run(apk_kdf_job *jobs, size_t count, int engine) {
    size_t chainCount = 0;
    for (size_t j = 0; j < count; j++) if (jobs[j].kind == APK_KDF_PKCS12_SHA1) chainCount++;
    if (chainCount == 0) return 0;
    struct sha1_chain *chains = calloc(chainCount, sizeof *chains);
    if (chains == NULL) return -1;
    struct sha1_engine e = {sha1_portable_block, portable_x2_block};
    if (engine == APK_KDF_ENGINE_FASTEST && shani_available()) {
        e.one = sha1_shani_block;
        e.two = sha1_shani_x2_block;
    }
    int status = 0;
    size_t next = 0;
    for (size_t j = 0; j < count; j++) {
        const apk_kdf_job *job = &jobs[j];
        if (job->kind != APK_KDF_PKCS12_SHA1) continue;
        struct sha1_chain *c = &chains[next++];
        c->job = job;
        size_t saltLength = repeated_length(job->salt_length), passwordLength = repeated_length(job->password_length);
        c->input_length = saltLength + passwordLength;
        if (c->input_length > 0) {
            c->input = malloc(c->input_length);
            if (c->input == NULL) { status = -1; break; }
            for (size_t i = 0; i < saltLength; i++) c->input[i] = job->salt[i % job->salt_length];
            for (size_t i = 0; i < passwordLength; i++) c->input[saltLength + i] = job->password[i % job->password_length];
        }
        chain_begin_block(c, &e);
    }
    /* The two chains with the most iterations left share the interleaved pair until the shorter ends. */
    while (status == 0) {
        size_t first = chainCount, second = chainCount;
        for (size_t i = 0; i < chainCount; i++) {
            if (chains[i].job == NULL) continue;
            if (first == chainCount || chains[i].left > chains[first].left) { second = first; first = i; }
            else if (second == chainCount || chains[i].left > chains[second].left) { second = i; }
        }
        if (first == chainCount) break;
        struct sha1_chain *a = &chains[first];
        if (second == chainCount) {
            while (a->left > 0) {
                chain_prepare(a);
                e.one(a->state, a->block);
                chain_advance(a);
            }
        } else {
            struct sha1_chain *b = &chains[second];
            while (b->left > 0) {
                chain_prepare(a);
                chain_prepare(b);
                e.two(a->state, b->state, a->block, b->block);
                chain_advance(a);
                chain_advance(b);
            }
        }
        for (size_t i = 0; i < chainCount; i++) {
            if (chains[i].job != NULL && chains[i].left == 0 && !chain_end_block(&chains[i], &e)) chains[i].job = NULL;
        }
    }
    for (size_t i = 0; i < chainCount; i++) {
        if (chains[i].input != NULL) {
            kdf_wipe(chains[i].input, chains[i].input_length);
            free(chains[i].input);
        }
    }
    kdf_wipe(chains, chainCount * sizeof *chains);
    free(chains);
    return status;
}
