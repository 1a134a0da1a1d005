#!/usr/bin/env python3
"""One CSV of every op family measured on one GPU.

  merge_ops.py RUN_DIR OUT.csv

RUN_DIR: the output of tools/gpu/measure_ops.py (RUN_DIR/<op>/<GPU>.csv, or .csv.gz as kept in
data/costmodel/measured-*); OUT.csv gets all their rows under the union of their columns, which
`dpro-replay costmodel predict` and `costmodel pick` read (each family its own dimension
columns), so that one call prices and scores every family. OUT.csv must not exist.
"""
import csv
import glob
import gzip
import os
import sys


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__, file=sys.stderr)
        return 2
    run_dir, out = sys.argv[1], sys.argv[2]
    files = sorted(glob.glob(os.path.join(run_dir, "*", "*.csv")) + glob.glob(os.path.join(run_dir, "*", "*.csv.gz")))
    if not files:
        print(f"merge_ops: {run_dir}: no <op>/<GPU>.csv(.gz) files", file=sys.stderr)
        return 2
    rows, head = [], []
    for f in files:
        try:
            with (gzip.open(f, "rt", newline="") if f.endswith(".gz") else open(f, newline="")) as g:
                r = csv.DictReader(g)
                head += [c for c in (r.fieldnames or []) if c not in head]
                rows += list(r)
        except (OSError, EOFError, UnicodeDecodeError, csv.Error) as e:
            print(f"merge_ops: {f}: not a readable CSV ({e})", file=sys.stderr)
            return 2
    try:
        with open(out, "x", newline="") as o:
            w = csv.DictWriter(o, fieldnames=head, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
    except FileExistsError:
        print(f"merge_ops: {out}: exists already; not overwritten", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
