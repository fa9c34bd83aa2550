#ifndef APKPATCH_CZLIBDEFLATE_H
#define APKPATCH_CZLIBDEFLATE_H

#include <stddef.h>
#include <stdint.h>

/* zlib 1.2.13's deflate (deflate.c, trees.c: this folder, see README.md), for raw DEFLATE of a whole buffer in one
   call with Java's Deflater parameters (windowBits -15, memLevel 8, default strategy): the bytes the system zlib
   writes, which apksigner's JAR signature files are. At levels 4 to 9 (zlib's deflate_slow) `fast` non-zero turns on
   a search that finds exactly the matches zlib's longest_match finds, sooner on text with long repeated prefixes
   such as a JAR manifest (deflate.c, "apkpatch:").

   Compresses `input` (`count` bytes, below 4 GiB) at `level` (0-9) into `output`, which has room for `capacity`
   bytes, at least apkpatch_deflate_bound(count): returns 0 and sets *written, or a zlib error code (Z_MEM_ERROR -4,
   Z_STREAM_ERROR -2, Z_BUF_ERROR -5 if output is too small, ...) and leaves it alone. */
int apkpatch_deflate_raw(const uint8_t *input, size_t count, int level, int fast, uint8_t *output, size_t capacity,
                         size_t *written);
/* apkpatch_deflate_raw with the deflate's tables (about 1.7 MB with the faster search, 0.3 MB without) taken first
   from `region_count` regions of `region_size` bytes the caller lends (each table zeroed there; none left in them at
   return): memory the process has touched already costs no page faults, where a fresh mapping's first writes do. */
int apkpatch_deflate_raw_in(const uint8_t *input, size_t count, int level, int fast, uint8_t *output, size_t capacity,
                            size_t *written, uint8_t *const *regions, size_t region_count, size_t region_size);
/* The most bytes apkpatch_deflate_raw writes for `count` bytes of input, at any level. */
size_t apkpatch_deflate_bound(size_t count);

#endif
