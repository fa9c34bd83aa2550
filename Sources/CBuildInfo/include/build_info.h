// What `apkpatch --version` prints: the release version and the commit the binary was built from.
#pragma once

const char *apkpatch_build_version(void);
const char *apkpatch_build_commit(void);
