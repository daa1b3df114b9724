#!/usr/bin/env bash
# A zfetch HTML page in headless Chromium: runs `zfetch ARGS... --report WORKDIR/report.html`,
# then the DOM Chromium builds must contain every TEXT, the page must load nothing from outside
# itself, and a screenshot must not be blank.
# Usage: report_check.sh ZFETCH WORKDIR ARGS... -- TEXT...
# Exits 77 (skip) when Chromium is not installed (`apt-get install chromium`).
set -u
zfetch=$1 work=$2
shift 2
args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  args+=("$1")
  shift
done
[ $# -gt 0 ] && shift
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "chromium not installed; skipping"
  exit 77
fi
mkdir -p "$work"
report=$work/report.html
"$zfetch" "${args[@]}" --report "$report" >/dev/null
code=$?
if [ "$code" -gt 1 ]; then
  echo "error: zfetch ${args[*]} --report exited $code"
  exit 1
fi
flags=(--headless --no-sandbox --disable-gpu --disable-quic --no-first-run
       --disable-background-networking --disable-component-update --disable-sync
       --user-data-dir="$(mktemp -d)" --window-size=1400,2400)
timeout 120 "$browser" "${flags[@]}" --dump-dom "file://$report" >"$work/dom.html" 2>/dev/null
timeout 120 "$browser" "${flags[@]}" --screenshot="$work/screenshot.png" "file://$report" \
  >/dev/null 2>&1
status=0
for needle in "$@"; do
  if ! grep -qF -- "$needle" "$work/dom.html"; then
    echo "error: the rendered DOM has no '$needle'"
    status=1
  fi
done
# No network and no script: the page references nothing outside itself.
if grep -qE '<script|src="http|href="http|@import' "$report"; then
  echo "error: the report loads something from outside the file"
  status=1
fi
python3 - "$work/screenshot.png" <<'PY' || status=1
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("error: the screenshot is not a PNG")
width, height = struct.unpack(">II", data[16:24])
idat, pos = b"", 8
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    if kind == b"IDAT":
        idat += data[pos + 8:pos + 8 + length]
    pos += 12 + length
raw = zlib.decompress(idat)
# A blank page filters to (almost) one byte value; text, bars and plots give many.
distinct = len(set(raw))
print(f"screenshot {width}x{height}, {distinct} distinct byte values")
if width < 800 or distinct < 32:
    sys.exit("error: the screenshot looks blank")
PY
exit $status
