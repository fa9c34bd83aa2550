#!/usr/bin/env bash
# `make dist-check`: is the release archive reproducible across checkouts? Clones this commit into a folder
# at another path, runs `make dist` there and compares its archive with the one given (this checkout's).
#
#   scripts/dist-check.sh WORKDIR ARCHIVE     clone into WORKDIR/<random>/apkpatch, make dist, compare
#   scripts/dist-check.sh --compare A B       compare two archives only
#
# On a difference it says which files of the archives differ and, for an ELF file, how many bytes of which
# sections (a path that reached the code shows as .text or .rodata, a per-build hash as its own section).
set -euo pipefail

hex_sections() {  # ELF file -> "name offset size type" lines, numbers in decimal
    readelf -SW "$1" | awk '
        function dec(h,   i, c, v) { v = 0; h = tolower(h); for (i = 1; i <= length(h); i++) { c = index("0123456789abcdef", substr(h, i, 1)) - 1; v = v * 16 + c }; return v }
        /^ *\[ *[0-9]+\]/ {
            sub(/^ *\[ *[0-9]+\] */, "")
            if ($1 ~ /^(NULL|PROGBITS|NOBITS)$/) next  # the unnamed null section
            print $1, dec($4), dec($5), $2
        }'
}

explain_elf() {  # A B: differing bytes per section
    local sections
    sections=$(hex_sections "$1")
    cmp -l "$1" "$2" | awk -v sections="$sections" '
        BEGIN { n = split(sections, lines, "\n"); for (i = 1; i <= n; i++) { split(lines[i], f, " "); name[i] = f[1]; start[i] = f[2]; size[i] = f[3]; type[i] = f[4] } }
        { offset = $1 - 1; where = "outside any section (ELF/program headers)"
          for (i = 1; i <= n; i++) if (type[i] != "NOBITS" && offset >= start[i] && offset < start[i] + size[i]) { where = name[i]; break }
          count[where]++ }
        END { for (w in count) printf "      %8d bytes in %s\n", count[w], w }' | sort -k4
    if [ "$(stat -c %s "$1")" != "$(stat -c %s "$2")" ]; then
        echo "      sizes differ: $(stat -c %s "$1") and $(stat -c %s "$2") bytes"
    fi
}

compare() {  # A.tar.gz B.tar.gz; returns 1 when they differ
    if cmp -s "$1" "$2"; then
        echo "identical: $1 and $2 ($(sha256sum < "$1" | cut -c1-64))"
        return 0
    fi
    echo "DIFFERENT: $1 and $2"
    local tmp
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    mkdir "$tmp/a" "$tmp/b"
    tar -xzf "$1" -C "$tmp/a"
    tar -xzf "$2" -C "$tmp/b"
    if ! diff <(tar -tvzf "$1") <(tar -tvzf "$2") > "$tmp/listing"; then
        echo "   the archives' listings (names, modes, owners, sizes, dates) differ:"
        sed 's/^/      /' "$tmp/listing"
    fi
    local file
    (cd "$tmp/a" && find . -type f | sort) | while read -r file; do
        [ -f "$tmp/b/$file" ] || { echo "   only in the first: $file"; continue; }
        cmp -s "$tmp/a/$file" "$tmp/b/$file" && continue
        echo "   differs: $file"
        if [ "$(head -c 4 "$tmp/a/$file" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
            explain_elf "$tmp/a/$file" "$tmp/b/$file"
        fi
    done
    return 1
}

if [ "${1:-}" = --compare ]; then
    [ $# -eq 3 ] || { echo "usage: $0 --compare A.tar.gz B.tar.gz" >&2; exit 64; }
    compare "$2" "$3"
    exit
fi
[ $# -eq 2 ] || { echo "usage: $0 WORKDIR ARCHIVE  |  $0 --compare A B" >&2; exit 64; }
workdir=$1
archive=$(readlink -f "$2")
cd "$(dirname "$0")/.."
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "dist-check: this checkout has uncommitted changes (the archive names the commit -dirty); commit first" >&2
    exit 1
fi
commit=$(git rev-parse HEAD)
mkdir -p "$workdir"
clone=$(mktemp -d "$workdir/XXXXXX")/apkpatch
echo "== Cloning $commit into $clone"
git clone --quiet --no-hardlinks . "$clone"
git -C "$clone" checkout --quiet --detach "$commit"
# Package.resolved is not committed: the clone resolves the dependency versions this checkout uses.
if [ -f Package.resolved ]; then cp Package.resolved "$clone/"; fi
echo "== make dist in $clone"
make -C "$clone" --no-print-directory dist
echo "== Comparing"
compare "$archive" "$clone/dist/$(basename "$archive")"
cmp -s "$archive.sha256" "$clone/dist/$(basename "$archive").sha256" && echo "identical: the .sha256 files"
echo "dist-check: reproducible across checkouts ($(pwd) and $clone)"
