extension VerificationReport {
    /// The report of a path that could not be read as an APK at all (missing, unreadable, a FIFO or a device):
    /// nothing verified, one `APK_UNREADABLE` error saying why, so that `verify --json` prints its one object for
    /// it as for an APK that does not verify.
    public static func unreadable(path: String, reason: String, options: VerificationOptions) -> VerificationReport {
        VerificationReport(path: path, minSdkVersion: options.minSdkVersion ?? 1, maxSdkVersion: options.maxSdkVersion,
                           isSignatureVerified: false, verifiedSchemes: [], schemes: [], signers: [],
                           signatureErrors: [.error(.apkUnreadable, "", reason)], signatureWarnings: [], installErrors: [],
                           installWarnings: [], checkedInstallability: false)
    }
}
