#ifndef APKPATCH_SHA256X16_H
#define APKPATCH_SHA256X16_H

#include <stddef.h>
#include <stdint.h>

/* Sixteen independent SHA-256 computations in the lanes of AVX-512 registers (the "multi-buffer" technique
   of Intel's isa-l_crypto). A core with SHA-NI hashes one stream at ~2 GB/s; sixteen lanes of AVX-512 hash
   ~5.5 GB/s together, and APK signing hashes many independent streams (1 MiB chunks, JAR entries). */

/* Non-zero when the CPU has AVX-512F and AVX-512BW and the OS saves their registers. */
int apk_sha256x16_available(void);

/* Runs `nblocks` 64-byte blocks of every lane whose bit is set in `active`: lane j reads
   `data[j] + 64 * i` for i < nblocks and updates column j of `state` (word w of lane j at state[16 * w + j]).
   Inactive lanes' state is left as it is, but their `data[j]` must still point at `64 * nblocks` readable
   bytes (any active lane's pointer will do). Call only when apk_sha256x16_available(). */
void apk_sha256x16_blocks(uint32_t state[8 * 16], const uint8_t *const data[16], uint32_t active, size_t nblocks);

/* The SHA-256 of each of `count` messages, message i being `lengths[i]` bytes at `base + offsets[i]`, written
   to `out + 32 * i`: lanes take the next message as they finish one, with the padding done here, so thousands
   of short messages (a JAR manifest's sections) cost no scheduling per block in the caller.
   Call only when apk_sha256x16_available(). */
void apk_sha256x16_each(const uint8_t *base, const size_t *offsets, const size_t *lengths, size_t count, uint8_t *out);

/* Non-zero when the CPU has the SHA extensions (SHA-NI) and SSE4.1. */
int apk_sha256_shani_available(void);

/* Runs `nblocks` 64-byte blocks of one stream at `data` through `state` (h0..h7) with SHA-NI: for the few
   lanes left when the others have finished, where one lane of sixteen would waste the vector.
   Call only when apk_sha256_shani_available(). */
void apk_sha256_shani_blocks(uint32_t state[8], const uint8_t *data, size_t nblocks);

/* Runs `nblocks` blocks of two streams, `a` through `stateA` and `b` through `stateB`, interleaved with SHA-NI:
   twice one stream's speed on a core whose sha256rnds2 is latency-bound (the many-lane form for CPUs without
   AVX-512). Call only when apk_sha256_shani_available(). */
void apk_sha256_shani_x2_blocks(uint32_t stateA[8], uint32_t stateB[8], const uint8_t *a, const uint8_t *b, size_t nblocks);

/* apk_sha256x16_each on two interleaved SHA-NI streams. Call only when apk_sha256_shani_available(). */
void apk_sha256_shani_each(const uint8_t *base, const size_t *offsets, const size_t *lengths, size_t count, uint8_t *out);

/* Runs `nblocks` 64-byte blocks of one stream through `state` (h0..h7) in portable C (FIPS 180-4 6.2.2): for CPUs
   without SHA-NI. Available everywhere. */
void apk_sha256_portable_blocks(uint32_t state[8], const uint8_t *data, size_t nblocks);

#endif
