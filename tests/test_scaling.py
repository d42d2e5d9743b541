#!/usr/bin/env python3
"""test_scaling.py [--pngs] BUILD_DIR MPIEXEC [unittest options]: bench/scaling and its
performance model (bench/tide_model.py).

On the CPU backend (no GPU needed): a sweep of the `ci` preset (BUILD_DIR/apps/tide), whose
rows must all be verified and carry every column; the model's flop and byte counts against
each plan's own ("cost" in each run's JSON); properties of the model (bytes per rank as GPUs
are added, the slab to pencil switch, a compute-bound multiply on two GPUs, large
predictions); a failing run recorded and the sweep going on; `validate`; and `plot` where
matplotlib cannot be imported: a message and exit status 2. With --pngs, only `plot` writing
its PNGs from a sweep of the ci preset; exit status 77 (a SKIP) where matplotlib is missing.

MPIEXEC launches every run (tests/mpiexec-isolated: each in a session directory of its own),
under `timeout` (RUN_LIMIT seconds): a hung run fails.

Exit status: 0 when every test passes, 1 otherwise, 77 as above.
"""
import csv
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest
import importlib.machinery
import importlib.util

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
SCRIPT = os.path.join(BENCH, "scaling")
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, BENCH)
import tide_model as model  # noqa: E402

BUILD = None  # from the command line
MPIEXEC = None  # ... and the launcher
RUN_LIMIT = 120  # seconds per run


def load_script():
    """bench/scaling as a module (it has no .py suffix)."""
    loader = importlib.machinery.SourceFileLoader("scaling_script", SCRIPT)
    spec = importlib.util.spec_from_loader("scaling_script", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def mpirun():
    """bench/scaling's --mpirun: MPIEXEC under `timeout` (RUN_LIMIT, then KILL 10 s after the
    TERM: every process of the run), with --oversubscribe for Open MPI and --allow-run-as-root
    when running as root."""
    cmd = ["timeout", "-k", "10", str(RUN_LIMIT), MPIEXEC]
    v = subprocess.run([MPIEXEC, "--version"], capture_output=True, text=True, timeout=60)
    if "Open MPI" in v.stdout + v.stderr or "OpenRTE" in v.stdout + v.stderr:
        cmd.append("--oversubscribe")
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    return shlex.join(cmd)


def run_script(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def run_sweep(*args):
    """bench/scaling run with the CPU backend, the tests' launcher and a limit per run beyond
    the launcher's own (which ends a hung run first)."""
    return run_script("run", "--backend", "cpu", "--tide", os.path.join(BUILD, "apps", "tide"),
                      "--mpirun", mpirun(), "--timeout", str(RUN_LIMIT + 30), *args)


def ci_sweep(tmp):
    """The ci preset's sweep into tmp/ci.csv (its output shown): the process and the path."""
    path = os.path.join(tmp, "ci.csv")
    p = run_sweep("--preset", "ci", "--csv", path, "--runs", "2")
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    return p, path


def have_matplotlib():
    return subprocess.run([sys.executable, "-c", "import matplotlib"],
                          capture_output=True).returncode == 0


def read_csv(path):
    with open(path, newline="") as f:
        r = csv.DictReader(f)
        return r.fieldnames, list(r)


class Sweep(unittest.TestCase):
    """The ci preset, run once for these tests."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="test_scaling.")
        cls.proc, cls.csv = ci_sweep(cls.tmp)
        cls.header, cls.rows = read_csv(cls.csv) if os.path.exists(cls.csv) else ([], [])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_sweep_rows(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        self.assertEqual(self.header, load_script().COLUMNS)
        self.assertEqual(len(self.rows), 13)
        for r in self.rows:
            with self.subTest(command=r["command"]):
                self.assertEqual(r["status"], "ok", r["stderr_tail"])
                self.assertEqual(r["verified"], "true")
                self.assertGreater(float(r["time"]), 0)
                self.assertTrue(r["command"].startswith("NCCL_NVLS_ENABLE=0 "))
                self.assertIn(" -json ", r["command"])
                for k in ("machine", "date", "op", "size", "precision", "ranks", "json"):
                    self.assertTrue(r[k], k)
        self.assertEqual({r["ranks"] for r in self.rows}, {"1", "2"})
        self.assertEqual({r["op"] for r in self.rows}, {"fft", "poisson", "stencil"})

    def test_stencil_rows(self):
        """The stencil rows carry the run's steps per pass, rates and halo transport."""
        rows = [r for r in self.rows if r["op"] == "stencil"]
        self.assertEqual(sorted(r["ranks"] for r in rows), ["1", "2"])
        for r in rows:
            with self.subTest(ranks=r["ranks"]):
                self.assertEqual((r["steps"], r["arrays"]), ("6", "host"))
                self.assertGreaterEqual(int(r["fuse"]), 1)
                self.assertGreater(float(r["host_copy"]), 0)
                self.assertEqual(r["exchange_kind"], "none" if r["ranks"] == "1" else "p2p")
                if r["ranks"] == "2":
                    self.assertGreater(float(r["exchange"]), 0)

    def test_counts_equal_the_plans(self):
        """The model's counts are the library's formulas: equal to each plan's own cost."""
        for r in self.rows:
            if r["op"] == "stencil":  # its JSON has no cost object: the counts are the model's
                continue
            with self.subTest(command=r["command"]):
                with open(r["json"]) as f:
                    d = json.load(f)
                p = model.plan(r["op"], r["size"], model.row_ranks(r), **model.row_options(r))
                self.assertEqual(model.check_counts(p, d["cost"]), [])
                self.assertEqual(r["counts"], "match")
                for k in model.FIELDS:
                    self.assertAlmostEqual(float(r["cost_" + k]), float(d["cost"][k]),
                                           delta=1e-9 * max(1.0, abs(float(d["cost"][k]))))
                self.assertEqual(p.describe(), _plan_words(d["plan"]))

    def test_poisson_rows_predicted(self):
        """Poisson on the CPU measures the host copy and exchange rates: a prediction."""
        for r in self.rows:
            if r["op"] == "poisson":
                self.assertGreater(float(r["predicted"]), 0)
                self.assertAlmostEqual(float(r["pred_ratio"]),
                                       float(r["predicted"]) / float(r["time"]), places=3)

    def test_validate(self):
        p = run_script("validate", self.csv)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("13 rows:", p.stdout)
        self.assertIn("without a prediction", p.stdout)

    def test_plot_without_matplotlib(self):
        """A matplotlib that cannot be imported: a clear message and exit status 2."""
        shadow = os.path.join(self.tmp, "shadow", "matplotlib")
        os.makedirs(shadow, exist_ok=True)
        with open(os.path.join(shadow, "__init__.py"), "w") as f:
            f.write("raise ImportError('matplotlib hidden by test_scaling.py')\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(shadow))
        p = run_script("plot", self.csv, "--out", os.path.join(self.tmp, "none"), env=env)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("matplotlib is not installed", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "none", "scaling_fft.png")))


class PlotPngs(unittest.TestCase):
    """`plot` with matplotlib (test_scaling.py --pngs): PNGs of the ci preset's sweep."""

    def test_plot_pngs(self):
        tmp = tempfile.mkdtemp(prefix="test_scaling.")
        try:
            sweep, path = ci_sweep(tmp)
            self.assertEqual(sweep.returncode, 0, sweep.stderr)
            out = os.path.join(tmp, "plots")
            p = run_script("plot", path, "--out", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            for op in ("fft", "poisson"):
                with open(os.path.join(out, "scaling_%s.png" % op), "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def _plan_words(plan):
    """The library's plan description without the exchange backends' names."""
    import re
    return re.sub(r"\[[a-z0-9-]+\]", "", plan)


class FailingRun(unittest.TestCase):
    def test_failure_recorded_and_sweep_goes_on(self):
        tmp = tempfile.mkdtemp(prefix="test_scaling.")
        try:
            path = os.path.join(tmp, "f.csv")
            # a 1^3 grid fits no mode: tide refuses it (exit status 2)
            p = run_sweep("--op", "poisson", "--sizes", "1,12", "--gpus", "1", "--csv", path,
                          "--runs", "1")
            self.assertEqual(p.returncode, 0, p.stderr)
            _, rows = read_csv(path)
            self.assertEqual(len(rows), 2)
            self.assertEqual(rows[0]["status"], "failed (exit 2)")
            # tide's message whole, from its first character
            self.assertTrue(rows[0]["stderr_tail"].startswith(
                "tide poisson: NX NY NZ 1 1 1: no mode fits the grid"), rows[0]["stderr_tail"])
            self.assertEqual(rows[1]["status"], "ok")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_every_run_failed(self):
        """A sweep whose every run failed: exit status 1 and why, the rows still written."""
        tmp = tempfile.mkdtemp(prefix="test_scaling.")
        try:
            path = os.path.join(tmp, "f.csv")
            p = run_sweep("--op", "poisson", "--sizes", "1", "--gpus", "1", "--csv", path,
                          "--runs", "1")
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            self.assertIn("every run failed", p.stderr)
            self.assertEqual(len(read_csv(path)[1]), 1)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class BadArguments(unittest.TestCase):
    """Values argparse refuses, and files that cannot be read: a message naming the argument,
    exit status 2, no traceback."""

    def check(self, args, status, pattern):
        p = run_script(*args, timeout=120)
        self.assertEqual(p.returncode, status, p.stdout + p.stderr)
        self.assertNotIn("Traceback", p.stderr)
        self.assertRegex(p.stderr, pattern)

    def test_refused(self):
        cases = [
            (["run", "--op", "fft", "--sizes", "abc"], "argument --sizes: 'abc': expected N"),
            (["run", "--op", "fft", "--gpus", "0"], "argument --gpus: '0': expected a whole"),
            (["run", "--op", "fft", "--runs", "-1"], "argument --runs: '-1': expected a whole"),
            (["run", "--op", "poisson", "--bc", "xyz"], "argument --bc: 'xyz': expected"),
            (["run", "--op", "fft", "--precision", "half"], "argument --precision: 'half'"),
            (["validate", "/missing.csv"],
             "argument csv: cannot read /missing.csv: No such file or directory"),
            (["plot", "/missing.csv"], "argument csv: cannot read /missing.csv"),
            (["predict", "--sizes", "2048x2"], "argument --sizes: '2048x2'"),
        ]
        for args, pattern in cases:
            with self.subTest(args=args):
                self.check(args, 2, pattern)


class NodePreset(unittest.TestCase):
    def test_node_preset_lists_every_operation(self):
        """The node preset's commands for four GPUs (a dry run: nothing is launched), on a
        machine whose GPUs do not count: an nvidia-smi that fails, first on PATH."""
        tmp = tempfile.mkdtemp(prefix="test_scaling.")
        try:
            smi = os.path.join(tmp, "nvidia-smi")
            with open(smi, "w") as f:
                f.write("#!/bin/sh\nexit 9\n")
            os.chmod(smi, 0o755)
            env = dict(os.environ, PATH=tmp + os.pathsep + os.environ.get("PATH", ""))
            p = run_script("run", "--preset", "node", "--gpus", "4", "--no-large", "--dry-run",
                           "--tide", os.path.join(BUILD, "apps", "tide"), env=env)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        cmds = [ln for ln in p.stdout.splitlines() if " -json " in ln]
        for op in ("fft", "poisson", "gemm", "stencil"):
            self.assertTrue(any("tide %s " % op in c for c in cmds), op)
        # stencils weak: four ranks keep 4 x 512 planes, in card and out of core per rank
        self.assertTrue(any("-np 4 " in c and "stencil cuda float 2048 512 512" in c and
                            " -device" in c for c in cmds))
        self.assertTrue(any("-np 4 " in c and "stencil cuda float 2048 512 512" in c and
                            "-budget 0.2" in c for c in cmds))
        # every case unbound; the FFTs of 1024^3 checked by their round trip
        self.assertTrue(all("--bind-to none" in c for c in cmds))
        self.assertTrue(all(("-roundtrip" in c) == ("fft" in c and "1024 1024 1024" in c)
                            for c in cmds))

    def test_op_and_budget_given(self):
        """--op picks a preset's runs; a budget given reaches every operation's command."""
        tide = os.path.join(BUILD, "apps", "tide")
        p = run_script("run", "--preset", "node", "--gpus", "2", "--op", "poisson", "--dry-run",
                       "--tide", tide)
        self.assertEqual(p.returncode, 0, p.stderr)
        cmds = [ln for ln in p.stdout.splitlines() if " -json " in ln]
        self.assertTrue(cmds and all("tide poisson " in c for c in cmds))
        for op in ("stencil", "fft", "poisson"):
            p = run_script("run", "--op", op, "--sizes", "16", "--gpus", "1,2", "--arrays", "host",
                           "--budget", "0.2", "--dry-run", "--tide", tide)
            cmds = [ln for ln in p.stdout.splitlines() if " -json " in ln]
            self.assertEqual(len(cmds), 2, op)
            self.assertTrue(all("-budget 0.2" in c for c in cmds), op)


class ModelProperties(unittest.TestCase):
    LADDER = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
    CASES = [("fft", {"type": t, "variant": v}) for t in ("c2c", "r2c")
             for v in ("natural", "transposed")] + \
            [("poisson", {"bc": bc}) for bc in ("ppp", "ppn")]

    def test_more_gpus_never_more_bytes_per_rank(self):
        """Doubling the GPUs on a fixed 64^3 grid never adds bytes per rank while the
        decomposition stays; for c2c transforms not across the slab to pencil switch either.
        (At the switch a solve does four exchanges instead of two, and r2c's halved dimension
        of 33 splits unevenly: there a rank may move more: docs/scaling.md.)"""
        keys = ("fft_bytes", "move_bytes", "exchange_bytes", "h2d_bytes", "d2h_bytes")
        for op, kw in self.CASES:
            prev = None
            for P in self.LADDER:
                c = model.plan(op, 64, P, precision="float", **kw).counts
                if prev and (prev["decomposition"] == c["decomposition"] or
                             (op == "fft" and kw["type"] == "c2c" and P > 2)):
                    for k in keys:
                        with self.subTest(op=op, kw=kw, P=P, k=k):
                            self.assertLessEqual(c[k], prev[k])
                prev = c

    def test_slab_to_pencil_switch(self):
        for P, dec, nat, tr, solve in ((64, "slabs", 2, 1, 2), (128, "pencils", 3, 2, 4)):
            f = model.plan("fft", 64, P, variant="natural").counts
            t = model.plan("fft", 64, P, variant="transposed").counts
            s = model.plan("poisson", 64, P, bc="ppp").counts
            self.assertEqual((f["decomposition"], t["decomposition"], s["decomposition"]),
                             (dec, dec, dec))
            self.assertEqual((f["exchanges"], t["exchanges"], s["exchanges"]), (nat, tr, solve))
        self.assertEqual(model.plan("fft", 64, 1).counts["exchanges"], 0)

    def test_double_gpu_solve_scales_inside_the_transform(self):
        """The GPU's periodic solve with device arrays and x a power of two, and the CPU's,
        transform x inside the spectral op (a pass of its own); with another x the GPU's double
        solve scales inside cuFFT's store (no bytes of its own); float with another x or host
        arrays keeps the scaling pass; a bounded dimension the line solves."""
        def mid(size=64, **kw):
            p = model.plan("poisson", size, 1, **kw)
            return [o.what for o in p.programs[0]][1], p.counts["move_bytes"]
        self.assertEqual(mid(size=60, precision="double"), ("eigen(in fft)", 0.0))
        for kw in ({"precision": "float"}, {"precision": "double"},
                   {"size": 2048, "precision": "double"},
                   {"precision": "double", "backend": "cpu"}):
            what, moved = mid(**kw)
            self.assertEqual(what, "fft+eigen(x)")
            self.assertGreater(moved, 0)
        for kw in ({"size": 60, "precision": "float"},
                   {"precision": "float", "arrays": "host"}):
            what, moved = mid(**kw)
            self.assertEqual(what, "eigen")
            self.assertGreater(moved, 0)
        self.assertNotIn("in fft", mid(precision="double", bc="ppn")[0])

    def test_gemm_halves_with_two_gpus_when_compute_bound(self):
        one, two = model.predict("gemm", 32768, 1), model.predict("gemm", 32768, 2)
        for p in (one, two):
            self.assertGreater(p["terms"]["compute_s"], p["terms"]["pcie_s"])
        self.assertAlmostEqual(two["seconds"] / one["seconds"], 0.5, places=12)
        # PCIe-bound (k = 1024): every GPU still reads all of A, so two do not halve it.
        a, b = model.predict("gemm", "32768x32768x1024", 1), \
            model.predict("gemm", "32768x32768x1024", 2)
        self.assertGreater(a["terms"]["pcie_s"], a["terms"]["compute_s"])
        self.assertGreater(b["seconds"] / a["seconds"], 0.5)

    def test_large_predictions_decrease(self):
        """2048^3 on 64..4096 GPUs of the DGX H100 system: the best decomposition's time falls
        at every step, and so does the automatic choice's without the latency term; the
        command prints a row per GPU count and the anchor."""
        gpus = (64, 128, 256, 512, 1024, 2048, 4096)
        rows = model.predict_large(ops=("fft",), sizes=(2048,), gpus=gpus)
        best = [r["best_seconds"] for r in rows]
        self.assertEqual([r["gpus"] for r in rows], list(gpus))
        self.assertTrue(all(b < a for a, b in zip(best, best[1:])), best)
        auto0 = [r["seconds"] for r in model.predict_large(ops=("fft",), sizes=(2048,),
                                                           gpus=gpus, latency_us=0.0)]
        self.assertTrue(all(b < a for a, b in zip(auto0, auto0[1:])), auto0)
        tmp = tempfile.mkdtemp(prefix="test_scaling.")
        try:
            path = os.path.join(tmp, "p.csv")
            p = run_script("predict", "--op", "fft", "--sizes", "2048", "--gpus",
                           ",".join(map(str, gpus)), "--csv", path)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("Anchor:", p.stdout)
            self.assertIn("DGX H100", p.stdout)
            _, pr = read_csv(path)
            self.assertEqual([int(r["gpus"]) for r in pr], list(gpus))
            self.assertTrue(all(r["status"] == "predicted" for r in pr))
            for r, m in zip(pr, rows):
                self.assertAlmostEqual(float(r["predicted"]) / m["seconds"], 1.0, places=8)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class GpuRows(unittest.TestCase):
    """The model's GPU terms on rows like those a GPU sweep writes (figures from
    docs/performance.md; no GPU needed): each prediction is the documented formula of the
    row's own counts and rates."""

    def row(self, **kw):
        r = dict.fromkeys(load_script().COLUMNS, "")
        r.update(status="ok", verified="true", backend="cuda", type="c2c", precision="float",
                 decomposition="auto", exchange_kind="nccl")
        r.update({k: str(v) for k, v in kw.items()})
        return r

    def test_device_nccl(self):
        # exchanges after the passes (a plan without overlapped ops)
        r = self.row(op="fft", size=1024, ranks=4, gpus=4, arrays="device", variant="natural",
                     time=0.01554, d2d=4100, exchange=329,
                     plan="fft(y,z) > nccl > fft(x) > nccl (slabs, exchange nccl)")
        c = model.plan("fft", 1024, 4, variant="natural").counts
        self.assertEqual((c["exchanges"], c["fft_passes"]), (2, 2))
        # slabs: fft(y,z) then fft(x), the same bytes each; cuFFT passes once per dimension
        self.assertAlmostEqual(c["gpu_fft_bytes"] / c["fft_bytes"], (2 + 1) / 2, places=12)
        want = c["gpu_fft_bytes"] / 4100e9 + c["exchange_bytes"] / 329e9
        self.assertAlmostEqual(model.predict_row(r)["seconds"] / want, 1.0, places=12)

    def test_device_overlapped(self):
        """Two GPUs, direct stores overlapped with the FFTs in 8 chunks: each op takes the
        longer of its FFT and its exchange plus one chunk's FFT; within 20% of the run."""
        plan = "fft(y,z)+direct x8 > fft(x)+direct x8 (slabs, exchange direct)"
        r = self.row(op="fft", size=1024, ranks=2, gpus=2, arrays="device", variant="natural",
                     time=0.01417, d2d=4080, exchange=303, exchange_kind="direct", plan=plan)
        data = 1024 ** 3 * 8 / 2                     # bytes a rank holds
        t_yz, t_x = 2 * (2 * data) / 4080e9, 2 * data / 4080e9  # cuFFT: a pass a dimension
        t_ex = data / 2 / 303e9                      # half of it leaves the rank
        want = max(t_yz, t_ex) + t_yz / 8 + max(t_x, t_ex) + t_x / 8  # either direction
        p = model.predict_row(r)
        self.assertEqual(p["terms"]["chunks"], 8)
        self.assertAlmostEqual(p["seconds"] / want, 1.0, places=12)
        self.assertLess(abs(p["seconds"] / 0.01417 - 1), 0.20)
        # the same row without its plan: the library's default, 8 chunks on GPUs
        r["plan"] = ""
        self.assertAlmostEqual(model.predict_row(r)["seconds"] / want, 1.0, places=12)

    def test_host_streamed(self):
        r = self.row(op="fft", size=1024, ranks=4, gpus=4, arrays="host", variant="natural",
                     budget_gb="2.147483648", time=0.1795, h2d=54, d2h=40.5, both=50.3, d2d=4100)
        p = model.predict_row(r)
        c = p["plan"].counts
        self.assertTrue(c["streamed"])
        self.assertEqual(c["round_trips"], 2)
        self.assertAlmostEqual(c["h2d_bytes"], 2 * 1024 ** 3 * 8 / 4)  # two round trips
        self.assertAlmostEqual(p["seconds"], (c["h2d_bytes"] + c["d2h_bytes"]) / 50.3e9)

    def test_stencil_halo_through_host(self):
        # two ranks of a 64x48x40 float grid each, 10 steps, 4 per pass, radius 1: three
        # exchanges of the 4 planes each rank receives from its one neighbour (Dirichlet x),
        # at the measured MPI rate, each copied down and up over PCIe, beside the sweeps of
        # the own planes (split passes), then the side's sweep of 3 x 4 planes a step
        r = self.row(op="stencil", size="64x48x40", ranks=2, gpus=2, arrays="device",
                     precision="float", steps=10, fuse=4, time=0.01, d2d=3000, exchange=3.1,
                     h2d=50, d2h=40, bc="ddd", exchange_kind="p2p")
        p = model.predict_row(r, gcells=200)
        b = 4 * 48 * 40 * 4
        want = max(64 * 48 * 40 * 10 / 200e9, 3 * (b / 3.1e9 + b / 40e9 + b / 50e9)) + \
            3 * 4 * 48 * 40 * 10 / 200e9
        self.assertAlmostEqual(p["seconds"] / want, 1.0, places=12)

    def test_stencil_halo_over_nccl(self):
        # four H200, 512^3 float per rank, 20 steps of one: the interior ranks' two 1 MB
        # planes at the NCCL rate the run measured for them (docs/performance.md), no PCIe,
        # beside the sweeps of the own planes, then both sides' sweeps of 3 planes a step
        r = self.row(op="stencil", size=512, ranks=4, gpus=4, arrays="device", steps=20,
                     fuse=1, time=0.0113, exchange=44.8, h2d=47, d2h=37, exchange_kind="nccl")
        p = model.predict_row(r, gcells=294.3)
        want = max(512 ** 3 * 20 / 294.3e9, 20 * 2 * 512 * 512 * 4 / 44.8e9) + \
            2 * 3 * 512 * 512 * 20 / 294.3e9
        self.assertAlmostEqual(p["seconds"] / want, 1.0, places=12)

    def test_stencil_out_of_card(self):
        # host arrays through the GPU: 20 steps of 8 per pass are 3 passes, each sending the
        # grid up and down at the PCIe rates, against the in-card compute; on two ranks (out
        # of core per rank) each pass also uploads the 8 halo planes of its one neighbour
        # (Dirichlet x) and the halo goes by MPI in host memory, not over PCIe
        g, b = 256 * 128 * 64 * 4, 8 * 128 * 64 * 4
        pcie = 3 * max(g / 50e9, g / 40e9, 2 * g / 80e9)
        pcie2 = 3 * max((g + b) / 50e9, g / 40e9, (2 * g + b) / 80e9)
        for P, want in ((1, pcie), (2, pcie2 + 3 * b / 3.1e9)):
            r = self.row(op="stencil", size="256x128x64", ranks=P, gpus=P, arrays="host",
                         steps=20, fuse=8, time=0.05, h2d=50, d2h=40, both=80, exchange=3.1,
                         exchange_kind="p2p" if P > 1 else "none")
            p = model.predict_row(r, gcells=300)
            self.assertGreater(pcie, 256 * 128 * 64 * 20 / 300e9)  # PCIe bound
            self.assertAlmostEqual(p["seconds"] / want, 1.0, places=12)

    def test_gemm(self):
        r = self.row(op="gemm", size=32768, ranks=1, gpus=2, arrays="host", precision="double",
                     time=0.7, h2d=53.5, d2h=41, both=46.75, gemm_gflops=53390)
        p = model.predict_row(r)
        n = 32768
        up, down = (n * n + 2 * n * n / 2) * 8, n * n / 2 * 8
        want = max(2.0 * n ** 3 / 2 / 53390e9, up / 53.5e9, down / 41e9, (up + down) / 46.75e9)
        self.assertAlmostEqual(p["seconds"], want)

    def test_gemm_shared_a(self):
        # four GPUs, A shared: each uploads a quarter of A's blocks, the others reach them
        r = self.row(op="gemm", size=32768, ranks=1, gpus=4, arrays="host", precision="double",
                     time=0.401, h2d=47, d2h=37.4, both=47.8, gemm_gflops=52340,
                     shared_a="true")
        p = model.predict_row(r)
        n = 32768
        up, down = (n * n / 4 + 2 * n * n / 4) * 8, n * n / 4 * 8
        self.assertAlmostEqual(p["plan"].counts["h2d_bytes"], up)
        want = max(2.0 * n ** 3 / 4 / 52340e9, up / 47e9, down / 37.4e9, (up + down) / 47.8e9)
        self.assertAlmostEqual(p["seconds"], want)

    def test_validate_incard_calibrates_one_gpu_rows(self):
        rows = [self.row(op="fft", size=512, ranks=1, gpus=1, arrays="device", time=0.00183,
                         d2d=4106, exchange_kind="none"),
                self.row(op="fft", size=512, ranks=4, gpus=4, arrays="device", time=0.00207,
                         d2d=4100, exchange=318)]
        d2d, incard = model.validate(rows), model.validate(rows, local="incard")
        self.assertFalse(d2d[0]["calibration"])
        self.assertTrue(incard[0]["calibration"])
        self.assertIsNone(incard[0]["flag"])
        self.assertAlmostEqual(incard[0]["ratio"], 1.0)
        self.assertGreater(incard[1]["predicted"], d2d[1]["predicted"])


def main():
    global BUILD, MPIEXEC
    args = sys.argv[1:]
    pngs = args[:1] == ["--pngs"]
    args = args[1:] if pngs else args
    if len(args) < 2:
        print("usage: test_scaling.py [--pngs] BUILD_DIR MPIEXEC [unittest options]",
              file=sys.stderr)
        return 2
    BUILD = os.path.abspath(args[0])
    tide = os.path.join(BUILD, "apps", "tide")
    if not os.access(tide, os.X_OK):
        print("test_scaling.py: no tide executable at %s" % tide, file=sys.stderr)
        return 1
    MPIEXEC = shutil.which(args[1])
    if not MPIEXEC:
        print("test_scaling.py: no launcher %s" % args[1], file=sys.stderr)
        return 1
    MPIEXEC = os.path.abspath(MPIEXEC)
    if pngs and not have_matplotlib():
        print("SKIP: matplotlib is not importable: no PNG plots to check")
        return 77
    names = ["PlotPngs"] if pngs else [
        n for n, v in globals().items()
        if isinstance(v, type) and issubclass(v, unittest.TestCase) and n != "PlotPngs"]
    prog = unittest.main(argv=[sys.argv[0]] + args[2:], defaultTest=names, exit=False,
                         verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
