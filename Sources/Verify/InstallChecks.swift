import APKCore

/// Packaging rules Android's package manager enforces at install time that apksigner does not look at:
///
/// - targetSdkVersion ≥ 30: `resources.arsc` must be stored uncompressed with its data 4-byte aligned
///   ("Targeting R+ (version 30 and above) requires the resources.arsc of installed APKs to be stored
///   uncompressed and aligned on a 4-byte boundary", PackageManager's `ApkLiteParseUtils`/`ParsingPackageUtils`).
/// - `android:extractNativeLibs="false"`: every `lib/<abi>/*.so` must be stored uncompressed and page-aligned
///   (4096) so it can be mapped from the APK (`INSTALL_FAILED_INVALID_APK: Failed to extract native libraries`).
/// - Devices with 16 KiB pages (Android 15+) need `.so` data aligned to 16384: a warning today.
enum InstallChecks {
    static func run(archive: APKArchive, manifest: ManifestFacts, report: inout VerificationReport) {
        let targetSdkVersion = manifest.targetSdkVersion(minSdkVersion: report.minSdkVersion)
        if let targetSdkVersion, targetSdkVersion >= 30, let arsc = archive.entry(named: "resources.arsc") {
            if arsc.isCompressed {
                report.installErrors.append(.error(.installResourcesArscCompressed, arsc.name,
                    "resources.arsc is compressed; apps targeting SDK \(targetSdkVersion) (30 or higher) must store it uncompressed or Android refuses to install them. Repack with resources.arsc stored (aapt -0 arsc, or `apkpatch align`)."))
            } else if arsc.dataOffset % 4 != 0 {
                report.installErrors.append(.error(.installResourcesArscNotAligned, arsc.name,
                    "resources.arsc data starts at offset \(arsc.dataOffset), not on a 4-byte boundary; apps targeting SDK \(targetSdkVersion) (30 or higher) must align it or Android refuses to install them. Run `apkpatch align` (or zipalign -p 4) before signing."))
            }
        }
        let extractsNativeLibraries = manifest.extractNativeLibs ?? true
        for entry in archive.entries where entry.name.hasPrefix("lib/") && entry.name.hasSuffix(".so") {
            if !extractsNativeLibraries {
                if entry.isCompressed {
                    report.installErrors.append(.error(.installNativeLibraryCompressed, entry.name,
                        "\(entry.name) is compressed but the manifest sets android:extractNativeLibs=\"false\"; Android maps native libraries from the APK and refuses it (INSTALL_FAILED_INVALID_APK). Store .so files uncompressed (aapt -0 so)."))
                    continue
                }
                if entry.dataOffset % 4096 != 0 {
                    report.installErrors.append(.error(.installNativeLibraryNotPageAligned, entry.name,
                        "\(entry.name) data starts at offset \(entry.dataOffset), not on a 4096-byte page boundary, but the manifest sets android:extractNativeLibs=\"false\"; Android refuses it (INSTALL_FAILED_INVALID_APK). Run `apkpatch align` (or zipalign -p 4) before signing."))
                    continue
                }
            }
            if !entry.isCompressed && entry.dataOffset % 16384 != 0 {
                report.installWarnings.append(.warning(.installNativeLibraryNot16KAligned, entry.name,
                    "\(entry.name) data starts at offset \(entry.dataOffset), not on a 16 KiB boundary; devices with 16 KiB pages (Android 15+) cannot map it. Run `apkpatch align` (16 KiB for .so by default)."))
            }
        }
    }
}
