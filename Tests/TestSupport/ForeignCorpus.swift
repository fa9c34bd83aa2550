import APKCore
import Foundation

/// APKs that nobody here wrote: built at test time by the tools real APKs come from (aapt2 in its link modes,
/// apktool's rebuild, Java's `jar` and `jarsigner`, Python's `zipfile`, Info-ZIP's `zip`, `zipalign`, `apksigner`
/// with every scheme), with the odd content real apps carry (non-ASCII and long entry names, empty files, directory
/// entries, 10,000 entries, a nested jar, native libraries, another prefix for the android namespace). Our own
/// fixtures all come from one aapt; these are the other side of the brief's "inputs nobody here wrote".
public enum ForeignCorpus {
    /// One producer (and its options) per member. The app's source is the same for all: what differs is how the
    /// tool writes the archive, the resource table and the signatures.
    public enum Member: String, CaseIterable, Sendable, CustomStringConvertible {
        /// `aapt2 compile` + `aapt2 link` (targetSdk 34): resources.arsc stored and aligned, the rest deflated.
        case aapt2
        case aapt2NoCompress
        /// Sparse type chunks (`--enable-sparse-encoding`) and the raw text of typed attributes (`--keep-raw-values`).
        case aapt2SparseRawValues
        case aapt2RenamedPackage
        /// A shared library (`--shared-lib`): package ID 0, references to its own resources are dynamic.
        case aapt2SharedLibrary
        /// `--no-xml-namespaces`: attributes carry their IDs but no namespace at all.
        case aapt2NoNamespaces
        /// The android namespace bound to the prefix `a` instead of `android`.
        case aapt2OddPrefix
        /// minSdkVersion 16, targetSdkVersion 28: the base of the members below that rezip or sign it.
        case aapt2Legacy
        /// `-0 bin -0 .txt`: files with those extensions stored, as Gradle's `androidResources.noCompress` asks.
        case aapt2NoCompressExtensions
        /// `aapt2 link --split`: the base of a config split set, and its `config.fr` and `config.hdpi` splits (a
        /// manifest with `split=` and no `<uses-sdk>`, a table with only that configuration's values).
        case aapt2SplitBase
        case aapt2ConfigSplitFr
        case aapt2ConfigSplitHdpi
        /// A feature split linked against the base (`--package-id 0x80`, `-I base.apk`): `split="extra"`,
        /// `android:isFeatureSplit`, `<uses-split>`, a `dist:module`, references into the base's package 0x7f.
        case aapt2FeatureSplit
        /// What the Android Gradle plugin's packager (zipflinger) writes: one fixed timestamp, resources.arsc stored
        /// and 4-aligned and native libraries stored and 16 KiB-aligned (`extractNativeLibs="false"`) by zero
        /// padding in the extra field, virtual entries where it left room, entries out of alphabetical order, a
        /// directory entry, an empty entry, classes.dex and classes2.dex, Java resources with data descriptors.
        case gradleZipflinger
        /// The same writer with Flutter's content: assets/flutter_assets/…, libapp.so and libflutter.so per ABI.
        case flutterLike
        /// Unity's: targetSdk 29 with resources.arsc deflated (allowed before Android 11), a 3 MiB stored data file,
        /// libmain/libunity/libil2cpp deflated (extracted at install), timestamps, no alignment.
        case unityLike
        /// Godot's: targetSdk 33, the project under assets/ with names starting with a dot, a stored .pck, and
        /// resources.arsc stored but not aligned (which `run` repairs and `sign` aligns).
        case godotLike
        /// `apktool d` of an aapt-built APK, then `apktool b --use-aapt2`.
        case apktoolRebuilt
        /// `jar cf`: Java's ZipOutputStream, data descriptors on every deflated entry, META-INF/MANIFEST.MF unsigned.
        case jarDataDescriptors
        /// `jar cf0`: everything stored, nothing aligned.
        case jarStored
        /// Python's zipfile, deflated: unknown extra fields, entry and archive comments, non-ASCII and 200-character
        /// names, an empty file, a directory entry.
        case pythonDeflated
        case pythonStored
        /// Python's zipfile with `force_zip64=True` for small files: ZIP64 fields in every local header.
        case pythonZip64
        /// `zip -r` of the targetSdk 34 app: Info-ZIP extra fields, directory entries, resources.arsc compressed.
        case zipRecursive
        /// `zip -X -r` with resources.arsc stored (`-0`), then `zipalign -p 4`, with a native library.
        case zipalignPageAligned
        /// 10,000 small entries, a jar inside assets, native libraries (stored and deflated), made by Python.
        case manyEntries
        /// A resources.arsc of zero bytes.
        case emptyResourceTable
        /// `apksigner sign` of the legacy app: v1 only, v2 only, v3 only, all three with `--v1-signer-name`, a lineage.
        case apksignerV1Only
        case apksignerV2Only
        case apksignerV3Only
        case apksignerAllSchemes
        case apksignerLineage
        /// `jarsigner` (JDK 17): SHA-1 digests; SHA-256 digests; two signers (signed twice); a DSA key.
        case jarsignerSHA1
        case jarsignerSHA256
        case jarsignerTwice
        case jarsignerDSA
        /// apksigner's v1+v2 signature, then jarsigner on top: the v2 block no longer matches (DOES NOT VERIFY).
        case apksignerThenJarsigner

        public var description: String { rawValue }

        /// The app's targetSdkVersion: 34 for the modern manifest, 28 for the legacy one, the producer's for the
        /// game engines' layouts; nil for the splits, whose manifests have no `<uses-sdk>`.
        public var targetSdk: Int? {
            switch self {
            case .aapt2, .aapt2NoCompress, .aapt2SparseRawValues, .aapt2RenamedPackage, .aapt2SharedLibrary, .aapt2NoNamespaces,
                 .aapt2OddPrefix, .zipRecursive, .aapt2NoCompressExtensions, .aapt2SplitBase, .gradleZipflinger, .flutterLike: 34
            case .aapt2ConfigSplitFr, .aapt2ConfigSplitHdpi, .aapt2FeatureSplit: nil
            case .unityLike: 29
            case .godotLike: 33
            default: 28
            }
        }

        /// Whether the member's resources.arsc is compressed while its targetSdk (30 or more) requires it stored:
        /// `sign` refuses it (naming `apkpatch run`, which repairs it).
        public var hasCompressedTableAndroidRefuses: Bool { self == .zipRecursive }
    }

    /// What `build` made: each member's path, and the keystores (with their password) that signed the signed ones.
    public struct Built: Sendable {
        public let directory: URL
        public let paths: [Member: String]
        /// A PKCS#12 keystore with one RSA key (alias `corpus`) for re-signing in tests.
        public let keyStore: String
        public let keyStorePassword: String
        /// aapt2's protobuf-format outputs (`--proto-format`, `--static-lib`): not installable APKs.
        public let protoFormat: [String]

        public func path(of member: Member) -> String { paths[member]! }
    }

    /// Options for the short-lived JVMs of apksigner, apktool, jar, jarsigner and keytool: the client compiler
    /// only (they run for a second, not long enough for C2 to pay off) and UTF-8 file names whatever the locale.
    public static let javaEnvironment = ["JAVA_TOOL_OPTIONS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC", "LC_ALL": "C.UTF-8"]

    /// Builds every member into `directory`: first what native tools make (aapt2, openssl, clang, Python, zip), then
    /// the JVM tools' members, in parallel. Throws (naming the tool and its output) when a producer fails.
    public static func build(in directory: URL) throws -> Built {
        let fm = FileManager.default
        let source = directory.appendingPathComponent("source")
        try writeSource(in: source)
        var paths: [Member: String] = [:]
        for member in Member.allCases { paths[member] = directory.appendingPathComponent("\(member.rawValue).apk").path }
        let out = { (member: Member) in paths[member]! }
        func tool(_ executable: String, _ arguments: [String], in cwd: URL? = nil, environment: [String: String]? = nil) throws {
            let result = try TestSupport.run(executable, arguments, environment: environment, currentDirectory: (cwd ?? source).path)
            guard result.succeeded else { throw FixtureError(message: "\(executable) \(arguments.joined(separator: " ")) failed:\n\(result)") }
        }

        // aapt2: compile once, link in each mode.
        try tool("aapt2", ["compile", "--dir", "res", "-o", "compiled.zip"])
        func link(_ member: Member, manifest: String = "AndroidManifest.xml", _ options: [String] = []) throws {
            try tool("aapt2", ["link", "-o", out(member), "-I", TestSupport.frameworkRes, "--manifest", manifest, "-A", "assets"]
                     + options + ["compiled.zip"])
        }
        try link(.aapt2)
        try link(.aapt2NoCompress, ["--no-compress"])
        try link(.aapt2SparseRawValues, ["--enable-sparse-encoding", "--keep-raw-values"])
        try link(.aapt2RenamedPackage, ["--rename-manifest-package", "org.corpus.renamed"])
        try link(.aapt2SharedLibrary, ["--shared-lib"])
        try link(.aapt2NoNamespaces, ["--no-xml-namespaces"])
        try link(.aapt2OddPrefix, manifest: "OddPrefixManifest.xml")
        try link(.aapt2Legacy, manifest: "LegacyManifest.xml")
        try link(.aapt2NoCompressExtensions, ["-0", "bin", "-0", ".txt"])
        try link(.aapt2SplitBase, ["--split", out(.aapt2ConfigSplitFr) + ":fr", "--split", out(.aapt2ConfigSplitHdpi) + ":hdpi"])
        try tool("aapt2", ["compile", "--dir", "feature/res", "-o", "feature.zip"])
        try tool("aapt2", ["link", "-o", out(.aapt2FeatureSplit), "-I", TestSupport.frameworkRes, "-I", out(.aapt2),
                           "--manifest", "feature/AndroidManifest.xml", "--package-id", "0x80", "feature.zip"])
        // The bases the game engines' and Gradle's layouts are written from (by producers.py, below).
        let engineBases = ["gradle", "unity", "godot"].map { directory.appendingPathComponent("base-\($0).apk").path }
        for (base, manifest) in zip(engineBases, ["GradleManifest.xml", "UnityManifest.xml", "GodotManifest.xml"]) {
            try tool("aapt2", ["link", "-o", base, "-I", TestSupport.frameworkRes, "--manifest", manifest, "-A", "assets", "compiled.zip"])
        }
        var protoFormat: [String] = []
        for (name, option) in [("proto-format", "--proto-format"), ("static-lib", "--static-lib")] {
            let path = directory.appendingPathComponent("aapt2-\(name).apk").path
            try tool("aapt2", ["link", "-o", path, "-I", TestSupport.frameworkRes, "--manifest", "AndroidManifest.xml", option, "compiled.zip"])
            protoFormat.append(path)
        }

        // Keys (openssl writes PKCS#12 keystores apksigner, jarsigner and apkpatch all read).
        let password = "corpus-pass"
        let environment = javaEnvironment.merging(["CORPUS_KS_PASS": password]) { $1 }
        let keys = directory.appendingPathComponent("keys")
        try fm.createDirectory(at: keys, withIntermediateDirectories: true)
        func keyStore(_ name: String, alias: String, _ keyOptions: [String]) throws -> String {
            let key = keys.appendingPathComponent("\(name).pem").path, certificate = keys.appendingPathComponent("\(name).crt").path
            let store = keys.appendingPathComponent("\(name).p12").path
            try tool("openssl", ["req", "-x509", "-nodes", "-days", "10000", "-subj", "/CN=Corpus \(name)", "-keyout", key, "-out", certificate] + keyOptions)
            try tool("openssl", ["pkcs12", "-export", "-inkey", key, "-in", certificate, "-name", alias, "-out", store, "-passout", "env:CORPUS_KS_PASS"],
                     environment: environment)
            return store
        }
        let rsa = try keyStore("rsa", alias: "corpus", ["-newkey", "rsa:2048"])
        let ec = try keyStore("ec", alias: "second", ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"])

        // Python's zipfile: its members, and the legacy and modern apps' entries as folders for the tools that zip one.
        let library = directory.appendingPathComponent("libcorpus.so").path
        try makeNativeLibrary(at: library, in: directory)
        let legacyTree = directory.appendingPathComponent("legacy-tree"), modernTree = directory.appendingPathComponent("modern-tree")
        let script = directory.appendingPathComponent("corpus.py")
        try Data(pythonScript.utf8).write(to: script)
        try tool("python3", [script.path, out(.aapt2Legacy), library, out(.pythonDeflated), out(.pythonStored), out(.pythonZip64),
                             out(.manyEntries), out(.emptyResourceTable), legacyTree.path, out(.aapt2), modernTree.path])
        let topLevel = ["AndroidManifest.xml", "resources.arsc", "res", "assets"]
        let producers = directory.appendingPathComponent("producers.py")
        try Data(producersScript.utf8).write(to: producers)
        try tool("python3", [producers.path, library] + engineBases + [out(.gradleZipflinger), out(.flutterLike), out(.unityLike), out(.godotLike)])

        // Info-ZIP: recursive with its extra fields (the modern app, whose resources.arsc then ends up compressed),
        // and without them (-X), resources.arsc stored, a native library, page-aligned by zipalign.
        try tool("zip", ["-q", "-r", out(.zipRecursive)] + topLevel, in: modernTree)
        let libraryTree = directory.appendingPathComponent("zip-tree")
        try fm.copyItem(at: legacyTree, to: libraryTree)
        try fm.createDirectory(at: libraryTree.appendingPathComponent("lib/arm64-v8a"), withIntermediateDirectories: true)
        try fm.copyItem(atPath: library, toPath: libraryTree.appendingPathComponent("lib/arm64-v8a/libcorpus.so").path)
        let unaligned = directory.appendingPathComponent("zip-unaligned.apk").path
        try tool("zip", ["-q", "-X", "-r", unaligned, "AndroidManifest.xml", "res", "assets"], in: libraryTree)
        try tool("zip", ["-q", "-X", "-0", "-r", unaligned, "resources.arsc", "lib"], in: libraryTree)
        try tool("zipalign", ["-p", "4", unaligned, out(.zipalignPageAligned)])
        let aaptBuilt = try FixtureAPK.cordovaLike().build(in: directory, name: "aapt-cordova.apk")

        // The JVM tools, each job on its own outputs, in parallel. Signatures of every kind go on the legacy app
        // (minSdkVersion 16: apksigner's v1 uses SHA-1 there).
        let legacy = out(.aapt2Legacy)
        let signer = ["--ks", rsa, "--ks-pass", "env:CORPUS_KS_PASS"]
        func java(_ executable: String, _ arguments: [String], in cwd: URL? = nil) throws {
            try tool(executable, arguments, in: cwd, environment: environment)
        }
        func apksigner(_ member: Member, _ options: [String]) throws {
            try java("apksigner", ["sign"] + signer + options + ["--out", out(member), legacy])
        }
        func jarsigner(_ member: Member, keyStore: String, alias: String, digest: String, from input: String? = nil) throws {
            if let input { try? fm.removeItem(atPath: out(member)); try fm.copyItem(atPath: input, toPath: out(member)) }
            try java("jarsigner", ["-keystore", keyStore, "-storepass:env", "CORPUS_KS_PASS", "-digestalg", digest, out(member), alias])
        }
        let jobs: [() throws -> Void] = [
            { try java("jar", ["cf", out(.jarDataDescriptors)] + topLevel, in: legacyTree) },
            { try java("jar", ["cf0", out(.jarStored)] + topLevel, in: legacyTree) },
            {
                // apktool's rebuild of an aapt-built app (its own framework copy is installed on first use).
                let decoded = directory.appendingPathComponent("apktool-decoded").path
                try java("apktool", ["d", "-f", "-s", "-o", decoded, aaptBuilt], in: directory)
                try java("apktool", ["b", "--use-aapt2", decoded, "-o", out(.apktoolRebuilt)], in: directory)
            },
            { try apksigner(.apksignerV1Only, ["--v2-signing-enabled", "false", "--v3-signing-enabled", "false"]) },
            { try apksigner(.apksignerV2Only, ["--v1-signing-enabled", "false", "--v3-signing-enabled", "false", "--min-sdk-version", "24"]) },
            { try apksigner(.apksignerV3Only, ["--v1-signing-enabled", "false", "--v2-signing-enabled", "false", "--min-sdk-version", "28"]) },
            { try apksigner(.apksignerAllSchemes, ["--v1-signer-name", "Odd signer.name"]) },
            {
                let lineage = keys.appendingPathComponent("lineage.bin").path
                try java("apksigner", ["rotate", "--out", lineage, "--old-signer"] + signer + ["--new-signer", "--ks", ec, "--ks-pass", "env:CORPUS_KS_PASS"])
                try apksigner(.apksignerLineage, ["--next-signer", "--ks", ec, "--ks-pass", "env:CORPUS_KS_PASS", "--lineage", lineage])
            },
            { try jarsigner(.jarsignerSHA1, keyStore: rsa, alias: "corpus", digest: "SHA-1", from: legacy) },
            { try jarsigner(.jarsignerSHA256, keyStore: rsa, alias: "corpus", digest: "SHA-256", from: legacy) },
            {
                try jarsigner(.jarsignerTwice, keyStore: rsa, alias: "corpus", digest: "SHA-256", from: legacy)
                try jarsigner(.jarsignerTwice, keyStore: ec, alias: "second", digest: "SHA-256")
            },
            {
                // DSA keys come from keytool (a JKS keystore, as old Android keystores are).
                let dsa = keys.appendingPathComponent("dsa.jks").path
                try java("keytool", ["-genkeypair", "-keystore", dsa, "-storetype", "JKS", "-alias", "dsakey", "-keyalg", "DSA", "-keysize", "2048",
                                     "-validity", "10000", "-dname", "CN=Corpus DSA", "-storepass:env", "CORPUS_KS_PASS", "-keypass:env", "CORPUS_KS_PASS"])
                try jarsigner(.jarsignerDSA, keyStore: dsa, alias: "dsakey", digest: "SHA-256", from: legacy)
            },
            {
                let v1v2 = directory.appendingPathComponent("v1v2.apk").path
                try java("apksigner", ["sign"] + signer + ["--v3-signing-enabled", "false", "--out", v1v2, legacy])
                try jarsigner(.apksignerThenJarsigner, keyStore: ec, alias: "second", digest: "SHA-256", from: v1v2)
            },
        ]
        let parallel = ParallelJobs(jobs)
        try Parallel.forEach(jobs.count) { index in try parallel.jobs[index]() }
        for member in Member.allCases where !fm.fileExists(atPath: out(member)) { throw FixtureError(message: "corpus member \(member) was not built") }
        return Built(directory: directory, paths: paths, keyStore: rsa, keyStorePassword: password, protoFormat: protoFormat)
    }

    /// Jobs that touch only their own files, run from several threads.
    struct ParallelJobs: @unchecked Sendable {
        // @unchecked Sendable: each job writes only its own outputs; what they share (paths, keys) is read-only.
        let jobs: [() throws -> Void]
        init(_ jobs: [() throws -> Void]) { self.jobs = jobs }
    }

    /// A tiny shared library with 16 KiB-aligned load segments, from the C compiler Swift's toolchain brings.
    static func makeNativeLibrary(at path: String, in directory: URL) throws {
        let source = directory.appendingPathComponent("corpus.c")
        try Data("int corpus_answer(void) { return 42; }\n".utf8).write(to: source)
        let result = try TestSupport.run("clang", ["-shared", "-fPIC", "-O2", "-Wl,-z,max-page-size=16384", "-o", path, source.path])
        guard result.succeeded else { throw FixtureError(message: "clang -shared failed:\n\(result)") }
    }

    /// The app: two manifests (targetSdk 34 and a legacy one), every kind of value, a layout with res-auto
    /// attributes, a vector drawable, a network security config, raw files (one empty), a PNG, a French
    /// configuration, and assets with non-ASCII, long and empty names.
    static func writeSource(in source: URL) throws {
        func manifest(package: String = "org.corpus.app", minSdk: Int, targetSdk: Int, prefix: String = "android",
                      applicationAttributes: String = "") -> String {
            """
            <?xml version="1.0" encoding="utf-8"?>
            <manifest xmlns:\(prefix)="http://schemas.android.com/apk/res/android" package="\(package)"
                \(prefix):versionCode="7" \(prefix):versionName="1.7-ünï">
                <uses-sdk \(prefix):minSdkVersion="\(minSdk)" \(prefix):targetSdkVersion="\(targetSdk)" />
                <uses-permission \(prefix):name="android.permission.INTERNET" />
                <application \(prefix):label="@string/app_name" \(prefix):icon="@mipmap/ic_launcher" \(prefix):theme="@style/AppTheme"
                    \(prefix):networkSecurityConfig="@xml/network_security_config" \(applicationAttributes)>
                    <activity \(prefix):name=".MainActivity" \(prefix):exported="true">
                        <intent-filter>
                            <action \(prefix):name="android.intent.action.MAIN" />
                            <category \(prefix):name="android.intent.category.LAUNCHER" />
                        </intent-filter>
                    </activity>
                    <meta-data \(prefix):name="corpus.flag" \(prefix):value="true" />
                </application>
            </manifest>
            """
        }
        try TestSupport.write(manifest(minSdk: 21, targetSdk: 34), to: "AndroidManifest.xml", in: source)
        try TestSupport.write(manifest(minSdk: 21, targetSdk: 34, prefix: "a"), to: "OddPrefixManifest.xml", in: source)
        try TestSupport.write(manifest(package: "org.corpus.legacy", minSdk: 16, targetSdk: 28), to: "LegacyManifest.xml", in: source)
        try TestSupport.write(manifest(package: "org.corpus.gradle", minSdk: 24, targetSdk: 34, applicationAttributes: #"android:extractNativeLibs="false""#),
                              to: "GradleManifest.xml", in: source)
        try TestSupport.write(manifest(package: "org.corpus.unity", minSdk: 22, targetSdk: 29, applicationAttributes: #"android:isGame="true""#),
                              to: "UnityManifest.xml", in: source)
        try TestSupport.write(manifest(package: "org.corpus.godot", minSdk: 24, targetSdk: 33,
                                       applicationAttributes: #"android:isGame="true" android:allowBackup="false" android:hasFragileUserData="false""#),
                              to: "GodotManifest.xml", in: source)
        try writeFeatureSource(in: source.appendingPathComponent("feature"))
        try TestSupport.write("""
            <resources>
                <string name="app_name">Corpus</string>
                <string name="greeting">Héllo, wörld ✓ 日本</string>
                <string name="alias">@string/app_name</string>
                <plurals name="items"><item quantity="one">%d item</item><item quantity="other">%d items</item></plurals>
                <string-array name="planets"><item>Mercury</item><item>Venus</item></string-array>
                <integer-array name="numbers"><item>1</item><item>2</item></integer-array>
                <bool name="flag">true</bool>
                <integer name="count">42</integer>
                <color name="accent">#ff336699</color>
                <dimen name="pad">16dp</dimen>
                <dimen name="edge">1px</dimen>
                <item name="ratio" type="fraction">50%</item>
                <item name="button_id" type="id"/>
                <attr name="speed" format="integer|enum"><enum name="slow" value="1"/><enum name="fast" value="2"/></attr>
                <declare-styleable name="Gauge"><attr name="speed"/><attr name="tint" format="color"/></declare-styleable>
                <style name="AppTheme" parent="@android:style/Theme.Material.Light">
                    <item name="android:colorAccent">@color/accent</item>
                    <item name="speed">fast</item>
                </style>
            </resources>
            """, to: "res/values/values.xml", in: source)
        try TestSupport.write("""
            <resources>
                <string name="app_name">Corpus FR</string>
                <string name="greeting">Bonjour</string>
                <plurals name="items"><item quantity="one">%d élément</item><item quantity="many">%d d’éléments</item><item quantity="other">%d éléments</item></plurals>
                <string-array name="planets"><item>Mercure</item><item>Vénus</item></string-array>
            </resources>
            """, to: "res/values-fr/strings.xml", in: source)
        // Values in several configurations (night, orientation, smallest width, density, API level, BCP 47 and
        // region locales), as real apps' values come; the fr and hdpi ones are what `aapt2 link --split` moves out.
        try TestSupport.write("""
            <resources>
                <color name="accent">#ff99ccff</color>
                <style name="AppTheme" parent="@android:style/Theme.Material"><item name="android:colorAccent">@color/accent</item><item name="speed">slow</item></style>
            </resources>
            """, to: "res/values-night/values.xml", in: source)
        try TestSupport.write(#"<resources><dimen name="pad">24dp</dimen><item name="ratio" type="fraction">25%p</item></resources>"#,
                              to: "res/values-land/values.xml", in: source)
        try TestSupport.write(#"<resources><dimen name="pad">32dp</dimen><integer name="count">84</integer><bool name="flag">false</bool></resources>"#,
                              to: "res/values-sw600dp/values.xml", in: source)
        try TestSupport.write(#"<resources><dimen name="pad">40dp</dimen></resources>"#, to: "res/values-sw600dp-land/values.xml", in: source)
        try TestSupport.write(#"<resources><dimen name="edge">1.5px</dimen><dimen name="pad">18dp</dimen></resources>"#,
                              to: "res/values-hdpi/values.xml", in: source)
        try TestSupport.write("""
            <resources>
                <style name="AppTheme" parent="@android:style/Theme.Material.Light"><item name="android:colorAccent">@color/accent</item><item name="android:elevation">2dp</item></style>
                <color name="accent">#ff336699</color>
            </resources>
            """, to: "res/values-v21/values.xml", in: source)
        try TestSupport.write(#"<resources><string name="greeting">Zdravo, svete</string><plurals name="items"><item quantity="one">%d stavka</item><item quantity="few">%d stavke</item><item quantity="other">%d stavki</item></plurals></resources>"#,
                              to: "res/values-b+sr+Latn/strings.xml", in: source)
        try TestSupport.write(#"<resources><string name="app_name">Corpus ES</string><string-array name="planets"><item>Mercurio</item><item>Venus</item></string-array></resources>"#,
                              to: "res/values-es-rUS/strings.xml", in: source)
        try TestSupport.write("""
            <selector xmlns:android="http://schemas.android.com/apk/res/android">
                <item android:state_pressed="true" android:color="@color/accent"/>
                <item android:color="#80ff0000"/>
            </selector>
            """, to: "res/color/tint.xml", in: source)
        try TestSupport.write("""
            <?xml version="1.0" encoding="utf-8"?>
            <LinearLayout xmlns:android="http://schemas.android.com/apk/res/android" xmlns:app="http://schemas.android.com/apk/res-auto"
                android:layout_width="match_parent" android:layout_height="wrap_content" android:orientation="vertical"
                android:padding="@dimen/pad" app:speed="slow">
                <TextView android:id="@+id/title" android:layout_width="wrap_content" android:layout_height="wrap_content"
                    android:text="@string/greeting" android:textColor="?android:attr/textColorPrimary"/>
                <Button android:id="@id/button_id" android:layout_width="wrap_content" android:layout_height="wrap_content"
                    android:text="007" android:visibility="gone"/>
            </LinearLayout>
            """, to: "res/layout/main.xml", in: source)
        try TestSupport.write("""
            <network-security-config>
                <base-config cleartextTrafficPermitted="false"><trust-anchors><certificates src="system"/></trust-anchors></base-config>
                <domain-config><domain includeSubdomains="true">example.com</domain>
                    <pin-set expiration="2030-01-01"><pin digest="SHA-256">7HIpactkIAq2Y49orFOOQKurWxmmSFZhBCoQYcRhJ3Y=</pin>
                    <pin digest="SHA-256">fwza0LRMXouZHRC8Ei+4PyuldPDcf3UKgO/04cDM1oE=</pin></pin-set>
                </domain-config>
            </network-security-config>
            """, to: "res/xml/network_security_config.xml", in: source)
        try TestSupport.write("""
            <vector xmlns:android="http://schemas.android.com/apk/res/android" android:width="24dp" android:height="24dp"
                android:viewportWidth="24" android:viewportHeight="24">
                <path android:fillColor="#FF000000" android:pathData="M12,2L2,22h20z"/>
            </vector>
            """, to: "res/drawable/triangle.xml", in: source)
        try TestSupport.write([0x72, 0x61, 0x77, 0x00, 0xff, 0x0a], to: "res/raw/data.bin", in: source)
        try TestSupport.write([], to: "res/raw/empty.txt", in: source)
        try TestSupport.write(png(width: 8, height: 8), to: "res/mipmap-hdpi/ic_launcher.png", in: source)
        try TestSupport.write("<html><body>www</body></html>\n", to: "assets/www/index.html", in: source)
        try TestSupport.write("dätä\n", to: "assets/dätä/日本語.txt", in: source)
        try TestSupport.write([], to: "assets/empty.bin", in: source)
        try TestSupport.write("long\n", to: "assets/" + String(repeating: "long-name-", count: 20) + ".txt", in: source)
    }

    /// A feature split's source: its manifest (`split=`, `isFeatureSplit`, `<uses-split>`, bundletool's
    /// `dist:module`), strings (one a reference into the base) and a layout using the base's resources.
    static func writeFeatureSource(in feature: URL) throws {
        try TestSupport.write("""
            <?xml version="1.0" encoding="utf-8"?>
            <manifest xmlns:android="http://schemas.android.com/apk/res/android" xmlns:dist="http://schemas.android.com/apk/distribution"
                package="org.corpus.app" split="extra" android:isFeatureSplit="true" android:versionCode="7">
                <dist:module dist:title="@string/feature_title">
                    <dist:delivery><dist:on-demand/></dist:delivery>
                    <dist:fusing dist:include="true"/>
                </dist:module>
                <uses-split android:name="common"/>
                <application android:hasCode="false">
                    <activity android:name="org.corpus.app.ExtraActivity" android:label="@string/app_name" android:exported="false"/>
                </application>
            </manifest>
            """, to: "AndroidManifest.xml", in: feature)
        try TestSupport.write(#"<resources><string name="feature_title">Extra</string><string name="feature_ref">@string/app_name</string></resources>"#,
                              to: "res/values/strings.xml", in: feature)
        try TestSupport.write("""
            <TextView xmlns:android="http://schemas.android.com/apk/res/android" android:layout_width="wrap_content"
                android:layout_height="wrap_content" android:text="@string/feature_title" android:padding="@dimen/pad"
                android:textColor="@color/tint"/>
            """, to: "res/layout/extra.xml", in: feature)
    }

    /// A valid RGBA PNG of one colour (aapt2 checks and recompresses PNGs).
    static func png(width: Int, height: Int) -> [UInt8] {
        func be32(_ value: Int) -> [UInt8] { [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)] }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            return be32(data.count) + body + be32(Int(crc32(body)))
        }
        let row: [UInt8] = [0] + Array(repeating: [0x33, 0x66, 0x99, 0xff] as [UInt8], count: width).flatMap { $0 }
        let raw = Array(repeating: row, count: height).flatMap { $0 }
        // A zlib stream of stored deflate blocks (no compressor needed): header, one final stored block, Adler-32.
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in raw { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
        let length = UInt16(raw.count)
        let zlib: [UInt8] = [0x78, 0x01, 0x01, UInt8(length & 0xff), UInt8(length >> 8), UInt8(~length & 0xff), UInt8(~length >> 8)] + raw
            + be32(Int(b << 16 | a))
        let header = be32(width) + be32(height) + [8, 6, 0, 0, 0]
        return [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] + chunk("IHDR", header) + chunk("IDAT", zlib) + chunk("IEND", [])
    }

    /// The ZIP CRC-32 of `bytes` (table-driven; for checking extracted files against an archive's records).
    public static func crc32(_ bytes: some Sequence<UInt8>) -> UInt32 {
        // Contiguous bytes (Data, arrays, their slices) go through a buffer pointer: in the debug build the tests
        // run, a loop over a generic sequence costs several times as much per byte, and the corpus suites check
        // every byte that unpack extracts.
        if let crc = bytes.withContiguousStorageIfAvailable({ crc32(UnsafeRawBufferPointer($0)) }) { return crc }
        var crc: UInt32 = 0xffff_ffff
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8) }
        return ~crc
    }

    static func crc32(_ buffer: UnsafeRawBufferPointer) -> UInt32 {
        crcTable.withUnsafeBufferPointer { table in
            var crc: UInt32 = 0xffff_ffff
            for byte in buffer { crc = table[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8) }
            return ~crc
        }
    }

    static let crcTable: [UInt32] = (0..<256).map { (n: UInt32) in
        var c = n
        for _ in 0..<8 { c = c & 1 != 0 ? (c >> 1) ^ 0xedb8_8320 : c >> 1 }
        return c
    }

    /// Python's zipfile writing the legacy app's entries in several ways (argv: legacy APK, native library, then
    /// the outputs in the order of `build`).
    static let pythonScript = #"""
        import io, os, struct, sys, zipfile
        legacy, library, deflated, stored, zip64, many, empty_arsc, legacy_tree, modern, modern_tree = sys.argv[1:11]

        def utf8_name(info):
            # aapt2 writes UTF-8 names without the UTF-8 flag; zipfile then decodes them as CP437. Android reads bytes.
            return info.filename if info.flag_bits & 0x800 else info.filename.encode('cp437').decode('utf-8')

        for apk, tree in [(legacy, legacy_tree), (modern, modern_tree)]:
            with zipfile.ZipFile(apk) as archive:
                for info in archive.infolist():
                    target = os.path.join(tree, utf8_name(info))
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    with open(target, 'wb') as f:
                        f.write(archive.read(info))

        source = zipfile.ZipFile(legacy)
        entries = [(utf8_name(info), source.read(info)) for info in source.infolist()]
        so = open(library, 'rb').read()
        odd = [('assets/\u00fcml\u00e4ut/\u65e5\u672c.txt', b'x'), ('assets/empty-py.bin', b''),
               ('assets/' + 'p' * 200 + '.txt', b'long')]

        def write(path, method, force_zip64=False, extras=False, directories=False):
            with zipfile.ZipFile(path, 'w') as out:
                if directories:
                    out.writestr(zipfile.ZipInfo('assets/'), b'')
                for name, data in entries + odd:
                    info = zipfile.ZipInfo(name, date_time=(2020, 1, 2, 3, 4, 6))
                    info.compress_type = zipfile.ZIP_STORED if name == 'resources.arsc' or name.endswith('.png') else method
                    if extras:
                        info.extra = struct.pack('<HH', 0xcafe, 4) + b'\x01\x02\x03\x04'
                        info.comment = b'entry comment'
                    with out.open(info, 'w', force_zip64=force_zip64) as stream:
                        stream.write(data)
                if extras:
                    out.comment = b'archive comment'

        write(deflated, zipfile.ZIP_DEFLATED, extras=True, directories=True)
        write(stored, zipfile.ZIP_STORED)
        write(zip64, zipfile.ZIP_DEFLATED, force_zip64=True)

        inner = io.BytesIO()
        with zipfile.ZipFile(inner, 'w', zipfile.ZIP_DEFLATED) as jar:
            jar.writestr('META-INF/MANIFEST.MF', 'Manifest-Version: 1.0\r\n\r\n')
            jar.writestr('org/corpus/Inner.class', b'\xca\xfe\xba\xbe' + bytes(40))
        with zipfile.ZipFile(many, 'w') as out:
            for name, data in entries:
                out.writestr(name, data, compress_type=zipfile.ZIP_STORED if name == 'resources.arsc' else zipfile.ZIP_DEFLATED)
            out.writestr('lib/arm64-v8a/libcorpus.so', so, compress_type=zipfile.ZIP_DEFLATED)
            out.writestr('lib/x86_64/libcorpus.so', so, compress_type=zipfile.ZIP_STORED)
            out.writestr('assets/libs/inner.jar', inner.getvalue(), compress_type=zipfile.ZIP_STORED)
            for k in range(10000):
                out.writestr('assets/many/%02d/f%05d.txt' % (k // 500, k), b'%d\n' % k,
                             compress_type=zipfile.ZIP_DEFLATED if k % 2 else zipfile.ZIP_STORED)
        with zipfile.ZipFile(empty_arsc, 'w', zipfile.ZIP_DEFLATED) as out:
            for name, data in entries:
                out.writestr(name, b'' if name == 'resources.arsc' else data)
        """#

    /// The layouts of producers that write the ZIP themselves (the Android Gradle plugin's zipflinger, Unity,
    /// Godot), from aapt2-linked bases, by Python (argv: the native library, the Gradle, Unity and Godot bases, then
    /// the Gradle, Flutter, Unity and Godot outputs).
    static let producersScript = #"""
        import random, struct, sys, zipfile, zlib

        # Other producers' layouts, written from aapt2-linked bases. argv: the native library; the bases for Gradle
        # (extractNativeLibs false, targetSdk 34), Unity (targetSdk 29) and Godot (targetSdk 33); the outputs for Gradle,
        # Flutter, Unity and Godot.
        library, gradle_base, unity_base, godot_base, gradle_out, flutter_out, unity_out, godot_out = sys.argv[1:9]
        so = open(library, 'rb').read()

        def filler(size, seed):
            return random.Random(seed).randbytes(size)

        def dex(seed, size=4000):
            return b'dex\n035\x00' + filler(size, seed)

        def entries(apk):
            # aapt2 writes UTF-8 names without the UTF-8 flag; zipfile then decodes them as CP437.
            with zipfile.ZipFile(apk) as archive:
                return [(info.filename if info.flag_bits & 0x800 else info.filename.encode('cp437').decode('utf-8'), archive.read(info))
                        for info in archive.infolist()]

        TIME, DATE = 0x0821, 0x0221

        class FlingerWriter:
            """Writes a ZIP as AGP's zipflinger (com.android.zipflinger) does: version 0, one fixed DOS time (1981-01-01
            01:01:02), alignment padding as an extra field of zero bytes, virtual entries (a nameless local header with a
            zero-filled extra field that no central directory record names) where it left room, and, for this fixture's
            entries from jars, deflated data followed by a data descriptor."""
            def __init__(self, path):
                self.file = open(path, 'wb')
                self.records = []

            def virtual_entry(self, size):
                self.file.write(struct.pack('<IHHHHHIIIHH', 0x04034b50, 0, 0, 0, TIME, DATE, 0, 0, 0, 0, size - 30) + bytes(size - 30))

            def add(self, name, data, deflate=False, align=0, descriptor=False):
                name_bytes = name.encode('utf-8')
                crc = zlib.crc32(data) & 0xffffffff
                if deflate:
                    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
                    body = compressor.compress(data) + compressor.flush()
                else:
                    body = data
                offset = self.file.tell()
                extra = b''
                if align and not deflate:
                    extra = bytes((-(offset + 30 + len(name_bytes))) % align)
                flags = 0x0800 if any(b >= 0x80 for b in name_bytes) else 0
                if descriptor:
                    flags |= 0x0008
                method = 8 if deflate else 0
                sizes = (0, 0, 0) if descriptor else (crc, len(body), len(data))
                self.file.write(struct.pack('<IHHHHHIIIHH', 0x04034b50, 0, flags, method, TIME, DATE, *sizes, len(name_bytes), len(extra)))
                self.file.write(name_bytes + extra + body)
                if descriptor:
                    self.file.write(struct.pack('<IIII', 0x08074b50, crc, len(body), len(data)))
                self.records.append((name_bytes, flags, method, crc, len(body), len(data), offset))

            def close(self):
                start = self.file.tell()
                for name_bytes, flags, method, crc, compressed, size, offset in self.records:
                    self.file.write(struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 0, 0, flags, method, TIME, DATE, crc, compressed, size,
                                                len(name_bytes), 0, 0, 0, 0, 0, offset) + name_bytes)
                end = self.file.tell()
                count = len(self.records)
                self.file.write(struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, count, count, end - start, start, 0))
                self.file.close()

        def flinger(path, base, extra_entries, native_libraries):
            """A Gradle build's layout: the manifest first, then dex files, resources.arsc stored and 4-aligned, res/, the
            native libraries stored and 16 KiB-aligned, assets, Java resources from jars (data descriptors), with a
            directory entry, an empty entry and a virtual entry where an incremental build dropped a file."""
            writer = FlingerWriter(path)
            base = dict(entries(base))
            writer.add('AndroidManifest.xml', base.pop('AndroidManifest.xml'), deflate=True)
            writer.add('classes2.dex', dex(2), deflate=True)
            writer.add('classes.dex', dex(1), deflate=True)
            writer.virtual_entry(132)
            writer.add('resources.arsc', base.pop('resources.arsc'), align=4)
            for name in sorted(base, reverse=True):
                data = base[name]
                writer.add(name, data, deflate=not name.endswith('.png') and len(data) > 0, align=4)
            for name in native_libraries:
                writer.add(name, so, align=16384)
            writer.add('assets/', b'', align=4)
            writer.add('assets/empty.txt', b'', align=4)
            for name, data, deflate in extra_entries:
                writer.add(name, data, deflate=deflate, align=4)
            writer.virtual_entry(40)
            writer.add('META-INF/com/android/build/gradle/app-metadata.properties', b'appMetadataVersion=1.1\nandroidGradlePluginVersion=8.5.0\n', deflate=True)
            writer.add('kotlin/collections/collections.kotlin_builtins', filler(300, 7), deflate=True, descriptor=True)
            writer.add('DebugProbesKt.bin', filler(700, 8), deflate=True, descriptor=True)
            writer.add('META-INF/androidx.core_core.version', b'1.13.1\n', deflate=True, descriptor=True)
            writer.close()

        abis = ['arm64-v8a', 'armeabi-v7a', 'x86_64']

        # Gradle (zipflinger): what AGP writes for an app with native code it does not extract.
        flinger(gradle_out, gradle_base,
                [('assets/dexopt/baseline.prof', filler(900, 3), False), ('assets/dexopt/baseline.profm', filler(90, 4), False)],
                ['lib/%s/libcorpus.so' % abi for abi in abis])

        # Flutter: a Gradle build with flutter_assets and the engine's and the app's native libraries.
        flutter_assets = [
            ('assets/flutter_assets/AssetManifest.json', b'{"assets/logo.png":["assets/logo.png"]}', True),
            ('assets/flutter_assets/AssetManifest.bin', filler(60, 9), True),
            ('assets/flutter_assets/FontManifest.json', b'[{"family":"MaterialIcons","fonts":[{"asset":"fonts/MaterialIcons-Regular.otf"}]}]', True),
            ('assets/flutter_assets/NOTICES.Z', zlib.compress(b'NOTICES\n' * 400), False),
            ('assets/flutter_assets/fonts/MaterialIcons-Regular.otf', filler(20000, 10), True),
            ('assets/flutter_assets/packages/cupertino_icons/assets/CupertinoIcons.ttf', filler(12000, 11), True),
            ('assets/flutter_assets/shaders/ink_sparkle.frag', filler(3000, 12), True),
            ('assets/flutter_assets/assets/logo.png', filler(5000, 13), False),
            ('assets/flutter_assets/kernel_blob.bin', filler(200000, 14), True),
        ]
        flinger(flutter_out, gradle_base, flutter_assets,
                ['lib/%s/%s' % (abi, lib) for abi in abis for lib in ('libapp.so', 'libflutter.so')])

        # Unity: targetSdk 29, resources.arsc deflated (Android before 11 allows it), a big stored data file, native
        # libraries deflated (extracted at install), written by Java's zip (timestamps, data descriptors off).
        with zipfile.ZipFile(unity_out, 'w') as out:
            for name, data in entries(unity_base):
                out.writestr(zipfile.ZipInfo(name, (2023, 5, 6, 7, 8, 10)), data, compress_type=zipfile.ZIP_DEFLATED)
            out.writestr('classes.dex', dex(5), compress_type=zipfile.ZIP_DEFLATED)
            for abi in ('arm64-v8a', 'armeabi-v7a'):
                for lib in ('libmain.so', 'libunity.so', 'libil2cpp.so'):
                    out.writestr('lib/%s/%s' % (abi, lib), so, compress_type=zipfile.ZIP_DEFLATED)
            out.writestr('assets/bin/Data/data.unity3d', filler(3 * 1024 * 1024, 15), compress_type=zipfile.ZIP_STORED)
            out.writestr('assets/bin/Data/Managed/Metadata/global-metadata.dat', filler(40000, 16), compress_type=zipfile.ZIP_DEFLATED)
            out.writestr('assets/bin/Data/unity default resources', filler(30000, 17), compress_type=zipfile.ZIP_DEFLATED)
            out.writestr('assets/bin/Data/RuntimeInitializeOnLoads.json', b'{"root":[]}', compress_type=zipfile.ZIP_DEFLATED)

        # Godot: targetSdk 33, the exported project as files under assets/ whose names start with dots, stored resources.arsc
        # and a .pck, and the engine's library.
        with zipfile.ZipFile(godot_out, 'w') as out:
            for name, data in entries(godot_base):
                stored = name == 'resources.arsc' or name.endswith('.png')
                out.writestr(zipfile.ZipInfo(name, (2024, 1, 2, 3, 4, 6)), data, compress_type=zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED)
            out.writestr('classes.dex', dex(6), compress_type=zipfile.ZIP_DEFLATED)
            out.writestr('lib/arm64-v8a/libgodot_android.so', so, compress_type=zipfile.ZIP_DEFLATED)
            out.writestr('assets/.godot/global_script_class_cache.cfg', b'list=[]\n', compress_type=zipfile.ZIP_DEFLATED)
            out.writestr('assets/.godot/imported/icon.svg-218a8f2b3041327d8a5756f3a245f83b.ctex', filler(4000, 18), compress_type=zipfile.ZIP_STORED)
            out.writestr('assets/.godot/uid_cache.bin', filler(100, 19), compress_type=zipfile.ZIP_DEFLATED)
            out.writestr('assets/project.binary', filler(2000, 20), compress_type=zipfile.ZIP_DEFLATED)
            out.writestr('assets/icon.svg.import', b'[remap]\nimporter="texture"\n', compress_type=zipfile.ZIP_DEFLATED)
            out.writestr('assets/_cl_', b'', compress_type=zipfile.ZIP_STORED)
            out.writestr('assets/main.pck', filler(600000, 21), compress_type=zipfile.ZIP_STORED)
        """#
}

/// Android's own ZIP reader as an oracle: libziparchive (Debian's android-libziparchive, the library the package
/// manager opens APKs with), through `TestSupport.libziparchiveCheck`. It opens the archive, and extracts every
/// entry, which checks each local header against the central directory, inflates and checks the CRC-32.
public enum ZipArchiveOracle {
    /// One entry as libziparchive reads it.
    public struct Entry: Equatable, Sendable {
        public let name: String
        public let method: Int
        public let compressedSize: Int64
        public let uncompressedSize: Int64
        public let crc32: String
        public let dataOffset: Int64
    }

    /// The entries in libziparchive's iteration order (its hash table's, not the central directory's), or the
    /// reader's error (its message and exit status).
    public static func read(_ path: String) throws -> Result<[Entry], FixtureError> {
        let result = try TestSupport.libziparchiveCheck(path, list: true)
        guard result.succeeded else { return .failure(FixtureError(message: "libziparchive refused \(path): \(result.stdout)\(result.stderr)")) }
        // One line per entry, name first: a name with a line feed in it (apksig's v1-only-with-lf-in-entry-name.apk)
        // spans two lines, so lines join until the five fields after the name are there.
        var entries: [Entry] = [], pending: String?
        for line in result.stdout.split(separator: "\n", omittingEmptySubsequences: false) {
            let joined = pending.map { $0 + "\n" + line } ?? String(line)
            let fields = joined.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 6 else {
                pending = joined.isEmpty ? nil : joined
                continue
            }
            let name = fields.dropLast(5).joined(separator: "\t"), rest = Array(fields.suffix(5))
            entries.append(Entry(name: name, method: Int(rest[0]) ?? -1, compressedSize: Int64(rest[1]) ?? -1,
                                 uncompressedSize: Int64(rest[2]) ?? -1, crc32: rest[3], dataOffset: Int64(rest[4]) ?? -1))
            pending = nil
        }
        return .success(entries)
    }
}

