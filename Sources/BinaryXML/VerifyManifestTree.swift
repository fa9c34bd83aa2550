extension XMLTree {
    /// Parses AndroidManifest.xml for `apkpatch verify`: every check and error of `init(binaryXML:)`, in the same
    /// order, but only the top-level element(s) and their `<uses-sdk>` and `<application>` children are built
    /// (without their descendants' strings being decoded). That is all the verifier reads (minSdkVersion,
    /// targetSdkVersion, targetSandboxVersion, extractNativeLibs), and a platform-sized manifest (framework-res:
    /// 220 KB, thousands of strings) then costs a fraction of a full decode.
    ///
    /// A `<uses-sdk>` or `<application>` nested deeper than a top-level element's child may be built too; callers
    /// read only direct children of `root`.
    package static func manifestForVerification(binaryXML bytes: [UInt8]) throws -> XMLTree {
        try parse(binaryXML: bytes, keeping: { _, name in name == "uses-sdk" || name == "application" })
    }
}
