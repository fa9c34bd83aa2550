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
import APKCore

/// How to install: the flags of `adb install` and whether to start the app afterwards.
public struct InstallOptions: Sendable, Hashable {
    /// `adb -s SERIAL`: which device, when several are connected (adb also honours `ANDROID_SERIAL`).
    public var serial: String?
    /// `adb install -t`: allow an APK whose manifest says `android:testOnly="true"`.
    public var allowTestPackages: Bool
    /// `adb install -d`: allow installing a lower `versionCode` over the installed app (debuggable apps or userdebug builds).
    public var allowDowngrade: Bool
    /// `adb install -g`: grant every runtime permission in the manifest.
    public var grantPermissions: Bool
    /// Start the launcher activity after installing.
    public var launch: Bool
    /// `adb install --incremental`: stream the APK with its v4 signature (`<apk>.idsig`, which adb finds beside
    /// it), so the app can start before all of a large APK has arrived. `Installer` falls back to a normal
    /// install when adb or the device cannot.
    public var incremental: Bool

    public init(serial: String? = nil, allowTestPackages: Bool = false, allowDowngrade: Bool = false,
                grantPermissions: Bool = false, launch: Bool = false, incremental: Bool = false) {
        self.incremental = incremental
        self.serial = serial
        self.allowTestPackages = allowTestPackages
        self.allowDowngrade = allowDowngrade
        self.grantPermissions = grantPermissions
        self.launch = launch
    }
}

/// The adb commands that install an APK (and start it), rendered from `Templates/adb/install-command.mustache`.
///
/// `adb [-s SERIAL] install -r [-t] [-d] [-g] APK`, then with ``InstallOptions/launch``
/// `adb [-s SERIAL] shell am start -n PACKAGE/ACTIVITY`, or `adb shell monkey -p PACKAGE -c android.intent.category.LAUNCHER 1`
/// when the launcher activity is unknown. ``text`` is what to show or paste; ``install`` and ``launch`` are the same
/// commands as argv (parsed back from the rendered text, so the two cannot disagree).
public struct InstallCommands: Sendable {
    /// The APK path as given (the first, the base, for a split APK set); the container for APKs in one.
    public let apkPath: String
    /// Every APK to install: one, or a split APK set's base and splits (`adb install-multiple`, one session).
    public let apkPaths: [String]
    /// APKs that are entries of a container file (`.apks`, `.xapk`, `.apkm`), installed from copies at
    /// `apkPaths` that last only while apkpatch runs: ``text`` and ``installLine`` then take the entries out of
    /// the container first (with unzip, as ``script(currentDirectory:container:)`` does), so that what is shown
    /// still installs afterwards. ``install`` and ``launch`` run on the copies.
    public let container: Container?
    /// The app's package name (from the manifest), if known.
    public let packageName: String?
    /// The fully qualified MAIN/LAUNCHER activity, if known.
    public let launcherActivity: String?
    public let options: InstallOptions
    /// `adb … install …` as argv; `install[0]` is `"adb"`.
    public let install: [String]
    /// The launch command as argv, when ``InstallOptions/launch`` is set.
    public let launch: [String]?
    /// What to show or paste: the commands as one shell-quoted line ending with a newline, the launch joined to
    /// the install with `&&`, so that pasted or run from a script step, a failed install starts nothing and the
    /// line's exit status is the install's (two lines would start the app already on the device and exit with
    /// the launch's status).
    public let text: String
    /// The templates these were rendered from (the script and the retry advice use the same ones).
    public let templates: TemplateLibrary

    /// Renders the commands.
    /// - Throws: ``InstallCommandError/launchNeedsPackageName`` when launching without a package name;
    ///   ``TemplateError`` when the template is missing or broken.
    public init(apkPath: String, packageName: String?, launcherActivity: String? = nil,
                options: InstallOptions = InstallOptions(), templates: TemplateLibrary) throws {
        try self.init(apkPaths: [apkPath], packageName: packageName, launcherActivity: launcherActivity, options: options, templates: templates)
    }

    /// Where the APKs to install are kept when they are entries of a container file.
    public struct Container: Sendable, Hashable {
        /// The container (`.apks`, `.xapk`, `.apkm`).
        public let path: String
        /// The entry names of the APKs, in `apkPaths`' order.
        public let entries: [String]
        public init(path: String, entries: [String]) {
            self.path = path
            self.entries = entries
        }
    }

    /// Renders the commands for several APKs installed as one app (a split APK set: `adb install-multiple`);
    /// `container` when they are copies of a container's entries (see ``container``).
    public init(apkPaths: [String], packageName: String?, launcherActivity: String? = nil,
                options: InstallOptions = InstallOptions(), container: Container? = nil, templates: TemplateLibrary) throws {
        guard let firstPath = apkPaths.first else { throw InstallCommandError.unexpectedTemplateOutput("(no APK to install)") }
        if options.launch && (packageName ?? "").isEmpty { throw InstallCommandError.launchNeedsPackageName }
        try Self.checkSerial(options.serial)
        if let container, container.entries.count != apkPaths.count {
            throw InstallCommandError.unexpectedTemplateOutput("(\(container.entries.count) container entries for \(apkPaths.count) APKs)")
        }
        self.apkPath = container?.path ?? firstPath
        self.apkPaths = apkPaths
        self.container = container
        self.packageName = packageName
        self.launcherActivity = launcherActivity
        self.options = options
        self.templates = templates
        let context = Self.context(apkPaths: apkPaths, packageName: packageName, launcherActivity: launcherActivity, options: options)
        let run = try templates.render("adb/install-command.mustache", context: context)
        let lines = run.split(separator: "\n").map(String.init).filter { !$0.trimmingWhitespace().isEmpty }
        let commands = try lines.map(ShellWords.split)
        guard let first = commands.first, first.first == "adb", first.contains(apkPaths.count > 1 ? "install-multiple" : "install") else {
            throw InstallCommandError.unexpectedTemplateOutput(run)
        }
        install = first
        if options.launch {
            guard commands.count == 2 else { throw InstallCommandError.unexpectedTemplateOutput(run) }
            launch = commands[1]
        } else {
            guard commands.count == 1 else { throw InstallCommandError.unexpectedTemplateOutput(run) }
            launch = nil
        }
        guard let container else {
            text = lines.joined(separator: " && ") + "\n"
            shownInstallLine = nil
            return
        }
        // The same commands on the entries taken out into a temporary folder, between the unzip and its removal.
        var shown = context
        shown["apk"] = container.entries.map { "\"$apks\"/" + ShellWords.quote($0) }.joined(separator: " ")
        let commandLines = try templates.render("adb/install-command.mustache", context: shown)
            .split(separator: "\n").map(String.init).filter { !$0.trimmingWhitespace().isEmpty }
        text = Self.extracting(container, then: commandLines) + "\n"
        shownInstallLine = Self.extracting(container, then: [commandLines[0]])
    }

    /// `commands` run on `container`'s entries taken out into a temporary folder, as one line: a subshell that
    /// removes the folder whatever happened and exits with the status of the first command that failed (unzip's
    /// or adb's, not rm's), so that a script or CI step running the line sees a failed install. A subshell,
    /// so that its `exit` does not close the terminal the line is pasted into.
    static func extracting(_ container: Container, then commands: [String]) -> String {
        "(apks=$(mktemp -d) && unzip -q -o \(ShellWords.quote(container.path)) \(unzipPatterns(container.entries)) -d \"$apks\" && "
            + commands.joined(separator: " && ") + "; s=$?; rm -rf \"$apks\"; exit $s)"
    }

    /// `adb [-s SERIAL] push` of the container entry `entry` to `remote`, as one line that takes the entry out
    /// into a temporary folder, pushes it, removes the folder and exits with adb's status (or unzip's).
    public func pushLine(container: String, entry: String, remote: String) -> String {
        let adb = ShellWords.join(["adb"] + (options.serial.map { ["-s", $0] } ?? []) + ["push"])
        return Self.extracting(Container(path: container, entries: [entry]),
                               then: ["\(adb) \"$apks\"/\(ShellWords.quote(entry)) \(ShellWords.quote(remote))"])
    }

    /// unzip's name arguments for `entries`: unzip reads them as wildcard patterns, so each is escaped to match
    /// only itself.
    static func unzipPatterns(_ entries: [String]) -> String {
        entries.map { name in ShellWords.quote(String(name.flatMap { "[]*?\\".contains($0) ? ["\\", $0] : [$0] })) }.joined(separator: " ")
    }

    /// The Mustache context: every value shell-quoted, flags as booleans.
    static func context(apkPaths: [String], packageName: String?, launcherActivity: String?, options: InstallOptions) -> [String: Any] {
        var context: [String: Any] = [
            "adb": "adb",
            "apk": apkPaths.map(ShellWords.quote).joined(separator: " "),
            "multiple": apkPaths.count > 1,
            "apkDisplayName": apkPaths.map(\.lastPathComponent).joined(separator: ", "),
            "allowTestPackages": options.allowTestPackages,
            "allowDowngrade": options.allowDowngrade,
            "grantPermissions": options.grantPermissions,
            "launch": options.launch,
            "incremental": options.incremental,
        ]
        if let serial = options.serial { context["serial"] = ShellWords.quote(serial) }
        if let packageName, !packageName.isEmpty {
            context["package"] = ShellWords.quote(packageName)
            if let activity = launcherActivity, !activity.isEmpty {
                context["component"] = ShellWords.quote("\(packageName)/\(activity)")
            }
        }
        return context
    }

    /// The same commands with other options (used for advice such as "retry with -d").
    public func with(_ change: (inout InstallOptions) -> Void) throws -> InstallCommands {
        var options = self.options
        change(&options)
        return try InstallCommands(apkPaths: apkPaths, packageName: packageName, launcherActivity: launcherActivity,
                                   options: options, container: container, templates: templates)
    }

    /// The install line alone, as a user would type it (for a container, between the unzip and the clean-up).
    public var installLine: String { shownInstallLine ?? ShellWords.join(install) }
    private let shownInstallLine: String?

    /// `adb [-s SERIAL] uninstall PACKAGE`, when the package name is known.
    public var uninstallLine: String? {
        guard let packageName, !packageName.isEmpty else { return nil }
        var words = ["adb"]
        if let serial = options.serial { words += ["-s", serial] }
        return ShellWords.join(words + ["uninstall", packageName])
    }

    /// `install.sh`: a POSIX shell script (`set -e`, every value quoted) that checks for adb and the APK and runs
    /// ``text``, rendered from `Templates/adb/install-script.mustache`. A relative APK path is made absolute
    /// against the current directory so the script works from anywhere.
    ///
    /// With `container` (a split APK set kept in a .apks, .xapk or .apkm file, and the entry names of the APKs
    /// to install), the script takes those entries out of the container into a temporary directory with unzip,
    /// installs them from there and removes them: adb installs APK files, not a container's entries.
    public func script(currentDirectory: String = FileManager.default.currentDirectoryPath,
                       container: (path: String, entries: [String])? = nil) throws -> String {
        let absolute = { (path: String) in
            path.hasPrefix("/") ? path : URL(fileURLWithPath: currentDirectory).appendingPathComponent(path).standardizedFileURL.path
        }
        var context = Self.context(apkPaths: apkPaths.map(absolute), packageName: packageName, launcherActivity: launcherActivity, options: options)
        if let container {
            context["apk"] = container.entries.map { "\"$apks\"/" + ShellWords.quote($0) }.joined(separator: " ")
            context["apkDisplayName"] = container.entries.joined(separator: ", ")
            context["container"] = ShellWords.quote(absolute(container.path))
            // unzip reads its name arguments as wildcard patterns: a name is matched literally once escaped.
            context["entries"] = Self.unzipPatterns(container.entries)
        }
        return try templates.render("adb/install-script.mustache", context: context)
    }

    /// Writes ``script(currentDirectory:container:)`` to `path` with mode 0755 (atomically: a temp file, then
    /// rename; `OutputFile`).
    public func writeScript(to path: String, container: (path: String, entries: [String])? = nil) throws {
        let text = try script(container: container)
        do {
            let file = try OutputFile(destination: path, mode: 0o755)
            try file.write(Array(text.utf8))
            try file.commit()
        } catch let error as FileError {
            try Self.checkScriptPath(path)
            throw InstallCommandError.scriptNotWritable(path, reason: error.reason)
        }
    }

    /// Refuses a device serial adb cannot take (empty, or one adb would read as an option), so a command can say
    /// so before it builds anything.
    public static func checkSerial(_ serial: String?) throws {
        if let serial, serial.isEmpty || serial.hasPrefix("-") { throw InstallCommandError.invalidSerial(serial) }
    }

    /// Refuses a path the install script cannot be written to (its folder missing or read-only, a folder at the
    /// path), so a command can say so before it builds anything.
    public static func checkScriptPath(_ path: String) throws {
        let folder = path.deletingLastPathComponent
        let parent = folder.isEmpty ? "." : folder
        if FileKind(atPath: path) == .directory {
            throw InstallCommandError.scriptNotWritable(path, reason: "it is a directory; name a file in it")
        }
        guard FileKind(atPath: parent) == .directory else {
            throw InstallCommandError.scriptNotWritable(path, reason: "the folder \(parent) does not exist; create it first")
        }
        guard access(parent, W_OK) == 0 else {
            throw InstallCommandError.scriptNotWritable(path, reason: "the folder \(parent) is not writable (\(String(cString: strerror(errno))))")
        }
    }
}

/// Install commands that cannot be built.
public enum InstallCommandError: Error, CustomStringConvertible, Equatable {
    case launchNeedsPackageName
    case invalidSerial(String)
    case unexpectedTemplateOutput(String)
    case scriptNotWritable(String, reason: String)

    public var description: String {
        switch self {
        case .launchNeedsPackageName:
            return "cannot launch the app: its package name is unknown (AndroidManifest.xml could not be read). Install without launching it, or start it on the device"
        case .invalidSerial(let serial):
            return "invalid device serial \"\(serial)\": use a serial from `adb devices` (e.g. emulator-5554 or 192.168.1.20:5555)."
        case .scriptNotWritable(let path, let reason):
            return "cannot write the install script \(path): \(reason)"
        case .unexpectedTemplateOutput(let text):
            return "Templates/adb/install-command.mustache rendered something that is not one adb install line (plus one launch line when the app is to be started):\n\(text)\nFix the template or unset APKPATCH_TEMPLATES."
        }
    }
}
