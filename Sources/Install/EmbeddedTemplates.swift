// Generated from Templates/ by InstallTests; do not edit. Regenerate with
//   APKPATCH_REGENERATE_EMBEDDED_TEMPLATES=1 swift test --filter EmbeddedTemplates
// The fallback copy for a binary that cannot find its Templates folder (see TemplateLibrary).
enum EmbeddedTemplates {
    static let files: [String: String] = [
        "adb/install-command.mustache": #"""
{{! The adb commands apkpatch prints, runs (--install) and writes into install.sh: one command per line.
    Every value arrives already shell-quoted (Install's ShellWords.quote), so it goes in with triple braces;
    Install parses these lines back into argv, so this file is the one source of truth for the flags.
    A split APK set is installed in one session with install-multiple: then apk holds every path.
    Then each file to copy to the device (an .xapk's expansion files) is pushed, before the app is started. }}
{{{adb}}}{{#serial}} -s {{{serial}}}{{/serial}} {{#multiple}}install-multiple{{/multiple}}{{^multiple}}install{{/multiple}} -r{{#incremental}} --incremental{{/incremental}}{{#allowTestPackages}} -t{{/allowTestPackages}}{{#allowDowngrade}} -d{{/allowDowngrade}}{{#grantPermissions}} -g{{/grantPermissions}} {{{apk}}}
{{#pushes}}
{{{adb}}}{{#serial}} -s {{{serial}}}{{/serial}} push {{{local}}} {{{remote}}}
{{/pushes}}
{{#launch}}
{{#component}}
{{{adb}}}{{#serial}} -s {{{serial}}}{{/serial}} shell am start -n {{{component}}}
{{/component}}
{{^component}}
{{{adb}}}{{#serial}} -s {{{serial}}}{{/serial}} shell monkey -p {{{package}}} -c android.intent.category.LAUNCHER 1
{{/component}}
{{/launch}}

"""#,
        "adb/install-script.mustache": #"""
#!/bin/sh
# Installs {{{apkDisplayName}}}{{#package}} ({{{package}}}){{/package}} on a device with adb{{#copiesFiles}}, copies its expansion files{{/copiesFiles}}{{#launch}} and starts it{{/launch}}.
# Written by apkpatch. Re-run it after each build; adb honours ANDROID_SERIAL when no -s is given.
set -e

if ! command -v adb >/dev/null 2>&1; then
    echo "install.sh: adb is not on PATH. Install it (Debian/Ubuntu: sudo apt-get install adb) or add the Android SDK's platform-tools to PATH." >&2
    exit 127
fi
{{#extracts}}
if ! command -v unzip >/dev/null 2>&1; then
    echo "install.sh: unzip is not on PATH; it takes the files to install out of their container. Install it (Debian/Ubuntu: sudo apt-get install unzip)." >&2
    exit 127
fi
{{/extracts}}
{{#archives}}
if [ ! -f {{{container}}} ]; then
    echo "install.sh: "{{{container}}}" does not exist; build it again with apkpatch run." >&2
    exit 1
fi
{{/archives}}
{{#extracts}}
apks=$(mktemp -d)
trap 'rm -rf "$apks"' EXIT
{{/extracts}}
{{#archives}}
{{#makesFolder}}
mkdir {{{folder}}}
{{/makesFolder}}
unzip -q -o {{{container}}} {{{entries}}} -d {{{folder}}}
{{/archives}}
for apk in {{{apk}}}{{#pushes}} {{{local}}}{{/pushes}}; do
    if [ ! -f "$apk" ]; then
        echo "install.sh: $apk does not exist; build it again with apkpatch run." >&2
        exit 1
    fi
done

{{#plainInstall}}
if ! {{{install}}}; then
    echo "install.sh: the incremental install failed (it needs adb from platform-tools 30 or later and Android 11 or later); installing without it." >&2
    {{{plainInstall}}}
fi
{{#afterInstall}}
{{{line}}}
{{/afterInstall}}
{{/plainInstall}}
{{^plainInstall}}
{{> adb/install-command}}
{{/plainInstall}}

"""#,
        "ci/github-actions.yml": #"""
{{=<% %>=}}
# Sign and verify a release APK with apkpatch in GitHub Actions.
# Written by `apkpatch ci-template github`; save it as .github/workflows/sign-apk.yml.
#
# Repository secrets (Settings > Secrets and variables > Actions > Secrets):
#   <%& secretPrefix %>_KEYSTORE_BASE64        your keystore, base64-encoded: base64 -w0 release.p12
#   <%& secretPrefix %>_KEYSTORE_PASSWORD      its password
# and, for a key rotation (SIGNING_LINEAGE below), the new key's:
#   <%& secretPrefix %>_NEW_KEYSTORE_BASE64    the new keystore, base64-encoded
#   <%& secretPrefix %>_NEW_KEYSTORE_PASSWORD  its password
# and, for a source stamp (SOURCE_STAMP below), the stamp key's (an RSA key, as apksigner requires):
#   <%& secretPrefix %>_STAMP_KEYSTORE_BASE64    the stamp keystore, base64-encoded
#   <%& secretPrefix %>_STAMP_KEYSTORE_PASSWORD  its password
#
# The job's settings (env: of the job below):
#   SIGNING_LINEAGE              the signing certificate lineage of a key rotation (apkpatch rotate or apksigner
#                                rotate writes it; it holds certificates only, so commit it): the APK is signed
#                                with both keys, the new one for the Android versions from ROTATION_MIN_SDK_VERSION
#                                on. Empty: one key.
#   ROTATION_MIN_SDK_VERSION     the API level the new key signs from; empty: 33 (a v3.1 block, Android 13+);
#                                28 puts the new key in the v3.0 block, for Android 9+.
#   EXPECTED_CERTIFICATE_SHA256  the SHA-256 of the certificate(s) the signed APK must carry, separated by spaces
#                                (apkpatch keystore list and apkpatch verify --print-certs print them): the job
#                                fails on any other key. Empty: not checked, the job only prints the certificates.
#   SOURCE_STAMP                 true: the APK also gets a source stamp (apksigner's --stamp-signer) from the stamp
#                                key, and the job fails unless apkpatch verify --verify-source-stamp accepts it.
#                                Empty: no stamp.
#   STAMP_LINEAGE                with SOURCE_STAMP, the stamp key's lineage file if that key was rotated (apkpatch
#                                rotate or apksigner rotate writes it; commit it). Empty: none.
#   EXPECTED_STAMP_CERTIFICATE_SHA256  with SOURCE_STAMP, the SHA-256 of the stamp certificate the APK must name
#                                (--stamp-cert-digest). Empty: any stamp that verifies.
# The signed APK and its v4 signature (<signed APK>.idsig, for adb install --incremental) are uploaded together.
#
# Nothing unpinned runs here: apkpatch is one release archive, named by version and checked against its
# SHA-256 before it is unpacked (a changed archive fails the job), and each action is pinned to a commit.
# The secrets reach only the step that signs, through env:, and apkpatch reads them by name
# (--ks-base64 env:NAME, --ks-pass env:NAME): the keystore never touches the disk, and no secret is
# echoed, put on a command line or written to the log.
name: Sign APK

on:
  push:
    tags: ["v*"]
  workflow_dispatch:

permissions:
  contents: read

jobs:
  sign:
    runs-on: ubuntu-latest
    timeout-minutes: 15
    env:
      UNSIGNED_APK: <%& unsignedAPKYAML %>
      SIGNED_APK: <%& signedAPKYAML %>
      APKPATCH_VERSION: <%& versionYAML %>
      APKPATCH_RELEASE_URL: <%& releaseURLYAML %>
      APKPATCH_RELEASE_SHA256: <%& releaseSHA256YAML %>
      SIGNING_LINEAGE: <%& lineageYAML %>
      ROTATION_MIN_SDK_VERSION: <%& rotationMinSdkVersionYAML %>
      EXPECTED_CERTIFICATE_SHA256: <%& expectedCertificatesYAML %>
      SOURCE_STAMP: <%& sourceStampYAML %>
      STAMP_LINEAGE: <%& stampLineageYAML %>
      EXPECTED_STAMP_CERTIFICATE_SHA256: <%& expectedStampCertificateYAML %>
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683  # v4.2.2
        with:
          persist-credentials: false

      - name: Install apkpatch (pinned release, SHA-256 checked)
        id: install-apkpatch
        run: |
          set -eu
          case "$APKPATCH_RELEASE_SHA256" in
            *[!0-9a-f]*|"") echo "::error::APKPATCH_RELEASE_SHA256 is not a SHA-256; write the release's checksum (its .sha256 file) into this workflow." >&2; exit 1 ;;
          esac
          [ "${#APKPATCH_RELEASE_SHA256}" -eq 64 ] || { echo "::error::APKPATCH_RELEASE_SHA256 must be 64 hex digits." >&2; exit 1; }
          [ -n "$APKPATCH_RELEASE_URL" ] || { echo "::error::APKPATCH_RELEASE_URL is empty: write the release archive URL into this workflow." >&2; exit 1; }
          archive="$RUNNER_TEMP/apkpatch-$APKPATCH_VERSION.tar.gz"
          curl --fail --silent --show-error --location --retry 3 --output "$archive" "$APKPATCH_RELEASE_URL"
          echo "$APKPATCH_RELEASE_SHA256  $archive" | sha256sum --check --strict
          mkdir -p "$RUNNER_TEMP/apkpatch"
          tar -xzf "$archive" -C "$RUNNER_TEMP/apkpatch" --strip-components=1
          "$RUNNER_TEMP/apkpatch/bin/apkpatch" --version
          echo "$RUNNER_TEMP/apkpatch/bin" >> "$GITHUB_PATH"

      # Build your unsigned APK here (for example ./gradlew assembleRelease), or download it.

      - name: Sign
        id: sign
        env:
          <%& secretPrefix %>_KEYSTORE_BASE64: ${{ secrets.<%& secretPrefix %>_KEYSTORE_BASE64 }}
          <%& secretPrefix %>_KEYSTORE_PASSWORD: ${{ secrets.<%& secretPrefix %>_KEYSTORE_PASSWORD }}
          <%& secretPrefix %>_NEW_KEYSTORE_BASE64: ${{ secrets.<%& secretPrefix %>_NEW_KEYSTORE_BASE64 }}
          <%& secretPrefix %>_NEW_KEYSTORE_PASSWORD: ${{ secrets.<%& secretPrefix %>_NEW_KEYSTORE_PASSWORD }}
          <%& secretPrefix %>_STAMP_KEYSTORE_BASE64: ${{ secrets.<%& secretPrefix %>_STAMP_KEYSTORE_BASE64 }}
          <%& secretPrefix %>_STAMP_KEYSTORE_PASSWORD: ${{ secrets.<%& secretPrefix %>_STAMP_KEYSTORE_PASSWORD }}
        run: |
          set -eu
          missing=""
          [ -n "${<%& secretPrefix %>_KEYSTORE_BASE64:+set}" ] || missing="$missing <%& secretPrefix %>_KEYSTORE_BASE64"
          [ -n "${<%& secretPrefix %>_KEYSTORE_PASSWORD:+set}" ] || missing="$missing <%& secretPrefix %>_KEYSTORE_PASSWORD"
          if [ -n "$SIGNING_LINEAGE" ]; then
            [ -n "${<%& secretPrefix %>_NEW_KEYSTORE_BASE64:+set}" ] || missing="$missing <%& secretPrefix %>_NEW_KEYSTORE_BASE64"
            [ -n "${<%& secretPrefix %>_NEW_KEYSTORE_PASSWORD:+set}" ] || missing="$missing <%& secretPrefix %>_NEW_KEYSTORE_PASSWORD"
          fi
          case "$SOURCE_STAMP" in
            true)
              [ -n "${<%& secretPrefix %>_STAMP_KEYSTORE_BASE64:+set}" ] || missing="$missing <%& secretPrefix %>_STAMP_KEYSTORE_BASE64"
              [ -n "${<%& secretPrefix %>_STAMP_KEYSTORE_PASSWORD:+set}" ] || missing="$missing <%& secretPrefix %>_STAMP_KEYSTORE_PASSWORD" ;;
            "") ;;
            *) echo "::error::SOURCE_STAMP must be true (add a source stamp) or empty (none)." >&2; exit 1 ;;
          esac
          if [ -n "$missing" ]; then
            echo "::error::Missing repository secret(s):$missing. Add them under Settings > Secrets and variables > Actions (a fork's pull request gets no secrets)." >&2
            exit 1
          fi
          [ -f "$UNSIGNED_APK" ] || { echo "::error::$UNSIGNED_APK does not exist: build the APK in an earlier step or set UNSIGNED_APK." >&2; exit 1; }
          # A source stamp: the stamp key's options follow --stamp-signer, as in apksigner.
          set --
          if [ "$SOURCE_STAMP" = true ]; then
            [ -z "$STAMP_LINEAGE" ] || [ -f "$STAMP_LINEAGE" ] || { echo "::error::STAMP_LINEAGE: $STAMP_LINEAGE does not exist: commit the stamp lineage file or leave STAMP_LINEAGE empty." >&2; exit 1; }
            set -- --stamp-signer --ks-base64 env:<%& secretPrefix %>_STAMP_KEYSTORE_BASE64 --ks-pass env:<%& secretPrefix %>_STAMP_KEYSTORE_PASSWORD
            [ -z "$STAMP_LINEAGE" ] || set -- "$@" --stamp-lineage "$STAMP_LINEAGE"
          fi
          # A key rotation: the original key signs first, the new key after --next-signer, linked by the lineage.
          if [ -n "$SIGNING_LINEAGE" ]; then
            [ -f "$SIGNING_LINEAGE" ] || { echo "::error::SIGNING_LINEAGE: $SIGNING_LINEAGE does not exist: commit the lineage file (apkpatch rotate writes it) or leave SIGNING_LINEAGE empty." >&2; exit 1; }
            set -- "$@" --lineage "$SIGNING_LINEAGE"
            [ -z "$ROTATION_MIN_SDK_VERSION" ] || set -- "$@" --rotation-min-sdk-version "$ROTATION_MIN_SDK_VERSION"
            set -- "$@" --next-signer --ks-base64 env:<%& secretPrefix %>_NEW_KEYSTORE_BASE64 --ks-pass env:<%& secretPrefix %>_NEW_KEYSTORE_PASSWORD
          fi
          # --v4-signing-enabled true: a v4 signature that cannot be made fails the step instead of going missing.
          apkpatch sign \
            --ks-base64 env:<%& secretPrefix %>_KEYSTORE_BASE64 \
            --ks-pass env:<%& secretPrefix %>_KEYSTORE_PASSWORD \
            "$@" \
            --v4-signing-enabled true \
            --out "$SIGNED_APK" \
            "$UNSIGNED_APK"

      - name: Verify
        id: verify
        run: |
          set -eu
          set --
          for digest in $EXPECTED_CERTIFICATE_SHA256; do set -- "$@" --expect-certificate-sha256 "$digest"; done
          [ "$#" -gt 0 ] || echo "::notice::EXPECTED_CERTIFICATE_SHA256 is empty: the job does not check which key signed the APK."
          apkpatch verify --print-certs --v4-signature-file "$SIGNED_APK.idsig" "$@" "$SIGNED_APK"
          if [ "$SOURCE_STAMP" = true ]; then
            set --
            [ -z "$EXPECTED_STAMP_CERTIFICATE_SHA256" ] || set -- --stamp-cert-digest "$EXPECTED_STAMP_CERTIFICATE_SHA256"
            apkpatch verify --verify-source-stamp "$@" "$SIGNED_APK"
          fi

      - uses: actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02  # v4.6.2
        with:
          name: signed-apk
          path: |
            ${{ env.SIGNED_APK }}
            ${{ env.SIGNED_APK }}.idsig
          if-no-files-found: error

"""#,
        "ci/gitlab-ci.yml": #"""
{{=<% %>=}}
# Sign and verify a release APK with apkpatch in GitLab CI.
# Written by `apkpatch ci-template gitlab`; add this job to your .gitlab-ci.yml.
#
# CI/CD variables (Settings > CI/CD > Variables; mark them Masked and Protected):
#   <%& secretPrefix %>_KEYSTORE_BASE64        your keystore, base64-encoded: base64 -w0 release.p12
#   <%& secretPrefix %>_KEYSTORE_PASSWORD      its password
# and, for a key rotation (SIGNING_LINEAGE below), the new key's:
#   <%& secretPrefix %>_NEW_KEYSTORE_BASE64    the new keystore, base64-encoded
#   <%& secretPrefix %>_NEW_KEYSTORE_PASSWORD  its password
# and, for a source stamp (SOURCE_STAMP below), the stamp key's (an RSA key, as apksigner requires):
#   <%& secretPrefix %>_STAMP_KEYSTORE_BASE64    the stamp keystore, base64-encoded
#   <%& secretPrefix %>_STAMP_KEYSTORE_PASSWORD  its password
#
# The job's settings (its variables: below):
#   SIGNING_LINEAGE              the signing certificate lineage of a key rotation (apkpatch rotate or apksigner
#                                rotate writes it; it holds certificates only, so commit it): the APK is signed
#                                with both keys, the new one for the Android versions from ROTATION_MIN_SDK_VERSION
#                                on. Empty: one key.
#   ROTATION_MIN_SDK_VERSION     the API level the new key signs from; empty: 33 (a v3.1 block, Android 13+);
#                                28 puts the new key in the v3.0 block, for Android 9+.
#   EXPECTED_CERTIFICATE_SHA256  the SHA-256 of the certificate(s) the signed APK must carry, separated by spaces
#                                (apkpatch keystore list and apkpatch verify --print-certs print them): the job
#                                fails on any other key. Empty: not checked, the job only prints the certificates.
#   SOURCE_STAMP                 true: the APK also gets a source stamp (apksigner's --stamp-signer) from the stamp
#                                key, and the job fails unless apkpatch verify --verify-source-stamp accepts it.
#                                Empty: no stamp.
#   STAMP_LINEAGE                with SOURCE_STAMP, the stamp key's lineage file if that key was rotated (apkpatch
#                                rotate or apksigner rotate writes it; commit it). Empty: none.
#   EXPECTED_STAMP_CERTIFICATE_SHA256  with SOURCE_STAMP, the SHA-256 of the stamp certificate the APK must name
#                                (--stamp-cert-digest). Empty: any stamp that verifies.
# The signed APK and its v4 signature (<signed APK>.idsig, for adb install --incremental) are the job's artifacts.
#
# Nothing unpinned runs here: apkpatch is one release archive, named by version and checked against its
# SHA-256 before it is unpacked (a changed archive fails the job). GitLab puts CI/CD variables in the
# job's environment, so apkpatch reads them by name (--ks-base64 env:NAME, --ks-pass env:NAME): the
# keystore never touches the disk and no secret appears in the job log or in `ps`.
sign-apk:
  image: debian:bookworm-slim
  timeout: 15 minutes
  variables:
    UNSIGNED_APK: <%& unsignedAPKYAML %>
    SIGNED_APK: <%& signedAPKYAML %>
    APKPATCH_VERSION: <%& versionYAML %>
    APKPATCH_RELEASE_URL: <%& releaseURLYAML %>
    APKPATCH_RELEASE_SHA256: <%& releaseSHA256YAML %>
    SIGNING_LINEAGE: <%& lineageYAML %>
    ROTATION_MIN_SDK_VERSION: <%& rotationMinSdkVersionYAML %>
    EXPECTED_CERTIFICATE_SHA256: <%& expectedCertificatesYAML %>
    SOURCE_STAMP: <%& sourceStampYAML %>
    STAMP_LINEAGE: <%& stampLineageYAML %>
    EXPECTED_STAMP_CERTIFICATE_SHA256: <%& expectedStampCertificateYAML %>
  before_script:
    - apt-get update -qq && apt-get install -y -qq --no-install-recommends ca-certificates curl >/dev/null
    - >-
      case "$APKPATCH_RELEASE_SHA256" in
      *[!0-9a-f]*|"") echo "APKPATCH_RELEASE_SHA256 is not a SHA-256; write the release's checksum (its .sha256 file) into this job." >&2; exit 1 ;;
      esac
    - '[ -n "$APKPATCH_RELEASE_URL" ] || { echo "APKPATCH_RELEASE_URL is empty: write the release archive URL into this job." >&2; exit 1; }'
    - '[ "${#APKPATCH_RELEASE_SHA256}" -eq 64 ] || { echo "APKPATCH_RELEASE_SHA256 must be 64 hex digits." >&2; exit 1; }'
    - curl --fail --silent --show-error --location --retry 3 --output "${TMPDIR:-/tmp}/apkpatch.tar.gz" "$APKPATCH_RELEASE_URL"
    - echo "$APKPATCH_RELEASE_SHA256  ${TMPDIR:-/tmp}/apkpatch.tar.gz" | sha256sum --check --strict
    - mkdir -p "${TMPDIR:-/tmp}/apkpatch" && tar -xzf "${TMPDIR:-/tmp}/apkpatch.tar.gz" -C "${TMPDIR:-/tmp}/apkpatch" --strip-components=1
    - export PATH="${TMPDIR:-/tmp}/apkpatch/bin:$PATH"
    - apkpatch --version
  script:
    # Build or fetch your unsigned APK before this job (for example as an artifact of a build job).
    - >-
      missing="";
      [ -n "${<%& secretPrefix %>_KEYSTORE_BASE64:+set}" ] || missing="$missing <%& secretPrefix %>_KEYSTORE_BASE64";
      [ -n "${<%& secretPrefix %>_KEYSTORE_PASSWORD:+set}" ] || missing="$missing <%& secretPrefix %>_KEYSTORE_PASSWORD";
      if [ -n "$SIGNING_LINEAGE" ]; then
      [ -n "${<%& secretPrefix %>_NEW_KEYSTORE_BASE64:+set}" ] || missing="$missing <%& secretPrefix %>_NEW_KEYSTORE_BASE64";
      [ -n "${<%& secretPrefix %>_NEW_KEYSTORE_PASSWORD:+set}" ] || missing="$missing <%& secretPrefix %>_NEW_KEYSTORE_PASSWORD";
      fi;
      case "$SOURCE_STAMP" in
      true)
      [ -n "${<%& secretPrefix %>_STAMP_KEYSTORE_BASE64:+set}" ] || missing="$missing <%& secretPrefix %>_STAMP_KEYSTORE_BASE64";
      [ -n "${<%& secretPrefix %>_STAMP_KEYSTORE_PASSWORD:+set}" ] || missing="$missing <%& secretPrefix %>_STAMP_KEYSTORE_PASSWORD";;
      "") ;;
      *) echo "SOURCE_STAMP must be true (add a source stamp) or empty (none)." >&2; exit 1;;
      esac;
      if [ -n "$missing" ]; then
      echo "Missing CI/CD variable(s):$missing. Add them under Settings > CI/CD > Variables (protected variables reach only protected branches and tags)." >&2;
      exit 1;
      fi
    - '[ -f "$UNSIGNED_APK" ] || { echo "$UNSIGNED_APK does not exist: fetch it from the job that builds it or set UNSIGNED_APK." >&2; exit 1; }'
    - '[ -z "$SIGNING_LINEAGE" ] || [ -f "$SIGNING_LINEAGE" ] || { echo "SIGNING_LINEAGE: $SIGNING_LINEAGE does not exist: commit the lineage file (apkpatch rotate writes it) or leave SIGNING_LINEAGE empty." >&2; exit 1; }'
    - '[ "$SOURCE_STAMP" != true ] || [ -z "$STAMP_LINEAGE" ] || [ -f "$STAMP_LINEAGE" ] || { echo "STAMP_LINEAGE: $STAMP_LINEAGE does not exist: commit the stamp lineage file or leave STAMP_LINEAGE empty." >&2; exit 1; }'
    # A source stamp: the stamp key's options follow --stamp-signer, as in apksigner.
    # A key rotation: the original key signs first, the new key after --next-signer, linked by the lineage.
    # --v4-signing-enabled true: a v4 signature that cannot be made fails the job instead of going missing.
    - >-
      set --;
      if [ "$SOURCE_STAMP" = true ]; then
      set -- --stamp-signer --ks-base64 env:<%& secretPrefix %>_STAMP_KEYSTORE_BASE64 --ks-pass env:<%& secretPrefix %>_STAMP_KEYSTORE_PASSWORD;
      if [ -n "$STAMP_LINEAGE" ]; then set -- "$@" --stamp-lineage "$STAMP_LINEAGE"; fi;
      fi;
      if [ -n "$SIGNING_LINEAGE" ]; then
      set -- "$@" --lineage "$SIGNING_LINEAGE";
      if [ -n "$ROTATION_MIN_SDK_VERSION" ]; then set -- "$@" --rotation-min-sdk-version "$ROTATION_MIN_SDK_VERSION"; fi;
      set -- "$@" --next-signer --ks-base64 env:<%& secretPrefix %>_NEW_KEYSTORE_BASE64 --ks-pass env:<%& secretPrefix %>_NEW_KEYSTORE_PASSWORD;
      fi;
      apkpatch sign
      --ks-base64 env:<%& secretPrefix %>_KEYSTORE_BASE64
      --ks-pass env:<%& secretPrefix %>_KEYSTORE_PASSWORD
      "$@"
      --v4-signing-enabled true
      --out "$SIGNED_APK"
      "$UNSIGNED_APK"
    - >-
      set --;
      for digest in $EXPECTED_CERTIFICATE_SHA256; do set -- "$@" --expect-certificate-sha256 "$digest"; done;
      if [ "$#" -eq 0 ]; then echo "EXPECTED_CERTIFICATE_SHA256 is empty: the job does not check which key signed the APK."; fi;
      apkpatch verify --print-certs --v4-signature-file "$SIGNED_APK.idsig" "$@" "$SIGNED_APK"
    - >-
      if [ "$SOURCE_STAMP" = true ]; then
      set --;
      if [ -n "$EXPECTED_STAMP_CERTIFICATE_SHA256" ]; then set -- --stamp-cert-digest "$EXPECTED_STAMP_CERTIFICATE_SHA256"; fi;
      apkpatch verify --verify-source-stamp "$@" "$SIGNED_APK";
      fi
  artifacts:
    paths:
      - <%& signedAPKYAML %>
      - <%& signedIdsigYAML %>
  rules:
    - if: $CI_COMMIT_TAG

"""#,
        "patch-dir/apkpatch.yml": #"""
# apkpatch patch directory.
#
# Every file beside this one adds or replaces the APK entry with the same path:
#   assets/www/index.html   replaces assets/www/index.html in the APK
#   assets/www/js/new.js    adds a new entry
#   res/values/strings.xml  overrides the values of existing string resources
# A replaced entry keeps its compression method; a new one is deflated unless it is
# already compressed (png, jpg, webp, mp3, ...) or must be stored (resources.arsc, lib/**/*.so).
# The old signature (META-INF/*.SF, *.RSA, ..., the APK Signing Block) is always dropped:
# the output is signed again.
#
# For a split APK set (.apks, .xapk, .apkm or a folder of APKs), the files above patch the
# base APK, and splits/<split-name>/ patches that split (the name is its manifest's split=):
#   splits/config.arm64_v8a/lib/arm64-v8a/libfoo.so   replaces or adds the library in that split
#   splits/config.fr/apkpatch.yml                      a spec of its own for that split
# A versionCode set here is applied to every split too (Android installs a set only when all
# of its APKs share one versionCode).
#
# Everything below is an example: remove the leading "# " to use it.

# Entries to delete (globs on APK paths; ** crosses folders):
# delete:
#   - "assets/www/cordova-js-src/**"
#   - "assets/www/**/*.map"
#   - "res/raw/unused_*.mp3"

# Entries to keep uncompressed (stored), e.g. media a WebView streams with range requests:
# store:
#   - "assets/www/media/**"

# Entries to compress (deflate) even if the original stored them:
# deflate:
#   - "assets/www/**/*.json"
#   - "assets/www/**/*.svg"

# AndroidManifest.xml shortcuts, without writing XML:
# manifest:
#   debuggable: true              # android:debuggable on <application> (chrome://inspect for WebViews)
#   versionCode: 42               # android:versionCode on <manifest>
#   versionName: "1.2.3-patched"  # android:versionName on <manifest>
#   label: "My App (patched)"     # android:label on <application>
#   usesCleartextTraffic: true    # allow http:// (e.g. a dev server on the LAN)
#   extractNativeLibs: false      # keep .so files stored and page-aligned, loaded from the APK
#   minSdkVersion: 24             # <uses-sdk android:minSdkVersion>
#   targetSdkVersion: 34          # <uses-sdk android:targetSdkVersion>
#   package: com.example.copy     # rename the app: the copy installs beside the original

# Trust user-installed CA certificates on Android 7 and later, for an interception proxy (mitmproxy,
# Burp, Charles): writes or extends res/xml/network_security_config.xml and removes certificate pins
# (apkpatch run --trust-user-certs --ca-cert proxy.pem does the same from the command line):
# networkSecurity: trustUserCertificates

"""#,
        "patch-dir/assets/www/.keep": #"""

"""#,
    ]
}
