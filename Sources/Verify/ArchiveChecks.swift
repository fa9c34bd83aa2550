import APKCore

/// The archive rules every other command reads an APK by (`ZipArchive.Limits.refusesUnaccountedBytes`), held
/// to by verify whatever signs the APK: so `verify` fails exactly the archives `unpack`, `run`, `sign`, `watch`,
/// `align` and `merge` refuse. The verifier reads the archive as apksig does (leniently), so that its signature
/// verdict stays apksigner's; these are reported beside it as `ARCHIVE_` errors.
///
/// Here apkpatch is stricter than Android and apksigner. libziparchive (AOSP `system/libziparchive/zip_archive.cc`)
/// goes by the end record's count and the central directory's offsets: it reads past bytes between the central
/// directory and the end record (`FindCentralDirectoryInfo` asks only that the directory end by the record),
/// past central-directory bytes after the counted records (`ParseZipArchive` reads `num_entries` records), and
/// never looks at bytes between local records; apksig verifies a JAR-signed APK with any of them. They are
/// refused because ZIP readers disagree about such an archive: a streaming reader (`unzip -`,
/// `java.util.jar.JarInputStream`) or one that walks the central directory by its size sees records that
/// Android does not, so what a reviewer or a scanner reads need not be what the device runs, and a JAR
/// signature covers none of those bytes.
///
/// Bytes before the first local header are reported where Android reads them as such
/// (`INSTALL_BYTES_BEFORE_FIRST_ENTRY`, Janus), and here only when that check does not speak.
enum ArchiveChecks {
    /// What to do, after each finding.
    static let advice = "apkpatch's other commands refuse this APK too; rebuild it with a standard ZIP writer and sign it again"

    static func run(_ zip: ZipArchive, maxSdkVersion: Int, report: inout VerificationReport) {
        let prefixReported = Verifier.reportsBytesBeforeFirstEntry(zip, maxSdkVersion: maxSdkVersion)
        let strays = zip.strayRanges.filter { !(prefixReported && $0.lowerBound == 0) }
        if let first = strays.first {
            let total = strays.reduce(Int64(0)) { $0 + $1.count64 }
            let place = first.lowerBound < zip.firstLocalHeaderOffset ? "before the first local header" : "at offset \(first.lowerBound)"
            let ranges = strays.count == 1 ? "\(total) bytes \(place)" : "\(total) bytes in \(strays.count) ranges (the first \(first.count64) \(place))"
            report.archiveErrors.append(.error(.archiveUnaccountedBytes, "",
                "\(ranges) belong to no entry of the central directory: a streaming ZIP reader sees what they hold, Android and apksigner do not. \(advice)"))
        }
        if let gap = zip.endRecordGap {
            report.archiveErrors.append(.error(.archiveBytesBeforeEndRecord, "",
                "\(ZipArchive.endRecordGapProblem(gap)): Android reads past them, but a reader that scans back from the end record takes them for records, and apksigner finds no APK Signing Block in such an APK. \(advice)"))
        }
        if let uncounted = zip.uncountedCentralDirectoryBytes {
            report.archiveErrors.append(.error(.archiveEntryCountMismatch, "",
                "\(ZipArchive.uncountedProblem(uncounted, counted: zip.endOfCentralDirectory.entryCount)): readers that walk the central directory by its size see entries that Android and apksigner, which go by the count, do not. \(advice)"))
        }
    }

    /// The finding for an archive no reader here opens because of these rules, or nil for other damage.
    static func issue(for error: ZipFormatError) -> Issue? {
        switch error {
        case .secondEndRecord(let problem): return .error(.archiveSecondEndRecord, "", "Malformed APK: \(problem). \(advice)")
        case .entryCountMismatch(let problem): return .error(.archiveEntryCountMismatch, "", "Malformed APK: \(problem). \(advice)")
        default: return nil
        }
    }
}
