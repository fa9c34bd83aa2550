// An oracle for the tests: loads a resources.arsc with Android's own resource loader, libandroidfw's LoadedArsc
// (AOSP frameworks/base/libs/androidfw, Debian's android-libandroidfw), as the asset manager and the overlay
// manager do, and prints what apkpatch writes that aapt's and aapt2's dumps do not show:
//   package 0xPP NAME
//   resource 0xPPTTEEEE spec=0xFLAGS entries=0xF1,0xF2,...   (typeSpec flags; ResTable_entry flags per config)
//   overlayable NAME actor=ACTOR                              (GetOverlayableMap, sorted)
//   overlayable-item 0xPPTTEEEE NAME actor=ACTOR policy=0xFLAGS (GetOverlayableInfo of every resource)
// Exits 1 when the table does not load.
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

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s resources.arsc\n", argv[0]);
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::unique_ptr<const LoadedArsc> arsc = LoadedArsc::Load(StringPiece(data.data(), data.size()));
  if (arsc == nullptr) {
    printf("LoadedArsc::Load failed\n");
    return 1;
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
