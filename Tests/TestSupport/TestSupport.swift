import APKCore
import Foundation

/// Helpers shared by the test targets: running the real tools (the oracles), building fixture APKs with
/// `aapt` at test time, and scratch directories.
public enum TestSupport {
    /// The package root (two levels above this file's folder).
    public static let packageRoot: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Android's framework resources from Debian's android-framework-res: the `-I` for aapt and a 45 MB,
    /// 7,600-entry real APK.
    public static let frameworkRes = "/usr/share/android-framework-res/framework-res.apk"

    /// The built `apkpatch` binary (debug build beside the test bundle).
    public static var apkpatchBinary: String {
        let bundle = Bundle.main.bundleURL
        let candidates = [
            bundle.deletingLastPathComponent().appendingPathComponent("apkpatch").path,
            bundle.appendingPathComponent("apkpatch").path,
            packageRoot.appendingPathComponent(".build/debug/apkpatch").path,
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) } ?? candidates[2]
    }

    /// The result of running a process.
    public struct ProcessResult: CustomStringConvertible {
        public let status: Int32
        public let stdout: String
        public let stderr: String
        public var succeeded: Bool { status == 0 }
        public var description: String { "exit \(status)\n--- stdout\n\(stdout)\n--- stderr\n\(stderr)" }
    }

    /// A keystore made by the real `keytool -genkeypair` (the oracle for "a keystore users already have").
    /// The password travels in the environment, never in argv; for PKCS12 it is also the key's password.
    /// keytool spends about a second of CPU on a key, and suites make the same keystore in each test's set-up:
    /// each distinct request (every parameter and the file's name, so `old.p12` and `new.p12` are two keys) is
    /// generated once per test process and copied. A path that exists already gets keytool itself (it adds the
    /// entry to that keystore).
    public static func makeKeyStore(at path: String, password: String, alias: String = "release", dname: String,
                                    type: String = "PKCS12", keyAlgorithm: String = "RSA", keySize: Int = 2048,
                                    validityDays: Int = 3650) throws {
        func generate(_ path: String) throws {
            let result = try run("keytool", ["-genkeypair", "-keystore", path, "-storetype", type, "-alias", alias,
                                             "-keyalg", keyAlgorithm, "-keysize", String(keySize), "-validity", String(validityDays),
                                             "-dname", dname, "-storepass:env", "APKPATCH_TEST_KS_PASS", "-keypass:env", "APKPATCH_TEST_KS_PASS"],
                                 environment: ["APKPATCH_TEST_KS_PASS": password])
            guard result.succeeded else { throw FixtureError(message: "keytool -genkeypair failed:\n\(result)") }
        }
        guard !FileManager.default.fileExists(atPath: path) else { return try generate(path) }
        let name = URL(fileURLWithPath: path).lastPathComponent
        let made = try keyStores.file(for: [name, password, alias, dname, type, keyAlgorithm, String(keySize), String(validityDays)],
                                      named: name, make: generate)
        try FileManager.default.copyItem(atPath: made, toPath: path)
    }

    private static let keyStores = FileCache(label: "keystores")

    /// Options for the JVM of Android's `apksigner` and `apktool` scripts (their leading `-J` arguments), which
    /// the suites start hundreds of times, each run short: with the client compiler alone and the serial
    /// collector, a run spends about half the CPU on compiling and collecting, and computes the same.
    static let jvmOptions = Dictionary(uniqueKeysWithValues: ["apksigner", "apktool"].map {
        ($0, ["-JXX:TieredStopAtLevel=1", "-JXX:+UseSerialGC"])
    })

    /// Runs `executable` (a path, or a name looked up on PATH) with `arguments`, waiting for it to finish.
    /// Java tools with a long-lived server (`JavaToolServers`): Debian's apksigner and apktool, the JDK's keytool.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           currentDirectory: String? = nil, stdin: String? = nil) throws -> ProcessResult {
        if stdin == nil, currentDirectory == nil {
            if executable == "apksigner", let tool = JavaToolServers.Tool.debianApksigner,
               let result = JavaToolServers.run(tool, arguments, environment: environment) {
                return result
            }
            if executable == "keytool", let tool = JavaToolServers.Tool.jdkKeytool, !JavaToolServers.Tool.keytoolRunsInProcessOnly(arguments),
               let result = JavaToolServers.run(tool, arguments, environment: environment) {
                return result
            }
            // apktool's script appends its working directory (this process's) to PATH.
            if executable == "apktool", let tool = JavaToolServers.Tool.debianApktool, JavaToolServers.Tool.apktoolFrameworkIsSetUp {
                let path = (environment?["PATH"] ?? ProcessInfo.processInfo.environment["PATH"] ?? "") + ":" + FileManager.default.currentDirectoryPath
                if let result = JavaToolServers.run(tool, arguments, environment: (environment ?? [:]).merging(["PATH": path]) { $1 }) {
                    return result
                }
            }
        }
        return try runProcess(executable, arguments, environment: environment, currentDirectory: currentDirectory, stdin: stdin)
    }

    /// `run` in a process of its own, whatever the tool.
    static func runProcess(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                           currentDirectory: String? = nil, stdin: String? = nil) throws -> ProcessResult {
        let merged = ProcessInfo.processInfo.environment.merging(environment ?? [:]) { $1 }
        // Where the tool is found, and argv as Foundation's `Process` gave it: a path made absolute (the path is
        // argv[0]); a name looked up on the child's PATH, as `env NAME` does (the name is argv[0]). A working
        // directory, or a name found nowhere (env's own message and status 127), goes through `env`.
        let named = executable.contains("/") ? [URL(fileURLWithPath: executable).path] : [executable] + (jvmOptions[executable] ?? [])
        let path: String, argv: [String]
        if let currentDirectory {
            (path, argv) = ("/usr/bin/env", ["/usr/bin/env", "-C", currentDirectory] + named + arguments)
        } else if executable.contains("/") {
            (path, argv) = (named[0], named + arguments)
        } else if let found = executablePath(executable, searching: merged["PATH"]) {
            (path, argv) = (found, named + arguments)
        } else {
            (path, argv) = ("/usr/bin/env", ["/usr/bin/env"] + named + arguments)
        }
        let child = try SpawnedProcess.spawn(path, argv: argv, environment: merged)
        let input = Array((stdin ?? "").utf8)
        if input.isEmpty { close(child.standardInput) } else {
            _ = BackgroundValue<Void> { SpawnedProcess.writeAll(input, to: child.standardInput) }
        }
        // Read both pipes concurrently so neither fills up and blocks the child. A daemon the child started (the
        // real adb forks its server) inherits the pipes and would hold them open for ever: once the child has
        // exited, the readers get a grace period, then the result is what they read so far.
        final class Box: @unchecked Sendable {
            private let lock = Lock()
            private var bytes = Data()
            func append(_ more: Data) { lock.withLock { bytes.append(more) } }
            var data: Data { lock.withLock { bytes } }
        }
        let outBox = Box(), errBox = Box()
        let readers = [(child.standardOutput, outBox), (child.standardError, errBox)].map { descriptor, box in
            BackgroundValue<Void> { SpawnedProcess.read(descriptor) { box.append($0) } }
        }
        let status = child.waitForExit()
        var errData = Data()
        let deadline = DispatchTime.now() + 30
        if !readers.allSatisfy({ $0.wait(until: deadline) }) {
            errData = Data("\n[TestSupport.run: a process that \(executable) started still holds its output open; read what came before]\n".utf8)
        }
        let outData = outBox.data
        errData = errBox.data + errData
        return ProcessResult(status: status,
                             stdout: String(decoding: outData, as: UTF8.self),
                             stderr: String(decoding: errData, as: UTF8.self))
    }

    /// The file `name` is on `searchPath` (this process's PATH when nil), as `env` and shells find it: the first
    /// executable regular file, an empty entry meaning the current directory; nil when there is none.
    public static func executablePath(_ name: String, searching searchPath: String? = nil) -> String? {
        let entries = (searchPath ?? ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":", omittingEmptySubsequences: false)
        return entries.map { $0.isEmpty ? name : "\($0)/\(name)" }.first { candidate in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: candidate, isDirectory: &isDirectory) && !isDirectory.boolValue
                && FileManager.default.isExecutableFile(atPath: candidate)
        }
    }

    /// Runs the built `apkpatch` binary.
    @discardableResult
    public static func apkpatch(_ arguments: [String], environment: [String: String]? = nil, stdin: String? = nil) throws -> ProcessResult {
        try run(apkpatchBinary, arguments, environment: environment, stdin: stdin)
    }

    /// Opens `apk` with Android's own ZIP reader, libziparchive, and extracts every entry, as the package manager
    /// would (`Tests/Oracles/ziparchive-check.cc`): stdout is "OK N entries", or each failure and exit status 1.
    /// With `list`, stdout is instead one tab-separated line per entry (`ZipArchiveOracle.read` parses them).
    public static func libziparchiveCheck(_ apk: String, list: Bool = false) throws -> ProcessResult {
        try run(try libziparchiveChecker.get(), (list ? ["--list"] : []) + [apk])
    }

    /// Looks each of `names` up in `apk` by its bytes with libziparchive's `FindEntry`, as Android finds an entry,
    /// and extracts it: stdout has one line per name, the data in hex or "missing: " and the reader's error.
    public static func libziparchiveFind(_ apk: String, names: [String]) throws -> ProcessResult {
        try run(try libziparchiveChecker.get(), ["--find", apk] + names)
    }

    /// The oracle's binary, built with g++ against Debian's android-libziparchive-dev once per test process.
    private static let libziparchiveChecker: Result<String, any Error> = Result {
        try buildOracle("ziparchive-check", library: "ziparchive", package: "android-libziparchive-dev")
    }

    /// Loads a `resources.arsc` file with Android's own resource loader, libandroidfw's `LoadedArsc`
    /// (`Tests/Oracles/arsc-check.cc`), and prints per resource its typeSpec flags and entry flags, and the
    /// overlayable declarations (`overlayable NAME actor=…`, `overlayable-item 0x… NAME actor=… policy=0x…`).
    /// `strict`: instead, whether Android's loaders read the whole table (`LoadedArsc::Load`, every entry as a
    /// lookup reads it, `ResTable::add`): stdout "OK", or why not and exit status 1.
    public static func libandroidfwTable(_ arsc: String, strict: Bool = false) throws -> ProcessResult {
        try run(try libandroidfwChecker.get(), (strict ? ["--strict"] : []) + [arsc])
    }

    private static let libandroidfwChecker: Result<String, any Error> = Result {
        try buildOracle("arsc-check", library: "androidfw", package: "android-libandroidfw-dev")
    }

    /// Builds `Tests/Oracles/<name>.cc` with g++ against Debian's Android library `library` (from `package`) into
    /// .build/test-tools, into a fresh name renamed into place, so parallel test processes do not race.
    private static func buildOracle(_ name: String, library: String, package: String) throws -> String {
        let source = packageRoot.appendingPathComponent("Tests/Oracles/\(name).cc").path
        let directory = packageRoot.appendingPathComponent(".build/test-tools").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let binary = directory + "/" + name
        let building = binary + ".\(ProcessInfo.processInfo.processIdentifier)"
        let libraries = ["x86_64", "aarch64"].map { "/usr/lib/\($0)-linux-gnu/android" }
            .first { FileManager.default.fileExists(atPath: $0 + "/lib\(library).so") } ?? "/usr/lib/x86_64-linux-gnu/android"
        let result = try run("g++", ["-std=c++17", "-O1", "-w", "-I/usr/include/android", "-o", building, source,
                                     "-L\(libraries)", "-l\(library)", "-Wl,-rpath,\(libraries)"])
        guard result.succeeded else { throw FixtureError(message: "building the \(name) oracle failed (make test-deps installs \(package)):\n\(result)") }
        guard rename(building, binary) == 0 else { throw FixtureError(message: "cannot rename \(building) to \(binary)") }
        return binary
    }

    /// A new empty directory, `label-UUID`, in this test process's folder under the system temp directory:
    /// removed when the test ends if its suite is marked `.removesTemporaryDirectories` and it passed, else when
    /// the process exits (`TemporaryDirectories`).
    public static func makeTemporaryDirectory(_ label: String = "apkpatch-test") throws -> URL {
        try TemporaryDirectories.make(label)
    }

    /// Writes `contents` at `relativePath` under `directory`, creating folders.
    public static func write(_ contents: [UInt8], to relativePath: String, in directory: URL) throws {
        let url = directory.appendingPathComponent(relativePath)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contents).write(to: url)
    }

    public static func write(_ text: String, to relativePath: String, in directory: URL) throws {
        try write(Array(text.utf8), to: relativePath, in: directory)
    }

    public static func readBytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
}

/// A fixture APK built with the real `aapt` against framework-res.apk, like the APKs users receive.
public struct FixtureAPK {
    public var packageName = "com.example.fixture"
    public var versionCode = 1
    public var versionName = "1.0"
    public var minSdk = 21
    public var targetSdk = 33
    public var label = "Fixture"
    /// Extra attributes on <application>, e.g. `android:extractNativeLibs="false"`.
    public var applicationAttributes = ""
    /// Extra elements inside <manifest> (e.g. uses-permission).
    public var manifestElements = ""
    /// Extra elements inside <application> (e.g. a provider).
    public var applicationElements = ""
    /// Files under assets/ (path relative to assets/ → content).
    public var assets: [String: [UInt8]] = [:]
    /// Raw files added to the archive after aapt ran (path in APK → content), e.g. lib/arm64-v8a/libx.so, classes.dex.
    public var rawFiles: [String: [UInt8]] = [:]
    /// res/values/strings.xml string resources beyond app_name.
    public var strings: [String: String] = [:]
    /// Extra files in res/ (e.g. "raw/data.bin", "drawable/icon.png").
    public var resources: [String: [UInt8]] = [:]
    /// Passed to aapt's -0 to keep these extensions stored ("" stores everything).
    public var storedExtensions: [String] = []

    public init() {}

    /// A Cordova-like app: index.html, a few scripts and styles, images, a native library and a dex.
    public static func cordovaLike() -> FixtureAPK {
        var apk = FixtureAPK()
        apk.packageName = "com.example.cordova"
        apk.label = "Cordova Fixture"
        apk.assets["www/index.html"] = Array("<!doctype html><html><head><script src=\"js/app.js\"></script></head><body><h1>Hello</h1></body></html>\n".utf8)
        for i in 0..<8 {
            apk.assets["www/js/module\(i).js"] = Array((0..<200).map { "function f\(i)_\($0)() { return \($0 * i); }\n" }.joined().utf8)
        }
        apk.assets["www/js/app.js"] = Array("document.addEventListener('deviceready', function () { console.log('ready'); });\n".utf8)
        apk.assets["www/css/app.css"] = Array("body { font-family: sans-serif; color: #333; }\n".utf8)
        apk.assets["www/img/logo.png"] = FixtureAPK.pseudoRandomBytes(count: 4000, seed: 1)
        apk.rawFiles["lib/arm64-v8a/libnative.so"] = FixtureAPK.pseudoRandomBytes(count: 10_000, seed: 2)
        apk.rawFiles["classes.dex"] = Array("dex\n035\0".utf8) + FixtureAPK.pseudoRandomBytes(count: 3000, seed: 3)
        apk.strings["greeting"] = "Hello"
        return apk
    }

    /// Deterministic filler bytes (SplitMix64), so fixtures are reproducible.
    public static func pseudoRandomBytes(count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix64(seed: seed &+ 0x9E37_79B9_7F4A_7C15)
        var out = [UInt8](); out.reserveCapacity(count)
        while out.count < count {
            let z = generator.next()
            withUnsafeBytes(of: z) { out.append(contentsOf: $0.prefix(count - out.count)) }
        }
        return out
    }

    /// Builds the APK into `directory`/`name` and returns its path. Throws if aapt fails.
    @discardableResult
    public func build(in directory: URL, name: String = "fixture.apk") throws -> String {
        let work = directory.appendingPathComponent("aapt-\(UUID().uuidString)")
        let fm = FileManager.default
        try fm.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? fm.removeItem(at: work) }
        let manifest = """
        <?xml version="1.0" encoding="utf-8"?>
        <manifest xmlns:android="http://schemas.android.com/apk/res/android"
            package="\(packageName)" android:versionCode="\(versionCode)" android:versionName="\(versionName)">
            <uses-sdk android:minSdkVersion="\(minSdk)" android:targetSdkVersion="\(targetSdk)" />
            \(manifestElements)
            <application android:label="@string/app_name" \(applicationAttributes)>
                <activity android:name=".MainActivity" android:exported="true">
                    <intent-filter>
                        <action android:name="android.intent.action.MAIN" />
                        <category android:name="android.intent.category.LAUNCHER" />
                    </intent-filter>
                </activity>
                \(applicationElements)
            </application>
        </manifest>
        """
        try TestSupport.write(manifest, to: "AndroidManifest.xml", in: work)
        var strings = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<resources>\n    <string name=\"app_name\">\(label)</string>\n"
        for (key, value) in self.strings.sorted(by: { $0.key < $1.key }) { strings += "    <string name=\"\(key)\">\(value)</string>\n" }
        strings += "</resources>\n"
        try TestSupport.write(strings, to: "res/values/strings.xml", in: work)
        for (path, content) in resources { try TestSupport.write(content, to: "res/\(path)", in: work) }
        for (path, content) in assets { try TestSupport.write(content, to: "assets/\(path)", in: work) }
        let output = directory.appendingPathComponent(name).path
        try? fm.removeItem(atPath: output)
        var arguments = ["package", "-f", "-M", "AndroidManifest.xml", "-S", "res", "-I", TestSupport.frameworkRes, "-F", output]
        if !assets.isEmpty { arguments += ["-A", "assets"] }
        for ext in storedExtensions { arguments += ["-0", ext] }
        let result = try TestSupport.run("aapt", arguments, currentDirectory: work.path)
        guard result.succeeded else { throw FixtureError(message: "aapt package failed:\n\(result)") }
        if !rawFiles.isEmpty {
            // aapt add takes paths relative to the current directory and stores them under those names.
            for (path, content) in rawFiles { try TestSupport.write(content, to: path, in: work) }
            let add = try TestSupport.run("aapt", ["add", output] + rawFiles.keys.sorted(), currentDirectory: work.path)
            guard add.succeeded else { throw FixtureError(message: "aapt add failed:\n\(add)") }
        }
        return output
    }
}

/// Files made once per test process, by request: the first caller of a request makes its file (callers of other
/// requests go on meanwhile), later ones get the same path; a failure is kept and thrown to each.
final class FileCache: @unchecked Sendable {
    private final class Entry {
        let lock = Lock()
        var result: Result<String, any Error>?
    }
    private let label: String
    private let lock = Lock()
    private var entries: [[String]: Entry] = [:]
    private var directory: Result<URL, any Error>?

    init(label: String) { self.label = label }

    func file(for request: [String], named name: String, make: (String) throws -> Void) throws -> String {
        let entry = lock.withLock {
            if let entry = entries[request] { return entry }
            let entry = Entry()
            entries[request] = entry
            return entry
        }
        return try entry.lock.withLock {
            if entry.result == nil {
                entry.result = Result {
                    let root = try lock.withLock {
                        if directory == nil {
                            directory = Result { try TestSupport.sharedByTests { try TestSupport.makeTemporaryDirectory("apkpatch-test-\(label)") } }
                        }
                        return try directory!.get()
                    }
                    let folder = root.appendingPathComponent(UUID().uuidString)
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    let path = folder.appendingPathComponent(name).path
                    try make(path)
                    return path
                }
            }
            return try entry.result!.get()
        }
    }
}

public struct FixtureError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(message: String) { self.message = message }
    public var description: String { message }
}

/// SplitMix64 (as in argument-parser's Examples/roll): a seeded generator, so a failure names a reproducible
/// input (the seed goes in the test's arguments or message).
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
