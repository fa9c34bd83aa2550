import Align
import APKCore
import BinaryXML

/// Packaging rules Android's package manager enforces at install time that apksigner does not look at
/// (`PackagingRequirements`, which names the AOSP code behind each):
///
/// - targetSdkVersion ≥ 30: `resources.arsc` must be stored uncompressed with its data 4-byte aligned;
/// - `android:extractNativeLibs="false"`: every `lib/<abi>/*.so` must be stored uncompressed and page-aligned
///   (4096) so it can be mapped from the APK (`INSTALL_FAILED_INVALID_APK: Failed to extract native libraries`);
/// - devices with 16 KiB pages (Android 15+) need `.so` data aligned to 16384: a warning;
/// - `resources.arsc` must load with Android's resource loader (`ResourceTableLoadCheck`), for any targetSdkVersion,
///   on every release from the manifest's minSdkVersion on.
///
/// The messages say what is wrong and what the APK needs; which command does it is the caller's to add. Each
/// finding's context is the entry, which its description puts first ("lib/arm64-v8a/libx.so: its data …"), so
/// the message does not name it again.
enum InstallChecks {
    /// `resourceTable`: the finding of `resourceTableIssue`, made by the caller beforehand.
    static func run(archive: APKArchive, manifest: ManifestFacts, resourceTable: Issue?, report: inout VerificationReport) {
        let requirements = PackagingRequirements(targetSdkVersion: manifest.targetSdkVersion(minSdkVersion: report.minSdkVersion) ?? 1,
                                                 extractsNativeLibraries: manifest.extractNativeLibs ?? true)
        let target = requirements.targetSdkVersion
        if requirements.rule(for: "resources.arsc") != nil, let arsc = archive.entry(named: "resources.arsc") {
            if arsc.isCompressed {
                report.installErrors.append(.error(.installResourcesArscCompressed, arsc.name,
                    "it is compressed, but apps targeting SDK \(target) (30 or higher) must store it uncompressed on a 4-byte boundary, or Android 11+ refuses to install them (INSTALL_PARSE_FAILED_RESOURCES_ARSC_COMPRESSED). Store it, align it and sign again."))
            } else if arsc.dataOffset % Int64(PackagingRequirements.resourceTableAlignment) != 0 {
                report.installErrors.append(.error(.installResourcesArscNotAligned, arsc.name,
                    "its data starts at offset \(arsc.dataOffset), not on a 4-byte boundary, but apps targeting SDK \(target) (30 or higher) must align it, or Android 11+ refuses to install them (INSTALL_PARSE_FAILED_RESOURCES_ARSC_COMPRESSED). Align it and sign again."))
            }
        }
        if let resourceTable { report.installErrors.append(resourceTable) }
        let page = Int64(PackagingRequirements.minimumPageSize)
        for entry in archive.entries where PackagingRequirements.isNativeLibrary(entry.name) {
            // Every library is reported (ZIP offset and ELF alignment), also one Android refuses for its packaging:
            // its ELF alignment is the next thing to fix once it is stored and aligned.
            var refused = false
            if requirements.rule(for: entry.name) == .nativeLibrary {
                if entry.isCompressed {
                    report.installErrors.append(.error(.installNativeLibraryCompressed, entry.name,
                        "it is compressed, but the manifest sets android:extractNativeLibs=\"false\": Android maps native libraries from the APK and refuses it (INSTALL_FAILED_INVALID_APK). Store the .so files, page-align them and sign again."))
                    refused = true
                } else if entry.dataOffset % page != 0 {
                    report.installErrors.append(.error(.installNativeLibraryNotPageAligned, entry.name,
                        "its data starts at offset \(entry.dataOffset), not on a 4096-byte page boundary, but the manifest sets android:extractNativeLibs=\"false\": Android refuses it (INSTALL_FAILED_INVALID_APK). Page-align it (16 KiB serves every device) and sign again."))
                    refused = true
                }
            }
            let library = NativeLibraryReport(entry: entry, archive: archive)
            report.nativeLibraries.append(library)
            if library.isZipOffset16KAligned == false && !refused {
                report.installWarnings.append(.warning(.installNativeLibraryNot16KAligned, entry.name,
                    "its data starts at offset \(entry.dataOffset), not on a 16 KiB boundary, so devices with 16 KiB pages (Android 15+) cannot map it from the APK. Align it to 16 KiB and sign again."))
            }
            // 32-bit code never runs on a device with 16 KiB pages (those are 64-bit only), so only 64-bit
            // libraries are held to it, as Google Play and Android Studio's APK Analyzer do.
            if library.elfClass == ELFLoadSegments.Class.elf64.rawValue, library.isLoadAlignment16K == false {
                // Each alignment once ("4096", "4096 and 65536"): the JSON lists every segment's.
                let distinct = Array(Set(library.loadSegmentAlignments ?? [])).sorted().map { String($0) }
                let alignments = distinct.count <= 1 ? distinct.joined() : distinct.dropLast().joined(separator: ", ") + " and " + distinct.last!
                report.installWarnings.append(.warning(.installNativeLibraryELFNot16KAligned, entry.name,
                    (alignments.isEmpty ? "it has no LOAD segments" : "its LOAD segments are aligned to \(alignments) bytes, not to a multiple of 16 KiB") + ", so devices with 16 KiB pages (Android 15+) cannot load it, and Google Play requires 16 KiB alignment of apps targeting Android 15+. Relink it with -Wl,-z,max-page-size=16384 (NDK r28 and later do by default)."))
            }
        }
    }

    /// The table's structure, as libandroidfw loads it: the package manager reads the manifest's resources
    /// through it at install time, and the app every resource at run time.
    /// A table that uses an encoding newer than the manifest's minSdkVersion is its own finding: well formed, it
    /// fails only on the older devices the APK installs on, and raising minSdkVersion is a fix.
    static func resourceTableIssue(archive: APKArchive) -> Issue? {
        let problem: String
        do {
            guard let found = try ResourceTableLoadCheck.problem(in: archive) else { return nil }
            if let encoding = found.newerEncoding {
                return Issue(code: .installResourcesArscAboveMinSdk, severity: .error, context: ResourceTableLoadCheck.entryName,
                    message: "resources.arsc: \(found). The app fails there on those devices; apkpatch's commands that write APKs refuse this table too. \(found.remedy).",
                    resourceTableEncoding: encoding)
            }
            problem = found.description
        } catch {
            problem = "its data cannot be read (\(error))"
        }
        return .error(.installResourcesArscMalformed, ResourceTableLoadCheck.entryName,
            "resources.arsc: \(problem). The APK does not install, or the app fails where it reads the resource; apkpatch's commands that write APKs refuse this table too.")
    }
}
