#ifndef APKPATCH_CRC32_FOLD_H
#define APKPATCH_CRC32_FOLD_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32 (ZIP's, zlib's crc32) by carry-less multiplication on 512-bit registers (VPCLMULQDQ): four
   registers of data folded forward 256 bytes at a time, each 128-bit lane on its own, the folding method of
   Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Gopal et al., 2009)
   widened to four lanes a register. A signer checks the CRC-32 of every stored byte it copies, and the
   128-bit form (libdeflate 1.14, what Debian 12 ships) folds a quarter as much per instruction. */

/* Non-zero when the CPU has AVX-512F and VPCLMULQDQ and the OS saves the 512-bit registers. */
int apk_crc32_vpclmul_available(void);

/* The CRC-32 of the `length` bytes at `data`, continuing `crc` (zlib's convention: 0 to start, the
   previous call's result to continue). `length` must be a multiple of 64 and at least 256.
   Call only when apk_crc32_vpclmul_available(). */
uint32_t apk_crc32_vpclmul(uint32_t crc, const uint8_t *data, size_t length);

#endif
