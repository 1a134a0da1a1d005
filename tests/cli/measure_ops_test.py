#!/usr/bin/env python3
"""Host-side checks of tools/gpu/measure_ops.py (the GPU part needs PyTorch and a GPU, which
neither this machine nor CI has; docs/costmodel.md says where it ran): reading the op rows,
attributing a torch.profiler trace's kernels to the rows, the columns written, the refusal to
overwrite, and one message with exit code 2 for bad input. Run from the repository root."""
import csv
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "gpu"))
import measure_ops as m  # noqa: E402

SCRIPT = os.path.join("tools", "gpu", "measure_ops.py")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class ReadRows(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_rows_of_several_families_each_once(self):
        write(os.path.join(self.dir, "a.csv"), "OPName,Latency,B,M,N,K\nbmm,0.1,2,3,4,5\nbmm,0.2,2,3,4,5\nlinear,,1,8,16,32\n")
        write(os.path.join(self.dir, "b.csv"), "OPName,B,H\nrelu,64,1024\n")
        write(os.path.join(self.dir, "c.csv"), "OPName,B,Input_Channel,Output_Channel,Kernel_Size,Input_Size,Stride,Padding\n"
                                               "conv,8,3,64,7,224,2,0\n")
        rows = m.read_rows([self.dir])
        self.assertEqual(rows, [("bmm", (2, 3, 4, 5)), ("linear", (1, 8, 16, 32)), ("relu", (64, 1024)),
                                ("conv", (8, 3, 64, 7, 224, 2, 0))])

    def test_bad_rows_name_file_row_and_column(self):
        bad = write(os.path.join(self.dir, "bad.csv"), "OPName,B,H\nrelu,64,1024\nrelu,64,-3\n")
        with self.assertRaises(m.InputError) as e:
            m.read_rows([bad])
        self.assertIn("bad.csv: row 3, column H: '-3'", str(e.exception))
        unknown = write(os.path.join(self.dir, "unknown.csv"), "OPName,B,H\nswish,64,1024\n")
        with self.assertRaises(m.InputError) as e:
            m.read_rows([unknown])
        self.assertIn("unknown.csv: row 2: OPName 'swish'", str(e.exception))
        zero = write(os.path.join(self.dir, "zero.csv"), "OPName,B,M,N,K\nbmm,0,3,4,5\n")
        with self.assertRaises(m.InputError):
            m.read_rows([zero])

    def test_cli_bad_input_is_one_line_and_exit_2(self):
        r = run(os.path.join(self.dir, "missing.csv"), "-o", os.path.join(self.dir, "out"))
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("missing.csv: no such file or directory", r.stderr)
        noname = write(os.path.join(self.dir, "noname.csv"), "Op,B,H\nrelu,1,2\n")
        r = run(noname, "-o", os.path.join(self.dir, "out"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("noname.csv: no OPName column", r.stderr)

    def test_list_is_a_seeded_shuffle_of_all_rows(self):
        write(os.path.join(self.dir, "r.csv"), "OPName,B,H\n" + "".join(f"relu,{b},8\n" for b in range(1, 41)))
        a, b, c = (run(self.dir, "-o", "unused", "--list", "--seed", s).stdout.split("\n") for s in ("3", "3", "4"))
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        self.assertEqual(sorted(a), sorted(c))
        self.assertEqual(len([x for x in a if x]), 40)
        self.assertEqual(len([x for x in run(self.dir, "-o", "unused", "--list", "--limit", "7").stdout.split("\n") if x]), 7)
        rest = run(self.dir, "-o", "unused", "--list", "--seed", "3", "--skip", "25").stdout.split("\n")
        self.assertEqual(rest, a[25:])  # a stopped run goes on where it stopped
        self.assertEqual(run(self.dir, "-o", "unused", "--list", "--skip", "-1").returncode, 2)


def kineto_chunk():
    """A torch.profiler trace of two profiled rows: row 0 launched two kernels (runtime API),
    row 1 one (driver API); a kernel launched outside any row (by the profiler's own sync) and
    a launch whose kernel was not recorded belong to no row."""
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "dpro_row_0", "ts": 100, "dur": 50},
        {"ph": "X", "cat": "user_annotation", "name": "dpro_row_1", "ts": 200, "dur": 40},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 110, "dur": 5, "args": {"correlation": 1}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 120, "dur": 5, "args": {"correlation": 2}},
        {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "ts": 210, "dur": 5, "args": {"correlation": 3}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 300, "dur": 5, "args": {"correlation": 4}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 130, "dur": 5, "args": {"correlation": 9}},
        {"ph": "X", "cat": "kernel", "name": "splitKreduce_kernel", "ts": 160, "dur": 2.5,
         "args": {"correlation": 2, "grid": [4, 1, 1], "block": [128, 1, 1]}},
        {"ph": "X", "cat": "kernel", "name": "Sm80_Xmma_Gemm", "ts": 140, "dur": 20,
         "args": {"correlation": 1, "grid": [10, 2, 3], "block": [256, 1, 1], "warps per SM": 4.5, "blocks per SM": 0.5}},
        {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "ts": 230, "dur": 3,
         "args": {"correlation": 3, "grid": [80, 1, 1], "block": [128, 1, 1]}},
        {"ph": "X", "cat": "kernel", "name": "stray", "ts": 310, "dur": 1, "args": {"correlation": 4, "grid": [1, 1, 1],
                                                                              "block": [1, 1, 1]}},
    ]
    return ev


class Attribution(unittest.TestCase):
    def test_kernels_go_to_the_row_whose_range_launched_them(self):
        rows = m.attribute_launches(kineto_chunk(), 2)
        self.assertEqual([[k["name"] for k in r] for r in rows],
                         [["Sm80_Xmma_Gemm", "splitKreduce_kernel"], ["vectorized_elementwise_kernel"]])

    def test_columns_name_the_longest_kernel_and_list_all_in_launch_order(self):
        rows = m.attribute_launches(kineto_chunk(), 2)
        c = m.kernel_columns(rows[0])
        self.assertEqual(c["Kernel Name"], "Sm80_Xmma_Gemm")
        self.assertEqual((c["Grid x"], c["Grid y"], c["Grid z"], c["Block x"]), (10, 2, 3, 256))
        self.assertEqual((c["Warps per SM"], c["Blocks per SM"]), (4.5, 0.5))
        self.assertEqual(c["Kernels"], ";sm80_xmma_gemm;splitkreduce_kernel")
        self.assertEqual(c["Kernel Time"], "0.0225")
        self.assertIsNone(m.kernel_columns([]))

    def test_writer_never_overwrites(self):
        with tempfile.TemporaryDirectory() as d:
            w = m.Writer(d, "NVIDIA H100 80GB HBM3")
            w.check_free(["relu"])
            w.write("relu", {"OPName": "relu", "Latency": "0.01", "B": 1, "H": 2})
            w.close()
            path = os.path.join(d, "relu", "NVIDIA_H100_80GB_HBM3.csv")
            with open(path) as f:
                r = list(csv.DictReader(f))
            self.assertEqual((r[0]["OPName"], r[0]["H"]), ("relu", "2"))
            self.assertEqual(list(r[0])[:3], ["OPName", "Latency", "Device"])
            with self.assertRaises(m.InputError) as e:
                m.Writer(d, "NVIDIA H100 80GB HBM3").check_free(["relu"])
            self.assertIn("exists already", str(e.exception))


if __name__ == "__main__":
    unittest.main()
