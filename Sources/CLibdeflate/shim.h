// libdeflate (whole-buffer DEFLATE), reached only through ZlibWrapper.
#include <libdeflate.h>
