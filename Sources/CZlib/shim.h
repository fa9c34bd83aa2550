// zlib, reached only through ZlibWrapper.
#include <zlib.h>

// deflateInit2/inflateInit2 are macros that pass ZLIB_VERSION and the stream size; Swift cannot import them.
static inline int apkpatch_deflateInit2(z_streamp strm, int level, int windowBits, int memLevel) {
    return deflateInit2(strm, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}
static inline int apkpatch_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
