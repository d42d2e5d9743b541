"""stencil_orders.py: the GPU stencil's rate for each storage order of the grid.

    PYTHONPATH=python TIDE_LIBRARY=build-gpu/libtide.so python3 bench/stencil_orders.py \\
        [--n 512] [--steps 24] [--runs 5] [--shapes 7pt,27pt] [--precisions float,double]

One rank, device arrays (CuPy). For each shape and precision, the same random grid advanced in
C order (a[x, y, z] with z contiguous: `tide stencil`'s layout) and in Fortran order (x
contiguous: what the Fortran binding hands over by default), each with the plan's choice of
steps per pass (fuse 0) and with one step per pass (fuse 1). Every result must equal the C-order
fused one bitwise (the library's results do not depend on the storage order or on the steps per
pass); a difference is an error (exit status 1). Each line prints the rate in GCell/s (points x
steps / median seconds per run) and, as its bound, the C-order fused rate of the same run, with
their ratio.
"""
import argparse
import statistics
import sys
import time

import cupy as cp
import numpy as np
from mpi4py import MPI

import tide


def advance(ctx, u0, shape, prec, fuse, steps, runs):
    """Median seconds of a run of steps, and the result, for u0's storage order."""
    order = "F" if u0.flags.f_contiguous and not u0.flags.c_contiguous else "C"
    box = tide.Box((0, 0, 0), u0.shape, order)
    with tide.Stencil(ctx, u0.shape, box, shape_=shape, precision=prec, location="device",
                      fuse=fuse, bc="dirichlet") as plan:
        info = plan.info
        times = []
        for _ in range(runs):
            u = u0.copy(order=order)
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            plan.run(u, steps)
            cp.cuda.Device().synchronize()
            times.append(time.perf_counter() - t0)
        return statistics.median(times), u, info.get("fuse", fuse)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=512)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--shapes", default="7pt,27pt")
    ap.add_argument("--precisions", default="float,double")
    args = ap.parse_args()
    n, failed = args.n, 0
    cells = float(n) ** 3 * args.steps
    with tide.Context(MPI.COMM_SELF, backend="cuda") as ctx:
        for shape in args.shapes.split(","):
            for prec in args.precisions.split(","):
                dt = np.float32 if prec == "float" else np.float64
                rng = np.random.default_rng(7)
                host = rng.random((n, n, n), dtype=np.float64).astype(dt)
                ref = None
                for order in ("C", "F"):
                    u0 = cp.asarray(host, order=order)
                    for fuse in (0, 1):
                        t, u, used = advance(ctx, u0, shape, prec, fuse, args.steps, args.runs)
                        rate = cells / t / 1e9
                        if ref is None:
                            ref, bound = u, rate
                        same = bool(cp.array_equal(u, ref))
                        failed += not same
                        print(f"{shape} {prec} {order} order fuse {fuse} ({used} a pass): "
                              f"{rate:.1f} GCell/s, bound (C order, fused) {bound:.1f}, "
                              f"ratio {rate / bound:.3f}"
                              f"{'' if same else '  DIFFERS from the C-order fused result'}")
                        sys.stdout.flush()
                del ref, u0, u
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
