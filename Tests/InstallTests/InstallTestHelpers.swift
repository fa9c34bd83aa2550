import Foundation
import Install
import TestSupport

/// A small real APK (aapt-built) in a fresh directory whose name needs quoting.
func makeFixtureAPK(name: String = "app patched's.apk") throws -> (directory: URL, apk: String) {
    let directory = try TestSupport.makeTemporaryDirectory("install-test")
    let apk = try FixtureAPK().build(in: directory, name: name)
    return (directory, apk)
}

/// The templates of this source tree (what a development build finds).
func sourceTemplates() throws -> TemplateLibrary {
    try TemplateLibrary(directory: TestSupport.packageRoot.appendingPathComponent("Templates").path)
}
