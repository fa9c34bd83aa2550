import APKCore
import Align
import Foundation
import Overlay
import Repack
import Unpack

/// Options for one run of the pipeline.
public struct PipelineOptions: Sendable {
    public var input: String
    public var patchDirectory: String
    /// Output path; default `<input without .apk>-patched.apk` beside the input.
    public var output: String?
    public var alignment = AlignmentPolicy.android15
    /// When set, each stage's output is also written there (unsigned.apk, …) for inspection.
    public var keepStagesDirectory: String?

    public init(input: String, patchDirectory: String, output: String? = nil) {
        self.input = input
        self.patchDirectory = patchDirectory
        self.output = output
    }

    /// The output path this run writes.
    public var resolvedOutput: String {
        if let output { return output }
        let base = input.hasSuffix(".apk") ? String(input.dropLast(4)) : input
        return base + "-patched.apk"
    }
}

/// Timing of a stage, for the summary.
public struct StageTiming: Sendable, Codable {
    public var stage: String
    public var milliseconds: Double
}

/// What a pipeline run did.
public struct PipelineReport: Sendable {
    public var output: String
    public var summary: OverlaySummary
    public var outputSize: Int64
    public var entryCount: Int
    public var timings: [StageTiming]
}

/// unpack → overlay → repack + align, with no intermediate files.
public enum PatchPipeline {
    public static func run(_ options: PipelineOptions) throws -> PipelineReport {
        var timings: [StageTiming] = []
        func timed<T>(_ stage: String, _ body: () throws -> T) rethrows -> T {
            let start = DispatchTime.now().uptimeNanoseconds
            let value = try body()
            timings.append(StageTiming(stage: stage, milliseconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6))
            return value
        }
        let output = options.resolvedOutput
        try ensureDistinct(input: options.input, output: output)
        let archive = try timed("unpack") { try APKArchive(path: options.input) }
        let patch = try timed("overlay") { try PatchDirectory(root: options.patchDirectory) }
        let plan = try timed("overlay") { try Overlay(archive: archive, patch: patch).plan() }
        let report = try timed("repack") {
            try Repacker.write(plan.entries, to: output, alignment: options.alignment, comment: archive.zip.endOfCentralDirectory.comment)
        }
        if let keep = options.keepStagesDirectory {
            try FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
            try Repacker.write(plan.entries, to: (keep as NSString).appendingPathComponent("unsigned.apk"), alignment: options.alignment)
        }
        return PipelineReport(output: output, summary: plan.summary, outputSize: report.size,
                              entryCount: report.entries.count, timings: merge(timings))
    }

    /// Refuses to write over the input (the input is never modified).
    public static func ensureDistinct(input: String, output: String) throws {
        let a = URL(fileURLWithPath: input).resolvingSymlinksInPath().standardizedFileURL.path
        let b = URL(fileURLWithPath: output).resolvingSymlinksInPath().standardizedFileURL.path
        if a == b { throw PipelineError.outputIsInput(output) }
    }

    static func merge(_ timings: [StageTiming]) -> [StageTiming] {
        var merged: [StageTiming] = []
        for t in timings {
            if let i = merged.firstIndex(where: { $0.stage == t.stage }) { merged[i].milliseconds += t.milliseconds } else { merged.append(t) }
        }
        return merged
    }
}

public enum PipelineError: Error, CustomStringConvertible {
    case outputIsInput(String)
    public var description: String {
        switch self {
        case .outputIsInput(let path): return "the output \(path) is the input APK; apkpatch never modifies its input, choose another --out"
        }
    }
}
