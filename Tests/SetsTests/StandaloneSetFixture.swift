import Foundation
import TestSupport

/// A protocol buffer encoder for test data (wire format: varint and length-delimited fields), to write
/// bundletool's `toc.pb` as bundletool writes it.
struct ProtoWriter {
    private(set) var bytes: [UInt8] = []

    private mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 { bytes.append(UInt8(v & 0x7f) | 0x80); v >>= 7 }
        bytes.append(UInt8(v))
    }
    mutating func int(_ field: Int, _ value: Int) { varint(UInt64(field << 3)); varint(UInt64(bitPattern: Int64(value))) }
    mutating func bytes(_ field: Int, _ value: [UInt8]) { varint(UInt64(field << 3 | 2)); varint(UInt64(value.count)); bytes += value }
    mutating func string(_ field: Int, _ value: String) { bytes(field, Array(value.utf8)) }
    mutating func message(_ field: Int, _ build: (inout ProtoWriter) -> Void) {
        var inner = ProtoWriter()
        build(&inner)
        bytes(field, inner.bytes)
    }
}

/// A bundletool `.apks` for an app whose minSdkVersion is below 21, laid out as `build-apks` lays it out: the
/// split variant under `splits/` (base-master, base-fr, base-xhdpi, base-arm64_v8a, base-x86), one standalone
/// APK per ABI and density under `standalones/` (standalone-arm64_v8a_mdpi.apk, …), and `toc.pb` describing
/// both (`BuildApksResult`: a variant per standalone with SDK, ABI and density targeting, then the split
/// variant from SDK 21). aapt builds every APK; none is signed.
struct StandaloneSetFixture {
    let splits: SplitSetFixture
    /// Entry name → built APK, for every APK of the .apks.
    var entries: [String: String] = [:]
    static let abis = [("arm64_v8a", "arm64-v8a", 3), ("x86", "x86", 4)]
    static let densities = [("mdpi", 3), ("xhdpi", 6)]
    static var standaloneNames: [String] {
        abis.flatMap { abi in densities.map { "standalones/standalone-\(abi.0)_\($0.0).apk" } }
    }
    static let splitNames = ["splits/base-master.apk", "splits/base-fr.apk", "splits/base-xhdpi.apk", "splits/base-arm64_v8a.apk", "splits/base-x86.apk"]
    /// The second split variant's names, as bundletool's ApkPathManager numbers a repeated name.
    static var secondVariantNames: [String] { splitNames.map { $0.replacingOccurrences(of: ".apk", with: "_2.apk") } }

    init(in directory: URL, standaloneVersionCode: Int = 7) throws {
        splits = try SplitSetFixture(in: directory)
        let names = SplitSetFixture.names(in: .apks)
        for (key, path) in splits.apks { entries[names[key]!] = path }
        let work = directory.appendingPathComponent("standalone-src-\(UUID().uuidString)")
        entries["splits/base-x86.apk"] = try SplitSetFixture.makeSplit(in: work, packageName: splits.packageName, versionCode: splits.versionCode,
                                                                       split: "config.x86", files: ["lib/x86/libfoo.so": Self.library("x86")])
        // A standalone is the whole app for pre-Lollipop devices: the base's resources (every language and
        // density here), and one ABI's libraries.
        let manifest = """
        <manifest xmlns:android="http://schemas.android.com/apk/res/android" package="\(splits.packageName)"
            android:versionCode="\(standaloneVersionCode)" android:versionName="1.0">
            <uses-sdk android:minSdkVersion="15" android:maxSdkVersion="20" android:targetSdkVersion="33"/>
            <application android:label="@string/app_name"/>
        </manifest>
        """
        try TestSupport.write(manifest, to: "AndroidManifest.xml", in: work)
        try SplitSetFixture.writeResources(in: work)
        for abi in Self.abis {
            let library = "lib/\(abi.1)/libfoo.so"
            try TestSupport.write(Self.library(abi.1), to: library, in: work)
            for density in Self.densities {
                let output = work.appendingPathComponent("standalone-\(abi.0)_\(density.0).apk").path
                let built = try TestSupport.run("aapt", ["package", "-f", "-M", "AndroidManifest.xml", "-S", "res", "-I", TestSupport.frameworkRes,
                                                         "--preferred-density", density.0, "-F", output], currentDirectory: work.path)
                guard built.succeeded else { throw FixtureError(message: "aapt package (standalone) failed:\n\(built)") }
                let added = try TestSupport.run("aapt", ["add", output, library], currentDirectory: work.path)
                guard added.succeeded else { throw FixtureError(message: "aapt add failed:\n\(added)") }
                entries["standalones/standalone-\(abi.0)_\(density.0).apk"] = output
            }
        }
    }

    static func library(_ abi: String) -> [UInt8] { FixtureAPK.pseudoRandomBytes(count: 5000, seed: UInt64(abi.utf8.count)) + Array(abi.utf8) }

    /// bundletool's `toc.pb` for this layout (`BuildApksResult`, commands.proto and targeting.proto), leaving out
    /// the standalones named in `omitting`; with `secondSplitVariant`, the splits again from SDK 23 (as
    /// bundletool adds a variant with uncompressed native libraries), named `…_2.apk`.
    /// `frenchSplitLanguage` is the language toc.pb says splits/base-fr.apk targets.
    /// With `onDemandFeature`, the split variant has a module "feature" delivered on demand (splits/feature-master.apk).
    /// `assetPacks`: asset modules by name with their DeliveryType (1 install-time, 2 on-demand, 3 fast-follow),
    /// each one master slice `asset-slices/<name>-master.apk` (`AssetSliceSet`).
    static func toc(omitting: Set<String> = [], secondSplitVariant: Bool = false, frenchSplitLanguage: String = "fr",
                    onDemandFeature: Bool = false, assetPacks: [(name: String, delivery: Int)] = []) -> [UInt8] {
        var result = ProtoWriter()
        let splitSDKs = secondSplitVariant ? [21, 23] : [21]
        func sdk(_ w: inout ProtoWriter, value: Int, alternatives: [Int]) {
            w.message(1) { $0.message(1) { $0.int(1, value) } }  // value: SdkVersion { min: Int32Value { value } }
            for alternative in alternatives { w.message(2) { $0.message(1) { $0.int(1, alternative) } } }
        }
        var number = 0
        for abi in abis {
            for density in densities {
                let path = "standalones/standalone-\(abi.0)_\(density.0).apk"
                guard !omitting.contains(path) else { continue }
                func targeting(_ w: inout ProtoWriter, sdkField: Int, abiField: Int, densityField: Int) {
                    w.message(sdkField) { sdk(&$0, value: 15, alternatives: splitSDKs) }
                    w.message(abiField) { t in
                        t.message(1) { $0.int(1, abi.2) }
                        for other in abis where other.2 != abi.2 { t.message(2) { $0.int(1, other.2) } }
                    }
                    w.message(densityField) { t in
                        t.message(1) { $0.int(1, density.1) }
                        for other in densities where other.1 != density.1 { t.message(2) { $0.int(1, other.1) } }
                    }
                }
                result.message(1) { variant in
                    variant.message(1) { targeting(&$0, sdkField: 1, abiField: 2, densityField: 3) }  // VariantTargeting
                    variant.message(2) { set in
                        set.message(1) { $0.string(1, "base") }
                        set.message(2) { apk in
                            apk.message(1) { targeting(&$0, sdkField: 5, abiField: 1, densityField: 4) }  // ApkTargeting
                            apk.string(2, path)
                            apk.message(4) { $0.string(1, "base") }  // StandaloneApkMetadata
                        }
                    }
                    variant.int(3, number)
                }
                number += 1
            }
        }
        for (index, minimum) in splitSDKs.enumerated() {
        let others = [15] + splitSDKs.filter { $0 != minimum }
        result.message(1) { variant in
            variant.message(1) { $0.message(1) { sdk(&$0, value: minimum, alternatives: others) } }
            variant.message(2) { set in
                set.message(1) { $0.string(1, "base") }
                let splits: [(String, String, (inout ProtoWriter) -> Void)] = [
                    ("splits/base-master.apk", "", { _ in }),
                    ("splits/base-fr.apk", "config.fr", { $0.message(3) { $0.string(1, frenchSplitLanguage) } }),
                    ("splits/base-xhdpi.apk", "config.xhdpi", { $0.message(4) { $0.message(1) { $0.int(1, 6) } } }),
                    ("splits/base-arm64_v8a.apk", "config.arm64_v8a", { $0.message(1) { t in t.message(1) { $0.int(1, 3) }; t.message(2) { $0.int(1, 4) } } }),
                    ("splits/base-x86.apk", "config.x86", { $0.message(1) { t in t.message(1) { $0.int(1, 4) }; t.message(2) { $0.int(1, 3) } } }),
                ]
                for (path, id, targeting) in splits {
                    set.message(2) { apk in
                        apk.message(1) { t in t.message(5) { sdk(&$0, value: minimum, alternatives: others) }; targeting(&t) }
                        apk.string(2, index == 0 ? path : path.replacingOccurrences(of: ".apk", with: "_2.apk"))
                        apk.message(3) { $0.string(1, id); if id.isEmpty { $0.int(2, 1) } }  // SplitApkMetadata
                    }
                }
            }
            if onDemandFeature && index == 0 {
                variant.message(2) { set in
                    set.message(1) { $0.string(1, "feature"); $0.int(6, 2) }  // ModuleMetadata { name, delivery_type ON_DEMAND }
                    set.message(2) { apk in
                        apk.string(2, "splits/feature-master.apk")
                        apk.message(3) { $0.string(1, "feature"); $0.int(2, 1) }
                    }
                }
            }
            variant.int(3, number)
        }
        number += 1
        }
        for pack in assetPacks {
            result.message(3) { set in
                set.message(1) { $0.string(1, pack.name); $0.int(4, pack.delivery) }  // AssetModuleMetadata { name, delivery_type }
                set.message(2) { apk in
                    apk.string(2, "asset-slices/\(pack.name)-master.apk")
                    apk.message(7) { $0.string(1, pack.name); $0.int(2, 1) }  // asset_slice_metadata: SplitApkMetadata
                }
            }
        }
        result.message(2) { $0.string(1, "1.15.6") }  // Bundletool { version }
        result.string(4, "com.example.set")
        return result.bytes
    }

    /// The `.apks` at `directory/name`: entries stored (as bundletool stores them) in bundletool's order,
    /// `toc.pb` first; `replacing` swaps an entry's APK, `toc` the table of contents.
    func pack(in directory: URL, name: String = "app-\(UUID().uuidString.prefix(6)).apks", replacing: [String: String] = [:],
              toc: [UInt8] = StandaloneSetFixture.toc(), secondSplitVariant: Bool = false, adding: [String: String] = [:]) throws -> String {
        let staging = directory.appendingPathComponent("pack-\(UUID().uuidString)")
        try TestSupport.write(toc, to: "toc.pb", in: staging)
        var entries = self.entries
        if secondSplitVariant {
            for (first, second) in zip(Self.splitNames, Self.secondVariantNames) where entries[second] == nil { entries[second] = entries[first] }
        }
        for (entry, path) in entries.merging(replacing, uniquingKeysWith: { $1 }).merging(adding, uniquingKeysWith: { $1 }) {
            try TestSupport.write(TestSupport.readBytes(path), to: entry, in: staging)
        }
        let output = directory.appendingPathComponent(name).path
        let order = ["toc.pb"] + Self.splitNames + (secondSplitVariant ? Self.secondVariantNames : []) + adding.keys.sorted() + Self.standaloneNames
        let zipped = try TestSupport.run("zip", ["-q", "-X", "-0", output] + order, currentDirectory: staging.path)
        guard zipped.succeeded else { throw FixtureError(message: "zip failed:\n\(zipped)") }
        return output
    }
}
