import Align
import ArgumentParser
import Foundation
import Overlay
import Pipeline

extension APKPatch {
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Patch an APK with a patch directory: unpack, overlay, repack and align in one pass.",
            discussion: """
            The patch directory mirrors APK paths: every file in it adds or replaces that entry. An optional
            apkpatch.yml holds `delete:` globs, `store:`/`deflate:` globs and `manifest:` shortcuts. The input is
            never modified; the output is written to a temporary file and renamed into place.

            Examples:
              apkpatch run app.apk --patch patch/
              apkpatch run app.apk --patch patch/ --out build/app-patched.apk --json
            """
        )

        @Argument(help: "The APK to patch.") var apk: String
        @Option(name: .long, help: "The patch directory.") var patch: String
        @Option(name: .long, help: "Output APK (default: <app>-patched.apk beside the input).") var out: String?
        @Option(name: .long, help: "Also write each stage's output into this directory.") var keepStages: String?
        @Option(name: .long, help: "Page size in KiB for stored .so files: 4 or 16 (default 16, for Android 15 devices).") var libPageSize: Int = 16
        @Flag(name: .long, help: "Print the summary as JSON.") var json = false

        func validate() throws {
            if ![4, 16, 64].contains(libPageSize) { throw ValidationError("--lib-page-size takes 4, 16 or 64") }
        }

        func run() throws {
            var options = PipelineOptions(input: apk, patchDirectory: patch, output: out)
            options.keepStagesDirectory = keepStages
            options.alignment = AlignmentPolicy(defaultAlignment: 4, nativeLibraryAlignment: libPageSize * 1024)
            let report = try PatchPipeline.run(options)
            if json {
                print(try FileHandleOutput.json(RunSummary(report)))
            } else {
                let s = report.summary
                print("Wrote \(report.output) (\(formatBytes(report.outputSize)), \(report.entryCount) entries)")
                print("  replaced \(s.replaced.count), added \(s.added.count), deleted \(s.deleted.count), dropped \(s.droppedSignatureFiles.count) old signature files")
                for name in s.replaced { print("    ~ \(name)") }
                for name in s.added { print("    + \(name)") }
                for name in s.deleted { print("    - \(name)") }
                print("  time: " + report.timings.map { String(format: "%@ %.1f ms", $0.stage, $0.milliseconds) }.joined(separator: ", "))
            }
        }
    }
}

/// The JSON form of a run's summary (stable field names, documented in the README).
struct RunSummary: Encodable {
    var output: String
    var outputSize: Int64
    var entries: Int
    var replaced: [String]
    var added: [String]
    var deleted: [String]
    var droppedSignatureFiles: [String]
    var timingsMs: [String: Double]

    init(_ report: PipelineReport) {
        output = report.output
        outputSize = report.outputSize
        entries = report.entryCount
        replaced = report.summary.replaced
        added = report.summary.added
        deleted = report.summary.deleted
        droppedSignatureFiles = report.summary.droppedSignatureFiles
        timingsMs = Dictionary(uniqueKeysWithValues: report.timings.map { ($0.stage, $0.milliseconds) })
    }
}
