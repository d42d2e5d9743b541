"""heat.py: a heat-equation loop on Tide's stencil plan from Python, then the spectrum of the
result by a distributed real FFT.

    mpirun -np 4 python3 apps/examples/heat.py [-n N] [-steps S] [-png FILE]

u starts as 1 + a Fourier mode; every step applies the 7-point diffusion stencil (centre 1/4,
faces 1/8, periodic), which multiplies the mode by g = (1 + cos kx + cos ky + cos kz) / 4 and
keeps the mean. The FFT of the final u must hold N^3 at the zero mode and g^S times the
initial amplitude at the mode's coefficient, nothing elsewhere; the run checks both and exits 1
otherwise. -png writes a slice and the spectrum when matplotlib is present.
"""
import argparse
import sys

import numpy as np
from mpi4py import MPI

import tide


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("-steps", type=int, default=40)
    ap.add_argument("-png", default="")
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    n, mode = (args.n,) * 3, (1, 2, 3)
    with tide.Context(comm) as ctx, \
            tide.Stencil(ctx, n, bc="periodic") as heat, \
            tide.FFT(ctx, n, heat.box, type="r2c") as fft:        # the stencil's blocks as input
        u = heat.empty()
        x, y, z = np.meshgrid(*(np.arange(lo, hi) for lo, hi in zip(heat.box.lo, heat.box.hi)),
                              indexing="ij")
        k = [2 * np.pi * m / e for m, e in zip(mode, n)]
        u[...] = 1 + np.cos(k[0] * x + k[1] * y + k[2] * z)
        chunk = max(args.steps // 4, 1)
        done = 0
        while done < args.steps:                      # the loop a simulation runs
            s = min(chunk, args.steps - done)
            heat.run(u, s)
            done += s
            total = comm.allreduce(float(u.sum()))
            if comm.rank == 0:
                print(f"heat: step {done}/{args.steps}, sum of u {total:.6f}")
        spectrum = fft.forward(u)
        g = (1 + sum(np.cos(kd) for kd in k)) / 4
        N = np.prod(n)
        want = {(0, 0, 0): N, mode: N / 2 * g ** args.steps}
        err = 0.0
        ob = fft.outbox
        for idx in np.ndindex(*spectrum.shape):
            key = tuple(lo + i for lo, i in zip(ob.lo, idx))
            err = max(err, abs(spectrum[idx] - want.get(key, 0)))
        err = comm.allreduce(err, op=MPI.MAX) / N
        if comm.rank == 0:
            print(f"heat: {n[0]}x{n[1]}x{n[2]} on {comm.size} ranks, {heat.describe()}")
            print(f"heat: mode {mode} decayed by {g ** args.steps:.6e} (g = {g:.6f} per step); "
                  f"spectrum error {err:.3e} relative to N^3")
        if args.png:
            plot(comm, args.png, fft, spectrum, heat, u, n)
    ok = err < 1e-12
    if comm.rank == 0 and not ok:
        print("heat: FAILED")
    return 0 if ok else 1


def plot(comm, path, fft, spectrum, heat, u, n):
    """A slice of u at z = 0 and |spectrum| at kz = 0, gathered to rank 0 (with matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        if comm.rank == 0:
            print("heat: no matplotlib, no image")
        return
    slices = comm.gather((heat.box, u[:, :, :1].copy(), fft.outbox,
                          np.abs(spectrum[:, :, :1])), root=0)
    if comm.rank:
        return
    img, spec = np.zeros(n[:2]), np.zeros(n[:2])
    for box, us, obox, ss in slices:
        if box.lo[2] == 0 and us.size:
            img[box.lo[0]:box.hi[0], box.lo[1]:box.hi[1]] = us[:, :, 0]
        if obox.lo[2] == 0 and ss.size:
            spec[obox.lo[0]:obox.hi[0], obox.lo[1]:obox.hi[1]] = ss[:, :, 0]
    fig, ax = plt.subplots(1, 2, figsize=(8, 4))
    ax[0].imshow(img.T, origin="lower")
    ax[0].set_title("u at z = 0")
    ax[1].imshow(np.log10(spec.T + 1e-16), origin="lower")
    ax[1].set_title("log10 |FFT(u)| at kz = 0")
    fig.savefig(path)
    print(f"heat: wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
