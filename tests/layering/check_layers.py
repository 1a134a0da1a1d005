#!/usr/bin/env python3
"""The layering of src/, checked (docs/architecture.md, "Layers").

Reads the module table that CMake writes (build/dpro_modules.txt: folder, target, declared dpro
dependencies per library, from cmake/dpro_module.cmake) and fails (exit 1, one line per finding)
when
  - a file of a module includes a header of a module that its folder's targets do not declare,
    directly or through a declared module (a dependency the build does not know about), or
  - a module declares a dependency on a module at the same or a higher layer than its own (a
    dependency that points up the layers, or between siblings).
A header belongs to the module of the longest folder prefix (costmodel/comm/x.h to
costmodel/comm, costmodel/x.h to costmodel). Exit 2 for bad arguments or an unknown folder.
"""
import argparse
import os
import re
import sys

# The layers, lowest first: a module may depend on modules of lower layers only.
LAYERS = {
    "core": 0,
    "trace/format": 0,  # the native trace format the profiler writes: no dependencies at all
    "trace": 1,
    "hw": 1,
    "profiler": 2,
    "graph": 2,
    "replayer": 3,
    "costmodel": 4,
    "report_html": 4,  # renders replayer reports as HTML; the CLI gives it what-if and plan reports
    "costmodel/comm": 5,
    "costmodel/eval": 5,
    "whatif": 6,
    "optimizer": 7,
    "executor": 7,
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(path, folders):
    best = None
    for folder in folders:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", required=True, help="dpro_modules.txt written by CMake")
    parser.add_argument("--src", required=True, help="the src/ folder to check")
    args = parser.parse_args()
    try:
        with open(args.modules) as f:
            rows = [line.split() for line in f if line.strip()]
    except OSError as e:
        print(f"{args.modules}: {e.strerror}", file=sys.stderr)
        return 2
    folder_of_target, deps_of_folder = {}, {}
    for row in rows:
        folder, target, deps = row[0], row[1], row[2:]
        folder_of_target[target] = folder
        deps_of_folder.setdefault(folder, set()).update(deps)
    findings = []
    for folder in deps_of_folder:
        if folder not in LAYERS:
            print(f"{args.modules}: module folder '{folder}' has no layer in check_layers.py's LAYERS", file=sys.stderr)
            return 2
    # Declared dependencies as folders, and their closure.
    direct = {}
    for folder, deps in deps_of_folder.items():
        direct[folder] = set()
        for dep in deps:
            if dep not in folder_of_target:
                findings.append(f"module {folder}: declares '{dep}', which is no dpro module target")
                continue
            d = folder_of_target[dep]
            if d == folder:
                continue
            direct[folder].add(d)
            if LAYERS[d] >= LAYERS[folder]:
                findings.append(f"module {folder} (layer {LAYERS[folder]}) declares {d} (layer {LAYERS[d]}): "
                                "a dependency must be on a lower layer")
    closure = {}

    def reach(folder, seen):
        for d in direct.get(folder, ()):
            if d not in seen:
                seen.add(d)
                reach(d, seen)
        return seen

    for folder in direct:
        closure[folder] = reach(folder, set())
    folders = sorted(deps_of_folder)
    checked = 0
    for root, _, files in os.walk(args.src):
        for name in sorted(files):
            if not name.endswith((".h", ".cpp", ".cu", ".cuh")):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, args.src).replace(os.sep, "/")
            own = module_of(rel, folders)
            if own is None:
                findings.append(f"{rel}: in no module folder of {args.modules}")
                continue
            checked += 1
            with open(path, errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    header = m.group(1)
                    other = module_of(header, folders)
                    if other is None or other == own:
                        continue  # a header of the same module, or outside src/ modules (CLI11 ...)
                    if other not in closure[own]:
                        findings.append(f"{rel}:{number}: includes {header} (module {other}), which module {own} "
                                        f"does not depend on")
    for f in findings:
        print(f)
    print(f"check_layers: {checked} files of {len(folders)} modules, {len(findings)} finding(s)")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
