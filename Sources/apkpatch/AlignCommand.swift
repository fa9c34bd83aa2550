import APKCore
import Align
import ArgumentParser
import BinaryXML
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Pipeline
import Repack
import Sign
import Unpack

extension APKPatch {
    /// A drop-in for zipalign: same arguments, same output with -v, same exit codes (0 ok, 1 failed, 2 usage).
    struct Align: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "align",
            abstract: "Align stored entries like zipalign (and check alignment with -c).",
            usage: """
            apkpatch align [-f] [-p | -P <pagesize_kb>] [-v] [--check-entries] <align> infile.apk outfile.apk
            apkpatch align -c [-p | -P <pagesize_kb>] [-v] <align> infile.apk
            """,
            discussion: """
            Stored entries start on <align>-byte boundaries (use 4). With -p, stored .so files start on 4 KiB pages; \
            with -P 16 on 16 KiB pages, as Android 15 devices with 16 KiB pages need. Compressed entries are left as \
            they are. The output is written in one pass, to a temporary file renamed into place. Entries are copied \
            as they are, as zipalign copies them; --check-entries also reads each one and refuses a damaged input.

            Examples:
              apkpatch align -p 4 app.apk app-aligned.apk
              apkpatch align -c -v -P 16 4 app-aligned.apk
            """
        )

        @Flag(name: .customShort("c"), help: "Check alignment only (does not modify the file).") var check = false
        @Flag(name: .customShort("f"), help: "Overwrite an existing outfile.") var force = false
        @Flag(name: .customShort("p"), help: "Page-align stored .so files to 4 KiB.") var pageAlign = false
        @Option(name: .customShort("P"), help: ArgumentHelp("Page-align stored .so files to <pagesize_kb> KiB (4, 16 or 64).", valueName: "pagesize_kb"))
        var pageSizeKiB: Int?
        @Flag(name: .customShort("v"), help: "Verbose output.") var verbose = false
        @Flag(name: .customShort("z"), help: "Recompress using Zopfli (accepted for compatibility; entries are copied raw).") var zopfli = false
        @Flag(name: .customLong("check-entries"),
              help: "Also read every entry's data, and write nothing if one is damaged (a deflate stream that fails or never ends, another size or CRC-32 than the header's, bytes after the stream's end); zipalign copies such entries as they are.")
        var checkEntries = false
        @Argument(help: "Alignment in bytes, e.g. 4.") var alignment: Int
        @Argument(help: "The input archive.") var input: String
        @Argument(help: "The output archive (not with -c).") var output: String?

        func validate() throws {
            if alignment < 1 || alignment > 65536 { throw ValidationError("Invalid value for alignment: \(alignment)") }
            if pageAlign && pageSizeKiB != nil { throw ValidationError("-P cannot be used in combination with -p") }
            if let size = pageSizeKiB, ![4, 16, 64].contains(size) { throw ValidationError("Invalid value for -P: \(size) (use 4, 16 or 64)") }
            if check && output != nil { throw ValidationError("-c takes only the input file") }
            if !check && output == nil { throw ValidationError("missing outfile") }
        }

        var policy: AlignmentPolicy {
            let page = pageSizeKiB.map { $0 * 1024 } ?? (pageAlign ? 4096 : nil)
            return .zipalign(alignment, pageSize: page)
        }

        func run() throws {
            if check { try runCheck() } else { try runAlign() }
        }

        private func runCheck() throws {
            if verbose { print("Verifying alignment of \(input) (\(alignment))...") }
            let archive: ZipArchive
            do { archive = try ZipArchive(source: try MappedFile(path: input)) } catch {
                FileHandleOutput.standardError("Unable to open '\(input)' for verification: \(error)")
                throw ExitCode.failure
            }
            let result = AlignmentCheck(archive: archive, policy: policy)
            if verbose {
                for line in result.verboseLines() { print(line) }
                print("Verification \(result.isAligned ? "successful" : "FAILED")")
            }
            if !result.isAligned { throw ExitCode.failure }
        }

        private func runAlign() throws {
            guard let output else { throw ExitCode(2) }
            if !force && FileManager.default.fileExists(atPath: output) {
                FileHandleOutput.standardError("Output file '\(output)' exists")
                throw ExitCode.failure
            }
            do {
                try PatchPipeline.ensureDistinct(input: input, output: output)
                // APKArchive, not a bare ZipArchive: refuse what every other command that writes an APK refuses
                // (bombs, what Android cannot read) rather than copy it into a new, aligned APK.
                let apk = try APKArchive(path: input, limits: .rewriting, readsAll: true)
                // The resource table is checked on another core while the entries are copied, and decides before
                // anything else refuses the APK: a table Android refuses is the first thing to fix.
                let tableCheck = BackgroundValue<ResourceTableProblem?>(offered: { try ResourceTableLoadCheck.problem(in: apk) })
                defer { tableCheck.wait() }
                func refuseBrokenTable() throws {
                    if let problem = try tableCheck.get() { throw RefusedResourceTable(problem: problem) }
                }
                let archive = apk.zip
                // Entries are copied raw, as zipalign copies them: one whose data is not what its header says passes
                // into the new APK as it is (the signers refuse it later). With --check-entries every entry's data is
                // read, on another core beside the copy, and the output is kept only if none is damaged; not by
                // default, as reading it all costs align a quarter to a half more CPU.
                let entryCheck = !checkEntries ? BackgroundValue(ready: ()) : BackgroundValue<Void> {
                    try apk.scanEntryData(apk.entries) { entry, problem in throw DamagedEntry(entry: entry.name, problem: problem) }
                }
                defer { entryCheck.wait() }
                // The output replaces whatever APK was there, so an .idsig beside it describes another file: it goes
                // just before the new APK is renamed into place, as with `sign` (a refused align leaves both as they were).
                do {
                    try Repacker.write(try Repacker.rawEntries(of: archive), to: output, alignment: policy,
                                       comment: archive.endOfCentralDirectory.comment, beforeCommit: {
                                           try refuseBrokenTable()
                                           try entryCheck.get()
                                           V4SchemeSigner.removeSignature(besideAPKAt: output)
                                       })
                } catch {
                    try refuseBrokenTable()
                    throw error
                }
                if verbose {
                    // Printed once the output is there, as zipalign prints it after aligning (and not before a refusal).
                    print("Verifying alignment of \(output) (\(alignment))...")
                    let written = try ZipArchive(source: try MappedFile(path: output))
                    for line in AlignmentCheck(archive: written, policy: policy).verboseLines() { print(line) }
                    print("Verification successful")
                }
            } catch {
                FileHandleOutput.standardError("Unable to align '\(input)': \(error)")
                throw ExitCode.failure
            }
        }

        /// A `resources.arsc` Android refuses (`ResourceTableLoadCheck`): align does not make an APK of it.
        struct RefusedResourceTable: Error, CustomStringConvertible {
            let problem: ResourceTableProblem
            var description: String {
                "resources.arsc: \(problem). Aligned, the APK still would not install or its app would fail, so nothing was written. \(problem.remedy)"
            }
        }

        /// An entry of the input whose data is not what its header says: align refuses to copy it.
        struct DamagedEntry: Error, CustomStringConvertible {
            let entry: String
            let problem: EntryDataProblem

            var description: String {
                switch problem {
                case .unreadable, .crcMismatch:
                    return "entry \(entry.debugQuoted) is corrupt: \(problem). Aligning copies entries as they are (zipalign does too), so the new APK would carry the damage into whatever signs it; build the APK again from intact sources"
                case .bytesAfterStream:
                    return "entry \(entry.debugQuoted) is corrupt: \(problem), which no reader inflates and no CRC-32 covers (data hidden from review once signed); apkpatch sign and run refuse such an entry too. Rebuild the APK with a standard ZIP writer"
                }
            }
        }
    }
}
