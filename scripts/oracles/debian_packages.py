"""Pinned Debian packages (.deb files, and source packages' files) downloaded without installing anything, for the
scripts that fetch test inputs and oracles (fetch-apksigner.py, ../realworld/fetch.py).

`download(pins, suites, downloads, state)` gets each pinned package with apt-get from the Debian archive this
machine's apt sources already name, through a private sources list and package lists under `state` (the machine's
apt state is not touched; apt checks the release's signature with the machine's Debian keyring). Once those
releases no longer carry a pinned version, it comes from snapshot.debian.org (Debian's archive of every package it
ever shipped), found by its source package and version. The caller checks each .deb against its pinned SHA-256.
"""
import glob
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

# Where pinned packages stay after Debian's releases drop them: https://snapshot.debian.org, whose
# machine-readable interface (/mr/) names a binary package's files by SHA-1, served at /file/SHA1.
SNAPSHOT = (os.environ.get("APKPATCH_DEBIAN_SNAPSHOT") or "https://snapshot.debian.org").rstrip("/")


class Unavailable(Exception):
    """A source does not have the pinned packages (or cannot be reached): the next one is tried."""


class Pin:
    """One binary package of one version: `source` is the Debian source package snapshot.debian.org files it under."""

    def __init__(self, package, version, sha256, source):
        self.package, self.version, self.sha256, self.source = package, version, sha256, source

    @property
    def deb_name(self):
        return "%s_%s_all.deb" % (self.package, self.version.replace(":", "%3a"))


def sha256_of(path):
    with open(path, "rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


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


def reachable(url, timeout=30):
    """Whether url's host answers at all (an HTTP error is an answer): tells a machine without network from a
    pinned file that is gone or wrong."""
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def download_from_debian(pins, suites, downloads, state):
    """apt-get download of the pins from the Debian releases in `suites`, with private package lists under `state`."""
    uri = debian_archive_uri()
    for sub in ("lists/partial", "cache/archives/partial"):
        os.makedirs(os.path.join(state, sub), exist_ok=True)
    try:
        sources = os.path.join(state, "sources.list")
        with open(sources, "w", encoding="utf-8") as stream:
            for suite in suites:
                stream.write("deb %s %s main\n" % (uri, suite))
        apt = ["-q", "-o", "Dir::Etc::SourceList=" + sources, "-o", "Dir::Etc::SourceParts=/dev/null",
               "-o", "Dir::State::Lists=" + os.path.join(state, "lists"), "-o", "Dir::Cache=" + os.path.join(state, "cache"),
               "-o", "Acquire::Languages=none"]
        if os.geteuid() == 0:
            apt += ["-o", "APT::Sandbox::User=root"]  # the private folders are root's, not apt's sandbox user's
        if subprocess.call(["apt-get"] + apt + ["update"], stdout=subprocess.DEVNULL) != 0:
            raise Unavailable("apt-get update of Debian %s failed" % "/".join(suites))
        wanted = ["%s=%s" % (pin.package, pin.version) for pin in pins]
        if subprocess.call(["apt-get"] + apt + ["download"] + wanted, cwd=downloads, stdout=subprocess.DEVNULL) != 0:
            raise Unavailable("apt-get download %s failed (no longer in Debian %s?)" % (" ".join(wanted), "/".join(suites)))
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


def download_from_snapshot(pins, downloads):
    """Each pin from snapshot.debian.org: its file's SHA-1 by source package and version, then the file."""
    for pin in pins:
        query = "%s/mr/package/%s/%s/binfiles/%s/%s?fileinfo=1" % (
            SNAPSHOT, urllib.parse.quote(pin.source), urllib.parse.quote(pin.version), urllib.parse.quote(pin.package),
            urllib.parse.quote(pin.version))
        try:
            answer = json.loads(fetch(query))
            hashes = [entry["hash"] for entry in answer["result"] if entry.get("architecture") == "all"]
        except (ValueError, KeyError, TypeError) as error:
            raise Unavailable("%s: not the answer expected (%s)" % (query, error))
        for sha1 in hashes:
            if any(place.get("name") == pin.deb_name for place in answer.get("fileinfo", {}).get(sha1, [])):
                break
        else:
            raise Unavailable("%s names no %s" % (query, pin.deb_name))
        body = fetch("%s/file/%s" % (SNAPSHOT, sha1))
        if hashlib.sha1(body).hexdigest() != sha1:
            raise Unavailable("%s/file/%s is not the file it names (sha1 %s)" % (SNAPSHOT, sha1, hashlib.sha1(body).hexdigest()))
        with open(os.path.join(downloads, pin.deb_name), "wb") as stream:
            stream.write(body)


class SourcePin:
    """One file of a Debian source package (its upstream .orig tarball), of the Debian version `version`, which
    snapshot.debian.org files it under."""

    def __init__(self, source, version, sha256, file_name):
        self.source, self.version, self.sha256, self.file_name = source, version, sha256, file_name

    @property
    def pool_path(self):
        """Where the file is in a Debian archive (Debian's pool layout: lib* sources under four letters)."""
        prefix = self.source[:4] if self.source.startswith("lib") else self.source[0]
        return "pool/main/%s/%s/%s" % (prefix, self.source, urllib.parse.quote(self.file_name))


def download_source_file(pin, downloads, log):
    """The pinned source file into `downloads`, from the Debian archive of this machine's apt sources (it holds the
    files of every source package its releases carry), else from snapshot.debian.org; checked against its
    SHA-256. Raises Unavailable with both sources' reasons."""
    target = os.path.join(downloads, pin.file_name)
    try:
        body = fetch("%s/%s" % (debian_archive_uri().rstrip("/"), pin.pool_path))
    except Unavailable as reason:
        log("%s; trying %s" % (reason, SNAPSHOT))
        query = "%s/mr/package/%s/%s/srcfiles?fileinfo=1" % (SNAPSHOT, urllib.parse.quote(pin.source), urllib.parse.quote(pin.version))
        try:
            answer = json.loads(fetch(query))
            hashes = [sha1 for sha1, places in answer.get("fileinfo", {}).items()
                      if any(place.get("name") == pin.file_name for place in places)]
            if not hashes:
                raise Unavailable("%s names no %s" % (query, pin.file_name))
            body = fetch("%s/file/%s" % (SNAPSHOT, hashes[0]))
        except (ValueError, AttributeError, TypeError) as error:
            raise Unavailable("%s, and from %s: not the answer expected (%s)" % (reason, SNAPSHOT, error))
        except Unavailable as snapshot_reason:
            raise Unavailable("%s, and from %s: %s" % (reason, SNAPSHOT, snapshot_reason))
    digest = hashlib.sha256(body).hexdigest()
    if digest != pin.sha256:
        raise ValueError("%s is not the pinned file (sha256 %s)" % (pin.file_name, digest))
    partial = target + ".partial"
    with open(partial, "wb") as stream:
        stream.write(body)
    os.replace(partial, target)


def download(pins, suites, downloads, state, log):
    """The pins' .deb files into `downloads`, from Debian's releases `suites`, else from the snapshot archive; each
    checked against its pinned SHA-256. Raises Unavailable with both sources' reasons; `log` prints progress."""
    try:
        download_from_debian(pins, suites, downloads, state)
    except Unavailable as reason:
        log("%s; trying %s" % (reason, SNAPSHOT))
        for name in os.listdir(downloads):
            os.remove(os.path.join(downloads, name))
        try:
            download_from_snapshot(pins, downloads)
        except Unavailable as snapshot_reason:
            raise Unavailable("%s, and from %s: %s" % (reason, SNAPSHOT, snapshot_reason))
    for pin in pins:
        deb = os.path.join(downloads, pin.deb_name)
        if not os.path.isfile(deb) or sha256_of(deb) != pin.sha256:
            raise ValueError("%s is not the pinned package (sha256 %s)" % (deb, sha256_of(deb) if os.path.isfile(deb) else "missing"))


def read_members(deb, members):
    """Member path (as dpkg-deb lists it: ./usr/...) -> bytes, for `members` of one .deb's files, in one pass.
    Raises ValueError naming what is missing or unreadable."""
    wanted, found = set(members), {}
    with tempfile.TemporaryFile() as stream:
        if subprocess.call(["dpkg-deb", "--fsys-tarfile", deb], stdout=stream) != 0:
            raise ValueError("dpkg-deb cannot read %s" % deb)
        stream.seek(0)
        with tarfile.open(fileobj=stream) as archive:
            for info in archive:
                if info.name not in wanted:
                    continue
                source = archive.extractfile(info)
                if source is None:
                    raise ValueError("%s in %s is not a file" % (info.name, deb))
                found[info.name] = source.read()
    for member in sorted(wanted - set(found)):
        raise ValueError("%s holds no %s" % (deb, member))
    return found
