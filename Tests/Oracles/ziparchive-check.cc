// An oracle for the tests: opens an APK with Android's own ZIP reader, libziparchive (AOSP
// system/libziparchive, Debian's android-libziparchive), as the package manager and the asset manager do, and
// extracts every entry the central directory names to memory, which checks each one's inflate, size and
// CRC-32 (ExtractToMemory). Prints "OK N entries", or the first failure and exits 1.
//
// TestSupport.libziparchiveCheck builds it with g++ on first use (android-libziparchive-dev).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <ziparchive/zip_archive.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s APK\n", argv[0]);
    return 2;
  }
  ZipArchiveHandle archive;
  int32_t status = OpenArchive(argv[1], &archive);
  if (status != 0) {
    printf("OpenArchive: %s\n", ErrorCodeString(status));
    CloseArchive(archive);
    return 1;
  }
  void* cookie;
  status = StartIteration(archive, &cookie);
  if (status != 0) {
    printf("StartIteration: %s\n", ErrorCodeString(status));
    CloseArchive(archive);
    return 1;
  }
  ZipEntry entry;
  std::string name;
  int count = 0;
  int failures = 0;
  while ((status = Next(cookie, &entry, &name)) == 0) {
    std::vector<uint8_t> data(entry.uncompressed_length + 1);
    int32_t extracted = ExtractToMemory(archive, &entry, data.data(), entry.uncompressed_length);
    if (extracted != 0) {
      printf("%s: %s\n", name.c_str(), ErrorCodeString(extracted));
      failures++;
    }
    count++;
  }
  EndIteration(cookie);
  CloseArchive(archive);
  if (status != -1) {  // -1: the end of the iteration
    printf("Next: %s\n", ErrorCodeString(status));
    return 1;
  }
  if (failures > 0) return 1;
  printf("OK %d entries\n", count);
  return 0;
}
