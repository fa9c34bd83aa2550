/// bundletool's table of contents of a `.apks` (`toc.pb`): a `BuildApksResult` protocol buffer
/// (`commands.proto`, `targeting.proto` in google/bundletool), read for the fields that say which APKs a device
/// gets: the variants with their targeting (SDK version, ABI, screen density), each variant's APKs with their
/// path, targeting and kind (split with its id, or standalone).
///
/// A variant is a group of APKs for a part of the device space; APKs of two variants never go to one device.
/// `build-apks` writes a split variant (`splits/`, Android 5.0 and later) and, for an app whose minSdkVersion
/// is below 21, standalone variants (`standalones/`, one complete APK each, sharded by ABI and density).
public struct BundletoolTOC: Sendable, Equatable {
    /// The values of one targeting dimension and its alternatives (the siblings that another variant or APK
    /// serves), as every `…Targeting` message holds them.
    public struct Dimension<Value: Sendable & Equatable>: Sendable, Equatable {
        public var values: [Value] = []
        public var alternatives: [Value] = []
        public var isEmpty: Bool { values.isEmpty && alternatives.isEmpty }
        public init(values: [Value] = [], alternatives: [Value] = []) { self.values = values; self.alternatives = alternatives }
    }

    /// Variant- or APK-level targeting: the dimensions that choose among standalone and split variants.
    public struct Targeting: Sendable, Equatable {
        /// `SdkVersion.min` of each value (nil: no minimum).
        public var sdkVersion = Dimension<Int?>()
        /// ABIs as Android names them (`arm64-v8a`).
        public var abi = Dimension<String>()
        /// Screen densities in dpi (aliases converted as bundletool converts them).
        public var screenDensity = Dimension<Int>()
        /// ISO-639 languages (APK targeting only).
        public var language = Dimension<String>()
        /// Whether the targeting names several ABIs per value (`MultiAbiTargeting`, APEX and system images).
        public var hasMultiABI = false
        /// The variant needs the SDK runtime (Android 14's privacy sandbox).
        public var requiresSDKRuntime = false
        public init() {}
    }

    /// What an APK of a variant is.
    public enum Kind: Sendable, Equatable {
        /// A split APK: `config.xhdpi`, a feature's name, or "" for a module's master split.
        case split(id: String, isMaster: Bool)
        /// A complete APK with the named modules fused into it.
        case standalone(fusedModules: [String])
        /// An instant app's split APK.
        case instant
        /// A system, asset-slice, APEX or archived APK.
        case other
    }

    public struct APK: Sendable, Equatable {
        public var module: String
        /// Its module is delivered at install time (`ModuleMetadata.delivery_type` INSTALL_TIME, or for older
        /// tables not `on_demand`), so bundletool's `install-apks` installs it; on-demand modules it leaves out.
        public var isInstallTime = true
        public var path: String
        public var targeting: Targeting
        public var kind: Kind
        public var isStandalone: Bool { if case .standalone = kind { return true }; return false }
    }

    public struct Variant: Sendable, Equatable {
        public var number: Int
        public var targeting: Targeting
        public var apks: [APK]
        /// The variant holds a standalone APK (bundletool's `ApkMatcher` tells variants apart so).
        public var isStandalone: Bool { apks.contains(where: \.isStandalone) }
        /// A variant of split APKs for installed apps (no standalone, instant or SDK-runtime one).
        public var isSplitVariant: Bool {
            !isStandalone && !isInstant && !targeting.requiresSDKRuntime && apks.contains { apk in
                if case .split = apk.kind { return true }
                return false
            }
        }
        /// The SDK version the variant starts at (0: none).
        public var minimumSDK: Int {
            guard let first = targeting.sdkVersion.values.first, let minimum = first else { return 0 }
            return minimum
        }
        /// Every APK is an instant app's (`VariantMatcher.isVariantInstant`).
        public var isInstant: Bool { !apks.isEmpty && apks.allSatisfy { $0.kind == .instant } }
    }

    public var packageName: String
    public var variants: [Variant]
    /// The asset packs' APKs (`asset_slice_set`, `asset-slices/` of a `.apks`), each with its module and
    /// whether the pack is delivered at install time (`AssetModuleMetadata.delivery_type`): those
    /// `install-apks` installs with the app's splits; on-demand and fast-follow packs it leaves out.
    public var assetSlices: [APK] = []

    /// Reads `toc.pb`'s bytes; `label` is for messages.
    public init(bytes: [UInt8], label: String) throws {
        var packageName = ""
        var variants: [Variant] = [], assetSlices: [APK] = []
        do {
            var reader = ProtoReader(bytes[...])
            while let field = try reader.next() {
                switch field.number {
                case 1: variants.append(try Self.variant(field.message()))
                case 3: assetSlices += try Self.apkSet(field.message(), deliveryTypeField: 4)
                case 4: packageName = try field.string()
                default: break
                }
            }
        } catch let error as ProtoReader.Malformed {
            throw APKSetError.unreadable(label, "not a bundletool table of contents (BuildApksResult): \(error.reason)")
        }
        self.packageName = packageName
        self.variants = variants
        self.assetSlices = assetSlices
    }

    /// bundletool's `ScreenDensity.DensityAlias` → dpi (`ResourcesUtils.DENSITY_ALIAS_TO_DPI_MAP`).
    static let densityAliases: [UInt64: Int] = [0: 0, 1: 0xffff, 2: 120, 3: 160, 4: 213, 5: 240, 6: 320, 7: 480, 8: 640]
    /// bundletool's `Abi.AbiAlias` → Android's ABI name.
    static let abiAliases: [UInt64: String] = [1: "armeabi", 2: "armeabi-v7a", 3: "arm64-v8a", 4: "x86", 5: "x86_64", 6: "mips", 7: "mips64", 8: "riscv64"]

    private static func variant(_ message: ProtoReader) throws -> Variant {
        var reader = message
        var variant = Variant(number: 0, targeting: Targeting(), apks: [])
        while let field = try reader.next() {
            switch field.number {
            case 1: variant.targeting = try targeting(field.message(), variantLevel: true)
            case 2: variant.apks += try apkSet(field.message())
            case 3: variant.number = Int(truncatingIfNeeded: try field.varint())
            default: break
            }
        }
        return variant
    }

    /// `ApkSet` (`ModuleMetadata`: name 1, on_demand_deprecated 2, delivery_type 6) or `AssetSliceSet`
    /// (`AssetModuleMetadata`: name 1, on_demand_deprecated 2, delivery_type 4): the module's metadata (1) and
    /// its APKs' descriptions (2). DeliveryType: 1 INSTALL_TIME, 2 ON_DEMAND, 3 FAST_FOLLOW.
    private static func apkSet(_ message: ProtoReader, deliveryTypeField: Int = 6) throws -> [APK] {
        var reader = message
        var module = "", deliveryType: UInt64 = 0, onDemand = false
        var descriptions: [ProtoReader] = []
        while let field = try reader.next() {
            switch field.number {
            case 1:
                var metadata = try field.message()
                while let inner = try metadata.next() {
                    switch inner.number {
                    case 1: module = try inner.string()
                    case 2: onDemand = try inner.varint() != 0
                    case deliveryTypeField: deliveryType = try inner.varint()
                    default: break
                    }
                }
            case 2: descriptions.append(try field.message())
            default: break
            }
        }
        // install-apks installs an asset pack only when its delivery type says INSTALL_TIME (ApkMatcher's
        // getUpfrontAssetModules); a feature module also when an older table says not on demand.
        let isInstallTime = deliveryType == 0 && deliveryTypeField == 6 ? !onDemand : deliveryType == 1
        return try descriptions.map { var apk = try apk($0, module: module); apk.isInstallTime = isInstallTime; return apk }
    }

    private static func apk(_ message: ProtoReader, module: String) throws -> APK {
        var reader = message
        var apk = APK(module: module, path: "", targeting: Targeting(), kind: .other)
        while let field = try reader.next() {
            switch field.number {
            case 1: apk.targeting = try targeting(field.message(), variantLevel: false)
            case 2: apk.path = try field.string()
            case 3:
                var metadata = try field.message()
                var id = "", isMaster = false
                while let inner = try metadata.next() {
                    if inner.number == 1 { id = try inner.string() }
                    if inner.number == 2 { isMaster = try inner.varint() != 0 }
                }
                apk.kind = .split(id: id, isMaster: isMaster)
            case 4:
                var metadata = try field.message()
                var fused: [String] = []
                while let inner = try metadata.next() { if inner.number == 1 { fused.append(try inner.string()) } }
                apk.kind = .standalone(fusedModules: fused)
            case 5: apk.kind = .instant
            case 6...9: apk.kind = .other
            default: break
            }
        }
        return apk
    }

    /// `VariantTargeting` (sdk 1, abi 2, density 3, multi-ABI 4, SDK runtime 6) or `ApkTargeting` (abi 1,
    /// language 3, density 4, sdk 5, multi-ABI 7).
    private static func targeting(_ message: ProtoReader, variantLevel: Bool) throws -> Targeting {
        var reader = message
        var targeting = Targeting()
        let (sdk, abi, density, language, multiABI) = variantLevel ? (1, 2, 3, -1, 4) : (5, 1, 4, 3, 7)
        while let field = try reader.next() {
            switch field.number {
            case sdk: targeting.sdkVersion = try dimension(field.message()) { try sdkVersion($0.message()) }
            case abi: targeting.abi = try dimension(field.message()) { try abiName($0.message()) }
            case density: targeting.screenDensity = try dimension(field.message()) { try dpi($0.message()) }
            case language: targeting.language = try dimension(field.message()) { try $0.string() }
            case multiABI: targeting.hasMultiABI = !(try dimension(field.message()) { _ in 0 }).isEmpty
            case 6 where variantLevel:
                var runtime = try field.message()
                while let inner = try runtime.next() { if inner.number == 1 { targeting.requiresSDKRuntime = try inner.varint() != 0 } }
            default: break
            }
        }
        return targeting
    }

    /// A `…Targeting` message: repeated `value` (1) and `alternatives` (2), each read by `read`.
    private static func dimension<T: Sendable & Equatable>(_ message: ProtoReader, _ read: (ProtoReader.Field) throws -> T) throws -> Dimension<T> {
        var reader = message
        var result = Dimension<T>()
        while let field = try reader.next() {
            guard field.number == 1 || field.number == 2 else { continue }
            let value = try read(field)
            if field.number == 1 { result.values.append(value) } else { result.alternatives.append(value) }
        }
        return result
    }

    /// `SdkVersion { google.protobuf.Int32Value min = 1; }`.
    private static func sdkVersion(_ message: ProtoReader) throws -> Int? {
        var reader = message
        var minimum: Int?
        while let field = try reader.next() {
            guard field.number == 1 else { continue }
            var wrapper = try field.message()
            minimum = 0  // a present wrapper holding the default value is min 0
            while let inner = try wrapper.next() { if inner.number == 1 { minimum = Int(Int32(truncatingIfNeeded: try inner.varint())) } }
        }
        return minimum
    }

    /// `Abi { AbiAlias alias = 1; }`.
    private static func abiName(_ message: ProtoReader) throws -> String {
        var reader = message
        var alias: UInt64 = 0
        while let field = try reader.next() { if field.number == 1 { alias = try field.varint() } }
        return abiAliases[alias] ?? "unknown-abi-\(alias)"
    }

    /// `ScreenDensity { oneof { DensityAlias density_alias = 1; int32 density_dpi = 2; } }` in dpi.
    private static func dpi(_ message: ProtoReader) throws -> Int {
        var reader = message
        var dpi = 0
        while let field = try reader.next() {
            if field.number == 1 { dpi = densityAliases[try field.varint()] ?? 0 }
            if field.number == 2 { dpi = Int(Int32(truncatingIfNeeded: try field.varint())) }
        }
        return dpi
    }
}

extension BundletoolTOC {
    /// What a device gets from a `.apks` holding standalone APKs or several split variants.
    public enum Choice: Sendable, Equatable {
        /// A split variant, by the paths of its APKs (the base and the configuration splits, of which the
        /// device needs some); nil: the split variant of the lowest SDK version.
        case splits(Set<String>?)
        /// One standalone APK, by its path in the container.
        case standalone(String)
    }

    /// The split variants (no standalone, instant or SDK-runtime APKs), lowest SDK version first.
    public var splitVariants: [Variant] {
        variants.filter { $0.isSplitVariant }.sorted { $0.minimumSDK < $1.minimumSDK }
    }

    /// The variant a device described by `spec` gets, as bundletool's `install-apks` chooses it
    /// (`VariantMatcher`: SDK version, ABI and screen density, each only when the spec names it): a standalone
    /// variant only on a device below the split variants' SDK version (Android 5.0, API 21), and then the
    /// standalone APK for its ABI and density; else the split variant of the highest SDK version the device
    /// has (bundletool adds ones from API 23, 29, … with uncompressed native libraries or dex). A spec without
    /// an SDK version gets the lowest split variant, which every device since Android 5.0 installs.
    public func choice(for spec: DeviceSpec) throws -> Choice {
        guard let sdk = spec.sdkVersion else { return .splits(nil) }
        let candidates = variants.filter { !$0.isInstant && !$0.targeting.requiresSDKRuntime }
        let matching = candidates.filter { Self.matches($0.targeting, spec, sdk: sdk) }
        guard let variant = matching.first else {
            let minimums = candidates.compactMap { $0.targeting.sdkVersion.values.first ?? nil }
            throw APKSetError.noVariant(sdk: sdk, abis: spec.supportedABIs, density: spec.screenDensity, minimumSDK: minimums.min())
        }
        guard matching.contains(where: \.isStandalone) else { return .splits(Set(variant.apks.map(\.path))) }
        guard matching.count == 1 else {
            throw APKSetError.ambiguousVariant(matching.flatMap(\.apks).filter(\.isStandalone).map(\.path))
        }
        let standalones = variant.apks.filter(\.isStandalone)
        let fitting = standalones.count == 1 ? standalones : standalones.filter { Self.matches($0.targeting, spec, sdk: sdk) }
        guard fitting.count == 1 else { throw APKSetError.ambiguousVariant(fitting.map(\.path)) }
        return .standalone(fitting[0].path)
    }

    static func matches(_ targeting: Targeting, _ spec: DeviceSpec, sdk: Int?) -> Bool {
        (sdk.map { matchesSDK(targeting.sdkVersion, $0) } ?? true)
            && (spec.supportedABIs.isEmpty || matchesABI(targeting.abi, spec.supportedABIs))
            && (spec.screenDensity ?? 0 == 0 || matchesDensity(targeting.screenDensity, spec.screenDensity ?? 0))
    }

    /// The paths among `paths` (APKs of one split variant) that a device gets, as bundletool's `ApkMatcher`
    /// matches each APK's targeting (SDK version, ABI, screen density, language) among the install-time
    /// modules' APKs; a dimension the spec says nothing about matches every APK, and an APK the table does not
    /// describe is kept.
    public func matchingAPKs(_ paths: [String], for spec: DeviceSpec) -> [String] {
        var targeting: [String: Targeting] = [:], installTime: [String: Bool] = [:]
        for apk in variants.flatMap(\.apks) + assetSlices where targeting[apk.path] == nil {
            targeting[apk.path] = apk.targeting
            installTime[apk.path] = apk.isInstallTime
        }
        let languages = Set(spec.supportedLocales.compactMap { $0.split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map { $0.lowercased() } })
        return paths.filter { path in
            guard let apk = targeting[path] else { return true }
            return installTime[path] != false && Self.matches(apk, spec, sdk: spec.sdkVersion) && (languages.isEmpty || Self.matchesLanguage(apk.language, languages))
        }
    }

    /// `LanguageMatcher`: a split for some of the device's languages; a fallback split (alternatives only)
    /// unless its alternatives cover every language of the device.
    static func matchesLanguage(_ dimension: Dimension<String>, _ languages: Set<String>) -> Bool {
        guard !dimension.isEmpty else { return true }
        if !dimension.values.isEmpty { return !languages.isDisjoint(with: dimension.values) }
        return !languages.isSubset(of: dimension.alternatives)
    }

    /// `SdkVersionMatcher`: the value's minimum is at most the device's, and no alternative fits better (a
    /// higher minimum still at most the device's).
    static func matchesSDK(_ dimension: Dimension<Int?>, _ sdk: Int) -> Bool {
        let value = dimension.values.first ?? nil
        guard (value ?? 0) <= sdk else { return false }
        return !dimension.alternatives.contains { alternative in
            guard let minimum = alternative else { return false }
            return minimum <= sdk && minimum > (value ?? 0)
        }
    }

    /// `AbiMatcher`: the first of the device's ABIs (in its order of preference) found among the values
    /// matches, found first among the alternatives does not; none found matches only a targeting without values.
    static func matchesABI(_ dimension: Dimension<String>, _ abis: [String]) -> Bool {
        guard !dimension.isEmpty else { return true }
        for abi in abis {
            if dimension.values.contains(abi) { return true }
            if dimension.alternatives.contains(abi) { return false }
        }
        return dimension.values.isEmpty
    }

    /// `ScreenDensityMatcher`: of the values and alternatives, the density Android's resource matching would
    /// pick for the device must be among the values.
    static func matchesDensity(_ dimension: Dimension<Int>, _ deviceDPI: Int) -> Bool {
        let all = dimension.values + dimension.alternatives
        guard var best = all.first else { return true }
        for dpi in all.dropFirst() where SplitSelection.isBetterDensity(dpi, than: best, for: deviceDPI) { best = dpi }
        return dimension.values.contains(best)
    }
}

/// A protocol buffer reader for the wire format (varint, 64-bit, length-delimited, 32-bit fields), bounded by
/// the bytes it is given: every length is checked against what is left, so a hostile `toc.pb` can only be
/// refused, never read past.
struct ProtoReader {
    struct Malformed: Error { let reason: String }

    struct Field {
        let number: Int
        let wireType: UInt8
        /// The varint's value, or the payload of a length-delimited field.
        let number64: UInt64
        let payload: ArraySlice<UInt8>

        func varint() throws -> UInt64 {
            guard wireType == 0 else { throw Malformed(reason: "field \(number) is not a varint") }
            return number64
        }
        func message() throws -> ProtoReader {
            guard wireType == 2 else { throw Malformed(reason: "field \(number) is not a message") }
            return ProtoReader(payload)
        }
        func string() throws -> String {
            guard wireType == 2 else { throw Malformed(reason: "field \(number) is not a string") }
            guard let text = String(validating: payload, as: UTF8.self) else { throw Malformed(reason: "field \(number) is not UTF-8") }
            return text
        }
    }

    private var bytes: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    /// The next field, or nil at the end.
    mutating func next() throws -> Field? {
        guard !bytes.isEmpty else { return nil }
        let key = try readVarint()
        let number = key >> 3, wireType = UInt8(key & 7)
        guard number > 0, number <= 536_870_911 else { throw Malformed(reason: "field number \(number) out of range") }
        switch wireType {
        case 0:
            return Field(number: Int(number), wireType: 0, number64: try readVarint(), payload: [])
        case 1, 5:
            let size = wireType == 1 ? 8 : 4
            guard bytes.count >= size else { throw Malformed(reason: "truncated field \(number)") }
            let payload = bytes.prefix(size)
            bytes = bytes.dropFirst(size)
            return Field(number: Int(number), wireType: wireType, number64: 0, payload: payload)
        case 2:
            let length = try readVarint()
            guard length <= UInt64(bytes.count) else { throw Malformed(reason: "field \(number) is \(length) bytes long, \(bytes.count) left") }
            let payload = bytes.prefix(Int(length))
            bytes = bytes.dropFirst(Int(length))
            return Field(number: Int(number), wireType: 2, number64: 0, payload: payload)
        default:
            throw Malformed(reason: "field \(number) has wire type \(wireType), which toc.pb does not use")
        }
    }

    private mutating func readVarint() throws -> UInt64 {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 70, by: 7) {
            guard let byte = bytes.popFirst() else { throw Malformed(reason: "truncated varint") }
            value |= UInt64(byte & 0x7f) << UInt64(shift)
            if byte & 0x80 == 0 { return value }
        }
        throw Malformed(reason: "varint longer than 10 bytes")
    }
}
