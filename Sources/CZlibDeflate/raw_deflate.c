// apkpatch: the one entry point of this copy of zlib's deflate (include/CZlibDeflate.h).
#include "CZlibDeflate.h"
#include "zlib.h"
#include <stdlib.h>
#include <string.h>

int ZEXPORT apkpatch_z_deflate_accel(z_streamp strm);

static voidpf allocate(voidpf opaque, uInt items, uInt size) { (void)opaque; return calloc(items, size); }
static void release(voidpf opaque, voidpf address) { (void)opaque; free(address); }

int apkpatch_deflate_raw(const uint8_t *input, size_t count, int level, int fast, uint8_t **output, size_t *written) {
    z_stream stream;
    uLong bound;
    Bytef *out;
    int rc;
    if (count > 0xffffff00u) return Z_STREAM_ERROR;
    memset(&stream, 0, sizeof(stream));
    stream.zalloc = allocate;
    stream.zfree = release;
    rc = deflateInit2(&stream, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    if (rc != Z_OK) return rc;
    bound = deflateBound(&stream, (uLong)count);
    out = (Bytef *)malloc(bound > 0 ? bound : 1);
    if (out == NULL) { deflateEnd(&stream); return Z_MEM_ERROR; }
    stream.next_in = (z_const Bytef *)input;
    stream.avail_in = (uInt)count;
    stream.next_out = out;
    stream.avail_out = (uInt)bound;
    /* Only where zlib's deflate_slow runs; a failure to allocate its tables leaves zlib's own search. */
    if (fast && level >= 4) (void)apkpatch_z_deflate_accel(&stream);
    rc = deflate(&stream, Z_FINISH);
    if (rc != Z_STREAM_END) {
        deflateEnd(&stream);
        free(out);
        return rc == Z_OK ? Z_BUF_ERROR : rc;
    }
    *written = stream.total_out;
    *output = out;
    deflateEnd(&stream);
    return Z_OK;
}

void apkpatch_deflate_free(uint8_t *output) { free(output); }
