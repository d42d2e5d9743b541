"""The Python binding's device paths on a GPU (suite gpu), on the ranks it is launched on:
plans with location="device" on tide.DeviceArray (tide_device_alloc, tide_copy), and with the
argument `cupy`, on CuPy arrays through __cuda_array_interface__ and through DLPack (an object
that offers only __dlpack__), on a CuPy stream; each result against the same plan's on host
arrays (location="host") and against NumPy (numpy.fft, the 7-point residual, numpy.matmul).

test_python_gpu.py [cupy]. Exit 77 (SKIP) where the context has no GPU (the reason printed:
tide_context_gpu_status), where libtide is built with sanitizers, or, with `cupy`, where CuPy
is not importable."""
import os
import sys

if os.environ.get("TIDE_TEST_SANITIZED"):
    print("SKIP: libtide is built with sanitizers; a Python interpreter cannot load it without "
          "preloading libasan (docs/python.md)")
    sys.exit(77)

import numpy as np                                  # noqa: E402
from mpi4py import MPI                              # noqa: E402

import tide                                         # noqa: E402

comm = MPI.COMM_WORLD
rank, P = comm.rank, comm.size
rng = np.random.default_rng(4321 + rank)
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"rank {rank}: FAIL {what}", flush=True)


def close(got, want, tol, what):
    scale = np.max(np.abs(want)) if want.size else 0.0
    err = np.max(np.abs(got - want)) / (scale or 1.0) if want.size else 0.0
    check(err <= tol, f"{what}: relative error {err:.3g} > {tol:g}")


def gather(box, a, n, dtype):
    g = np.zeros(n, dtype)
    for lo, hi, part in comm.allgather((box.lo, box.hi, np.asarray(a))):
        g[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]] = part
    return g


def piece(box, g):
    return g[box.lo[0]:box.hi[0], box.lo[1]:box.hi[1], box.lo[2]:box.hi[2]]


def fft_host(ctx, n, inbox, outbox, **kw):
    """The forward transform of a random input on host arrays: (input, output)."""
    with tide.FFT(ctx, n, inbox, outbox, **kw) as plan:
        a = plan.empty_in(memory="host")      # pinned: tide_host_alloc on a CUDA context
        a[...] = rng.standard_normal(a.shape)
        if kw.get("type", "c2c") == "c2c":
            a += 1j * rng.standard_normal(a.shape)
        b = plan.forward(a)
        want = np.fft.rfftn if kw.get("type") == "r2c" else np.fft.fftn
        close(b, piece(plan.outbox, want(gather(plan.inbox, a, n, a.dtype))), 1e-12,
              f"host fft {kw}")
        return a, b


def test_device_arrays(ctx):
    """DeviceArray in, DeviceArray out, for each operation, against its host plan."""
    n = (9, 6, 5)
    box = tide.Box.slab(n, 0, P, rank)
    for kw in ({"type": "c2c"}, {"type": "r2c"}):
        m = n if kw["type"] == "c2c" else n[:2] + (n[2] // 2 + 1,)
        outbox = tide.Box.slab(m, 0, P, rank)
        a, want = fft_host(ctx, n, box, outbox, **kw)
        with tide.FFT(ctx, n, box, outbox, location="device", **kw) as plan:
            da = plan.empty_in(memory="device").set(a)
            db = plan.forward(da, out=plan.empty_out(memory="device"))
            close(db.get(), want, 1e-12, f"device fft {kw} against the host plan")
            back = plan.backward(db, out=plan.empty_in(memory="device")).get()
            close(back, a * np.prod(n), 1e-12, f"device fft {kw} backward")
    with tide.Poisson(ctx, n, box, bc=("periodic", "periodic", "dirichlet")) as host, \
            tide.Poisson(ctx, n, box, bc=("periodic", "periodic", "dirichlet"),
                         location="device") as dev:
        f = host.empty()
        f[...] = rng.standard_normal(f.shape)
        u = host.solve(f)
        du = dev.solve(dev.empty(memory="device").set(f), out=dev.empty(memory="device"))
        close(du.get(), u, 1e-11, "device Poisson against the host plan")
    with tide.Stencil(ctx, n, box, bc="periodic") as host, \
            tide.Stencil(ctx, n, box, bc="periodic", location="device") as dev:
        u = host.empty()
        u[...] = rng.standard_normal(u.shape)
        du = dev.empty(memory="device").set(u)
        host.run(u, 5)
        dev.run(du, 5)
        close(du.get(), u, 1e-13, "device stencil against the host plan")
    if P == 1:
        m, k, nn = 7, 5, 6
        a, b = np.asfortranarray(rng.standard_normal((m, k))), np.asfortranarray(
            rng.standard_normal((k, nn)))
        with tide.GEMM(ctx, m, nn, k, location="device") as plan:
            da, db = ctx.device_empty(a.shape, order="F").set(a), ctx.device_empty(
                b.shape, order="F").set(b)
            dc = ctx.device_empty((m, nn), order="F")
            plan(da, db, dc, alpha=2.0)
            close(dc.get(), 2 * a @ b, 1e-13, "device GEMM against numpy.matmul")


class OnlyDLPack:
    """An array offered through DLPack alone (as JAX offers its arrays)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def test_cupy(ctx, cp):
    n = (8, 7, 5)
    box = tide.Box.slab(n, 1, P, rank)
    a, want = fft_host(ctx, n, box, box, type="c2c")
    stream = cp.cuda.Stream(non_blocking=True)
    with tide.FFT(ctx, n, box, box, location="device", stream=stream) as plan:
        with stream:
            # a plain copy: CuPy keeps the host array of an asynchronous upload referenced
            # past this call, and the context must not close while its pinned memory lives
            da = cp.asarray(np.array(a))
            db = cp.empty_like(da)
        plan.forward(da, out=db)                      # __cuda_array_interface__
        stream.synchronize()
        close(cp.asnumpy(db), want, 1e-12, "CuPy arrays on a CuPy stream")
        with stream:
            dc = cp.empty_like(da)
        plan.forward(OnlyDLPack(da), out=OnlyDLPack(dc))    # DLPack
        stream.synchronize()
        close(cp.asnumpy(dc), want, 1e-12, "CuPy arrays through DLPack")
        try:                                          # every extent > 1 on 1 or 2 ranks
            plan.forward(cp.asfortranarray(da), out=db)
            check(False, "a CuPy array in Fortran order on a C-ordered box: no error")
        except tide.ArgumentError:
            pass


def main():
    use_cupy = sys.argv[1:] == ["cupy"]
    cp = None
    if use_cupy:
        try:
            import cupy as cp
        except ImportError as e:
            if rank == 0:
                print(f"SKIP: CuPy is not importable ({e})")
            return 77
    with tide.Context(comm) as ctx:
        if comm.allreduce(ctx.backend != "cuda", MPI.LOR):
            if rank == 0:
                print(f"SKIP: no GPU for the context: {ctx.gpu_status}")
            return 77
        if use_cupy:
            cp.cuda.Device(ctx.device()["device"]).use()
            test_cupy(ctx, cp)
        else:
            test_device_arrays(ctx)
    bad = comm.allreduce(len(failures))
    if rank == 0:
        print(f"test_python_gpu{' cupy' if use_cupy else ''} on {P} ranks: "
              f"{'FAIL' if bad else 'ok'} ({bad} failures)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
