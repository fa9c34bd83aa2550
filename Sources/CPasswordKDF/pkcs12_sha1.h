#ifndef APKPATCH_PKCS12_SHA1_H
#define APKPATCH_PKCS12_SHA1_H

#include "password_kdf.h"

/* Runs the APK_KDF_PKCS12_SHA1 jobs among `jobs` (the others are left alone), already checked by apk_kdf_run.
   Returns 0, or -1 when memory ran out. */
int apk_pkcs12_sha1_run(apk_kdf_job *jobs, size_t count, int engine);

#endif
