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

extension Installer {
    /// Runs one `adb [-s SERIAL] shell COMMAND` on the device the install commands target and returns what it
    /// printed (not shown to the user: it is data). A device problem (none connected, unauthorized, several)
    /// throws the same ``InstallError`` an install would, with the same advice.
    public func shell(_ command: String, for commands: InstallCommands) throws -> String {
        guard let adb = adbPath ?? Self.findADB(environment: environment) else {
            throw InstallError(code: .adbNotFound,
                               advice: "adb is not on PATH. Install it (Debian/Ubuntu: sudo apt-get install adb; or the Android SDK's platform-tools), then try again: the device is read to choose the APKs it needs",
                               apkPath: commands.apkPath)
        }
        var quiet = self
        quiet.onMessage = { _ in }
        var arguments: [String] = []
        if let serial = commands.options.serial { arguments += ["-s", serial] }
        let result: (output: String, status: Int32)
        do { result = try quiet.run(adb: adb, arguments: arguments + ["shell", command]) } catch let error as ChildProcess.SpawnError {
            throw InstallError(code: .adbNotRunnable, adbMessage: "\(error)",
                               advice: "\(adb) could not be started; check that it is an executable adb (e.g. `\(adb) version`).",
                               apkPath: commands.apkPath)
        }
        // What to install depends on what this reads: the install line cannot be given yet. (How to choose without
        // a device is the caller's to add: a command line names its option for a device spec.)
        let retry = "then try again: the device is read to choose the APKs it needs"
        if result.status != 0, let error = InstallError.classifyInstall(output: result.output, exitStatus: result.status, commands: commands, retry: retry) {
            throw error
        }
        return result.output
    }
}
