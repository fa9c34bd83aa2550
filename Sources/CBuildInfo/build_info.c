// The values come from a header `make` writes into .build/buildinfo (from VERSION and git) and passes with
// -Xcc -I, so the source tree is never modified by a build and a new commit recompiles only this file.
// A plain `swift build` has no such header and says so.
#include "build_info.h"

#if defined(__has_include)
#if __has_include(<apkpatch_build_info.h>)
#include <apkpatch_build_info.h>
#endif
#endif

#ifndef APKPATCH_VERSION
#define APKPATCH_VERSION "unreleased"
#endif
#ifndef APKPATCH_COMMIT
#define APKPATCH_COMMIT "unknown: built without make"
#endif

const char *apkpatch_build_version(void) { return APKPATCH_VERSION; }
const char *apkpatch_build_commit(void) { return APKPATCH_COMMIT; }
