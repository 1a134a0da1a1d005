#!/usr/bin/env bash
# The programs find what they read at run time from their own location, not from paths of the
# machine that built them: (1) no build or source path is in the programs and libraries;
# (2) `cmake --install` to a prefix gives programs that replay a bundled trace with a what-if that
# needs the device catalog, the learned model's plugin and its model file; (3) the same after the
# prefix is moved. Usage: install_check.sh BUILD_DIR SOURCE_DIR  (run from the source dir)
set -euo pipefail
build=$(realpath "$1")
source=$(realpath "$2")
fail() { echo "install_check: $*" >&2; exit 1; }

for f in "$build"/tools/dpro-replay/dpro-replay "$build"/tools/dpro-exec/dpro-exec \
         "$build"/tools/dpro-profile/dpro-profile "$build"/lib/dpro/*.so; do
  [ -f "$f" ] || continue
  for p in "$source" "$build"; do
    if grep -a -q -F "$p" "$f"; then fail "$f contains the path $p"; fi
  done
  echo "install_check: no build or source path in ${f#$build/}"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/a" > "$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install failed"; }
[ -x "$tmp/a/bin/dpro-replay" ] || fail "no bin/dpro-replay under the prefix"
compgen -G "$tmp/a/share/dpro/configs/devices/*.json" > /dev/null || fail "no device catalog under share/dpro"

run() {  # PREFIX: replay DLRM on an H100 (catalog + learned model), from a folder outside both trees
  (cd "$tmp" && "$1/bin/dpro-replay" replay "$source/traces/dlrm-8xV100" --device H100-SXM5-80GB -q --json "$tmp/r.json" --force) ||
    fail "installed dpro-replay under $1 failed"
  python3 - "$tmp/r.json" <<'PY' || fail "report under $1 has no what-if priced by the learned model"
import json, sys
r = json.load(open(sys.argv[1]))
w = r["whatif"]["iterations"][0]["job"]["predicted_ns"]
b = r["iterations"][0]["job"]["predicted_ns"]
notes = " ".join(r["whatif"].get("notes", []))
assert w > 0 and b > 0, (w, b)
assert "learned" in notes, notes[:300]
print(f"install_check: installed replay ok (baseline {b} ns, H100 what-if {w} ns)")
PY
}
run "$tmp/a"
mv "$tmp/a" "$tmp/moved"
run "$tmp/moved"
echo "install_check: ok"
