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
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Debian releases that carry the pinned version (the first that still has it is used; the pool file is the same).
SUITES = os.environ.get("APKPATCH_APKSIGNER_SUITES", "").split() or ["trixie", "sid"]
# Where the pinned packages stay after Debian's releases drop them: https://snapshot.debian.org, whose
# machine-readable interface (/mr/) names a binary package's files by SHA-1, served at /file/SHA1.
SNAPSHOT = (os.environ.get("APKPATCH_DEBIAN_SNAPSHOT") or "https://snapshot.debian.org").rstrip("/")
# The Debian source package both binary packages are built from (snapshot.debian.org files them under it).
SOURCE_PACKAGE = "android-platform-tools-apksig"
# (package, version, SHA-256 of the .deb, member of the .deb, name in DIR, SHA-256 of the member)
PINS = [
    ("libapksig-java", "35.0.2-1", "231c0f14ff5362b62bf92cdfdfbad6338f45f8c2e612dc4c1c96b542160ffe2f",
     "./usr/share/java/apksig-0.9.jar", "apksig.jar", "61186f715a98cf2473544a4bbb1fae06ab84600cf2cd6adfa7ad50f4b0e2375e"),
    ("apksigner", "35.0.2-1", "5525a18d6a4cbb5025c2f74def51fa170b9eefdb98e3be18bb3d5207ed857797",
     "./usr/share/java/apksigner-35.0.2.jar", "apksigner.jar", "d8519ce024b6b160aef9e48b11868752f346b62bd00b8f19331fb0d563059ad9"),
]


class Unavailable(Exception):
    """A source does not have the pinned packages (or cannot be reached): the next one is tried."""


def fail(message):
    print("apksigner-new: " + message, file=sys.stderr)
    sys.exit(1)


def deb_name(package, version):
    return "%s_%s_all.deb" % (package, version.replace(":", "%3a"))


def sha256_of(path):
    with open(path, "rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def is_current(directory):
    return all(os.path.isfile(os.path.join(directory, name)) and sha256_of(os.path.join(directory, name)) == digest
               for _, _, _, _, name, digest in PINS)


def debian_archive_uri():
    """The URI of the Debian archive in this machine's apt sources (deb822 .sources or one-line .list files)."""
    codename = ""
    with open("/etc/os-release", encoding="utf-8") as release:
        for line in release:
            if line.startswith("VERSION_CODENAME="):
                codename = line.split("=", 1)[1].strip().strip('"')
    files = ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*.list")) \
        + sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))
    for path in files:
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as stream:
            text = stream.read()
        if path.endswith(".sources"):
            for stanza in text.split("\n\n"):
                fields = {}
                for line in stanza.splitlines():
                    if ":" in line and not line.startswith((" ", "#")):
                        key, value = line.split(":", 1)
                        fields[key.strip().lower()] = value.split()
                if codename in fields.get("suites", []) and "main" in fields.get("components", []) and fields.get("uris"):
                    return fields["uris"][0]
        else:
            for line in text.splitlines():
                words = [word for word in line.split() if not word.startswith("[")]
                if len(words) >= 4 and words[0] == "deb" and words[2] == codename and "main" in words[3:]:
                    return words[1]
    raise Unavailable("no Debian archive for %r with 'main' in this machine's apt sources" % codename)


def download_from_debian(directory, downloads):
    """apt-get download of the pinned packages from the Debian releases in SUITES, with private package lists."""
    uri = debian_archive_uri()
    state = os.path.join(directory, "apt")
    for sub in ("lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(state, sub), exist_ok=True)
    try:
        sources = os.path.join(state, "sources.list")
        with open(sources, "w", encoding="utf-8") as stream:
            for suite in SUITES:
                stream.write("deb %s %s main\n" % (uri, suite))
        apt = ["-q", "-o", "Dir::Etc::SourceList=" + sources, "-o", "Dir::Etc::SourceParts=/dev/null",
               "-o", "Dir::State::Lists=" + os.path.join(state, "lists"), "-o", "Dir::Cache=" + os.path.join(state, "cache"),
               "-o", "Acquire::Languages=none"]
        if os.geteuid() == 0:
            apt += ["-o", "APT::Sandbox::User=root"]  # the private folders are root's, not apt's sandbox user's
        if subprocess.call(["apt-get"] + apt + ["update"], stdout=subprocess.DEVNULL) != 0:
            raise Unavailable("apt-get update of Debian %s failed" % "/".join(SUITES))
        wanted = ["%s=%s" % (package, version) for package, version, _, _, _, _ in PINS]
        if subprocess.call(["apt-get"] + apt + ["download"] + wanted, cwd=downloads, stdout=subprocess.DEVNULL) != 0:
            raise Unavailable("apt-get download %s failed (no longer in Debian %s?)" % (" ".join(wanted), "/".join(SUITES)))
    finally:
        shutil.rmtree(state, ignore_errors=True)  # the package lists (tens of MB) are needed no more


def fetch(url, attempts=3):
    """The body at url; the service is busy at times (HTTP 429/5xx, time-outs), so it is asked again after a pause."""
    for attempt in range(attempts):
        try:
            with urllib.request.urlopen(url, timeout=120) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            if error.code not in (429, 500, 502, 503, 504) or attempt + 1 == attempts:
                raise Unavailable("%s: HTTP %d" % (url, error.code))
        except (urllib.error.URLError, OSError) as error:
            if attempt + 1 == attempts:
                raise Unavailable("%s: %s" % (url, getattr(error, "reason", error)))
        time.sleep(10 * (attempt + 1))


def download_from_snapshot(downloads):
    """Each pinned package from snapshot.debian.org: its file's SHA-1 by source package and version, then the file."""
    for package, version, _, _, _, _ in PINS:
        query = "%s/mr/package/%s/%s/binfiles/%s/%s?fileinfo=1" % (
            SNAPSHOT, urllib.parse.quote(SOURCE_PACKAGE), urllib.parse.quote(version), urllib.parse.quote(package), urllib.parse.quote(version))
        try:
            answer = json.loads(fetch(query))
            hashes = [entry["hash"] for entry in answer["result"] if entry.get("architecture") == "all"]
        except (ValueError, KeyError, TypeError) as error:
            raise Unavailable("%s: not the answer expected (%s)" % (query, error))
        name = deb_name(package, version)
        for sha1 in hashes:
            if any(place.get("name") == name for place in answer.get("fileinfo", {}).get(sha1, [])):
                break
        else:
            raise Unavailable("%s names no %s" % (query, name))
        body = fetch("%s/file/%s" % (SNAPSHOT, sha1))
        if hashlib.sha1(body).hexdigest() != sha1:
            raise Unavailable("%s/file/%s is not the file it names (sha1 %s)" % (SNAPSHOT, sha1, hashlib.sha1(body).hexdigest()))
        with open(os.path.join(downloads, name), "wb") as stream:
            stream.write(body)


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
        try:
            download_from_debian(directory, downloads)
        except Unavailable as reason:
            print("apksigner-new: %s; trying %s" % (reason, SNAPSHOT))
            for name in os.listdir(downloads):
                os.remove(os.path.join(downloads, name))
            try:
                download_from_snapshot(downloads)
            except Unavailable as snapshot_reason:
                fail("%s, and from %s: %s (update the pins in %s)" % (reason, SNAPSHOT, snapshot_reason, os.path.relpath(__file__, ROOT)))
        for package, version, deb_digest, member, name, digest in PINS:
            deb = os.path.join(downloads, deb_name(package, version))
            if not os.path.isfile(deb) or sha256_of(deb) != deb_digest:
                fail("%s is not the pinned package (sha256 %s)" % (deb, sha256_of(deb) if os.path.isfile(deb) else "missing"))
            tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE, check=False)
            if tar.returncode != 0:
                fail("dpkg-deb cannot read %s" % deb)
            partial = os.path.join(directory, name + ".partial")
            with tempfile.TemporaryFile() as stream:
                stream.write(tar.stdout)
                stream.seek(0)
                with tarfile.open(fileobj=stream) as archive:
                    source = archive.extractfile(member)
                    if source is None:
                        fail("%s holds no %s" % (deb, member))
                    with open(partial, "wb") as target:
                        shutil.copyfileobj(source, target)
            if sha256_of(partial) != digest:
                fail("%s in %s is not the pinned jar (sha256 %s)" % (member, deb, sha256_of(partial)))
            os.replace(partial, os.path.join(directory, name))
    finally:
        shutil.rmtree(downloads, ignore_errors=True)
    print("apksigner-new: apksigner %s in %s" % (PINS[1][1], directory))


if __name__ == "__main__":
    main()
