import BinaryXML
import ResourceTable
import Foundation
import Testing
import TestSupport

@Suite(.removesTemporaryDirectories) struct ManifestSummaryTests {
    /// Builds `fixture` with aapt and returns (APK path, manifest bytes, badging output).
    func built(_ fixture: FixtureAPK) throws -> (String, [UInt8], String) {
        let dir = try TestSupport.makeTemporaryDirectory("binxml-summary")
        let apk = try fixture.build(in: dir)
        return (apk, try Oracle.entry("AndroidManifest.xml", in: apk), try Oracle.aapt(["dump", "badging", apk]))
    }

    @Test func matchesBadgingForPlainFixture() throws {
        var fixture = FixtureAPK()
        fixture.packageName = "org.example.summary"
        fixture.versionCode = 4242
        fixture.versionName = "4.2-beta"
        fixture.minSdk = 23
        fixture.targetSdk = 34
        let (_, manifest, badging) = try built(fixture)
        let summary = try ManifestSummary(binaryXML: manifest)
        #expect(summary.packageName == Oracle.capture("package: name='([^']*)'", in: badging))
        #expect(summary.versionCode.map(String.init) == Oracle.capture("versionCode='([^']*)'", in: badging))
        #expect(summary.versionName == Oracle.capture("versionName='([^']*)'", in: badging))
        #expect(summary.minSdkVersion?.description == Oracle.capture("sdkVersion:'([^']*)'", in: badging))
        #expect(summary.targetSdkVersion?.description == Oracle.capture("targetSdkVersion:'([^']*)'", in: badging))
        #expect(summary.launcherActivity == Oracle.capture("launchable-activity: name='([^']*)'", in: badging))
        #expect(summary.launcherActivity == "org.example.summary.MainActivity")
        #expect(summary.minSdkVersion == .level(23))
        #expect(summary.debuggable == nil)
        #expect(!badging.contains("application-debuggable"))
        #expect(summary.extractNativeLibs == nil)
        #expect(summary.label == nil && summary.labelResourceID != nil)
    }

    @Test func labelResolvesThroughTheTable() throws {
        var fixture = FixtureAPK()
        fixture.label = "Résumé Reader"
        let (apk, manifest, badging) = try built(fixture)
        var summary = try ManifestSummary(binaryXML: manifest)
        summary.resolveReferences(in: try ResourceTable(bytes: try Oracle.entry("resources.arsc", in: apk)))
        #expect(summary.label == Oracle.capture("application-label:'([^']*)'", in: badging))
        #expect(summary.label == "Résumé Reader")
    }

    @Test func readsApplicationFlags() throws {
        var fixture = FixtureAPK()
        fixture.applicationAttributes = #"android:debuggable="true" android:extractNativeLibs="false""#
        let (apk, manifest, badging) = try built(fixture)
        let summary = try ManifestSummary(binaryXML: manifest)
        #expect(badging.contains("application-debuggable"))
        #expect(summary.debuggable == true)
        #expect(summary.extractNativeLibs == false)
        let tree = try Oracle.aapt(["dump", "xmltree", apk, "AndroidManifest.xml"])
        #expect(tree.contains("android:extractNativeLibs(0x010104ea)=(type 0x12)0x0"))
        #expect(tree.contains("android:debuggable(0x0101000f)=(type 0x12)0xffffffff"))
    }

    @Test func readsFrameworkManifest() throws {
        let manifest = try Oracle.entry("AndroidManifest.xml", in: TestSupport.frameworkRes)
        let summary = try ManifestSummary(binaryXML: manifest)
        #expect(summary.packageName == "android")
        #expect(summary.versionCode == 29)
        #expect(summary.versionName == "10.0.0")
        #expect(summary.minSdkVersion == .level(29))
        #expect(summary.launcherActivity == nil)
    }

    @Test func activityAliasAndRelativeNames() {
        #expect(ManifestSummary.qualifiedClassName(".Main", package: "a.b") == "a.b.Main")
        #expect(ManifestSummary.qualifiedClassName("Main", package: "a.b") == "a.b.Main")
        #expect(ManifestSummary.qualifiedClassName("x.y.Main", package: "a.b") == "x.y.Main")
        // The dot is a byte (PackageParser's charAt and indexOf): a Character joins a combining mark to it, and a
        // Prepend mark joins the dot after it.
        #expect(ManifestSummary.qualifiedClassName(".\u{301}Main", package: "a.b").unicodeScalars.elementsEqual("a.b.\u{301}Main".unicodeScalars))
        #expect(ManifestSummary.qualifiedClassName("w\u{600}.Main", package: "a.b").unicodeScalars.elementsEqual("w\u{600}.Main".unicodeScalars))
    }

    @Test func rejectsNonManifestAndGarbage() throws {
        #expect(throws: BinaryXMLError.self) { try ManifestSummary(binaryXML: []) }
        #expect(throws: BinaryXMLError.self) { try ManifestSummary(binaryXML: Array("<manifest/>".utf8)) }
        let (_, manifest, _) = try built(FixtureAPK())
        // Every truncation of a real manifest is an error, never a crash.
        for length in stride(from: 0, to: manifest.count, by: 7) {
            #expect(throws: BinaryXMLError.self) { try ManifestSummary(binaryXML: Array(manifest[0..<length])) }
        }
    }
}
