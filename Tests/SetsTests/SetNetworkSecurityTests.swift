import Foundation
import Testing
import TestSupport

/// `run SET --trust-user-certs --ca-cert …`: the base of a split APK set gets the network security config, with or
/// without a patch directory and when merged, as one APK does (the set path used to drop both options silently).
@Suite(.removesTemporaryDirectories) struct SetNetworkSecurityTests {
    @Test func runTrustsUserCertificatesInTheBase() throws {
        let scratch = try TestSupport.makeTemporaryDirectory("set-nsc")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let fixture = try SplitSetFixture(in: scratch)
        let input = try fixture.pack(.xapk)
        let keystore = scratch.appendingPathComponent("debug.p12").path
        let key = scratch.appendingPathComponent("proxy.key").path, ca = scratch.appendingPathComponent("proxy-ca.pem").path
        let made = try TestSupport.run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", ca, "-days", "30", "-subj", "/CN=proxy"])
        #expect(made.succeeded, "\(made)")

        let output = scratch.appendingPathComponent("trusting.xapk").path
        let result = try TestSupport.apkpatch(["run", input, "--trust-user-certs", "--ca-cert", ca, "--out", output, "--debug-keystore", keystore])
        #expect(result.succeeded, "\(result)")
        guard result.succeeded else { return }
        let apks = try SetOracles.apkFiles(of: output, form: .xapk, scratch: scratch)
        #expect(apks.count == 4, "\(apks)")
        for (name, path) in apks {
            #expect(try TestSupport.run("apksigner", ["verify", path]).succeeded, "\(name)")
            let config = try TestSupport.run("aapt", ["dump", "xmltree", path, "res/xml/network_security_config.xml"])
            if name == SplitSetFixture.names(in: .xapk)["base.apk"] {
                #expect(config.succeeded && config.stdout.contains(#"A: src="user""#) && config.stdout.contains(#"A: src=@"#), "\(config)")
                #expect(try TestSupport.run("aapt", ["dump", "xmltree", path, "AndroidManifest.xml"]).stdout.contains("android:networkSecurityConfig"))
                #expect(try TestSupport.run("unzip", ["-l", path]).stdout.contains("res/raw/proxy_ca.pem"))
            } else {
                #expect(!config.succeeded, "\(name) is a split: the config is the base's")
            }
        }

        // Merged into one APK, the config comes along.
        let merged = scratch.appendingPathComponent("merged.apk").path
        let merge = try TestSupport.apkpatch(["run", input, "--trust-user-certs", "--merge", "--out", merged, "--debug-keystore", keystore])
        #expect(merge.succeeded, "\(merge)")
        #expect(try TestSupport.run("aapt", ["dump", "xmltree", merged, "res/xml/network_security_config.xml"]).stdout.contains(#"A: src="user""#))
    }
}
