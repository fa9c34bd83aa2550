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

/// Why installing (or starting) the APK failed, with what to do about it. The APK itself is always kept.
///
/// ``code`` is stable (tests and `--json` match on it); ``failureCode`` is Android's own name for the failure
/// (`INSTALL_FAILED_VERSION_DOWNGRADE`) when adb printed one, so users can search it.
public struct InstallError: CodedError {
    public enum Code: String, Sendable, CaseIterable {
        /// `adb` is not on PATH.
        case adbNotFound = "ADB_NOT_FOUND"
        /// adb could not be started (not executable, …).
        case adbNotRunnable = "ADB_NOT_RUNNABLE"
        /// No device or emulator is connected.
        case noDevice = "NO_DEVICE"
        /// The device has not accepted this computer's USB debugging key.
        case deviceUnauthorized = "DEVICE_UNAUTHORIZED"
        /// The device is connected but offline.
        case deviceOffline = "DEVICE_OFFLINE"
        /// The `-s` serial matches no device.
        case deviceNotFound = "DEVICE_NOT_FOUND"
        /// Several devices are connected and no serial was given.
        case multipleDevices = "MULTIPLE_DEVICES"
        /// The installed app is signed with another key (INSTALL_FAILED_UPDATE_INCOMPATIBLE, "signatures do not match").
        case signatureMismatch = "SIGNATURE_MISMATCH"
        /// The installed app has a higher versionCode (INSTALL_FAILED_VERSION_DOWNGRADE).
        case versionDowngrade = "VERSION_DOWNGRADE"
        /// No native library matches the device's ABIs (INSTALL_FAILED_NO_MATCHING_ABIS).
        case noMatchingABIs = "NO_MATCHING_ABIS"
        /// The package manager found no (valid) signature (INSTALL_PARSE_FAILED_NO_CERTIFICATES and friends).
        case notSigned = "NOT_SIGNED"
        /// The manifest says testOnly and `-t` was not given (INSTALL_FAILED_TEST_ONLY).
        case testOnly = "TEST_ONLY"
        /// minSdkVersion is above the device's API level (INSTALL_FAILED_OLDER_SDK).
        case olderSDK = "OLDER_SDK"
        /// targetSdkVersion is below what the device accepts (INSTALL_FAILED_DEPRECATED_SDK_VERSION).
        case deprecatedSDK = "DEPRECATED_SDK"
        /// The device is out of storage (INSTALL_FAILED_INSUFFICIENT_STORAGE).
        case insufficientStorage = "INSUFFICIENT_STORAGE"
        /// The device refuses installs over USB (INSTALL_FAILED_USER_RESTRICTED).
        case userRestricted = "USER_RESTRICTED"
        /// The package manager could not parse the APK (INSTALL_PARSE_FAILED_*, INSTALL_FAILED_INVALID_APK).
        case invalidAPK = "INVALID_APK"
        /// Any other INSTALL_FAILED_* or adb failure.
        case installFailed = "INSTALL_FAILED"
        /// Installed, but starting the app failed.
        case launchFailed = "LAUNCH_FAILED"
        /// Installed, but `adb push` of an expansion (OBB) file the set carries failed (the app may need it to start).
        case expansionPushFailed = "EXPANSION_PUSH_FAILED"
    }

    public let code: Code
    /// Android's failure name as adb printed it, e.g. `INSTALL_FAILED_VERSION_DOWNGRADE`.
    public let failureCode: String?
    /// The line of adb's output that says what went wrong.
    public let adbMessage: String?
    /// adb's exit status (nil when adb did not run).
    public let exitStatus: Int32?
    /// What to do, in one or two sentences, with the command to run where there is one (a caller may add
    /// its own options that answer the failure).
    public var advice: String
    /// The APK, which is kept.
    public let apkPath: String
    /// The split APK set written (a folder or a container) when the install was a set's: the message then says
    /// the signed set is kept there, not one of its APKs.
    public var keptSet: String?
    /// The device paths `adb push` copied before this failure (a failed push of an expansion file, or a failed
    /// launch after the pushes; empty otherwise).
    public var pushedBeforeFailure: [String] = []

    public init(code: Code, failureCode: String? = nil, adbMessage: String? = nil, exitStatus: Int32? = nil,
                advice: String, apkPath: String) {
        self.code = code
        self.failureCode = failureCode
        self.adbMessage = adbMessage
        self.exitStatus = exitStatus
        self.advice = advice
        self.apkPath = apkPath
    }

    /// Sentences: what failed (with Android's failure name), what adb said, what to do, where the APK (or the
    /// set) is.
    public var description: String {
        var text: String
        switch code {
        case .launchFailed: text = "Installed, but the app did not start"
        case .expansionPushFailed: text = "Installed, but an expansion (OBB) file was not copied to the device"
        default: text = "Install failed"
        }
        if let failureCode { text += " (\(failureCode))" }
        if let adbMessage { text += ": adb said \u{201C}\(adbMessage)\u{201D}" }
        else if let exitStatus { text += ": adb exited with status \(exitStatus)" }
        // A quoted line that ends its own sentence ("… monkey aborted.") is not given a second full stop.
        text += (adbMessage?.last.map { ".!?".contains($0) } ?? false) ? " " : ". "
        text += advice
        if !advice.hasSuffix(".") { text += "." }
        text += keptSet.map { " The signed set is kept in \($0)." } ?? " The APK is kept at \(apkPath)."
        return text
    }

    /// Whether the app was installed all the same: the install succeeded and a later step (copying an expansion
    /// file, starting the app) failed.
    public var isAppInstalled: Bool { code == .launchFailed || code == .expansionPushFailed }

    /// The same failure, of the install of the split APK set written to `output`.
    public func keptAsSet(_ output: String) -> InstallError {
        var error = self
        error.keptSet = output
        return error
    }

    /// Reads adb's output (stdout and stderr together) and exit status after running `commands.install`.
    /// Returns nil when the install succeeded.
    ///
    /// adb's exit status alone is not enough: adb before 1.0.39 and some `pm` paths print `Failure [...]` and exit 0.
    /// `retry` ends the advice of a device problem: "then run again: " and the install line by default.
    public static func classifyInstall(output: String, exitStatus: Int32, commands: InstallCommands, retry: String? = nil) -> InstallError? {
        let lines = output.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        let failureLine = lines.first { $0.contains("Failure [") || $0.contains("INSTALL_FAILED_") || $0.contains("INSTALL_PARSE_FAILED_") }
        let lowered = output.lowercased()
        let failed = exitStatus != 0 || failureLine != nil
            || (!lines.contains("Success") && (lowered.contains("error:") || lowered.contains("failed to install")))
        guard failed else { return nil }

        func line(containing needle: String) -> String? { lines.first { $0.lowercased().contains(needle) } }
        func make(_ code: Code, _ message: String?, _ advice: String, failureCode: String? = nil) -> InstallError {
            InstallError(code: code, failureCode: failureCode, adbMessage: message ?? lines.last, exitStatus: exitStatus,
                         advice: advice, apkPath: commands.apkPath)
        }
        let retry = retry ?? "then run again: \(commands.installLine)"
        let serial = commands.options.serial ?? "SERIAL"

        // Device problems come first: then there is no package-manager verdict at all.
        if let message = line(containing: "no devices/emulators found") ?? line(containing: "no devices found") {
            return make(.noDevice, message, "Connect a device with USB debugging on (Settings > Developer options) or start an emulator, check that `adb devices` lists it, \(retry)")
        }
        if let message = line(containing: "unauthorized") {
            return make(.deviceUnauthorized, message, "Unlock the device and accept the \"Allow USB debugging?\" prompt (revoke USB debugging authorizations in Developer options if it does not appear), \(retry)")
        }
        if let message = line(containing: "device offline") ?? line(containing: "device still connecting") {
            return make(.deviceOffline, message, "Reconnect the device (or restart adb: `adb kill-server && adb start-server`) until `adb devices` shows it as \"device\", \(retry)")
        }
        if let message = lines.first(where: { $0.contains("device '") && $0.contains("' not found") }) {
            return make(.deviceNotFound, message, "No device has serial \(serial): pick one from `adb devices` and install on it.")
        }
        if let message = line(containing: "more than one device") {
            return make(.multipleDevices, message, "Several devices are connected: choose one from `adb devices` and install on it (or set ANDROID_SERIAL).")
        }

        let androidCode = Self.androidFailureCode(in: output)
        let message = failureLine ?? line(containing: "signatures do not match")
        switch androidCode {
        case "INSTALL_FAILED_UPDATE_INCOMPATIBLE", "INSTALL_FAILED_INCONSISTENT_CERTIFICATES", "INSTALL_FAILED_SHARED_USER_INCOMPATIBLE":
            return signatureMismatch(message, androidCode, commands: commands, make: make)
        case "INSTALL_FAILED_VERSION_DOWNGRADE":
            let downgrade = (try? commands.with { $0.allowDowngrade = true }.installLine) ?? "adb install -r -d \(ShellWords.quote(commands.apkPath))"
            return make(.versionDowngrade, message, "The device has a newer versionCode of this app. Allow the downgrade with adb install -d (works for debuggable apps and on userdebug builds): \(downgrade); or raise versionCode (apkpatch.yml: manifest: versionCode:).", failureCode: androidCode)
        case "INSTALL_FAILED_NO_MATCHING_ABIS", "INSTALL_FAILED_CPU_ABI_INCOMPATIBLE":
            return make(.noMatchingABIs, message, "The APK's native libraries (lib/<abi>/*.so) do not include this device's ABI (see `adb shell getprop ro.product.cpu.abilist`). Use a device or emulator image with a matching ABI, or an APK built for it.", failureCode: androidCode)
        case "INSTALL_PARSE_FAILED_NO_CERTIFICATES", "INSTALL_PARSE_FAILED_INCONSISTENT_CERTIFICATES", "INSTALL_PARSE_FAILED_CERTIFICATE_ENCODING":
            return make(.notSigned, message, "The device found no valid signature. Sign the APK (apkpatch sign) and check it with `apkpatch verify`; for minSdkVersion below 24 it needs a v1 (JAR) signature too.", failureCode: androidCode)
        case "INSTALL_FAILED_TEST_ONLY":
            let test = (try? commands.with { $0.allowTestPackages = true }.installLine) ?? "adb install -r -t \(ShellWords.quote(commands.apkPath))"
            return make(.testOnly, message, "The manifest marks the app android:testOnly=\"true\"; install it with adb install -t: \(test)", failureCode: androidCode)
        case "INSTALL_FAILED_OLDER_SDK":
            return make(.olderSDK, message, "The app's minSdkVersion is higher than the device's API level (`adb shell getprop ro.build.version.sdk`). Use a newer device, or lower it (apkpatch.yml: manifest: minSdkVersion:) if the app really runs there.", failureCode: androidCode)
        case "INSTALL_FAILED_DEPRECATED_SDK_VERSION":
            return make(.deprecatedSDK, message, "The device refuses apps with so low a targetSdkVersion. Raise it (apkpatch.yml: manifest: targetSdkVersion:) or install with `adb install --bypass-low-target-sdk-block`.", failureCode: androidCode)
        case "INSTALL_FAILED_INSUFFICIENT_STORAGE":
            return make(.insufficientStorage, message, "The device is out of storage: free some space (or uninstall the old version: \(commands.uninstallLine ?? "adb uninstall PACKAGE")), \(retry)", failureCode: androidCode)
        case "INSTALL_FAILED_MISSING_SPLIT":
            // A tester given a set often patches base.apk alone: it installs only beside its splits.
            return make(.installFailed, message, "The APK is the base of a split APK set (android:isSplitRequired), and Android installs it only together with its splits. Give apkpatch the whole set (base.apk and its split_*.apk files, or the .apks, .xapk or .apkm they came in): it patches, signs and installs them together; or merge them into one APK with apkpatch merge.", failureCode: androidCode)
        case "INSTALL_FAILED_USER_RESTRICTED":
            return make(.userRestricted, message, "The device refuses installs over USB: confirm the prompt on the device, or enable \"Install via USB\" in Developer options, \(retry)", failureCode: androidCode)
        case let code? where code.hasPrefix("INSTALL_PARSE_FAILED_") || code == "INSTALL_FAILED_INVALID_APK":
            return make(.invalidAPK, message, "The device could not parse the APK. Check it with `apkpatch verify` and `aapt dump badging`; a patched AndroidManifest.xml or resources.arsc is the usual suspect.", failureCode: code)
        case let code?:
            return make(.installFailed, message, "See the Android documentation of \(code) (PackageManager).", failureCode: code)
        case nil:
            if lowered.contains("signatures do not match") {
                return signatureMismatch(message, nil, commands: commands, make: make)
            }
            // adb's lines are shown as they come only with --verbose: the quoted line is all that may be on screen.
            let quoted = message ?? line(containing: "error") ?? line(containing: "fail") ?? lines.last
            return make(.installFailed, quoted, "Check `adb devices`, \(retry)")
        }
    }

    private static func signatureMismatch(_ message: String?, _ code: String?, commands: InstallCommands,
                                          make: (Code, String?, String, String?) -> InstallError) -> InstallError {
        let uninstall = commands.uninstallLine ?? "adb uninstall PACKAGE"
        return make(.signatureMismatch, message,
                    "The app on the device is signed with a different key. Uninstall it first (this deletes its data): \(uninstall), then run again: \(commands.installLine); or sign with the original key.",
                    code)
    }

    /// The first `INSTALL_FAILED_*` / `INSTALL_PARSE_FAILED_*` name in `output`.
    static func androidFailureCode(in output: String) -> String? {
        for prefix in ["INSTALL_PARSE_FAILED_", "INSTALL_FAILED_"] {
            guard let range = output.firstRange(of: prefix) else { continue }
            let tail = output[range.upperBound...].prefix { $0.isUppercase || $0.isNumber || $0 == "_" }
            if !tail.isEmpty { return prefix + tail }
        }
        return nil
    }

    /// Reads the output of `adb push` of `push` after the install; nil when the file was copied. adb exits 1 with
    /// `adb: error: …` on its failures (no space, a folder the shell user cannot write, the device gone).
    /// `remaining`: the pushes after this one, which did not run either (the advice copies them too).
    public static func classifyPush(_ push: InstallCommands.Push, output: String, exitStatus: Int32, commands: InstallCommands,
                                    remaining: [InstallCommands.Push] = []) -> InstallError? {
        let lines = output.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        let problem = lines.first { $0.lowercased().contains("error") || $0.lowercased().contains("failed") }
        guard exitStatus != 0 || problem != nil else { return nil }
        let copy = remaining.isEmpty ? "copy it" : "copy it and the \(remaining.count == 1 ? "file" : "\(remaining.count) files") after it"
        return InstallError(code: .expansionPushFailed, adbMessage: problem ?? lines.last, exitStatus: exitStatus,
                            advice: "The app may need \(push.remote) to start. Check `adb devices` and the device's free space, then \(copy)\(commands.launch == nil ? "" : " and start the app"): \(commands.manualPushLine([push] + remaining))",
                            apkPath: commands.apkPath)
    }

    /// Reads the launch command's output: `am start` and `monkey` exit 0 even when nothing started.
    public static func classifyLaunch(output: String, exitStatus: Int32, commands: InstallCommands) -> InstallError? {
        let lines = output.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace() }.filter { !$0.isEmpty }
        // am start prints "Error type 3" before the line that says what: quote that one.
        let problem = lines.first { $0.lowercased().hasPrefix("error:") || $0.contains("monkey aborted") || $0.contains("No activities found") }
            ?? lines.first { $0.hasPrefix("Error") }
        guard exitStatus != 0 || problem != nil else { return nil }
        let package = commands.packageName ?? "PACKAGE"
        return InstallError(code: .launchFailed, adbMessage: problem ?? lines.last, exitStatus: exitStatus,
                            advice: "Start it from the launcher, or check the activity with `adb shell cmd package resolve-activity --brief \(ShellWords.quote(package))`.",
                            apkPath: commands.apkPath)
    }
}
