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
    /// install when adb or the device cannot, as the install script does; what is shown to type by hand
    /// (``InstallCommands/text``, ``InstallCommands/installLine``) is the normal install, which every adb takes.
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
/// `adb [-s SERIAL] install -r [-t] [-d] [-g] APK`, then
/// `adb [-s SERIAL] push FILE DEVICE_PATH` for each of ``pushes`` (an `.xapk`'s expansion files), then with
/// ``InstallOptions/launch`` `adb [-s SERIAL] shell am start -n PACKAGE/ACTIVITY`, or
/// `adb shell monkey -p PACKAGE -c android.intent.category.LAUNCHER 1` when the launcher activity is unknown.
/// ``text`` is what to show or paste; ``install``, ``pushCommands`` and ``launch`` are the same commands as argv
/// (parsed back from the rendered text, so the two cannot disagree, but for `--incremental`, which what is shown
/// leaves out: see ``InstallOptions/incremental``), and the install script runs that text too.
public struct InstallCommands: Sendable {
    /// The APK path as given (the first, the base, for a split APK set); the container for APKs in one.
    public let apkPath: String
    /// Every APK to install: one, or a split APK set's base and splits (`adb install-multiple`, one session).
    public let apkPaths: [String]
    /// APKs that are entries of a container file (`.apks`, `.xapk`, `.apkm`), installed from copies at
    /// `apkPaths` that last only while apkpatch runs: ``text`` and ``installLine`` then take the entries out of
    /// the container first (with unzip, as ``script(currentDirectory:)`` does), so that what is shown still
    /// installs afterwards. ``install`` and ``launch`` run on the copies.
    public let container: Container?
    /// The app's package name (from the manifest), if known.
    public let packageName: String?
    /// The fully qualified MAIN/LAUNCHER activity, if known.
    public let launcherActivity: String?
    public let options: InstallOptions
    /// Files to copy to the device after the install and before the launch.
    public let pushes: [Push]
    /// `adb … install …` as argv; `install[0]` is `"adb"`.
    public let install: [String]
    /// `adb … push LOCAL REMOTE` as argv, one per ``pushes`` element.
    public let pushCommands: [[String]]
    /// The launch command as argv, when ``InstallOptions/launch`` is set.
    public let launch: [String]?
    /// What to show or paste: the commands as one shell-quoted line ending with a newline, each joined to the
    /// one before with `&&`, so that pasted or run from a script step, a failed install starts nothing and the
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

    /// A file `adb push` copies to the device once the APKs are installed, before the app is started (an
    /// `.xapk`'s expansion files, which the app reads from the shared storage).
    public struct Push: Sendable, Hashable {
        /// The file here, when the commands run (``install``, ``pushCommands``).
        public var local: String
        /// Where the file is kept for good when `local` is a copy taken out of a container that lasts only while
        /// apkpatch runs: what is shown (``text``, ``installLine``, the script) takes it out of there first.
        public var keptIn: Container?
        /// Where it goes on the device.
        public var remote: String
        /// `keptIn`, when given, names one entry.
        public init(local: String, keptIn: Container? = nil, remote: String) {
            self.local = local
            self.keptIn = keptIn
            self.remote = remote
        }
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
    /// `pushes` are copied to the device between the install and the launch.
    public init(apkPaths: [String], packageName: String?, launcherActivity: String? = nil,
                options: InstallOptions = InstallOptions(), container: Container? = nil, pushes: [Push] = [],
                templates: TemplateLibrary) throws {
        guard let firstPath = apkPaths.first else { throw InstallCommandError.unexpectedTemplateOutput("(no APK to install)") }
        if options.launch && (packageName ?? "").isEmpty { throw InstallCommandError.launchNeedsPackageName }
        try Self.checkSerial(options.serial)
        if let container, container.entries.count != apkPaths.count {
            throw InstallCommandError.unexpectedTemplateOutput("(\(container.entries.count) container entries for \(apkPaths.count) APKs)")
        }
        if let push = pushes.first(where: { $0.keptIn.map { $0.entries.count != 1 } ?? false }) {
            throw InstallCommandError.unexpectedTemplateOutput("(\(push.remote) is kept in \(push.keptIn?.entries.count ?? 0) container entries)")
        }
        self.apkPath = container?.path ?? firstPath
        self.apkPaths = apkPaths
        self.container = container
        self.pushes = pushes
        self.packageName = packageName
        self.launcherActivity = launcherActivity
        self.options = options
        self.templates = templates
        let context = Self.context(apkPaths: apkPaths, pushes: pushes.map { ($0.local, $0.remote) }, packageName: packageName,
                                   launcherActivity: launcherActivity, options: options)
        let run = try templates.render("adb/install-command.mustache", context: context)
        let lines = try Self.commandLines(run, pushes: pushes.count, options: options, multiple: apkPaths.count > 1)
        let commands = try lines.map(ShellWords.split)
        install = commands[0]
        pushCommands = Array(commands[1..<(1 + pushes.count)])
        launch = options.launch ? commands.last : nil
        // What is shown is typed by hand, with whatever adb is there: without --incremental, which adb refuses
        // before platform-tools 30 (Debian 12's adb is 29) and devices before Android 11. The commands that run
        // try it and fall back (`Installer`), as install.sh does.
        var plain = context
        plain["incremental"] = false
        let shownLines = options.incremental
            ? try Self.commandLines(try templates.render("adb/install-command.mustache", context: plain), pushes: pushes.count,
                                    options: options, multiple: apkPaths.count > 1)
            : lines
        // What is shown installs after the run too: APKs and files kept in containers are taken out first (into a
        // temporary folder, `$apks`), and the commands run on those copies.
        let extraction = Extraction(container: container, pushes: pushes)
        guard !extraction.isEmpty else {
            text = shownLines.joined(separator: " && ") + "\n"
            installLine = pushes.isEmpty ? ShellWords.join(try ShellWords.split(shownLines[0])) : shownLines.prefix(1 + pushes.count).joined(separator: " && ")
            return
        }
        var shown = plain
        if let container { shown["apk"] = container.entries.map { extraction.quotedPath(of: $0, in: container.path) }.joined(separator: " ") }
        shown["pushes"] = Self.pushContext(pushes.map { push in
            (push.keptIn.map { extraction.quotedPath(of: $0.entries[0], in: $0.path) } ?? ShellWords.quote(push.local), push.remote)
        })
        let extracted = try Self.commandLines(try templates.render("adb/install-command.mustache", context: shown), pushes: pushes.count,
                                              options: options, multiple: apkPaths.count > 1)
        text = extraction.line(then: extracted) + "\n"
        installLine = extraction.line(then: Array(extracted.prefix(1 + pushes.count)))
    }

    /// The non-blank lines of the rendered template `run`, checked: the install, one push per pushed file, and
    /// the launch when the app is to be started.
    static func commandLines(_ run: String, pushes: Int, options: InstallOptions, multiple: Bool) throws -> [String] {
        let lines = run.split(separator: "\n").map(String.init).filter { !$0.trimmingWhitespace().isEmpty }
        let commands = try lines.map(ShellWords.split)
        guard lines.count == 1 + pushes + (options.launch ? 1 : 0), commands[0].first == "adb", commands[0].contains(multiple ? "install-multiple" : "install"),
              commands[1..<(1 + pushes)].allSatisfy({ $0.first == "adb" && $0.contains("push") }) else {
            throw InstallCommandError.unexpectedTemplateOutput(run)
        }
        return lines
    }

    /// The containers whose entries what is shown takes out, each into its own folder under `$apks`.
    struct Extraction {
        /// Each container and the entries taken out of it, in the order first named.
        var archives: [(path: String, entries: [String])] = []

        init(container: Container?, pushes: [Push]) {
            for kept in [container].compactMap({ $0 }) + pushes.compactMap(\.keptIn) {
                if let index = archives.firstIndex(where: { $0.path == kept.path }) {
                    archives[index].entries += kept.entries.filter { !archives[index].entries.contains($0) }
                } else {
                    archives.append((kept.path, kept.entries))
                }
            }
        }

        var isEmpty: Bool { archives.isEmpty }

        /// The folder the entries of the container at `path` are taken out into: `"$apks"` for one container;
        /// with several, one folder each, so that entries of the same name cannot meet.
        func folder(of path: String) -> String {
            guard archives.count > 1, let index = archives.firstIndex(where: { $0.path == path }) else { return "\"$apks\"" }
            return "\"$apks\"/\(index)"
        }

        /// The taken-out copy of `entry` of the container at `path`, quoted for the shell.
        func quotedPath(of entry: String, in path: String) -> String { folder(of: path) + "/" + ShellWords.quote(entry) }

        /// The unzip commands that take the entries out.
        var unzipCommands: [String] {
            archives.map { archive in
                let folder = folder(of: archive.path)
                return (folder == "\"$apks\"" ? "" : "mkdir \(folder) && ")
                    + "unzip -q -o \(ShellWords.quote(archive.path)) \(InstallCommands.unzipPatterns(archive.entries)) -d \(folder)"
            }
        }

        /// `commands` run on the entries taken out into a temporary folder, as one line: a subshell that removes
        /// the folder whatever happened and exits with the status of the first command that failed (unzip's or
        /// adb's, not rm's), so that a script or CI step running the line sees a failed install. A subshell, so
        /// that its `exit` does not close the terminal the line is pasted into.
        func line(then commands: [String]) -> String {
            "(apks=$(mktemp -d) && " + (unzipCommands + commands).joined(separator: " && ") + "; s=$?; rm -rf \"$apks\"; exit $s)"
        }
    }

    /// The command that copies `pushes` to the device by hand and then, with ``InstallOptions/launch``, starts
    /// the app (the advice after a failed push: the file that failed and those after it): each taken out of the
    /// container it is kept in first, when it is.
    public func manualPushLine(_ pushes: [Push]) -> String {
        let adb = ShellWords.join(["adb"] + (options.serial.map { ["-s", $0] } ?? []) + ["push"])
        let extraction = Extraction(container: nil, pushes: pushes)
        let commands = pushes.map { push in
            "\(adb) \(push.keptIn.map { extraction.quotedPath(of: $0.entries[0], in: $0.path) } ?? ShellWords.quote(push.local)) \(ShellWords.quote(push.remote))"
        } + (launch.map { [ShellWords.join($0)] } ?? [])
        return extraction.isEmpty ? commands.joined(separator: " && ") : extraction.line(then: commands)
    }

    /// The launch command as a user would type it, when ``InstallOptions/launch`` is set (after an install that
    /// succeeded, starting the app needs nothing else).
    public var launchLine: String? { launch.map(ShellWords.join) }

    /// unzip's name arguments for `entries`: unzip reads them as wildcard patterns, so each is escaped to match
    /// only itself.
    static func unzipPatterns(_ entries: [String]) -> String {
        entries.map { name in ShellWords.quote(String(name.flatMap { "[]*?\\".contains($0) ? ["\\", $0] : [$0] })) }.joined(separator: " ")
    }

    /// The Mustache context: every value shell-quoted, flags as booleans.
    static func context(apkPaths: [String], pushes: [(local: String, remote: String)], packageName: String?, launcherActivity: String?,
                        options: InstallOptions) -> [String: Any] {
        var context: [String: Any] = [
            "adb": "adb",
            "apk": apkPaths.map(ShellWords.quote).joined(separator: " "),
            "pushes": pushContext(pushes.map { (ShellWords.quote($0.local), $0.remote) }),
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

    /// The `pushes` section of the template: `local` as the shell should read it (quoted, or a taken-out copy),
    /// `remote` quoted here.
    static func pushContext(_ pushes: [(local: String, remote: String)]) -> [[String: Any]] {
        pushes.map { ["local": $0.local, "remote": ShellWords.quote($0.remote)] }
    }

    /// The same commands with other options (used for advice such as "retry with -d").
    public func with(_ change: (inout InstallOptions) -> Void) throws -> InstallCommands {
        var options = self.options
        change(&options)
        return try InstallCommands(apkPaths: apkPaths, packageName: packageName, launcherActivity: launcherActivity,
                                   options: options, container: container, pushes: pushes, templates: templates)
    }

    /// The same commands without the pushes (a watch session copies the files once, not after every build).
    public func withoutPushes() throws -> InstallCommands {
        try InstallCommands(apkPaths: apkPaths, packageName: packageName, launcherActivity: launcherActivity,
                            options: options, container: container, templates: templates)
    }

    /// The install line (and the pushes after it) without the launch, as a user would type it (for what is
    /// kept in a container, between the unzip and the clean-up).
    public let installLine: String

    /// `adb [-s SERIAL] uninstall PACKAGE`, when the package name is known.
    public var uninstallLine: String? {
        guard let packageName, !packageName.isEmpty else { return nil }
        var words = ["adb"]
        if let serial = options.serial { words += ["-s", serial] }
        return ShellWords.join(words + ["uninstall", packageName])
    }

    /// `install.sh`: a POSIX shell script (`set -e`, every value quoted) that checks for adb and the files and
    /// runs the commands of ``text``, rendered from `Templates/adb/install-script.mustache`. A relative path is
    /// made absolute against the current directory so the script works from anywhere.
    ///
    /// What is kept in a container (a split APK set's APKs in a .apks, .xapk or .apkm file; an .xapk's expansion
    /// files) the script takes out into a temporary directory with unzip, installs or pushes from there, and
    /// removes: adb reads files, not a container's entries.
    public func script(currentDirectory: String = FileManager.default.currentDirectoryPath) throws -> String {
        let absolute = { (path: String) in
            path.isAbsolutePath ? path : URL(fileURLWithPath: currentDirectory).appendingPathComponent(path).standardizedFileURL.path
        }
        let kept = { (container: Container) in Container(path: absolute(container.path), entries: container.entries) }
        let extraction = Extraction(container: container.map(kept), pushes: pushes.map { Push(local: $0.local, keptIn: $0.keptIn.map(kept), remote: $0.remote) })
        var context = Self.context(apkPaths: apkPaths.map(absolute), pushes: [], packageName: packageName, launcherActivity: launcherActivity, options: options)
        context["pushes"] = Self.pushContext(pushes.map { push in
            (push.keptIn.map { extraction.quotedPath(of: $0.entries[0], in: absolute($0.path)) } ?? ShellWords.quote(absolute(push.local)), push.remote)
        })
        if let container {
            context["apk"] = container.entries.map { extraction.quotedPath(of: $0, in: absolute(container.path)) }.joined(separator: " ")
            context["apkDisplayName"] = container.entries.joined(separator: ", ")
        }
        if options.incremental {
            // adb refuses --incremental before platform-tools 30 and on devices before Android 11, with no fallback
            // of its own: the script installs again without it, as the commands that install do (Installer).
            var plain = context
            plain["incremental"] = false
            let lines = try Self.commandLines(try templates.render("adb/install-command.mustache", context: context), pushes: pushes.count,
                                              options: options, multiple: apkPaths.count > 1)
            let plainLines = try Self.commandLines(try templates.render("adb/install-command.mustache", context: plain), pushes: pushes.count,
                                                   options: options, multiple: apkPaths.count > 1)
            context["install"] = lines[0]
            context["plainInstall"] = plainLines[0]
            context["afterInstall"] = lines.dropFirst().map { ["line": $0] }
        }
        context["copiesFiles"] = !pushes.isEmpty
        context["extracts"] = !extraction.isEmpty
        context["archives"] = extraction.archives.map { archive -> [String: Any] in
            let folder = extraction.folder(of: archive.path)
            // unzip reads its name arguments as wildcard patterns: a name is matched literally once escaped.
            return ["container": ShellWords.quote(archive.path), "entries": Self.unzipPatterns(archive.entries), "folder": folder,
                    "makesFolder": folder != "\"$apks\""]
        }
        return try templates.render("adb/install-script.mustache", context: context)
    }

    /// Writes ``script(currentDirectory:)`` to `path` with mode 0755 (atomically: a temp file, then rename;
    /// `OutputFile`).
    public func writeScript(to path: String) throws {
        let text = try script()
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
            return "Templates/adb/install-command.mustache rendered something that is not one adb install line (then one adb push line per file to copy, and one launch line when the app is to be started):\n\(text)\nFix the template or unset APKPATCH_TEMPLATES."
        }
    }
}
