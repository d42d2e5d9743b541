"""python_overhead.py: what a call from Python costs over the same call from C.

    PYTHONPATH=python TIDE_LIBRARY=build/libtide.so python3 bench/python_overhead.py \\
        build/bench/libfft_call.so [--tiny N] [--large N] [--rounds R]

Times forward c2c double transforms on one rank, out of place, of one plan on the same arrays
(from plan.empty_in() and empty_out()), in turns: a batch from C (the loop in
bench/fft_call.c, loaded here) and a batch from Python (plan.forward(a, out=b)), R rounds,
each figure the median over the rounds. Each line prints the figure (the time per call from
Python), the bound it is measured against (the time per call from C for the same plan and
arrays, measured in the same run) and their ratio. On a tiny grid (default 4^3, where the
call's own cost shows) the times are the fastest round of each (the least disturbed by other
processes: microseconds drown in a loaded machine's noise) and the line adds the difference,
the time Python adds per call; on a large one (default 128^3) the medians and the median of
the rounds' ratios. The targets: under 20 microseconds added, a ratio within 5%. Exit status
1 when a target is missed.
"""
import argparse
import ctypes
import statistics
import time

import numpy as np
from mpi4py import MPI

import tide


def rounds(plan, a, b, c_loop, calls, count):
    """Seconds per call from C and from Python, one list each, the batches in turns."""
    handle, pa, pb = plan._handle, a.ctypes.data, b.ctypes.data
    c, py = [], []
    plan.forward(a, out=b)
    for _ in range(count):
        c.append(c_loop(handle, pa, pb, calls))
        t0 = time.perf_counter()
        for _ in range(calls):
            plan.forward(a, out=b)
        py.append((time.perf_counter() - t0) / calls)
    if min(c) < 0:
        raise RuntimeError("a transform from C failed")
    return c, py


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fft_call", help="the C loop, build/bench/libfft_call.so")
    ap.add_argument("--tiny", type=int, default=4)
    ap.add_argument("--large", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    c_loop = ctypes.CDLL(args.fft_call).fft_call_seconds
    c_loop.restype = ctypes.c_double
    c_loop.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    with tide.Context(MPI.COMM_SELF) as ctx:
        out = {}
        for n, calls in [(args.tiny, 5000), (args.large, 3)]:
            with tide.FFT(ctx, (n, n, n)) as plan:
                a, b = plan.empty_in(), plan.empty_out()
                a[...] = (np.arange(a.size) % 17 - 8.0).reshape(a.shape)
                out[n] = rounds(plan, a, b, c_loop, calls, args.rounds)
        threads = ctx.threads
    c, py = out[args.tiny]
    added = (min(py) - min(c)) * 1e6
    print(f"tiny {args.tiny}^3 forward: Python {min(py) * 1e6:.2f} us per call, against C's "
          f"{min(c) * 1e6:.2f} us for the same plan and arrays in this run (fastest rounds; "
          f"medians {statistics.median(py) * 1e6:.2f} and {statistics.median(c) * 1e6:.2f}); "
          f"ratio Python / C {min(py) / min(c):.3f}; Python adds {added:.2f} us (target < 20)")
    c, py = out[args.large]
    ratio = statistics.median(p / q for p, q in zip(py, c))
    print(f"large {args.large}^3 forward: Python {statistics.median(py) * 1e3:.3f} ms per call, "
          f"against C's {statistics.median(c) * 1e3:.3f} ms for the same plan and arrays in "
          f"this run (medians); ratio Python / C {ratio:.4f} (median of the rounds' ratios; "
          f"target 0.95..1.05); {threads} threads, {args.rounds} rounds")
    return 0 if added < 20 and abs(ratio - 1) <= 0.05 else 1


if __name__ == "__main__":
    raise SystemExit(main())
