// An oracle for the tests: opens an APK with Android's own ZIP reader, libziparchive (AOSP
// system/libziparchive, Debian's android-libziparchive), as the package manager and the asset manager do, and
// extracts every entry the central directory names to memory, which checks each one's local header, inflate
// and size (ExtractToMemory), and that iterating meets every entry the end record counts. Debian's build does not
// compare the CRC-32 (a stored entry with a flipped byte extracts): tests that need a CRC check use another oracle.
// Prints "OK N entries", or each failure and exits 1. With --list, prints instead one line per entry read, tab
// separated: name, method, compressed size, uncompressed size, CRC-32 (8 hex digits), data offset. With
// --find APK NAME..., looks each NAME up by its bytes (FindEntry, as the package manager and the asset manager
// find an entry) and prints one line per NAME: its extracted data in hex, or "missing: " and the error.
//
// TestSupport.libziparchiveCheck builds it with g++ on first use (android-libziparchive-dev).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <ziparchive/zip_archive.h>

// Opens `path` as a device does; on failure prints why and returns false (the handle is closed).
static bool openArchive(const char* path, ZipArchiveHandle* archive) {
  int32_t status = OpenArchive(path, archive);
  if (status == 0) return true;
  printf("OpenArchive: %s\n", ErrorCodeString(status));
  CloseArchive(*archive);
  return false;
}

// --find: each name looked up by its bytes; status 1 when one is not found or does not extract.
static int find(const char* path, int count, char** names) {
  ZipArchiveHandle archive;
  if (!openArchive(path, &archive)) return 1;
  int failures = 0;
  for (int i = 0; i < count; i++) {
    ZipEntry entry{};
    std::vector<uint8_t> data;
    int32_t status = FindEntry(archive, names[i], &entry);
    if (status == 0) {
      data.resize(entry.uncompressed_length + 1);
      status = ExtractToMemory(archive, &entry, data.data(), entry.uncompressed_length);
    }
    if (status != 0) {
      printf("missing: %s\n", ErrorCodeString(status));
      failures++;
      continue;
    }
    for (uint32_t j = 0; j < entry.uncompressed_length; j++) printf("%02x", data[j]);
    printf("\n");
  }
  CloseArchive(archive);
  return failures > 0 ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "--find") == 0) return find(argv[2], argc - 3, argv + 3);
  bool list = argc == 3 && strcmp(argv[1], "--list") == 0;
  if (argc != 2 && !list) {
    fprintf(stderr, "usage: %s [--list] APK\n", argv[0]);
    return 2;
  }
  const char* path = argv[argc - 1];
  ZipArchiveHandle archive;
  if (!openArchive(path, &archive)) return 1;
  void* cookie;
  int32_t status = StartIteration(archive, &cookie);
  if (status != 0) {
    printf("StartIteration: %s\n", ErrorCodeString(status));
    CloseArchive(archive);
    return 1;
  }
  ZipEntry entry;
  std::string name;
  uint64_t count = 0;
  int failures = 0;
  while ((status = Next(cookie, &entry, &name)) == 0) {
    std::vector<uint8_t> data(entry.uncompressed_length + 1);
    int32_t extracted = ExtractToMemory(archive, &entry, data.data(), entry.uncompressed_length);
    if (extracted != 0) {
      printf("%s: %s\n", name.c_str(), ErrorCodeString(extracted));
      failures++;
    } else if (list) {
      printf("%s\t%u\t%u\t%u\t%08x\t%lld\n", name.c_str(), entry.method, entry.compressed_length,
             entry.uncompressed_length, entry.crc32, static_cast<long long>(entry.offset));
    }
    count++;
  }
  EndIteration(cookie);
  uint64_t expected = GetArchiveInfo(archive).entry_count;
  CloseArchive(archive);
  if (status != -1) {  // -1: the end of the iteration
    printf("Next: %s\n", ErrorCodeString(status));
    return 1;
  }
  if (count != expected) {
    printf("iterated %llu of %llu entries\n", static_cast<unsigned long long>(count),
           static_cast<unsigned long long>(expected));
    return 1;
  }
  if (failures > 0) return 1;
  if (!list) printf("OK %llu entries\n", static_cast<unsigned long long>(count));
  return 0;
}
