import APKCore
import ArgumentParser
import BinaryXML
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
import Overlay
import Unpack

extension APKPatch {
    /// `apkpatch decode`: the manifest, every XML file under res/ and the values as editable text (apktool's `d` for those files only).
    struct Decode: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "decode",
            abstract: "Write AndroidManifest.xml, the XML files under res/ and the res/values*/ files as editable text.",
            discussion: """
            Binary XML is shown the way apktool shows it: android: attributes by name, references as \
            @string/app_name or @android:style/Theme, enum and flag values by name. Copy what you change into a \
            patch directory: apkpatch compiles text XML back to binary and applies values files (strings.xml, \
            bools.xml, colors.xml, styles.xml…, one per type as apktool writes them) to resources.arsc, changing \
            and adding values.

            Examples:
              apkpatch decode app.apk -o decoded/
              apkpatch unpack app.apk -o app/ && apkpatch decode app.apk -o app/
            """
        )

        @Argument(help: "The APK to read.") var apk: String
        @Option(name: [.customShort("o"), .long], help: "Directory to write into (created if missing; decoded files are overwritten).")
        var output: String
        @Flag(name: .long, help: "Compact layout instead of keeping each element on its original source line.")
        var compact = false

        func run() throws {
            let archive = try APKArchive(path: apk)
            // Only the manifest, the resource table and res/ XML are decoded, but an APK with any damaged entry is
            // refused as every command refuses it, before anything is written.
            try archive.checkEntries()
            let summary = try ResourceDecoder.decodeAll(archive: archive, into: output,
                                                        options: TextXMLOptions(keepsLineNumbers: !compact))
            for file in summary.files { print(file) }
            print("Decoded \(summary.files.count) files into \(output)")
        }
    }
}
