#if canImport(Glibc)
import Glibc
#endif
import APKCore
import Foundation
import TestSupport

/// One `apkpatch watch` session driven as a user would drive it: started (on a hostile APK or patch directory),
/// its first build awaited, the patch directory edited in hostile ways (each edit given time to be seen), a last
/// plain edit that any live session must answer with a build or an error, then a stop signal (SIGINT, SIGTERM or
/// SIGHUP). Like `BoundedRun`: its own process group, stdin /dev/null, an address-space limit, and every deadline
/// judged by CPU time (a session that is blocked gets ten times longer than one that spins).
public struct WatchRun: Sendable {
    public var result = BoundedRun()
    /// The session ended before it was told to stop.
    public var exitedEarly = false
    /// Builds and failed builds reported (lines "[hh:mm:ss] built", "rebuilt", "error").
    public var events = 0
    /// The last plain edit got no build or error line: the session stopped watching.
    public var unanswered = false
    /// It used the CPU past a deadline while waiting (first build, an edit, the stop).
    public var busy: String?
    /// Did not end after the stop signal.
    public var ignoredStop = false
    /// Paths under the patch directory that were there at the start or that the edits made (any other path there
    /// at the end, the session made).
    public var patchFiles: Set<String> = []
    public var log: [String] = []

    /// A line of watch's that reports a build or a failed one.
    static func isEvent(_ line: Substring) -> Bool {
        line.range(of: #"^\[[0-9]{2}:[0-9]{2}:[0-9]{2}\] (built|rebuilt|error)"#, options: .regularExpression) != nil
    }

    public static func run(_ executable: String, _ arguments: [String], in directory: String, environment: [String: String], seconds: Double,
                           memoryBytes: Int, patch: URL, edits: [WatchEdit], stop: Int32) -> WatchRun {
        var run = WatchRun()
        let outPath = directory + "/.fuzz-stdout", errPath = directory + "/.fuzz-stderr"
        // One exec chain (env -C, prlimit, apkpatch): the pid is apkpatch's, and the stop signal goes to it alone.
        let argv = ["/usr/bin/env", "-C", directory, "/usr/bin/prlimit", "--as=\(memoryBytes)", "--", executable] + arguments
        // What the patch directory holds before the session starts: a file the session writes there at once must
        // not count as the directory's own.
        let initialPatchFiles = Campaign.snapshot(patch)
        let start = Date()
        let (pid, spawned) = spawnInOwnGroup(argv, environment: environment, stdout: outPath, stderr: errPath)
        guard spawned == 0 else {
            run.result.status = -1
            run.result.stderr = "posix_spawn failed: \(spawned)"
            return run
        }
        var status: Int32 = 0
        var reaped = false
        func output() -> String {
            ((try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "") + "\n" + ((try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
        }
        func countEvents() -> Int { output().split(separator: "\n").filter(isEvent).count }
        func exited() -> Bool {
            if reaped { return true }
            if waitpid(pid, &status, WNOHANG) == pid { reaped = true }
            return reaped
        }
        enum Wait { case event, exited, busy, blocked, quiet }
        /// Until an event after `known`, the exit, or a deadline: `quiet` ends early once the session has been idle
        /// that long (an edit it may rightly ignore).
        func wait(after known: Int, quiet: Double? = nil) -> Wait {
            var deadline = Date().addingTimeInterval(seconds)
            let last = Date().addingTimeInterval(seconds * 10)
            var idleSince = Date(), lastCPU = groupCPUSeconds(pid)
            let startCPU = lastCPU
            var pause = 2_000 as useconds_t
            while true {
                if countEvents() > known { return .event }
                if exited() { return .exited }
                let cpu = groupCPUSeconds(pid)
                if cpu - lastCPU > 0.01 { idleSince = Date(); lastCPU = cpu }
                if let quiet, Date().timeIntervalSince(idleSince) > quiet { return .quiet }
                if Date() > deadline {
                    // Had a whole deadline's worth of CPU without answering: spinning. Less: a slow build on a loaded
                    // machine (a debug binary reading a large hostile apkpatch.yml) or a blocked session, which
                    // gets up to ten deadlines.
                    if cpu - startCPU >= seconds { return .busy }
                    if Date() > last { return .blocked }
                    deadline = Date().addingTimeInterval(seconds / 4)
                }
                usleep(pause)
                pause = min(pause * 2, 50_000)
            }
        }

        run.patchFiles = initialPatchFiles
        /// Applies `edit`, keeping in `patchFiles` what it added and removed (and only that).
        func apply(_ edit: WatchEdit) {
            let before = Campaign.snapshot(patch)
            edit.apply(patch)
            let after = Campaign.snapshot(patch)
            run.patchFiles.subtract(before.subtracting(after))
            run.patchFiles.formUnion(after.subtracting(before))
        }
        var outcome = wait(after: 0)
        run.log.append("first build: \(outcome)")
        if outcome == .busy { run.busy = "before its first build" }
        if outcome == .event {
            for edit in edits {
                let known = countEvents()
                apply(edit)
                run.log.append("edit: \(edit.description)")
                outcome = wait(after: known, quiet: 1.5)
                run.log.append("  -> \(outcome)")
                if outcome == .busy { run.busy = "after \(edit.description)" }
                if outcome == .exited || outcome == .busy || outcome == .blocked { break }
            }
        }
        if (outcome == .event || outcome == .quiet) && FileKind(atPath: patch.path) != .directory {
            // The patch directory was removed or replaced by a file: made again, as editors and `git checkout` do.
            // A session watches the new one (it reported the old one gone), so the probe goes into it.
            apply(WatchEdit.madeAgain)
            run.log.append("edit: \(WatchEdit.madeAgain.description)")
        }
        if outcome == .event || outcome == .quiet {
            // A plain new file: a watching session answers it with a build or an error.
            let known = countEvents()
            apply(WatchEdit.probe)
            outcome = wait(after: known)
            run.log.append("probe edit -> \(outcome)")
            if outcome == .busy { run.busy = "after the probe edit" }
            if outcome == .blocked { run.unanswered = true }
        }
        if exited() {
            run.exitedEarly = true
        } else {
            kill(pid, stop)
            run.log.append("sent signal \(stop)")
            var deadline = Date().addingTimeInterval(seconds)
            let last = Date().addingTimeInterval(seconds * 10)
            let startCPU = groupCPUSeconds(pid)
            while !exited() {
                if Date() > deadline {
                    if groupCPUSeconds(pid) - startCPU >= seconds || Date() > last {
                        run.ignoredStop = true
                        break
                    }
                    deadline = Date().addingTimeInterval(seconds / 4)
                }
                usleep(10_000)
            }
        }
        if !reaped {
            kill(-pid, SIGKILL)
            kill(pid, SIGKILL)
            _ = waitpid(pid, &status, 0)
            run.result.timedOut = true
        }
        kill(-pid, SIGKILL)
        run.events = countEvents()
        run.result.seconds = Date().timeIntervalSince(start)
        if (status & 0x7f) == 0 { run.result.status = (status >> 8) & 0xff } else if !run.result.timedOut { run.result.signal = status & 0x7f }
        run.result.stdout = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: outPath))) ?? Data(), as: UTF8.self)
        run.result.stderr = String(decoding: (try? Data(contentsOf: URL(fileURLWithPath: errPath))) ?? Data(), as: UTF8.self)
        unlink(outPath); unlink(errPath)
        return run
    }
}

/// A hostile edit of the patch directory while watch runs: what editors, build tools and users (or attackers)
/// do there. Deterministic for a generator; `description` is the replay note.
public struct WatchEdit: Sendable, CustomStringConvertible {
    public let description: String
    let action: @Sendable (URL) -> Void

    public func apply(_ patch: URL) { action(patch) }

    /// The patch directory made again where it was removed or replaced by a file.
    static let madeAgain = WatchEdit(description: "patch directory made again") { patch in
        if FileKind(atPath: patch.path) != .directory { try? FileManager.default.removeItem(at: patch) }
        try? FileManager.default.createDirectory(at: patch, withIntermediateDirectories: false)
    }

    /// The edit every live session answers: a new file of its own.
    static let probe = WatchEdit(description: "write assets/fuzz-probe.txt") { patch in
        write(Array("probe \(UUID().uuidString)\n".utf8), "assets/fuzz-probe.txt", in: patch)
    }

    static func write(_ bytes: [UInt8], _ path: String, in patch: URL) {
        let url = patch.appendingPathComponent(path)
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        // A FIFO an earlier edit left there would block the write (and the campaign) until a reader came: the
        // save replaces it, as an editor's would.
        var status = stat()
        if lstat(url.path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFIFO { unlink(url.path) }
        try? Data(bytes).write(to: url)
    }

    /// `name` + raw bytes (not UTF-8) under `folder`.
    static func createRawName(_ folder: URL, _ name: [UInt8]) {
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = Array(folder.path.utf8) + [UInt8(ascii: "/")] + name + [0]
        let fd = path.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), O_CREAT | O_WRONLY, 0o644) }
        if fd >= 0 { close(fd) }
    }

    static let hostileTexts: [(String, String)] = [
        ("apkpatch.yml", "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"),
        ("apkpatch.yml", "manifest:\n  versionCode: 99999999999999999999\n  minSdkVersion: -1\n  package: \"..\"\n"),
        ("apkpatch.yml", String(repeating: "- ", count: 20_000) + "x\n"),
        ("apkpatch.yml", "delete:\n  - \"**\"\n"),
        ("apkpatch.yml", "networkSecurity:\n  caCertificates: [/etc/passwd, ../../../etc/shadow, /dev/zero]\n"),
        ("res/values/strings.xml", "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\"><!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\">]><resources><string name=\"x\">&d;&d;&d;&d;&d;&d;</string></resources>"),
        ("res/values/strings.xml", "<resources><string name=\"../../escape\">x</string><string name=\"\">y</string></resources>"),
        ("res/values/strings.xml", "<resources>" + String(repeating: "<string-array name=\"a\">", count: 5_000) + "</resources>"),
        ("AndroidManifest.xml", "<manifest package=\"\" xmlns:android=\"http://schemas.android.com/apk/res/android\"><application android:label=\"@string/nope\"/></manifest>"),
        ("AndroidManifest.xml", "\u{FEFF}<?xml version=\"1.0\" encoding=\"UTF-16\"?><manifest/>"),
        ("res/layout/main.xml", "<LinearLayout xmlns:android=\"http://schemas.android.com/apk/res/android\" android:layout_width=\"@dimen/nope\"/>"),
        ("res/xml/config.xml", "<widget><![CDATA[" + String(repeating: "]]", count: 10_000) + "</widget>"),
        ("certs/proxy.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
    ]

    /// 1–4 edits for one session; `mutated(path)` gives a mutated copy of a seed patch file, when there is one.
    static func script(_ rng: inout SplitMix64, mutated: (String, inout SplitMix64) -> [UInt8]?) -> [WatchEdit] {
        var edits: [WatchEdit] = []
        for _ in 0..<Int.random(in: 1...4, using: &rng) {
            let roll = Int.random(in: 0..<24, using: &rng)
            switch roll {
            case 0...3:
                let file = ["apkpatch.yml", "AndroidManifest.xml", "res/values/strings.xml", "res/xml/config.xml", "res/layout/main.xml", "certs/proxy.pem"]
                    .randomElement(using: &rng)!
                if let bytes = mutated(file, &rng) {
                    edits.append(WatchEdit(description: "mutated \(file) (\(bytes.count) bytes)") { write(bytes, file, in: $0) })
                }
            case 4:
                let (file, text) = hostileTexts.randomElement(using: &rng)!
                edits.append(WatchEdit(description: "hostile \(file): \(text.prefix(60).debugDescription)") { write(Array(text.utf8), file, in: $0) })
            case 5:
                let bytes = FixtureAPK.pseudoRandomBytes(count: Int.random(in: 0...5000, using: &rng), seed: rng.next())
                let file = ["AndroidManifest.xml", "res/values/strings.xml", "apkpatch.yml", "res/drawable/icon.png", "assets/www/index.html"].randomElement(using: &rng)!
                edits.append(WatchEdit(description: "random bytes (\(bytes.count)) into \(file)") { write(bytes, file, in: $0) })
            case 6:
                edits.append(WatchEdit(description: "file named caf\\xE9 (not UTF-8)") { createRawName($0.appendingPathComponent("assets"), Array("caf".utf8) + [0xE9]) })
            case 7:
                let file = ["assets/pipe", "res/values/pipe.xml", "apkpatch.yml"].randomElement(using: &rng)!
                edits.append(WatchEdit(description: "FIFO at \(file)") { patch in
                    let url = patch.appendingPathComponent(file)
                    try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try? FileManager.default.removeItem(at: url)
                    mkfifo(url.path, 0o600)
                })
            case 8:
                let (name, target) = [("assets/zero", "/dev/zero"), ("assets/passwd", "/etc/passwd"), ("assets/loop", "loop"), ("assets/up", ".."),
                                      ("assets/dangling", "nowhere/at/all"), ("res/values/link.xml", "/dev/urandom"), (".#strings.xml", "user@host.1234:1700000000")]
                    .randomElement(using: &rng)!
                edits.append(WatchEdit(description: "symlink \(name) -> \(target)") { patch in
                    let url = patch.appendingPathComponent(name)
                    try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try? FileManager.default.createSymbolicLink(atPath: url.path, withDestinationPath: target)
                })
            case 9:
                let depth = Int.random(in: 50...400, using: &rng)
                edits.append(WatchEdit(description: "\(depth) nested folders with a file") { patch in
                    write(Array("deep\n".utf8), "assets/" + Array(repeating: "d", count: depth).joined(separator: "/") + "/f.txt", in: patch)
                })
            case 10:
                let count = Int.random(in: 200...3000, using: &rng)
                edits.append(WatchEdit(description: "\(count) new files in assets/many") { patch in
                    for i in 0..<count { write(Array("\(i)\n".utf8), "assets/many/f\(i).txt", in: patch) }
                })
            case 11:
                let size = Int.random(in: 1...12, using: &rng) << 20
                edits.append(WatchEdit(description: "\(size >> 20) MiB file") { write(FixtureAPK.pseudoRandomBytes(count: size, seed: 5), "assets/big.bin", in: $0) })
            case 12:
                edits.append(WatchEdit(description: "patch directory removed") { try? FileManager.default.removeItem(at: $0) })
            case 13:
                edits.append(WatchEdit(description: "patch directory replaced by a file") { patch in
                    try? FileManager.default.removeItem(at: patch)
                    try? Data("not a directory".utf8).write(to: patch)
                })
            case 22:
                // rm -rf patch && mkdir patch && a save: editors, `git checkout` and build tools do this.
                edits.append(WatchEdit(description: "patch directory removed and made again with a file") { patch in
                    try? FileManager.default.removeItem(at: patch)
                    write(Array("<p>again</p>\n".utf8), "assets/www/index.html", in: patch)
                })
            case 23:
                // The old folder moved aside (its watches follow it), a new one in its place; then the old one goes.
                edits.append(WatchEdit(description: "patch directory moved away, a new one made, a save in each") { patch in
                    let aside = patch.deletingLastPathComponent().appendingPathComponent(patch.lastPathComponent + ".aside")
                    try? FileManager.default.removeItem(at: aside)
                    guard rename(patch.path, aside.path) == 0 else { return }
                    write(Array("<p>new</p>\n".utf8), "assets/www/index.html", in: patch)
                    write(Array("<p>old</p>\n".utf8), "assets/www/old.html", in: aside)
                    try? FileManager.default.removeItem(at: aside)
                })
            case 14:
                let file = ["res/values/strings.xml", "apkpatch.yml", "AndroidManifest.xml"].randomElement(using: &rng)!
                edits.append(WatchEdit(description: "editor save of \(file): temporary file renamed over it") { patch in
                    let url = patch.appendingPathComponent(file)
                    let old = (try? Data(contentsOf: url)) ?? Data()
                    let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).swp")
                    try? (old + Data("\n".utf8)).write(to: temporary)
                    rename(temporary.path, url.path)
                })
            case 15:
                let file = ["res/values/strings.xml", "apkpatch.yml", "AndroidManifest.xml", "res", "assets", "certs"].randomElement(using: &rng)!
                edits.append(WatchEdit(description: "removed \(file)") { try? FileManager.default.removeItem(at: $0.appendingPathComponent(file)) })
            case 16:
                let file = ["res/values/strings.xml", "AndroidManifest.xml", "res/layout/main.xml"].randomElement(using: &rng)!
                edits.append(WatchEdit(description: "\(file) truncated to 0 bytes") { patch in truncate(patch.appendingPathComponent(file).path, 0) })
            case 17:
                edits.append(WatchEdit(description: "folder res replaced by a file") { patch in
                    try? FileManager.default.removeItem(at: patch.appendingPathComponent("res"))
                    write(Array("x".utf8), "res", in: patch)
                })
            case 18:
                edits.append(WatchEdit(description: "editor droppings: 4913, strings.xml~, .DS_Store, #x#") { patch in
                    for name in ["res/values/4913", "res/values/strings.xml~", ".DS_Store", "assets/#x#"] { write(Array("x".utf8), name, in: patch) }
                    try? FileManager.default.removeItem(at: patch.appendingPathComponent("res/values/4913"))
                })
            case 19:
                edits.append(WatchEdit(description: "a file where a folder is expected: res/values/strings.xml/x") { patch in
                    try? FileManager.default.removeItem(at: patch.appendingPathComponent("res/values/strings.xml"))
                    write(Array("<resources/>".utf8), "res/values/strings.xml/x", in: patch)
                })
            case 20:
                let count = Int.random(in: 20...200, using: &rng)
                edits.append(WatchEdit(description: "\(count) quick rewrites of assets/www/index.html") { patch in
                    for i in 0..<count { write(Array("<p>\(i)</p>\n".utf8), "assets/www/index.html", in: patch) }
                })
            default:
                edits.append(WatchEdit(description: "new values file with a unicode name") { write(Array("<resources><string name=\"s\">x</string></resources>".utf8), "res/values-b+sr+Latn/\u{1F600}.xml", in: $0) })
            }
        }
        return edits
    }
}
