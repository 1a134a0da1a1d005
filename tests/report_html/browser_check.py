#!/usr/bin/env python3
"""The HTML report in a real browser: `dpro-replay replay TRACE --html` for the bundled 8-rank DLRM
trace and the GPU-bound ResNet-50 trace, and `dpro-replay sweep --html` of the DLRM trace over two
settings, each loaded by headless chromium (Debian's package), which must log no console message
(the page logs nothing itself: any message is an error or an uncaught exception) and take a
screenshot that shows the charts: not blank, and the charts' colours present (the breakdown bars;
the sweep's bars of both series). A page that throws is loaded first, to show that this chromium reports console
errors at all (otherwise "no errors" would prove nothing).

Exit 0: passed; 1: failed (one line per finding); 77: chromium is not installed (ctest: skipped).
--keep DIR keeps the screenshots (docs/img/report-dlrm.png is one of them).
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

# The dpro-replay arguments of each page (the output file follows them).
PAGES = {"dlrm": ["replay", "traces/dlrm-8xV100"], "resnet50": ["replay", "traces/h100/resnet50"],
         "sweep-dlrm": ["sweep", "traces/dlrm-8xV100", "--set", "cluster.gpus_per_node=1", "--ranks", "8,16",
                        "--set", "network.inter_node_gbps=10,100"]}
# Colours of the charts (src/report_html/sections.cpp): compute, communication, cpu_untraced, launch;
# the sweep's first two series (src/report_html/sweep_page.cpp) are the first two of these colours.
CHART_COLOURS = {"compute": (0x4E, 0x79, 0xA7), "communication": (0xF2, 0x8E, 0x2B),
                 "cpu_untraced": (0xED, 0xC9, 0x48), "launch": (0xB0, 0x7A, 0xA1),
                 "sweep series 1": (0x4E, 0x79, 0xA7), "sweep series 2": (0xF2, 0x8E, 0x2B)}
# Each page must show at least these of them (DLRM: communication-heavy; ResNet-50: one GPU, no NCCL;
# the sweep: two network speeds at each of two job sizes).
REQUIRED = {"dlrm": ["compute", "communication", "cpu_untraced", "launch"],
            "resnet50": ["compute", "cpu_untraced", "launch"],
            "sweep-dlrm": ["sweep series 1", "sweep series 2"]}


def png_pixels(path):
    """(width, height, set of RGB colours with their pixel counts) of an 8-bit RGB/RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type = header[:4]
    if depth != 8 or colour_type not in (2, 6):
        raise ValueError(f"{path}: PNG bit depth {depth}, colour type {colour_type}: only 8-bit RGB(A) is read")
    bpp = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    counts, previous, pos = {}, bytearray(stride), 0
    for _ in range(height):
        filter_type, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, up_left = previous[i], previous[i - bpp] if i >= bpp else 0
            if filter_type == 1:
                line[i] = (line[i] + left) & 255
            elif filter_type == 2:
                line[i] = (line[i] + up) & 255
            elif filter_type == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif filter_type == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else up_left)) & 255
        for i in range(0, stride, bpp):
            rgb = (line[i], line[i + 1], line[i + 2])
            counts[rgb] = counts.get(rgb, 0) + 1
        previous = line
    return width, height, counts


def load_in_chromium(chromium, html, screenshot, profile):
    """Console lines chromium logged while loading `html` (empty: none)."""
    command = [chromium, "--headless", "--disable-gpu", "--no-sandbox", f"--user-data-dir={profile}",
               "--window-size=1400,2200", "--hide-scrollbars", f"--screenshot={screenshot}",
               "--enable-logging=stderr", "--v=0", "file://" + os.path.abspath(html)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", timeout=180)
    except subprocess.TimeoutExpired:
        return [f"chromium did not finish loading {html} within 180 s"]
    return [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


def check_page(name, chromium, html, screenshot, profile):
    findings = [f"{name}: console: {line}" for line in load_in_chromium(chromium, html, screenshot, profile)]
    if not os.path.exists(screenshot):
        return findings + [f"{name}: chromium wrote no screenshot"]
    width, height, counts = png_pixels(screenshot)
    total = width * height
    background = max(counts.values())
    if len(counts) < 16 or background > 0.97 * total:
        findings.append(f"{name}: screenshot looks blank ({len(counts)} colours, {background / total:.1%} one colour)")
    for colour in REQUIRED[name]:
        pixels = counts.get(CHART_COLOURS[colour], 0)
        if pixels < 200:  # a bar of the chart, not a legend swatch alone (10 x 10 pixels)
            findings.append(f"{name}: the {colour} bars are missing from the screenshot ({pixels} pixels)")
    print(f"{name}: {width}x{height}, {len(counts)} colours, "
          + ", ".join(f"{c} {counts.get(CHART_COLOURS[c], 0)} px" for c in REQUIRED[name]))
    return findings


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="dpro-replay")
    parser.add_argument("--keep", help="a directory to copy the screenshots into")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIPPED: chromium is not installed (Debian: apt-get install chromium; tools/install.sh installs it)")
        return 77
    findings = []
    with tempfile.TemporaryDirectory(prefix="dpro_html_") as tmp:
        bad = os.path.join(tmp, "throws.html")
        with open(bad, "w") as f:
            f.write("<!DOCTYPE html><html><body><script>no_such_function();</script></body></html>")
        if not load_in_chromium(chromium, bad, os.path.join(tmp, "throws.png"), os.path.join(tmp, "profile")):
            findings.append("chromium logged no console error for a page that throws: this check cannot see errors")
        for name, arguments in PAGES.items():
            html, png = os.path.join(tmp, f"report-{name}.html"), os.path.join(tmp, f"report-{name}.png")
            run = subprocess.run([args.binary] + arguments + ["--html", html, "-q"], capture_output=True, text=True)
            if run.returncode != 0:
                findings.append(f"{name}: dpro-replay exit {run.returncode}: {run.stdout}{run.stderr}")
                continue
            findings += check_page(name, chromium, html, png, os.path.join(tmp, "profile"))
            if args.keep and os.path.exists(png):
                shutil.copy(png, args.keep)
    for finding in findings:
        print(finding)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
