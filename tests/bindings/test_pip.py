"""`pip install .` as docs/python.md gives it: the repository's packaging files (pyproject.toml,
setup.py, python/tide) copied beside a build/libtide.so that links to the library under test,
installed with --no-build-isolation --no-index into a fresh venv (--system-site-packages, for
NumPy and mpi4py), then on 2 ranks the installed package, run from outside the repository
without PYTHONPATH or TIDE_LIBRARY, must be the venv's, load the library found at build time
and transform like numpy.fft.

test_pip.py SOURCE_ROOT LIBTIDE_SO. Exit 77 (SKIP) where libtide is built with sanitizers, or
where this interpreter cannot make a venv with pip (Debian: python3-venv)."""
import os
import shutil
import subprocess
import sys
import tempfile

CHECK = r'''
import os, sys
import numpy as np
from mpi4py import MPI
import tide
comm = MPI.COMM_WORLD
venv, want = sys.argv[1], sys.argv[2]
bad = []
if not os.path.realpath(tide.__file__).startswith(os.path.realpath(venv)):
    bad.append(f"tide imported from {tide.__file__}, not the venv")
got = tide._capi.library_path()
if os.path.realpath(got) != os.path.realpath(want):
    bad.append(f"library {got}, not {want}")
n = (6, 5, 7)
rng = np.random.default_rng(7)
g = rng.standard_normal(n) + 1j * rng.standard_normal(n)
with tide.Context(comm, backend="cpu") as ctx, tide.FFT(ctx, n) as plan:
    a = plan.empty_in()
    b = plan.inbox
    a[...] = g[b.lo[0]:b.hi[0], b.lo[1]:b.hi[1], b.lo[2]:b.hi[2]]
    out = plan.forward(a)
    o = plan.outbox
    want_out = np.fft.fftn(g)[o.lo[0]:o.hi[0], o.lo[1]:o.hi[1], o.lo[2]:o.hi[2]]
    err = np.max(np.abs(out - want_out)) / np.max(np.abs(want_out)) if out.size else 0.0
    if err > 1e-12:
        bad.append(f"forward: relative error {err:.3g} against numpy.fft")
for line in bad:
    print(f"rank {comm.rank}: FAIL {line}", flush=True)
total = comm.allreduce(len(bad))
if comm.rank == 0:
    print(f"pip-installed tide on {comm.size} ranks: {'FAIL' if total else 'ok'}")
sys.exit(1 if total else 0)
'''


def main():
    if os.environ.get("TIDE_TEST_SANITIZED"):
        print("SKIP: libtide is built with sanitizers; a Python interpreter cannot load it "
              "without preloading libasan (docs/python.md)")
        return 77
    root, lib = sys.argv[1], os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="tide-pip.")
    try:
        src, venv = os.path.join(tmp, "src"), os.path.join(tmp, "venv")
        os.makedirs(os.path.join(src, "build"))
        for name in ("pyproject.toml", "setup.py"):
            shutil.copy(os.path.join(root, name), src)
        shutil.copytree(os.path.join(root, "python", "tide"),
                        os.path.join(src, "python", "tide"),
                        ignore=shutil.ignore_patterns("__pycache__", "*.in"))
        shutil.copytree(os.path.join(root, "docs"), os.path.join(src, "docs"),
                        ignore=lambda d, names: [n for n in names if n != "python.md"])
        os.symlink(lib, os.path.join(src, "build", "libtide.so"))
        made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                              capture_output=True, text=True)
        if made.returncode != 0:
            print(f"SKIP: {sys.executable} -m venv failed (python3-venv missing?):\n"
                  f"{made.stderr.strip()}")
            return 77
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "TIDE_LIBRARY", "PKG_CONFIG_PATH")}
        python = os.path.join(venv, "bin", "python")
        install = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation",
                                  "--no-index", "--no-cache-dir", src], env=env, cwd=tmp,
                                 capture_output=True, text=True)
        print(install.stdout[-3000:], install.stderr[-3000:], sep="\n")
        if install.returncode != 0:
            print("FAIL: pip install")
            return 1
        script = os.path.join(tmp, "check.py")
        with open(script, "w") as f:
            f.write(CHECK)
        launcher = os.environ.get("TIDE_MPIEXEC") or shutil.which("mpiexec")
        run = subprocess.run([launcher, "-n", "2", python, script, venv,
                              os.path.join(src, "build", "libtide.so")], env=env, cwd=tmp)
        return run.returncode
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
