// Generated from Templates/ by InstallTests; do not edit. Regenerate with
//   APKPATCH_REGENERATE_EMBEDDED_TEMPLATES=1 swift test --filter EmbeddedTemplates
// The fallback copy for a binary that cannot find its Templates folder (see TemplateLibrary).
enum EmbeddedTemplates {
    static let files: [String: String] = [
        "adb/install-command.mustache": #"""
{{! The adb commands apkpatch prints, runs (--install) and writes into install.sh: one command per line.
    Every value arrives already shell-quoted (Install's ShellWords.quote), so it goes in with triple braces;
    Install parses these lines back into argv, so this file is the one source of truth for the flags.
    A split APK set is installed in one session with install-multiple: then apk holds every path. }}
{{{adb}}}{{#serial}} -s {{{serial}}}{{/serial}} {{#multiple}}install-multiple{{/multiple}}{{^multiple}}install{{/multiple}} -r{{#incremental}} --incremental{{/incremental}}{{#allowTestPackages}} -t{{/allowTestPackages}}{{#allowDowngrade}} -d{{/allowDowngrade}}{{#grantPermissions}} -g{{/grantPermissions}} {{{apk}}}
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
# Installs {{{apkDisplayName}}}{{#package}} ({{{package}}}){{/package}} on a device with adb{{#launch}} and starts it{{/launch}}.
# Written by apkpatch. Re-run it after each build; adb honours ANDROID_SERIAL when no -s is given.
set -e

if ! command -v adb >/dev/null 2>&1; then
    echo "install.sh: adb is not on PATH. Install it (Debian/Ubuntu: sudo apt-get install adb) or add the Android SDK's platform-tools to PATH." >&2
    exit 127
fi
for apk in {{{apk}}}; do
    if [ ! -f "$apk" ]; then
        echo "install.sh: $apk does not exist; build it again with apkpatch run." >&2
        exit 1
    fi
done

{{> adb/install-command}}

"""#,
        "ci/github-actions.yml": #"""
{{=<% %>=}}
# Sign and verify a release APK with apkpatch in GitHub Actions.
# Written by `apkpatch ci-template github`; save it as .github/workflows/sign-apk.yml.
#
# Repository secrets (Settings > Secrets and variables > Actions > Secrets):
#   <%& secretPrefix %>_KEYSTORE_BASE64    your keystore, base64-encoded: base64 -w0 release.p12
#   <%& secretPrefix %>_KEYSTORE_PASSWORD  its password
# Repository variable (Settings > Secrets and variables > Actions > Variables):
#   APKPATCH_GIT  the git URL apkpatch is built from (needs Swift 6, preinstalled on ubuntu runners)
#
# The keystore never touches the disk (--ks-base64 env:NAME) and passwords are passed by
# variable name (env:NAME), so neither shows up in the log or in `ps`. Nothing here echoes them.
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
    env:
      UNSIGNED_APK: <%& unsignedAPKYAML %>
      SIGNED_APK: <%& signedAPKYAML %>
    steps:
      - uses: actions/checkout@v4

      - name: Install apkpatch
        id: install-apkpatch
        env:
          APKPATCH_GIT: ${{ vars.APKPATCH_GIT }}
        run: |
          set -eu
          sudo apt-get update -qq
          sudo apt-get install -y -qq libzip-dev libssl-dev zlib1g-dev
          git clone --depth 1 "$APKPATCH_GIT" "$RUNNER_TEMP/apkpatch"
          make -C "$RUNNER_TEMP/apkpatch" install PREFIX="$HOME/.local"
          echo "$HOME/.local/bin" >> "$GITHUB_PATH"

      # Build your unsigned APK here (for example ./gradlew assembleRelease), or download it.

      - name: Sign
        id: sign
        env:
          <%& secretPrefix %>_KEYSTORE_BASE64: ${{ secrets.<%& secretPrefix %>_KEYSTORE_BASE64 }}
          <%& secretPrefix %>_KEYSTORE_PASSWORD: ${{ secrets.<%& secretPrefix %>_KEYSTORE_PASSWORD }}
        run: |
          set -eu
          apkpatch sign \
            --ks-base64 env:<%& secretPrefix %>_KEYSTORE_BASE64 \
            --ks-pass env:<%& secretPrefix %>_KEYSTORE_PASSWORD \
            --out "$SIGNED_APK" \
            "$UNSIGNED_APK"

      - name: Verify
        id: verify
        run: |
          set -eu
          apkpatch verify --print-certs "$SIGNED_APK"

      - uses: actions/upload-artifact@v4
        with:
          name: signed-apk
          path: ${{ env.SIGNED_APK }}
          if-no-files-found: error

"""#,
        "ci/gitlab-ci.yml": #"""
{{=<% %>=}}
# Sign and verify a release APK with apkpatch in GitLab CI.
# Written by `apkpatch ci-template gitlab`; add this job to your .gitlab-ci.yml.
#
# CI/CD variables (Settings > CI/CD > Variables; mark them Masked and Protected):
#   <%& secretPrefix %>_KEYSTORE_BASE64    your keystore, base64-encoded: base64 -w0 release.p12
#   <%& secretPrefix %>_KEYSTORE_PASSWORD  its password
#   APKPATCH_GIT  the git URL apkpatch is built from
#
# GitLab puts CI/CD variables in the job's environment, so apkpatch reads them by name
# (--ks-base64 env:NAME, --ks-pass env:NAME): the keystore never touches the disk and no
# secret appears in the job log or in `ps`. Nothing here echoes them.
sign-apk:
  image: swift:6.0
  variables:
    UNSIGNED_APK: <%& unsignedAPKYAML %>
    SIGNED_APK: <%& signedAPKYAML %>
  before_script:
    - apt-get update -qq && apt-get install -y -qq libzip-dev libssl-dev zlib1g-dev make git
    - git clone --depth 1 "$APKPATCH_GIT" /tmp/apkpatch
    - make -C /tmp/apkpatch install PREFIX=/usr/local
  script:
    # Build or fetch your unsigned APK before this job (for example as an artifact of a build job).
    - >-
      apkpatch sign
      --ks-base64 env:<%& secretPrefix %>_KEYSTORE_BASE64
      --ks-pass env:<%& secretPrefix %>_KEYSTORE_PASSWORD
      --out "$SIGNED_APK"
      "$UNSIGNED_APK"
    - apkpatch verify --print-certs "$SIGNED_APK"
  artifacts:
    paths:
      - <%& signedAPKYAML %>
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

"""#,
        "patch-dir/assets/www/.keep": #"""

"""#,
    ]
}
