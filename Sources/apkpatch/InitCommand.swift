import ArgumentParser
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
import Install

extension APKPatch {
    /// `apkpatch init DIR`: a new patch directory from `Templates/patch-dir/`.
    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "init",
            abstract: "Create a patch directory: an apkpatch.yml with commented examples and an empty assets/www/.",
            discussion: """
            Every file you then put in DIR adds or replaces the APK entry with the same path (assets/www/index.html \
            replaces a Cordova app's index.html; a Capacitor app's pages are under assets/public/). apkpatch.yml \
            holds delete:, store:/deflate: globs, manifest: shortcuts (debuggable, versionCode, versionName, label, \
            usesCleartextTraffic, extractNativeLibs, minSdkVersion, targetSdkVersion, package) and networkSecurity: \
            (trust user-installed CAs), all commented out to start with.

            For a split APK set (.apks, .xapk, .apkm, a folder of APKs), those files patch the base APK and \
            splits/<split-name>/ patches that split, e.g. splits/config.arm64_v8a/lib/arm64-v8a/libfoo.so; a \
            versionCode in apkpatch.yml applies to every split too.

            Templates come from $APKPATCH_TEMPLATES, PREFIX/share/apkpatch/Templates, the source tree, or the copy \
            built into apkpatch, in that order.

            Examples:
              apkpatch init patch/
              apkpatch run app.apk --patch patch/ --install --launch
              apkpatch run app.apks --patch patch/ --out app-patched.apks
            """
        )

        @Argument(help: ArgumentHelp("The patch directory to create.", valueName: "dir")) var directory: String
        @Flag(name: .long, help: "Overwrite apkpatch.yml if it exists (other files in DIR are left alone).") var force = false
        @Flag(name: [.short, .long], help: "Print nothing on success.") var quiet = false

        func run() throws {
            let templates = try TemplateLibrary.locate()
            let result = try PatchDirectoryScaffold.create(at: directory, templates: templates, overwrite: force)
            guard !quiet else { return }
            print("Created patch directory \(directory):")
            for file in result.files { print("  \(directory.appendingPathComponent(file))") }
            for folder in result.folders { print("  \(directory.appendingPathComponent(folder))/") }
            print("Put files there (mirroring APK paths), then: apkpatch run app.apk --patch \(ShellWords.quote(directory))")
        }
    }
}
