import APKCore

extension ManifestSummary {
    /// Why apksig's `AndroidBinXmlParser` cannot read the manifest through for
    /// `ApkUtils.getMinSdkVersionFromBinaryAndroidManifest` (which walks every element, taking the largest of the
    /// `<uses-sdk>` values), or nil when it can.
    ///
    /// Android's `ResXMLTree` takes the last string pool and the last resource map before the first node and
    /// ignores the others; apksig's parser throws on a second one ("Multiple string pools not supported",
    /// "Multiple resource maps not supported"). apksigner then cannot tell the APK's minSdkVersion: it signs such
    /// an APK only with `--min-sdk-version`, and `apksigner verify` refuses it without one.
    public static func apksigMinSdkVersionBlocker(inBinaryXML bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { bytes in
            guard let document = try? Chunk.read(in: bytes, at: 0, limit: bytes.count, what: "binary XML document"),
                  document.type == ChunkType.xml else { return nil }
            var pools = 0, maps = 0
            var offset = document.headerEnd
            while offset < document.end, let chunk = try? Chunk.read(in: bytes, at: offset, limit: document.end, what: "XML chunk") {
                offset = chunk.end
                switch chunk.type {
                case ChunkType.stringPool:
                    pools += 1
                    if pools > 1 { return "a second string pool at offset \(chunk.offset), which apksig's manifest parser does not support" }
                case ChunkType.xmlResourceMap:
                    maps += 1
                    if maps > 1 { return "a second resource map at offset \(chunk.offset), which apksig's manifest parser does not support" }
                default:
                    continue
                }
            }
            return nil
        }
    }
}
