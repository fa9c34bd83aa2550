#!/usr/bin/env bash
# `make dist`: gives the stripped binary a build-id that depends only on its bytes. The linker's build-id hashes
# the binary before `strip`, debug sections included, and those name the checkout's paths; the stripped bytes do
# not. The new id is the SHA-1 of the stripped binary with its id zeroed: it still changes with the code, and two
# checkouts of a commit ship the same bytes.
set -euo pipefail
binary=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
note() {  # an ELF note: namesz 4, descsz 20, NT_GNU_BUILD_ID, "GNU\0", then the 20-byte id given in hex
    printf '\x04\x00\x00\x00\x14\x00\x00\x00\x03\x00\x00\x00GNU\x00'
    printf "$(printf '%s' "$1" | sed 's/../\\x&/g')"
}
note 0000000000000000000000000000000000000000 > "$tmp/zero"
objcopy --update-section .note.gnu.build-id="$tmp/zero" "$binary" "$tmp/zeroed"
id=$(sha1sum < "$tmp/zeroed" | cut -c1-40)
note "$id" > "$tmp/note"
objcopy --update-section .note.gnu.build-id="$tmp/note" "$binary"
