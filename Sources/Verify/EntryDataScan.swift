import APKCore

/// `verify --check-entries`: every entry's data read as a device reads it, which neither apksigner nor Android's
/// installer does. The block schemes (v2+) digest the bytes as they are, so an APK whose entries carry a deflate
/// stream that fails, does not end or inflates to another size, or a wrong CRC-32, verifies and installs. The JAR
/// signature check reads the entries it digests and fails on such an entry (apksig: "Failed to read entry"), so the
/// scan reads the rest: all of them for an APK without a JAR check (v2+ only, minSdkVersion ≥ 24), and in one with
/// it the entries it does not digest (`META-INF/`, or those it stopped before). Severities follow what Android
/// does with the entry (AOSP libziparchive, zip_archive.cc):
/// - a stream that fails, does not end or gives another size is an error (ENTRY_DATA_CORRUPT): `inflateImpl`
///   refuses it (kZlibError, kInconsistentInformation), so the app cannot read the entry on the device (nor the
///   installer a native library, nor ART a compressed `classes.dex`);
/// - a CRC-32 that is not the header's is a warning (ENTRY_CRC32_MISMATCH): `extractToWriter` does not compare it
///   (`kCrcChecksEnabled` is false), so the device reads the bytes as they are, but they are not what the APK was
///   built from, and readers that check (java.util.zip's ZipInputStream, unzip, apkpatch's writers) refuse them;
/// - bytes after a deflate stream's end are a warning (ENTRY_BYTES_AFTER_DEFLATE_STREAM), as where the JAR check
///   finds them: readers stop at the stream's end, and no CRC-32 covers those bytes.
enum EntryDataScan {
    struct Findings: Sendable {
        var errors: [Issue] = []
        var warnings: [Issue] = []
    }

    /// The warning for `entry`, `trailing` of whose compressed bytes follow its deflate stream.
    static func bytesAfterStream(_ entry: ZipEntry, trailing: Int64) -> Issue {
        .warning(.entryBytesAfterDeflateStream, entry.name, "\(trailing) of the entry's \(entry.compressedSize) compressed bytes follow the end of its deflate stream: no reader inflates them and no CRC-32 covers them, so they are hidden in the signed APK. Android installs it, but apkpatch sign and run refuse to copy such an entry; rebuild the APK with a standard ZIP writer")
    }

    /// What `problem` with `entry` is in a report.
    static func issue(_ entry: ZipEntry, _ problem: EntryDataProblem) -> Issue {
        switch problem {
        case .unreadable(let reason):
            return .error(.entryDataCorrupt, entry.name, "the entry's data cannot be read: \(reason). The signatures cover the bytes as they are, so Android installs the APK, but reading this entry fails on the device (libziparchive refuses it), and apkpatch sign and run refuse to copy it; build the APK again from intact sources")
        case .crcMismatch:
            return .warning(.entryCRC32Mismatch, entry.name, "\(problem): Android reads the entry without comparing (libziparchive), so the app gets these bytes, but data and header disagree (the entry was damaged before the APK was signed), and readers that check (java.util.zip, unzip, apkpatch sign and run) refuse it; build the APK again from intact sources")
        case .bytesAfterStream(let trailing):
            return bytesAfterStream(entry, trailing: trailing)
        }
    }

    /// What reading the data of `entries` found, in `entries`' order.
    static func findings(archive: APKArchive, entries: [ZipEntry]) -> Findings {
        var findings = Findings()
        archive.scanEntryData(entries) { entry, problem in
            let found = issue(entry, problem)
            if found.severity == .error { findings.errors.append(found) } else { findings.warnings.append(found) }
        }
        return findings
    }
}
