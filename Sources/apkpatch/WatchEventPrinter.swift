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
import Install
import Pipeline
import Verify

/// An error that ends a command with its message and exit status 1 (argument-parser prints `description`).
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Prints `apkpatch watch`'s events: one line each for people, or one JSON object per line (`--json`).
final class WatchEventPrinter {
    let json: Bool
    /// The output path (`--out`), for the lines that name it.
    let output: String
    /// `--live`: builds go to the development build, not to the output path, until watch stops.
    let isLive: Bool
    /// Whether a build has succeeded: until then a failure keeps no build, and must not say it does.
    private var hasBuilt = false
    /// The verification warnings told so far (the APK, the code, the entry): each is told once a session, not
    /// again after every save that verifies while the library or entry stays as it is.
    private var toldWarnings: Set<String> = []

    init(json: Bool, output: String, isLive: Bool) {
        self.json = json
        self.output = output
        self.isLive = isLive
    }

    func print(_ event: WatchSession.Event) {
        let warnings = newWarnings(in: event)
        if json {
            Swift.print(Self.jsonLine(WatchEventJSON(event)))
            for warning in warnings { Swift.print(Self.jsonLine(WatchEventJSON(.warning(warning)))) }
            return
        }
        defer { for warning in warnings { Swift.print("        WARNING: \(warning)") } }
        let time = APKPatch.Watch.clock()
        switch event {
        case .built, .setBuilt: hasBuilt = true
        default: break
        }
        switch event {
        case .built(let report, let changed, let ms):
            if changed.isEmpty {
                Swift.print("[\(time)] built \(report.output) in \(fixed(ms, digits: 0)) ms (\(formatBytes(report.outputSize)), \(report.entryCount) entries)")
                for line in packagingRepairLines(report.packagingRepairs) { Swift.print("        \(line)") }
                if let commands = report.installCommands { Swift.print("        install: \(commands.installLine)") }
            } else {
                let stages = report.timings.map { "\($0.stage) \(fixed($0.milliseconds, digits: 0))" }.joined(separator: ", ")
                Swift.print("[\(time)] rebuilt in \(fixed(ms, digits: 0)) ms: \(APKPatch.Watch.describe(changed)) (\(stages) ms)")
            }
        case .setBuilt(let report, let changed, let rebuilt, let ms):
            let kept = report.members.count - rebuilt.count
            if changed.isEmpty {
                Swift.print("[\(time)] built \(report.output) in \(fixed(ms, digits: 0)) ms (\(report.form.rawValue), \(report.members.count) APKs, \(formatBytes(report.outputSize))): package \(report.packageName), versionCode \(report.versionCode)")
                if report.deviceUnread, let script = report.installScript {
                    Swift.print("        install script: \(script) installs every APK of the set: the device could not be read to choose its splits")
                } else if let commands = report.installCommands {
                    Swift.print("        install: \(commands.installLine)")
                }
            } else {
                let stages = report.timings.map { "\($0.stage) \(fixed($0.milliseconds, digits: 0))" }.joined(separator: ", ")
                let apks = rebuilt.isEmpty ? "no APK changed" : "rebuilt \(rebuilt.joined(separator: ", "))\(kept > 0 ? ", kept \(kept)" : "")"
                Swift.print("[\(time)] rebuilt in \(fixed(ms, digits: 0)) ms: \(APKPatch.Watch.describe(changed)); \(apks) (\(stages) ms)")
            }
        case .failed(let message, let changed):
            let what = changed.isEmpty ? "" : " after " + APKPatch.Watch.describe(changed)
            let kept = !hasBuilt ? "no build written yet: fix it and save to build again"
                : "keeping " + (isLive ? "the last good development build" : "the last good build at \(output)")
            FileHandleOutput.standardError("[\(time)] error\(what): \(message)\n        \(kept)")
        case .installed:
            Swift.print("[\(time)] installed")
        case .installFailed(let error, let willRetry):
            FileHandleOutput.standardError("[\(time)] \(Self.describe(error, willRetry: willRetry))")
        case .liveStarted(let start):
            Swift.print("""
            Live reload (\(start.framework.rawValue) app): serving \(start.webRoot) of the APK overlaid with the patch directory at http://127.0.0.1:\(start.port)
                    the device opens \(start.startURL) through adb reverse tcp:\(start.port) tcp:\(start.port) (removed when watch stops)
                    installing a development build (debuggable, cleartext HTTP allowed, its WebView pointed at the server)
                    when watch stops, \(start.output) is the normal patched build (pages from the APK, not the server)
            """)
        case .reloaded(let changed, let ms, let pages):
            Swift.print("[\(time)] reloaded \(APKPatch.Watch.describe(changed)) in \(fixed(ms, digits: 1)) ms (\(pages) page\(pages == 1 ? "" : "s"))")
        case .outsideWebRoot(let changed):
            Swift.print("[\(time)] \(APKPatch.Watch.describe(changed)) outside the web root: rebuilding and reinstalling the development build")
        case .finalBuilt(let report):
            Swift.print("[\(time)] built \(report.output) in the normal way (\(formatBytes(report.outputSize))): it loads its pages from the APK")
            if let commands = report.installCommands {
                Swift.print("        the device still has the development build; to replace it: \(commands.installLine)")
            }
        case .warning(let message):
            FileHandleOutput.standardError("[\(time)] warning: \(message)")
        case .stopped:
            Swift.print("[\(time)] stopped")
        }
    }

    /// The warnings of a build's verification not told yet this session (`toldWarnings`), as `run`'s summary
    /// words them; a set's prefixed with the APK's name.
    private func newWarnings(in event: WatchSession.Event) -> [String] {
        var found: [(key: String, text: String)] = []
        switch event {
        case .built(let report, _, _), .finalBuilt(let report):
            guard let verification = report.verification else { return [] }
            for issue in verification.installWarnings + verification.signatureWarnings {
                found.append(("\(issue.code.rawValue) \(issue.context)", issue.description))
            }
        case .setBuilt(let report, _, _, _):
            for member in report.members {
                guard let verification = member.verification else { continue }
                for issue in verification.installWarnings + verification.signatureWarnings {
                    found.append(("\(member.name) \(issue.code.rawValue) \(issue.context)", "\(member.name): \(issue.description)"))
                }
            }
        default:
            return []
        }
        return found.filter { toldWarnings.insert($0.key).inserted }.map(\.text)
    }

    /// One sentence or two: for a device that is not there (yet), that the next build retries; otherwise the
    /// error with its advice. Either way said once, not after every save.
    static func describe(_ error: InstallError, willRetry: Bool) -> String {
        guard willRetry else { return CLIHint.describe(error) }
        let said = error.adbMessage.map { " (adb said \u{201C}\($0)\u{201D})" } ?? ""
        let (what, todo): (String, String)
        switch error.code {
        case .deviceUnauthorized: (what, todo) = ("Device not authorized", "accept the \"Allow USB debugging?\" prompt on it")
        case .deviceOffline: (what, todo) = ("Device offline", "reconnect it until `adb devices` lists it as \"device\"")
        case .deviceNotFound: (what, todo) = ("No device with that serial", "pick one from `adb devices`")
        default: (what, todo) = ("No device", "connect one with USB debugging on, or start an emulator")
        }
        return "\(what), will retry after each rebuild: \(todo)\(said)."
    }

    static func jsonLine(_ value: WatchEventJSON) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// `apkpatch watch --json`: one object per event, `event` naming it; absent fields do not apply.
struct WatchEventJSON: Encodable {
    var event: String
    var output: String?
    var outputSize: Int64?
    var entries: Int?
    var changed: [String]?
    var milliseconds: Double?
    var installCommand: String?
    var error: String?
    /// `installFailed`: the InstallError code, and whether the next build retries (a device not there yet).
    var code: String?
    var willRetry: Bool?
    /// `installFailed`: true when the APKs were installed and a later step (a push, the launch) failed.
    var installed: Bool?
    var message: String?
    var framework: String?
    var webRoot: String?
    var serverURL: String?
    var startURL: String?
    var port: Int?
    var developmentBuild: String?
    var pages: Int?
    var rebuiltAPKs: [String]?
    var keptAPKs: [String]?

    init(_ event: WatchSession.Event) {
        switch event {
        case .built(let report, let changed, let ms):
            self.event = "built"
            output = report.output; outputSize = report.outputSize; entries = report.entryCount
            self.changed = changed; milliseconds = ms; installCommand = report.installCommands?.installLine
        case .setBuilt(let report, let changed, let rebuilt, let ms):
            self.event = "built"
            output = report.output; outputSize = report.outputSize
            self.changed = changed; milliseconds = ms; installCommand = report.installCommands?.installLine
            rebuiltAPKs = rebuilt
            keptAPKs = report.members.map(\.name).filter { !rebuilt.contains($0) }
        case .failed(let message, let changed):
            self.event = "failed"; error = message; self.changed = changed
        case .installed:
            self.event = "installed"
        case .installFailed(let failure, let retry):
            self.event = "installFailed"; error = CLIHint.describe(failure); code = failure.code.rawValue; willRetry = retry
            installed = failure.isAppInstalled
        case .liveStarted(let start):
            self.event = "liveStarted"
            framework = start.framework.rawValue; webRoot = start.webRoot; serverURL = "http://127.0.0.1:\(start.port)"
            startURL = start.startURL; port = start.port; developmentBuild = start.developmentBuild; output = start.output
        case .reloaded(let changed, let ms, let pages):
            self.event = "reloaded"; self.changed = changed; milliseconds = ms; self.pages = pages
        case .outsideWebRoot(let changed):
            self.event = "outsideWebRoot"; self.changed = changed
        case .finalBuilt(let report):
            self.event = "finalBuilt"
            output = report.output; outputSize = report.outputSize; entries = report.entryCount
            installCommand = report.installCommands?.installLine
        case .warning(let text):
            self.event = "warning"; message = text
        case .stopped:
            self.event = "stopped"
        }
    }
}
