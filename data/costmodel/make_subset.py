#!/usr/bin/env python3
"""Builds data/costmodel/subset/<op>.csv.gz: a small, fixed subset of the NeuSight
measurements for fast tests. For every op, 40 op configurations measured on all five GPUs
(chosen by a seeded shuffle), with the columns the cost models read.
Usage: make_subset.py [NEUSIGHT_TRAIN_DIR] (default ../shared/data/neusight/train)."""
import csv, glob, gzip, io, os, random, sys

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(__file__), "../../../shared/data/neusight/train")
out_dir = os.path.join(os.path.dirname(__file__), "subset")
os.makedirs(out_dir, exist_ok=True)
KEEP = ["OPName", "Latency", "Device", "Kernel Name", "Grid x", "Grid y", "Grid z",
        "Block x", "Block y", "Block z"]
for op_dir in sorted(glob.glob(os.path.join(src, "*"))):
    op = os.path.basename(op_dir)
    tables = {}
    for f in sorted(glob.glob(os.path.join(op_dir, "*.csv.gz"))):
        rows = list(csv.reader(gzip.open(f, "rt")))
        head = rows[0]
        first_dim = head.index("Kernels") + 1 if "Kernels" in head else head.index("CUDA Version") + 1
        dims = head[first_dim:]
        keep = KEEP + (["Kernels"] if "Kernels" in head else [])
        idx = [head.index(c) for c in keep] + list(range(first_dim, len(head)))
        by_cfg = {}
        for r in rows[1:]:
            by_cfg.setdefault(tuple(r[first_dim:]), [r[i] for i in idx])
        tables[f] = (keep + dims, by_cfg)
    common = sorted(set.intersection(*(set(t[1]) for t in tables.values())))
    random.Random(11).shuffle(common)
    pick = common[:40]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(next(iter(tables.values()))[0])
    for f, (_, by_cfg) in sorted(tables.items()):
        for cfg in pick:
            w.writerow(by_cfg[cfg])
    with gzip.GzipFile(os.path.join(out_dir, op + ".csv.gz"), "wb", mtime=0) as g:
        g.write(buf.getvalue().encode())
