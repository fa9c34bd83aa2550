#!/usr/bin/env python3
"""Fetches a newer apksigner than Debian 12's (31.0.2, which predates APK Signature Scheme v3.1) into a folder
outside git, for the tests that compare apkpatch's v3.1 rotations with apksig's bytes.

    scripts/oracles/fetch-apksigner.py [DIR]    # DIR: $APKPATCH_APKSIGNER_NEW_DIR, else .build/oracles/apksigner-new

The jars come from Debian's own packages (apksigner and libapksig-java of a later Debian release), pinned by
version and SHA-256 below. They are downloaded with apt-get from the Debian archive this machine's apt sources
already name, through a private sources list and package lists under DIR (the machine's apt state is not
touched, nothing is installed; apt checks the release's signature with the machine's Debian keyring). Once
those releases no longer carry the pinned version, the same two packages come from snapshot.debian.org (Debian's
archive of every package it ever shipped), found by their version. Either way the .debs must match their pinned
SHA-256; the two jars are extracted, checked against theirs and renamed into DIR. Jars already there and right
are left as they are (no network). Exit 1 with the reason on any failure.

Environment: APKPATCH_APKSIGNER_SUITES, the Debian releases apt-get looks in (default "trixie sid");
APKPATCH_DEBIAN_SNAPSHOT, the snapshot service (default https://snapshot.debian.org).

Run them with `java -cp DIR/apksig.jar:DIR/apksigner.jar com.android.apksigner.ApkSignerTool ...`.
"""
import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True  # nothing written beside the scripts
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from debian_packages import Pin, Unavailable, download, read_members, sha256_of  # noqa: E402  (beside this script)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Debian releases that carry the pinned version (the first that still has it is used; the pool file is the same).
SUITES = os.environ.get("APKPATCH_APKSIGNER_SUITES", "").split() or ["trixie", "sid"]
# The Debian source package both binary packages are built from (snapshot.debian.org files them under it).
SOURCE_PACKAGE = "android-platform-tools-apksig"
# (package, version, SHA-256 of the .deb, member of the .deb, name in DIR, SHA-256 of the member)
PINS = [
    ("libapksig-java", "35.0.2-1", "231c0f14ff5362b62bf92cdfdfbad6338f45f8c2e612dc4c1c96b542160ffe2f",
     "./usr/share/java/apksig-0.9.jar", "apksig.jar", "61186f715a98cf2473544a4bbb1fae06ab84600cf2cd6adfa7ad50f4b0e2375e"),
    ("apksigner", "35.0.2-1", "5525a18d6a4cbb5025c2f74def51fa170b9eefdb98e3be18bb3d5207ed857797",
     "./usr/share/java/apksigner-35.0.2.jar", "apksigner.jar", "d8519ce024b6b160aef9e48b11868752f346b62bd00b8f19331fb0d563059ad9"),
]


def fail(message):
    print("apksigner-new: " + message, file=sys.stderr)
    sys.exit(1)


def is_current(directory):
    return all(os.path.isfile(os.path.join(directory, name)) and sha256_of(os.path.join(directory, name)) == digest
               for _, _, _, _, name, digest in PINS)


def main():
    directory = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("APKPATCH_APKSIGNER_NEW_DIR")
                                or os.path.join(ROOT, ".build", "oracles", "apksigner-new"))
    if is_current(directory):
        print("apksigner-new: apksigner %s in %s" % (PINS[1][1], directory))
        return
    os.makedirs(directory, exist_ok=True)
    downloads = tempfile.mkdtemp(prefix="download-", dir=directory)
    try:
        print("apksigner-new: fetching apksigner %s (Debian %s) into %s" % (PINS[1][1], "/".join(SUITES), directory))
        pins = [Pin(package, version, deb_digest, SOURCE_PACKAGE) for package, version, deb_digest, _, _, _ in PINS]
        try:
            download(pins, SUITES, downloads, os.path.join(directory, "apt"), lambda line: print("apksigner-new: " + line))
        except Unavailable as reason:
            fail("%s (update the pins in %s)" % (reason, os.path.relpath(__file__, ROOT)))
        except ValueError as error:
            fail(str(error))
        for pin, (_, _, _, member, name, digest) in zip(pins, PINS):
            partial = os.path.join(directory, name + ".partial")
            try:
                data = read_members(os.path.join(downloads, pin.deb_name), [member])[member]
            except ValueError as error:
                fail(str(error))
            with open(partial, "wb") as target:
                target.write(data)
            if sha256_of(partial) != digest:
                fail("%s in %s is not the pinned jar (sha256 %s)" % (member, pin.deb_name, sha256_of(partial)))
            os.replace(partial, os.path.join(directory, name))
    finally:
        shutil.rmtree(downloads, ignore_errors=True)
    print("apksigner-new: apksigner %s in %s" % (PINS[1][1], directory))


if __name__ == "__main__":
    main()
