#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import APKCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a device offers that decides which configuration splits it gets: bundletool's device spec (the JSON of
/// `bundletool get-device-spec`: `supportedAbis`, `supportedLocales`, `screenDensity`, `sdkVersion`), or the
/// same read from a device with adb (`probeCommand`).
public struct DeviceSpec: Sendable, Equatable {
    /// ABIs in the device's order of preference (`arm64-v8a`, `armeabi-v7a`, …).
    public var supportedABIs: [String]
    /// Locales such as `fr-FR` (BCP 47; `_` is accepted too).
    public var supportedLocales: [String]
    /// Screen density in dpi.
    public var screenDensity: Int?
    public var sdkVersion: Int?

    public init(supportedABIs: [String] = [], supportedLocales: [String] = [], screenDensity: Int? = nil, sdkVersion: Int? = nil) {
        self.supportedABIs = supportedABIs
        self.supportedLocales = supportedLocales
        self.screenDensity = screenDensity
        self.sdkVersion = sdkVersion
    }

    /// Parses bundletool's device-spec JSON; `path` is for messages.
    public init(json: [UInt8], path: String) throws {
        guard let object = JSONValue.object(from: json) else {
            throw APKSetError.unreadable(path, "not a JSON object (bundletool's device spec: {\"supportedAbis\": [\"arm64-v8a\"], \"supportedLocales\": [\"en-US\"], \"screenDensity\": 480, \"sdkVersion\": 33})")
        }
        supportedABIs = object["supportedAbis"]?.strings ?? []
        supportedLocales = object["supportedLocales"]?.strings ?? []
        screenDensity = object["screenDensity"]?.integer.map { Int($0) }
        sdkVersion = object["sdkVersion"]?.integer.map { Int($0) }
        if supportedABIs.isEmpty && supportedLocales.isEmpty && screenDensity == nil {
            throw APKSetError.unreadable(path, "the device spec names no supportedAbis, supportedLocales or screenDensity")
        }
    }

    /// One `adb shell` command line that prints everything `init(probeOutput:)` reads: one round trip to the
    /// device instead of four. `wm density` prints "Physical density: 420" (and "Override density: …" when set).
    public static let probeCommand = "echo abis=$(getprop ro.product.cpu.abilist); echo locales=$(getprop persist.sys.locale),$(getprop ro.product.locale); echo sdk=$(getprop ro.build.version.sdk); wm density"

    /// Reads the output of `probeCommand`.
    public init(probeOutput: String) {
        var abis: [String] = [], locales: [String] = [], physical: Int?, override: Int?, sdk: Int?
        for raw in probeOutput.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = raw.trimmingWhitespace()
            func value(after prefix: String) -> String? { line.hasPrefix(prefix) ? line.dropFirst(prefix.count).trimmingWhitespace() : nil }
            if let text = value(after: "abis=") { abis = text.split(separator: ",").map(String.init) }
            if let text = value(after: "locales=") { locales = text.split(separator: ",").map(String.init) }
            if let text = value(after: "sdk=") { sdk = Int(text) }
            if let text = value(after: "Physical density:") { physical = Int(text) }
            if let text = value(after: "Override density:") { override = Int(text) }
        }
        var unique: [String] = []
        for locale in locales where !unique.contains(locale) { unique.append(locale) }
        self.init(supportedABIs: abis, supportedLocales: unique, screenDensity: override ?? physical, sdkVersion: sdk)
    }
}

/// Which APKs of a set a device gets, as bundletool's `install-apks` chooses: the base and every split that is
/// not a configuration split always; among configuration splits of one dimension (for the base or one
/// feature), the device's first supported ABI that the set has, the density Android's resource matching
/// prefers for the device's (`isBetterDensity`), and every language among the device's locales. A dimension the
/// device spec says nothing about keeps all its splits.
public enum SplitSelection {
    /// The dimension a configuration split's name (`config.arm64_v8a`, `config.xxhdpi`, aapt's `config.xhdpi_v4`,
    /// `config.fr`, `feature.config.fr`) targets.
    public enum Dimension: Equatable, Sendable {
        case abi(String)        // as Android names it: arm64-v8a
        case density(Int)       // dpi
        case language(String)   // fr
    }

    /// bundletool's split-name spelling of each ABI → Android's.
    static let abis = ["armeabi": "armeabi", "armeabi_v7a": "armeabi-v7a", "arm64_v8a": "arm64-v8a", "x86": "x86", "x86_64": "x86_64",
                       "mips": "mips", "mips64": "mips64", "riscv64": "riscv64"]
    static let densities = ["ldpi": 120, "mdpi": 160, "tvdpi": 213, "hdpi": 240, "xhdpi": 320, "xxhdpi": 480, "xxxhdpi": 640]

    /// The dimension of the split named `splitName`, nil when it is not a configuration split apkpatch knows.
    public static func dimension(of splitName: String) -> Dimension? {
        guard let range = splitName.ranges(of: "config.").last,
              range.lowerBound == splitName.startIndex || splitName[splitName.index(before: range.lowerBound)] == "." else { return nil }
        var qualifier = String(splitName[range.upperBound...])
        if let abi = abis[qualifier] { return .abi(abi) }
        // aapt appends the platform version a qualifier needs (xhdpi_v4).
        if let v = qualifier.ranges(of: "_v").last, Int(qualifier[v.upperBound...]) != nil {
            qualifier = String(qualifier[..<v.lowerBound])
        }
        if let dpi = densities[qualifier] { return .density(dpi) }
        let language = qualifier.split(whereSeparator: { $0 == "_" || $0 == "-" }).first.map(String.init) ?? ""
        if (2...3).contains(language.count) && language.allSatisfy({ $0.isLetter && $0.isASCII }) { return .language(language.lowercased()) }
        return nil
    }

    /// Indices into `members` (split name and `configForSplit` of each; nil split name: the base) to install
    /// on a device described by `spec`, in the given order.
    public static func select(_ members: [(splitName: String?, configForSplit: String?)], for spec: DeviceSpec) -> [Int] {
        var chosen = Set<Int>()
        // Configuration splits grouped by what they configure (the base or a feature) and their kind of dimension.
        var groups: [String: [(index: Int, dimension: Dimension)]] = [:]
        for (index, member) in members.enumerated() {
            guard let name = member.splitName, let dimension = dimension(of: name) else { chosen.insert(index); continue }
            let kind: String
            switch dimension {
            case .abi: kind = "abi"
            case .density: kind = "density"
            case .language: kind = "language"
            }
            groups[(member.configForSplit ?? "") + "/" + kind, default: []].append((index, dimension))
        }
        let languages = Set(spec.supportedLocales.compactMap { $0.split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map { $0.lowercased() } })
        for group in groups.values {
            switch group[0].dimension {
            case .abi:
                guard !spec.supportedABIs.isEmpty else { group.forEach { chosen.insert($0.index) }; continue }
                if let best = spec.supportedABIs.lazy.compactMap({ abi in group.first { $0.dimension == .abi(abi) } }).first {
                    chosen.insert(best.index)
                }
            case .density:
                guard let density = spec.screenDensity else { group.forEach { chosen.insert($0.index) }; continue }
                func dpi(_ entry: (index: Int, dimension: Dimension)) -> Int { if case .density(let d) = entry.dimension { return d }; return 0 }
                var best = group[0]
                for entry in group.dropFirst() where isBetterDensity(dpi(entry), than: dpi(best), for: density) { best = entry }
                chosen.insert(best.index)
            case .language:
                guard !spec.supportedLocales.isEmpty else { group.forEach { chosen.insert($0.index) }; continue }
                for entry in group { if case .language(let l) = entry.dimension, languages.contains(l) { chosen.insert(entry.index) } }
            }
        }
        return chosen.sorted()
    }

    /// Whether density `a` suits a device of `deviceDPI` better than `b`, as bundletool's
    /// `ScreenDensitySelector` decides after the framework's `ResTable_config::isBetterThan`: the density at or
    /// above the device's is preferred unless the one below is much closer (scaling down is twice as good as
    /// scaling up); `anydpi` always wins.
    public static func isBetterDensity(_ a: Int, than b: Int, for deviceDPI: Int) -> Bool {
        let anyDensity = 0xfffe
        let desired = deviceDPI == 0 || deviceDPI == anyDensity ? 160 : deviceDPI
        if a == b { return false }
        if a == anyDensity { return true }
        if b == anyDensity { return false }
        let (lower, higher) = (min(a, b), max(a, b))
        let lowerIsBetter: Bool
        if desired >= higher { lowerIsBetter = false }
        else if desired <= lower { lowerIsBetter = true }
        else { lowerIsBetter = (2 * lower - desired) * higher > desired * desired }
        return lowerIsBetter == (a == lower)
    }
}
