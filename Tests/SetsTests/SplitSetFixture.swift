import Foundation
import TestSupport

/// A split APK set built at test time: aapt's `--split fr --split xhdpi` gives the base and two configuration
/// splits; an ABI split is assembled from a manifest of our own with `split="config.arm64_v8a"` and a native
/// library added with `aapt add`. None is signed; `pack` lays them out as a folder, .apks, .xapk or .apkm.
struct SplitSetFixture {
    let directory: URL
    /// File name in a folder → path of the built APK (base.apk, split_config.fr.apk, …).
    var apks: [String: String] = [:]
    var packageName = "com.example.set"
    var versionCode = 7
    /// The base's resources built without --split (aapt's table for the app in one APK).
    var monolithicAPK = ""

    enum Form: String, CaseIterable, Sendable { case directory, apks, xapk, apkm }

    /// Builds the base, fr, xhdpi and arm64-v8a APKs into `directory`.
    /// `manifestAttributes` go on the base's `<manifest>`, `applicationAttributes` on its `<application>`,
    /// `applicationElements` inside it.
    init(in directory: URL, packageName: String = "com.example.set", versionCode: Int = 7, manifestAttributes: String = "",
         applicationAttributes: String = "", applicationElements: String = "") throws {
        self.directory = directory
        self.packageName = packageName
        self.versionCode = versionCode
        let work = directory.appendingPathComponent("src-\(UUID().uuidString)")
        let manifest = """
        <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="\(packageName)"
            android:versionCode="\(versionCode)" android:versionName="1.0" \(manifestAttributes)>
            <uses-sdk android:minSdkVersion="21" android:targetSdkVersion="33"/>
            <application android:label="@string/app_name" \(applicationAttributes)>\(applicationElements)</application>
        </manifest>
        """
        try TestSupport.write(manifest, to: "AndroidManifest.xml", in: work)
        try Self.writeResources(in: work)
        let base = work.appendingPathComponent("base.apk").path
        let built = try TestSupport.run("aapt", ["package", "-f", "-M", "AndroidManifest.xml", "-S", "res", "-I", TestSupport.frameworkRes,
                                                 "-F", base, "--split", "fr", "--split", "xhdpi"], currentDirectory: work.path)
        guard built.succeeded else { throw FixtureError(message: "aapt --split failed:\n\(built)") }
        apks["base.apk"] = base
        // The same resources built in one piece: what a merged table should describe.
        monolithicAPK = work.appendingPathComponent("monolithic.apk").path
        let whole = try TestSupport.run("aapt", ["package", "-f", "-M", "AndroidManifest.xml", "-S", "res", "-I", TestSupport.frameworkRes,
                                                 "-F", monolithicAPK], currentDirectory: work.path)
        guard whole.succeeded else { throw FixtureError(message: "aapt package (monolithic) failed:\n\(whole)") }
        apks["split_config.fr.apk"] = work.appendingPathComponent("base_fr.apk").path
        apks["split_config.xhdpi.apk"] = work.appendingPathComponent("base_xhdpi-v4.apk").path
        apks["split_config.arm64_v8a.apk"] = try Self.makeSplit(in: work, packageName: packageName, versionCode: versionCode,
                                                                 split: "config.arm64_v8a",
                                                                 files: ["lib/arm64-v8a/libfoo.so": FixtureAPK.pseudoRandomBytes(count: 6000, seed: 7)])
    }

    /// The app's resources under `work/res`: two strings (one translated to French) and a drawable in mdpi and xhdpi.
    static func writeResources(in work: URL) throws {
        try TestSupport.write("<resources><string name=\"app_name\">Set</string><string name=\"hello\">Hello</string></resources>", to: "res/values/strings.xml", in: work)
        try TestSupport.write("<resources><string name=\"hello\">Bonjour</string></resources>", to: "res/values-fr/strings.xml", in: work)
        for density in ["mdpi", "xhdpi"] {
            try TestSupport.write("<shape xmlns:android=\"http://schemas.android.com/apk/res/android\"><solid android:color=\"#ff0000\"/></shape>",
                                  to: "res/drawable-\(density)/icon.xml", in: work)
        }
    }

    /// A split APK from a manifest of our own (`split`, optional `configForSplit` and `isFeatureSplit`) with
    /// `files` added raw.
    static func makeSplit(in work: URL, packageName: String, versionCode: Int, split: String, configForSplit: String? = nil,
                          isFeatureSplit: Bool = false, files: [String: [UInt8]] = [:]) throws -> String {
        let folder = work.appendingPathComponent("split-\(UUID().uuidString)")
        let manifest = """
        <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="\(packageName)"
            android:versionCode="\(versionCode)" split="\(split)"\(configForSplit.map { " configForSplit=\"\($0)\"" } ?? "")\(isFeatureSplit ? " android:isFeatureSplit=\"true\"" : "")>
            <application android:hasCode="false"/>
        </manifest>
        """
        try TestSupport.write(manifest, to: "AndroidManifest.xml", in: folder)
        let output = work.appendingPathComponent("\(split)-\(UUID().uuidString).apk").path
        let built = try TestSupport.run("aapt", ["package", "-f", "-M", "AndroidManifest.xml", "-I", TestSupport.frameworkRes, "-F", output],
                                        currentDirectory: folder.path)
        guard built.succeeded else { throw FixtureError(message: "aapt package (split \(split)) failed:\n\(built)") }
        if !files.isEmpty {
            for (path, content) in files { try TestSupport.write(content, to: path, in: folder) }
            let added = try TestSupport.run("aapt", ["add", output] + files.keys.sorted(), currentDirectory: folder.path)
            guard added.succeeded else { throw FixtureError(message: "aapt add failed:\n\(added)") }
        }
        return output
    }

    /// Entry or file name of each APK in `form` (the base first).
    static func names(in form: Form) -> [String: String] {
        switch form {
        case .directory, .apkm:
            return ["base.apk": "base.apk", "split_config.fr.apk": "split_config.fr.apk",
                    "split_config.xhdpi.apk": "split_config.xhdpi.apk", "split_config.arm64_v8a.apk": "split_config.arm64_v8a.apk"]
        case .apks:
            return ["base.apk": "splits/base-master.apk", "split_config.fr.apk": "splits/base-fr.apk",
                    "split_config.xhdpi.apk": "splits/base-xhdpi.apk", "split_config.arm64_v8a.apk": "splits/base-arm64_v8a.apk"]
        case .xapk:
            return ["base.apk": "com.example.set.apk", "split_config.fr.apk": "config.fr.apk",
                    "split_config.xhdpi.apk": "config.xhdpi.apk", "split_config.arm64_v8a.apk": "config.arm64_v8a.apk"]
        }
    }

    /// The non-APK files each container form carries (name → content).
    static func extras(in form: Form) -> [String: [UInt8]] {
        switch form {
        case .directory: return [:]
        case .apks: return ["toc.pb": FixtureAPK.pseudoRandomBytes(count: 321, seed: 11)]
        case .apkm: return ["info.json": Array(#"{"pname":"com.example.set","versioncode":"7","apk_title":"Set"}"#.utf8),
                            "icon.png": FixtureAPK.pseudoRandomBytes(count: 200, seed: 12)]
        case .xapk: return [
            "manifest.json": Array(xapkManifest(installPath: obbEntry).utf8),
            obbEntry: obbBytes]
        }
    }

    /// The .xapk's expansion (OBB) file, where APKPure puts it (the same path as on the device).
    static let obbEntry = "Android/obb/com.example.set/main.7.com.example.set.obb"
    static let obbBytes = FixtureAPK.pseudoRandomBytes(count: 5000, seed: 13)

    /// APKPure's manifest.json for the .xapk, its expansion file going to `installPath` on the device.
    static func xapkManifest(installPath: String) -> String {
        #"{"xapk_version":2,"package_name":"com.example.set","version_code":"7","version_name":"1.0","split_apks":[{"file":"com.example.set.apk","id":"base"}],"#
            + #""expansions":[{"file":"\#(obbEntry)","install_location":"EXTERNAL_STORAGE","install_path":"\#(installPath)"}]}"#
    }

    /// Lays the APKs (and `extra` APK files, by name) out in `form`; returns the path of the folder or container.
    /// `zip` stores the APKs (-0) in .apks, as bundletool does, and deflates them elsewhere (APKPure and
    /// APKMirror compress), so both ways of reading a member are exercised.
    /// `extras` replace the form's non-APK files of the same name (`extras(in:)`).
    func pack(_ form: Form, name: String? = nil, replacing: [String: String] = [:], adding: [String: String] = [:],
              extras: [String: [UInt8]] = [:]) throws -> String {
        let staging = directory.appendingPathComponent("pack-\(UUID().uuidString)")
        let names = Self.names(in: form)
        var files = apks.merging(replacing) { $1 }
        for (key, value) in adding { files[key] = value }
        for (key, path) in files {
            let entry = names[key] ?? key
            try TestSupport.write(TestSupport.readBytes(path), to: entry, in: staging)
        }
        for (entry, content) in Self.extras(in: form).merging(extras, uniquingKeysWith: { $1 }) { try TestSupport.write(content, to: entry, in: staging) }
        if form == .directory { return staging.path }
        let output = directory.appendingPathComponent(name ?? "app-\(UUID().uuidString.prefix(6)).\(form.rawValue)").path
        let entries = try FileManager.default.subpathsOfDirectory(atPath: staging.path).filter {
            var isDirectory: ObjCBool = false
            FileManager.default.fileExists(atPath: staging.appendingPathComponent($0).path, isDirectory: &isDirectory)
            return !isDirectory.boolValue
        }.sorted()
        let zipped = try TestSupport.run("zip", ["-q", "-X"] + (form == .apks ? ["-0"] : []) + [output] + entries, currentDirectory: staging.path)
        guard zipped.succeeded else { throw FixtureError(message: "zip failed:\n\(zipped)") }
        return output
    }
}

/// Oracles run on every APK of an output set.
enum SetOracles {
    /// The APK files of an output in `form`, extracted with `unzip` from a container (entry name → path).
    static func apkFiles(of output: String, form: SplitSetFixture.Form, scratch: URL) throws -> [String: String] {
        var root = output
        if form != .directory {
            root = scratch.appendingPathComponent("unzipped-\(UUID().uuidString)").path
            let unzipped = try TestSupport.run("unzip", ["-q", output, "-d", root])
            guard unzipped.succeeded else { throw FixtureError(message: "unzip failed:\n\(unzipped)") }
        }
        let names = try FileManager.default.subpathsOfDirectory(atPath: root).filter { $0.hasSuffix(".apk") }
        return Dictionary(uniqueKeysWithValues: names.map { ($0, (root as NSString).appendingPathComponent($0)) })
    }

    /// apksigner's certificate SHA-256 of `apk`, or a failure with its output.
    static func certificateSHA256(_ apk: String) throws -> String {
        let result = try TestSupport.run("apksigner", ["verify", "--print-certs", apk])
        guard result.succeeded else { throw FixtureError(message: "apksigner verify \(apk) failed:\n\(result)") }
        guard let line = result.stdout.split(separator: "\n").first(where: { $0.contains("certificate SHA-256 digest:") }) else {
            throw FixtureError(message: "apksigner printed no certificate for \(apk):\n\(result)")
        }
        return String(line.split(separator: " ").last!)
    }

    /// `aapt dump badging`'s first line (package, versionCode, split).
    static func badging(_ apk: String) throws -> String {
        let result = try TestSupport.run("aapt", ["dump", "badging", apk])
        guard result.succeeded else { throw FixtureError(message: "aapt dump badging \(apk) failed:\n\(result)") }
        return String(result.stdout.split(separator: "\n").first ?? "")
    }
}
