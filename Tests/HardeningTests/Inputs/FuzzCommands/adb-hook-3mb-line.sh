# FakeADB hook (FAKE_ADB_HOOK) from the command fuzzer's install runs: `adb install` prints 3 MiB on stderr with
# no line end and fails; `adb shell` fails.
case "$kind" in
  install) head -c 3145728 /dev/zero | tr '\000' e >&2; exit 1 ;;
  shell) exit 1 ;;
esac
