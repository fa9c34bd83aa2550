// An oracle for the tests: loads a resources.arsc with Android's own resource loader, libandroidfw's LoadedArsc
// (AOSP frameworks/base/libs/androidfw, Debian's android-libandroidfw), as the asset manager and the overlay
// manager do, and prints what apkpatch writes that aapt's and aapt2's dumps do not show:
//   package 0xPP NAME
//   resource 0xPPTTEEEE spec=0xFLAGS entries=0xF1,0xF2,...   (typeSpec flags; ResTable_entry flags per config)
//   overlayable NAME actor=ACTOR                              (GetOverlayableMap, sorted)
//   overlayable-item 0xPPTTEEEE NAME actor=ACTOR policy=0xFLAGS (GetOverlayableInfo of every resource)
// Exits 1 when the table does not load.
//
// With --strict (arsc-check --strict FILE) it prints nothing of the above and only judges the table as Android's
// loaders would, exiting 1 with the reason on stdout when one refuses it (their own log lines go to stderr):
//   LoadedArsc::Load failed                    the current loader (Android 9+) refuses the table;
//   entry 0xPPTTEEEE ... unreadable            an entry LoadedPackage::GetEntryFromOffset rejects (VerifyResTableEntry,
//                                              which the loader runs on each lookup: every lookup of it fails);
//   ResTable::add failed: STATUS               the loader before AssetManager2 (ResTable, Android 8 and older) refuses it
//                                              (a package ID over 0xff aborts it: the exit status is then a signal's).
// and "OK" with exit 0 when all of them read it.
//
// TestSupport.arscCheck builds it with g++ on first use (android-libandroidfw-dev).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <androidfw/LoadedArsc.h>
#include <androidfw/ResourceTypes.h>

using namespace android;

// Every entry offset of every type chunk of every package, each read as a lookup reads it.
static bool EveryEntryReads(const LoadedArsc& arsc) {
  bool readable = true;
  for (const auto& package : arsc.GetPackages()) {
    package->ForEachTypeSpec([&](const TypeSpec* spec, uint8_t type_index) {
      for (size_t i = 0; i < spec->type_count; i++) {
        const ResTable_type* type = spec->types[i];
        const uint32_t count = dtohl(type->entryCount);
        const bool sparse = (type->flags & ResTable_type::FLAG_SPARSE) != 0;
        const uint8_t* offsets = reinterpret_cast<const uint8_t*>(type) + dtohs(type->header.headerSize);
        for (uint32_t n = 0; n < count; n++) {
          // A sparse type lists (index, offset/4) pairs; GetEntryOffset finds an index by binary search.
          uint16_t index = sparse ? dtohs(reinterpret_cast<const ResTable_sparseTypeEntry*>(offsets)[n].idx) : n;
          uint32_t offset = LoadedPackage::GetEntryOffset(type, index);
          if (offset == ResTable_type::NO_ENTRY) continue;
          if (LoadedPackage::GetEntryFromOffset(type, offset) == nullptr) {
            uint32_t id = (uint32_t(package->GetPackageId()) << 24) | (uint32_t(type_index + 1) << 16) | index;
            printf("entry 0x%08x (config %zu of its type, offset %u) unreadable\n", id, i, offset);
            readable = false;
          }
        }
      }
    });
  }
  return readable;
}

int main(int argc, char** argv) {
  const bool strict = argc == 3 && std::string(argv[1]) == "--strict";
  if (argc != 2 && !strict) {
    fprintf(stderr, "usage: %s [--strict] resources.arsc\n", argv[0]);
    return 2;
  }
  std::ifstream file(argv[argc - 1], std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::unique_ptr<const LoadedArsc> arsc = LoadedArsc::Load(StringPiece(data.data(), data.size()));
  if (arsc == nullptr) {
    printf("LoadedArsc::Load failed\n");
    return 1;
  }
  if (strict) {
    if (!EveryEntryReads(*arsc)) return 1;
    ResTable table;
    status_t status = table.add(data.data(), data.size());
    if (status != NO_ERROR) {
      printf("ResTable::add failed: %d\n", status);
      return 1;
    }
    printf("OK\n");
    return 0;
  }
  for (const auto& package : arsc->GetPackages()) {
    printf("package 0x%02x %s\n", package->GetPackageId(), package->GetPackageName().c_str());
    std::vector<uint32_t> ids;
    package->ForEachTypeSpec([&](const TypeSpec* spec, uint8_t type_index) {
      uint32_t count = dtohl(spec->type_spec->entryCount);
      for (uint32_t entry = 0; entry < count; entry++) {
        uint32_t id = (uint32_t(package->GetPackageId()) << 24) | (uint32_t(type_index + 1) << 16) | entry;
        std::string flags;
        for (size_t i = 0; i < spec->type_count; i++) {
          const ResTable_entry* e = LoadedPackage::GetEntry(spec->types[i], entry);
          if (e == nullptr) continue;
          char text[16];
          snprintf(text, sizeof(text), "%s0x%04x", flags.empty() ? "" : ",", dtohs(e->flags));
          flags += text;
        }
        printf("resource 0x%08x spec=0x%08x entries=%s\n", id, spec->GetFlagsForEntryIndex(entry), flags.c_str());
        ids.push_back(id);
      }
    });
    std::map<std::string, std::string> overlayables(package->GetOverlayableMap().begin(), package->GetOverlayableMap().end());
    for (const auto& overlayable : overlayables) {
      printf("overlayable %s actor=%s\n", overlayable.first.c_str(), overlayable.second.c_str());
    }
    for (uint32_t id : ids) {
      if (const OverlayableInfo* info = package->GetOverlayableInfo(id)) {
        printf("overlayable-item 0x%08x %s actor=%s policy=0x%08x\n", id, info->name.c_str(), info->actor.c_str(), info->policy_flags);
      }
    }
  }
  return 0;
}
