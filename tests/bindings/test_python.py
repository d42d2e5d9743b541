"""The Python binding (python/tide) on 1 to 4 ranks against independent oracles: numpy.fft for
the transforms, the 7-point residual for Poisson, naive NumPy loops for stencils, numpy.matmul
for GEMM, on random inputs of odd sizes in random storage orders; bad input refused with the
same error on every rank; arrays of the wrong kind, shape, strides or memory refused; the
ctypes declarations against the C compiler's (the layout program) and tide.h's functions.

test_python.py LAYOUT_PROGRAM TIDE_H. Exit 77 (SKIP) where the library was built with
sanitizers (TIDE_TEST_SANITIZED: libasan would have to be preloaded into the interpreter)."""
import ctypes
import os
import re
import subprocess
import sys

if os.environ.get("TIDE_TEST_SANITIZED"):
    print("SKIP: libtide is built with sanitizers; a Python interpreter cannot load it without "
          "preloading libasan (docs/python.md)")
    sys.exit(77)

import numpy as np                                  # noqa: E402
from mpi4py import MPI                              # noqa: E402

import tide                                         # noqa: E402
from tide import _capi                              # noqa: E402

comm = MPI.COMM_WORLD
rank, P = comm.rank, comm.size
rng = np.random.default_rng(1234 + rank)
shared = np.random.default_rng(99)                  # the same draws on every rank
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"rank {rank}: FAIL {what}", flush=True)


def close(got, want, tol, what, scale=None):
    """got within tol of want, relative to scale (default: the largest of want)."""
    if scale is None:
        scale = np.max(np.abs(want)) if want.size else 0.0
    err = np.max(np.abs(got - want)) / (scale or 1.0) if want.size else 0.0
    check(err <= tol, f"{what}: relative error {err:.3g} > {tol:g}")


def gather(box, a, n, dtype):
    """The global array from every rank's box and its array a[x, y, z]."""
    g = np.zeros(n, dtype)
    for lo, hi, part in comm.allgather((box.lo, box.hi, np.asarray(a))):
        g[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]] = part
    return g


def piece(box, g):
    return g[box.lo[0]:box.hi[0], box.lo[1]:box.hi[1], box.lo[2]:box.hi[2]]


def random_order():
    return tuple(shared.permutation(3))


def expect_error(cls, fn, what):
    """fn() must raise cls on this rank; the messages must agree across ranks (up to this rank's
    own note)."""
    try:
        fn()
        message = None
    except tide.Error as e:
        check(isinstance(e, cls), f"{what}: raised {type(e).__name__}, not {cls.__name__}")
        message = e.message.split(" (on this rank:")[0]
    check(message is not None, f"{what}: no error")
    check(len(set(comm.allgather(message))) == 1, f"{what}: messages differ between ranks")
    return message


def api_text(header):
    """tide.h and the operations' headers it includes, comments removed."""
    text = open(header).read()
    for name in re.findall(r'(?m)^#include "(tide_\w+\.h)"', text):
        text += open(os.path.join(os.path.dirname(header), name)).read()
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def test_layout(program, header):
    sizes = {}
    for line in subprocess.run([program], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        struct, member, value = line.split()
        sizes[struct, member] = int(value)
    for (struct, member), value in sizes.items():
        cls = _capi.STRUCTS[struct]
        if member == "sizeof":
            got = ctypes_sizeof(cls)
        else:
            got = getattr(cls, "async_" if member == "async" else member).offset
        check(got == value, f"layout {struct}.{member}: ctypes {got}, C {value}")
    text = api_text(header)
    declared = set(re.findall(r"(?m)^TIDE_API\s+[\w \*]*?\b(tide_\w+)\s*\(", text))
    check(declared == set(_capi.PROTOTYPES),
          f"prototypes: missing {sorted(declared - set(_capi.PROTOTYPES))}, extra "
          f"{sorted(set(_capi.PROTOTYPES) - declared)}")


# tide.h's functions the Python face (tide/__init__.py) deliberately does not call, and why
# (docs/python.md's mapping says the same).
NOT_BOUND = {
    "tide_box_count": "Box.count computes it from the box in Python",
    "tide_gemm": "a GEMM plan made once does a single multiply",
}


# The same for the Fortran module (fortran/tide.f90's bind(c, name='...') interfaces).
NOT_BOUND_FORTRAN = {
    "tide_context_create": "reached through libtide_f's tide_f_context_create (MPI_Comm_f2c)",
    "tide_gemm": "a GEMM plan made once does a single multiply",
    "tide_gemm_execute": "the generic tide_gemm_execute calls tide_gemm_execute_complex",
}


def test_bound(header):
    """Every function of tide.h is called by tide/__init__.py, or listed in NOT_BOUND, and
    declared by the Fortran module, or listed in NOT_BOUND_FORTRAN: a new public C function
    fails here until it is bound or listed."""
    text = api_text(header)
    declared = set(re.findall(r"(?m)^TIDE_API\s+[\w \*]*?\b(tide_\w+)\s*\(", text))
    fortran = os.path.join(os.path.dirname(os.path.abspath(header)), "..", "fortran",
                           "tide.f90")
    for language, source, pattern, listed in [
            ("Python", open(tide.__file__).read(), r"_lib\.{}\b", NOT_BOUND),
            ("Fortran", open(fortran).read(), r"name='{}'", NOT_BOUND_FORTRAN)]:
        missing = {name for name in declared if not re.search(pattern.format(name), source)}
        check(missing == set(listed),
              f"unbound in {language}: {sorted(missing - set(listed))}; listed as unbound "
              f"but bound or gone: {sorted(set(listed) - missing)}")


def test_options():
    """Every field of tide.h's options structs is a keyword of the Python constructor, or set
    from another argument (listed here with the argument)."""
    import inspect
    derived = {"size": "the struct's size", "npoints": "weights", "precision": "dtype",
               "domain": "dtype"}
    renamed = {"shape": "shape_"}
    for struct, cls in [(_capi.ContextOptions, tide.Context), (_capi.FFTOptions, tide.FFT),
                        (_capi.PoissonOptions, tide.Poisson),
                        (_capi.StencilOptions, tide.Stencil), (_capi.BandOptions, tide.Band),
                        (_capi.GEMMOptions, tide.GEMM)]:
        keywords = set(inspect.signature(cls.__init__).parameters)
        missing = [f for f, _ in struct._fields_ if renamed.get(f, f) not in keywords and
                   not (f in derived and derived[f] in keywords | {"the struct's size"})]
        check(not missing, f"{cls.__name__}: options without a keyword: {missing}")


def ctypes_sizeof(cls):
    import ctypes
    return ctypes.sizeof(cls)


def test_fft(ctx):
    for ftype, prec, scaling, batch in [("c2c", "double", "none", 1), ("r2c", "double", "full", 2),
                                        ("c2c", "float", "symmetric", 1),
                                        ("r2c", "float", "none", 1)]:
        n = (5, 7, 9) if ftype == "c2c" else (7, 3, 5)
        split = int(shared.integers(2))
        inbox = tide.Box.slab(n, split, P, rank, random_order())
        m = n[:2] + (n[2] // 2 + 1,) if ftype == "r2c" else n
        outbox = tide.Box.pencil(m, 2, P, rank, random_order())
        what = f"fft {ftype} {prec} {scaling} batch {batch} in {inbox} out {outbox}"
        with tide.FFT(ctx, n, inbox, outbox, type=ftype, precision=prec, scaling=scaling,
                      batch=batch) as plan:
            check(plan.inbox == inbox and plan.outbox == outbox, f"{what}: boxes")
            a = plan.empty_in()
            a[...] = rng.standard_normal(a.shape)
            if ftype == "c2c":
                a += 1j * rng.standard_normal(a.shape)
            b = plan.forward(a)
            tol = 1e-12 if prec == "double" else 2e-5
            N = np.prod(n)
            fs = {"none": 1, "full": 1, "symmetric": N ** -0.5}[scaling]
            bs = {"none": 1, "full": 1 / N, "symmetric": N ** -0.5}[scaling]
            fields_a = a if batch > 1 else a[None]
            fields_b = b if batch > 1 else b[None]
            for f in range(batch):
                g = gather(inbox, fields_a[f], n, np.complex128)
                want = np.fft.rfftn(g.real) if ftype == "r2c" else np.fft.fftn(g)
                close(fields_b[f], piece(outbox, want) * fs, tol, f"{what}: forward field {f}")
            back = plan.backward(b, out=plan.empty_in())
            close(back, a * fs * bs * N, tol, f"{what}: backward")
            check(b.dtype == plan.out_dtype and back.dtype == plan.in_dtype, f"{what}: dtypes")
    # in place, c2c on x-slabs in Fortran order
    n = (3, 5, 7)
    box = tide.Box.slab(n, 0, P, rank, "F")
    with tide.FFT(ctx, n, box, box) as plan:
        a = plan.empty_in()
        check(a.flags.f_contiguous, "fft: empty_in in a Fortran-ordered box")
        a[...] = rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)
        want = piece(box, np.fft.fftn(gather(box, a, n, np.complex128)))
        b = plan.forward(a, out=a)
        check(b is a, "fft in place: returns out")
        close(a, want, 1e-12, "fft in place c2c")
    with tide.FFT(ctx, (6, 5, 7), type="r2c") as plan:
        a, b = plan.inplace()
        a[...] = rng.standard_normal(a.shape)
        want = piece(plan.outbox, np.fft.rfftn(gather(plan.inbox, a, (6, 5, 7), np.float64)))
        plan.forward(a, out=b)
        close(b, want, 1e-12, "fft in place r2c")
        check(plan.info["inplace_bytes"] >= max(a.nbytes, b.nbytes), "fft info inplace_bytes")


def laplacian(u, bc, h):
    """The 7-point operator with the ghost rules of tide.h: periodic wraps, Neumann u[-1] =
    u[0], Dirichlet u[-1] = -u[0]."""
    lap = np.zeros_like(u)
    for d in range(3):
        lo, hi = bc[d]
        if lo == "periodic":
            up, down = np.roll(u, -1, d), np.roll(u, 1, d)
        else:
            pad = np.concatenate([np.take(u, [0], d) * (1 if lo == "neumann" else -1), u,
                                  np.take(u, [-1], d) * (1 if hi == "neumann" else -1)], d)
            k = u.shape[d]
            up, down = np.take(pad, range(2, k + 2), d), np.take(pad, range(0, k), d)
        lap += (up - 2 * u + down) / h[d] ** 2
    return lap


def test_poisson(ctx):
    n, h = (7, 5, 9), (0.5, 1.0, 0.25)
    for bc, alpha, prec in [(("periodic",) * 3, 0.0, "double"),
                            (("periodic", "periodic", ("neumann", "dirichlet")), 0.5, "double"),
                            (("periodic", "periodic", "dirichlet"), 0.0, "float")]:
        box = tide.Box.slab(n, 0, P, rank, random_order())
        pairs = [(b, b) if isinstance(b, str) else b for b in bc]
        what = f"poisson {pairs} alpha {alpha} {prec} in {box}"
        with tide.Poisson(ctx, n, box, bc=bc, h=h, alpha=alpha, precision=prec) as plan:
            f = plan.empty()
            f[...] = rng.standard_normal(f.shape)
            u = plan.solve(f)
            G = gather(box, u, n, np.float64)
            F = gather(box, f, n, np.float64)
            mean = plan.mean[0]
            if plan.info["singular"]:
                close(np.array([mean]), np.array([F.mean()]), 1e-12, f"{what}: mean")
                F = F - F.mean()
            res = laplacian(G, pairs, h) - alpha * G
            close(res, F, 1e-10 if prec == "double" else 1e-4, f"{what}: residual")
            g = plan.solve(f, out=f)
            check(g is f, f"{what}: in place returns out")
            close(f, u, 1e-12 if prec == "double" else 1e-5, f"{what}: in place")


def test_stencil(ctx):
    n = (7, 9, 5)
    for shape_, bc, prec, steps, fuse in [("7pt", "periodic", "double", 3, 0),
                                          ("27pt", "dirichlet", "double", 4, 2),
                                          ("7pt", ("periodic", "dirichlet", "periodic"), "float",
                                           2, 0)]:
        box = tide.Box.in_grid(n, tide.proc_grid(P, n), rank, random_order())
        weights = shared.uniform(0.01, 0.1, 7 if shape_ == "7pt" else 27)
        what = f"stencil {shape_} {bc} {prec} steps {steps} in {box}"
        with tide.Stencil(ctx, n, box, shape_=shape_, weights=weights, bc=bc, precision=prec,
                          fuse=fuse) as plan:
            u = plan.empty()
            u[...] = rng.standard_normal(u.shape)
            G = gather(box, u, n, np.float64)
            plan.run(u, steps)
            taps = ([(0, 0, 0), (-1, 0, 0), (1, 0, 0), (0, -1, 0), (0, 1, 0), (0, 0, -1),
                     (0, 0, 1)] if shape_ == "7pt" else
                    [(dx, dy, dz) for dx in (-1, 0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1)])
            bcs = (bc,) * 3 if isinstance(bc, str) else bc
            dtype = np.float64 if prec == "double" else np.float32
            G = G.astype(dtype)
            for _ in range(steps):
                new = sum(np.float64(w).astype(dtype) * np.roll(G, (-dx, -dy, -dz), (0, 1, 2))
                          for w, (dx, dy, dz) in zip(weights, taps))
                for d in range(3):
                    if bcs[d] == "dirichlet":
                        idx = [slice(None)] * 3
                        for plane in (0, -1):
                            idx[d] = plane
                            new[tuple(idx)] = G[tuple(idx)]
                G = new.astype(dtype)
            close(u, piece(box, G), 1e-13 if prec == "double" else 1e-5, what)
    # a source term, the box of the plan's choice
    with tide.Stencil(ctx, n, bc="periodic") as plan:
        box = plan.box
        s = plan.empty()
        s[...] = 1.0
        with tide.Stencil(ctx, n, box, bc="periodic", source=s) as sp:
            u = sp.empty()
            u[...] = 2.0
            sp.run(u, 3)
            close(u, np.full(u.shape, 5.0), 1e-15, "stencil with a source")


def blocks(i, n, p):
    return slice(i * n // p, (i + 1) * n // p)


def test_band(ctx):
    """x <- A^steps x on row blocks against the dense product in the plan's precision."""
    n = 37
    for kl, ku, prec, steps in [(2, 3, "double", 5), (0, 1, "float", 3), (4, 0, "double", 4)]:
        dtype = np.float64 if prec == "double" else np.float32
        lo, hi = n * rank // P, n * (rank + 1) // P
        A = shared.uniform(-0.5, 0.5, (kl + ku + 1, n)).astype(dtype)
        x0 = shared.standard_normal(n).astype(dtype)
        with tide.Band(ctx, n, (lo, hi), diagonals=A[:, lo:hi], kl=kl, ku=ku,
                       precision=prec) as plan:
            x = plan.empty()
            x[...] = x0[lo:hi]
            plan.run(x, steps)
            check(plan.info["kl"] == kl and plan.info["ku"] == ku, "band info kl, ku")
        M = np.zeros((n, n), np.float64)
        for d in range(-kl, ku + 1):
            for i in range(max(0, -d), min(n, n - d)):
                M[i, i + d] = A[d + kl, i]
        y = x0.astype(np.float64)
        for _ in range(steps):
            y = M @ y
        close(x, y[lo:hi], 1e-12 if prec == "double" else 2e-5,
              f"band kl {kl} ku {ku} {prec} {steps} steps", scale=np.abs(y).max())
    expect_error(tide.ArgumentError,
                 lambda: tide.Band(ctx, n, diagonals=np.zeros((3, 1)), kl=1, ku=1),
                 "band diagonals of the wrong shape")


def test_gemm(ctx):
    for dtype, ta, tb, order, alpha, beta in [(np.float64, "N", "N", "F", 1.5, 0.0),
                                             (np.float64, "T", "N", "C", -0.5, 2.0),
                                             (np.float32, "N", "T", "F", 1.0, 1.0),
                                             (np.complex128, "C", "N", "F", 1 - 2j, 0.5j),
                                             (np.complex64, "N", "C", "C", 2.0, 0.0)]:
        m, n, k = 7, 5, 9
        what = f"gemm {np.dtype(dtype)} {ta}{tb} {order}"
        cplx = np.iscomplexobj(dtype(0))

        def rand(*shape):
            x = shared.standard_normal(shape)
            return (x + 1j * shared.standard_normal(shape) if cplx else x).astype(dtype)
        opa, opb, c0 = rand(m, k), rand(k, n), rand(m, n)
        with tide.GEMM(ctx, m, n, k, dtype=dtype, transa=ta, transb=tb, order=order) as plan:
            g = plan.info["grid"]
            r, c = rank // g[1], rank % g[1]
            rows, cols = blocks(r, m, g[0]), blocks(c, n, g[1])
            ka, kb = blocks(c, k, g[1]), blocks(r, k, g[0])
            stored = {"N": lambda x: x, "T": lambda x: x.T, "C": lambda x: x.conj().T}
            a = np.array(stored[ta](opa[rows, ka]), order=order)
            b = np.array(stored[tb](opb[kb, cols]), order=order)
            cc = np.array(c0[rows, cols], order=order)
            out = plan(a, b, cc, alpha=alpha, beta=beta)
            want = alpha * (opa.astype(np.complex128) @ opb) + beta * c0
            tol = 1e-12 if np.dtype(dtype).itemsize in (8, 16) and dtype != np.complex64 \
                else 1e-5
            check(out is cc, f"{what}: returns c")
            close(cc, want[rows, cols], tol, what)
    # the user's blocks: a grid of P x 1, C's rows cut unevenly (the first rank one row)
    m, n, k = 7, 5, 9
    rows = [0] + [1 + (i - 1) * (m - 1) // max(P - 1, 1) for i in range(1, P)] + [m]
    brows = [i * k // P for i in range(P + 1)]
    A, B = shared.standard_normal((m, k)), shared.standard_normal((k, n))
    with tide.GEMM(ctx, m, n, k, grid=(P, 1), blocks=(rows, None, None, brows)) as plan:
        r = slice(rows[rank], rows[rank + 1])
        check(plan.c_rows == (r.start, r.stop) and plan.c_shape == (r.stop - r.start, n),
              f"gemm user blocks: c_rows {plan.c_rows}, c_shape {plan.c_shape}")
        c = np.zeros(plan.c_shape, order="F")
        plan(np.asfortranarray(A[r]), np.asfortranarray(B[brows[rank]:brows[rank + 1]]), c)
        close(c, A[r] @ B, 1e-12, "gemm with the user's blocks")
    # leading dimensions: a column-major A inside a taller array
    if P == 1:
        big = np.asfortranarray(rng.standard_normal((11, 4)))
        a, b = big[:6, :], np.asfortranarray(rng.standard_normal((4, 3)))
        c = np.zeros((6, 3), order="F")
        with tide.GEMM(ctx, 6, 3, 4, lda=11) as plan:
            plan(a, b, c)
            close(c, a @ b, 1e-13, "gemm lda 11")
            expect_error(tide.ArgumentError, lambda: plan(np.asfortranarray(a), b, c),
                         "gemm: an array without the plan's lda")


def test_errors(ctx):
    n = (5, 7, 3)
    # boxes leaving a hole on the last rank only: refused on every rank alike
    box = tide.Box.slab(n, 0, P, rank)
    if rank == P - 1:
        box = tide.Box(box.lo, box.hi[:2] + (box.hi[2] - 1,))
    msg = expect_error(tide.BoxError, lambda: tide.FFT(ctx, n, box, box), "boxes with a hole")
    check("cover" in msg, f"boxes with a hole: message {msg!r}")
    if P > 1:
        expect_error(tide.MismatchError, lambda: tide.FFT(ctx, n, batch=1 + (rank == 0)),
                     "batch differing between ranks")
    msg = expect_error(tide.UnsupportedError, lambda: tide.FFT(ctx, n, location="device"),
                       "device arrays on a CPU context")
    expect_error(tide.ArgumentError, lambda: tide.Stencil(ctx, n, fuse=-1), "fuse -1")
    with pytest_raises(ValueError, "bad enum name"):
        tide.FFT(ctx, n, type="c2r")
    with tide.FFT(ctx, n) as plan:
        good = plan.empty_in()
        good[...] = 1
        out = plan.empty_out()
        last = rank == P - 1
        bads = {
            "float32 array": good.astype(np.complex64),
            "wrong shape": np.zeros(good.shape[::-1] + (1,), np.complex128),
            "transposed strides": np.asfortranarray(good) if good.ndim and min(good.shape) > 1
            else np.zeros((9, 9, 9), np.complex128),
            "a list": good.tolist(),
            "every other point": np.zeros(good.shape[:2] + (2 * good.shape[2],),
                                          np.complex128)[:, :, ::2],
            "a device array on a host plan": FakeDeviceArray(good),
        }
        for name, bad in bads.items():
            msg = expect_error(tide.ArgumentError,
                               lambda: plan.forward(bad if last else good, out=out),
                               f"forward given {name} on the last rank")
            check(f"rank {P - 1}" in msg, f"{name}: message {msg!r} does not name rank {P - 1}")
        ro = plan.empty_out()
        ro.flags.writeable = False
        expect_error(tide.ArgumentError, lambda: plan.forward(good, out=ro), "read-only out")
        # the plan still works after refusals
        plan.forward(good, out=out)
        close(out, piece(plan.outbox, np.fft.fftn(np.ones(n))), 1e-13, "forward after errors",
              np.prod(n))
    # a device plan refuses host arrays; device arrays are read through
    # __cuda_array_interface__
    fake = FakeDeviceArray(np.zeros((2, 3, 4), np.float32, order="F"))
    addr, why = tide._array(fake, True, np.dtype(np.float32), (2, 3, 4), (4, 8, 24), True)
    check(addr == fake.array.ctypes.data and not why, f"__cuda_array_interface__ read: {why}")
    addr, why = tide._array(FakeDeviceArray(np.zeros((2, 3, 4), np.float32)), True,
                            np.dtype(np.float32), (2, 3, 4), (4, 8, 24), True)
    check(addr is None and "strides" in why, "__cuda_array_interface__ in C order refused")
    addr, why = tide._array(np.zeros((2, 3, 4), np.float32), True, np.dtype(np.float32),
                            (2, 3, 4), (48, 16, 4), True)
    check(addr is None and "not in GPU memory" in why, f"host array on a device plan: {why}")
    addr, why = tide._array([0.0] * 24, True, np.dtype(np.float32), (2, 3, 4), (48, 16, 4),
                            True)
    check(addr is None and "__cuda_array_interface__ nor __dlpack__" in why,
          f"a list on a device plan: {why}")


class pytest_raises:
    def __init__(self, cls, what):
        self.cls, self.what = cls, what

    def __enter__(self):
        return self

    def __exit__(self, t, v, tb):
        check(t is not None and issubclass(t, self.cls), f"{self.what}: no {self.cls.__name__}")
        return True


class FakeDeviceArray:
    """An object with __cuda_array_interface__ over host memory (no GPU here), as CuPy
    describes its arrays: strides None for C order."""

    def __init__(self, array):
        self.array = array
        c = array.flags.c_contiguous
        self.__cuda_array_interface__ = {
            "shape": array.shape, "typestr": array.dtype.str, "version": 3,
            "data": (array.ctypes.data, False), "strides": None if c else array.strides}


def test_memory(ctx):
    """host_empty (tide_host_alloc), copy (tide_copy), device_empty (tide_device_alloc) and the
    context's refusal to close while its memory lives."""
    n = (5, 6, 7)
    with tide.FFT(ctx, n, tide.Box.slab(n, 0, P, rank, "F")) as plan:
        a = plan.empty_in(memory="host")
        check(a.ctypes.data % 64 == 0 and not a.any() and a.flags.f_contiguous,
              "host_empty: aligned, zeroed, in the box's order")
        a[...] = rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)
        b = plan.empty_out(memory="host")
        plan.forward(a, out=b)
        want = piece(plan.outbox, np.fft.fftn(gather(plan.inbox, a, n, np.complex128)))
        close(b, want, 1e-12, "fft on tide_host_alloc arrays")
        c = np.zeros_like(a)
        check(ctx.copy(c, a) is c and np.array_equal(c, a), "copy (tide_copy) host to host")
        with pytest_raises(ValueError, "copy between different sizes"):
            ctx.copy(np.zeros(3), a)
        msg = expect_error(tide.UnsupportedError, lambda: plan.empty_in(memory="device"),
                           "device_empty on a CPU context")
        check("tide_device_alloc" in msg, f"device_empty: message {msg!r}")
        plan.set_stream(None)                      # ignored on the CPU, accepted
        plan.forward(a, out=b)
        close(b, want, 1e-12, "fft after set_stream")
    # closing a context refused on every rank while one rank holds its memory
    other = tide.Context(comm, backend="cpu")
    held = other.host_empty((3, 4), np.float32) if rank == P - 1 else None
    msg = expect_error(tide.ArgumentError, other.close, "close with memory alive")
    check("1 arrays" in msg, f"close with memory alive: message {msg!r}")
    view = held[1:] if held is not None else None
    del held
    if view is not None:
        check(view.base is not None and view.sum() == 0, "a view keeps host memory alive")
    del view
    other.close()
    check(other.handle is None, "close once the memory is gone")


def test_dlpack():
    """DLPack read as the library needs it: numpy's own capsules (host memory: refused for a
    device plan), and a capsule made here that says CUDA (no GPU needed to read it)."""
    x = np.arange(24.0).reshape(4, 6)[:, ::2]
    view, device_type = tide._dlpack(x, None)
    check(device_type == 1 and view[:4] == (x.ctypes.data, x.dtype, x.shape, x.strides),
          f"dlpack of a strided numpy view: {view}")
    addr, why = tide._array(np.zeros((2, 3, 4)), True, np.dtype(np.float64), (2, 3, 4),
                            (96, 32, 8), True)
    check(addr is None and "not in GPU memory" in why, f"dlpack host array on a device plan: "
          f"{why}")
    bf16 = FakeDLPack(np.zeros((2, 3, 4), np.float32), False)
    bf16.managed.tensor.dtype.code = 4                  # kDLBfloat: no NumPy kind
    addr, why = tide._array(bf16, True, np.dtype(np.float32), (2, 3, 4), (48, 16, 4), True)
    check(addr is None and "could not be read" in why, f"dlpack bfloat16 refused: {why}")
    for order in ("F", "C"):   # F with its strides given, C with NULL strides (dense C)
        host = np.zeros((2, 3, 4), np.float32, order=order)
        fake = FakeDLPack(host, order == "F")
        addr, why = tide._array(fake, True, np.dtype(np.float32), (2, 3, 4), (4, 8, 24), True)
        if order == "F":
            check(addr == host.ctypes.data and not why, f"dlpack CUDA capsule read: {why}")
            check(fake.stream == 1, f"dlpack: legacy default stream 1 passed, not "
                  f"{fake.stream}")
        else:
            check(addr is None and "strides" in why, f"dlpack C order refused: {why}")


class FakeDLPack:
    """A DLPack producer whose capsule says kDLCUDA over host memory (the address is only
    read)."""

    class Managed(ctypes.Structure):
        _fields_ = [("tensor", tide._DLTensor), ("ctx", ctypes.c_void_p),
                    ("deleter", ctypes.c_void_p)]

    def __init__(self, array, with_strides):
        self.array = array
        self.shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.strides = (ctypes.c_int64 * array.ndim)(*(s // array.itemsize
                                                       for s in array.strides))
        t = tide._DLTensor(array.ctypes.data, 2, 0, array.ndim,
                           tide._DLDataType({"i": 0, "u": 1, "f": 2, "c": 5}[array.dtype.kind],
                                            array.itemsize * 8, 1), self.shape,
                           self.strides if with_strides else None, 0)
        self.managed = self.Managed(t, None, None)
        self.stream = None

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        self.stream = stream
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p,
                                                       ctypes.c_void_p]
        return new(ctypes.addressof(self.managed), b"dltensor", None)


def test_context():
    with tide.Context(comm, backend="cpu", threads=1) as ctx:
        check(ctx.backend == "cpu" and ctx.threads == 1, "context backend and threads")
        check(ctx.device()["device"] == -1, "context device on the CPU")
        check(ctx.last_error == "", f"fresh context last_error {ctx.last_error!r}")
        ctx.set_progress(0)
        expect_error(tide.ArgumentError, lambda: ctx.set_progress(-1), "set_progress(-1)")
        plan = tide.FFT(ctx, (3, 3, 3))
    check(plan._handle is None, "closing the context closes its plans")
    sub = comm.Split(rank % 2, rank)
    with tide.Context(sub) as ctx:
        with tide.FFT(ctx, (4, 5, 6)) as plan:
            a = plan.empty_in()
            a[...] = 1
            b = plan.forward(a)
            close(b, piece(plan.outbox, np.fft.fftn(np.ones((4, 5, 6)))), 1e-13,
                  "a context on a split communicator", 120)
    sub.Free()
    check(tide.version().count(".") == 2, "version")


def main():
    test_layout(sys.argv[1], sys.argv[2])
    test_bound(sys.argv[2])
    test_options()
    test_dlpack()
    test_context()
    with tide.Context(comm, backend="cpu") as ctx:
        test_fft(ctx)
        test_poisson(ctx)
        test_stencil(ctx)
        test_band(ctx)
        test_gemm(ctx)
        test_errors(ctx)
        test_memory(ctx)
    bad = comm.allreduce(len(failures))
    if rank == 0:
        print(f"test_python on {P} ranks: {'FAIL' if bad else 'ok'} ({bad} failures)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
