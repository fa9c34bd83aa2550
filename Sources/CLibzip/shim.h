// libzip, reached only through LibzipWrapper.
#include <zip.h>
