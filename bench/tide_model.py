"""tide_model: a performance model of Tide's plans, for scaling studies.

What it does. For an operation (fft, poisson, gemm, stencil), a size and a number of ranks P
(one GPU each), it predicts the time of one run from two things only:

  * the plan's own counts: flops and the bytes each rank moves over each link, computed here
    by the same rules the library uses (src/fft.c, src/layout.c, src/program.c,
    src/poisson.c, src/fft_stream.c), so that they equal what `tide fft|poisson -json` writes
    in its "cost" object (check_counts() compares them);
  * measured rates in GB/s: the device copy rate (d2d), PCIe up, down and both ways at once,
    the all-to-all exchange rate between the GPUs of a node (NCCL), the in-card GEMM and
    stencil rates, and, beyond one node, the network figures of a named system (SYSTEMS).

No constant in here is fitted to a measured time. Every term is bytes over a rate, flops over
a rate, or a count of messages times a per-message latency, and predict() returns the terms
so a reader can see which one dominates and why.

The model, per run on the busiest rank (predict() and docs/scaling.md say more):

  fft, poisson  local  = (gpu_fft_bytes + pointwise bytes) / d2d   (each FFT op reading and
                         writing its data once per dimension it transforms, as cuFFT runs one
                         kernel per dimension at these lengths, and the eigenvalue scaling or
                         tridiagonal pass of a solve once, at the device copy rate; packing for
                         the exchanges is not counted, as in the library's bound; on the CPU
                         backend fft_bytes, one read and write per op, at the host copy rate)
                exch   = sum over the plan's exchanges of
                         max(bytes to ranks of the node / node exchange rate,
                             bytes to other nodes / (node injection / GPUs per node))
                         + messages to other nodes x latency            (pairwise exchange:
                         Thakur, Rabenseifner and Gropp 2005)
                pcie   = host arrays only: bytes up and down at the measured PCIe rates
                time   = local + exch (device arrays), pcie + local + exch (host arrays copied
                         whole), max(pcie, local + exch) (host arrays streamed, NCCL inside the
                         pipeline), pcie + exch (streamed, MPI in host memory)
  gemm          time   = max(flops / (G x in-card GEMM rate), per-GPU PCIe time); each of the
                         G GPUs reads all of A (with A shared between the GPUs, its share of
                         A's blocks) and its share (n / G columns) of B and C, and writes its
                         share of C back
  stencil       time   = cells x steps / in-card GCell rate + ceil(steps / k) halo exchanges
                         of k r planes per face (weak scaling: each rank keeps its grid), each
                         at the measured rate of the halos' transport: NCCL between the GPUs,
                         or MPI in host memory plus the halo's copies down and up over PCIe
                         on the GPU. Device arrays on several GPU ranks (split passes): the
                         exchanges beside the sweep of the own planes, max(compute, exchanges),
                         plus each side's sweep of 3 k r planes per pass at the in-card rate.
                         Host arrays on the GPU (out of card, and out of core per
                         rank): max(compute, passes x the grid up and down at the PCIe rates),
                         passes = ceil(steps / k), plus on several ranks the halo exchanges at
                         the MPI rate in host memory (each rank's points stream straight
                         from its array, its halo from an array of its own: no copy)

Decompositions follow the library's automatic rule: slabs (one exchange with transposed
output, two with natural output) while P <= n[0] and P <= n[1], pencils beyond (two or three
exchanges, each among the ranks of one row or column of a near-square process grid).

Ranks are numbered node by node (mpirun's default by-slot mapping): rank r is on node
r // gpus_per_node.
"""

import math
import re
import statistics

# ---- rates and systems ------------------------------------------------------------------------

# Rates (GB/s; gemm in GFLOP/s, gcells in GCell/s) measured on the project's GPU machines, one
# H200 and four H200 with NVLink, on 2026-11-21 (`tide info --measure`, tests/test_gpu.c): the
# defaults where a run measured none (docs/scaling.md, "Default rates").
DEFAULT_RATES = {
    "d2d": 4223.0,          # device copy, read + write, one H200
    "h2d": 55.4,            # pinned host -> device, 1 GiB
    "d2h": 55.4,            # device -> pinned host
    "both": 101.5,          # both directions at once, total
    "exchange": 330.0,      # NCCL all-to-all among 4 H200 (NVLink), leaving each GPU
    "exchange_host": 3.7,   # MPI_Alltoall in host memory, 4 ranks (GPU data staged through it)
    "host_copy": None,      # not measured on the GPU machines
    "gemm": 57400.0,        # cuBLAS DGEMM n = 16384, one H200
    "gcells_float": 319.0,  # naive 7-point stencil, one step per sweep, 512^3 fp32
    "gcells_double": 136.0,  # ... fp64
}

# Per GPU when the four GPUs of the four-H200 machine move data at once (the aggregates
# measured there divided by 4): what each of G > 1 GPUs of a node gets from host memory.
DEFAULT_RATES_SHARED_PCIE = {"h2d": 214.0 / 4, "d2h": 164.0 / 4, "both": 187.0 / 4}

# Named systems for predictions beyond one node. Bandwidths in GB/s per direction.
SYSTEMS = {
    "dgx-h100": {
        "name": "NVIDIA DGX SuperPOD with DGX H100 nodes",
        "gpus_per_node": 8,
        # NVLink 4 through NVSwitch: 900 GB/s per GPU both directions together, 450 each way
        # (the ceiling; the model uses the measured NCCL all-to-all rate within a node).
        "nvlink_gbps": 450.0,
        # Compute fabric: 8 single-port ConnectX-7 per node at 400 Gb/s NDR InfiniBand, one per
        # GPU, in a rail-optimized, non-blocking fat tree: 8 x 50 GB/s = 400 GB/s per node
        # each way.
        "node_injection_gbps": 400.0,
        # Per message sent to another node, of an exchange posted to every peer at once: the
        # order of one GPU-to-GPU message latency over NDR InfiniBand. An assumption of this
        # model, not a figure of the reference architecture (--latency-us changes it).
        "latency_us": 1.0,
        "source": "NVIDIA (2023), DGX SuperPOD reference architecture featuring DGX H100 "
                  "systems (RA-11333-001): 8 H100 SXM5 per node, NVLink 4 / NVSwitch "
                  "900 GB/s per GPU, 8 x 400 Gb/s NDR InfiniBand (ConnectX-7) per node for "
                  "the compute fabric, rail-optimized full fat tree",
    },
}

# The published figures the issue compares with: cuFFTMp's strong scaling of a 2048^3 single
# precision complex FFT (NVIDIA 2022, the cuFFTMp early-access announcement), on Selene:
# DGX A100 nodes, 8 A100-80GB each, NVSwitch 300 GB/s per GPU both ways, HDR InfiniBand.
ANCHOR = {
    "what": "cuFFTMp, 2048^3 complex single precision, Selene (DGX A100, HDR InfiniBand)",
    "source": "NVIDIA (2022), cuFFTMp early-access announcement",
    "size": 2048,
    "times": {8: 0.078, 2048: 0.004},
}

FIELDS = ("flops", "fft_bytes", "move_bytes", "exchange_bytes", "h2d_bytes", "d2h_bytes",
          "exchanges", "fft_passes")


def rates_with_defaults(rates=None, gpus=1):
    """The rates given (None or missing keys: not measured) over the defaults."""
    r = dict(DEFAULT_RATES)
    if gpus > 1:
        r.update(DEFAULT_RATES_SHARED_PCIE)
    for k, v in (rates or {}).items():
        if v is not None and v != "" and float(v) > 0:
            r[k] = float(v)
    return r


# ---- boxes (src/box.c, comm/region.c) ---------------------------------------------------------
# A box is (lo, hi, order), each a tuple of 3; lo inclusive, hi exclusive, order slowest first.

def _count(b):
    lo, hi = b[0], b[1]
    c = 1
    for d in range(3):
        c *= max(0, hi[d] - lo[d])
    return c


def _inter(a, b):
    c = 1
    for d in range(3):
        e = min(a[1][d], b[1][d]) - max(a[0][d], b[0][d])
        if e <= 0:
            return 0
        c *= e
    return c


def _in_grid(n, grid, r, order=(0, 1, 2)):
    """tide_box_in_grid: rank r's block of an n grid cut into grid[0] x grid[1] x grid[2]."""
    c = (r // (grid[1] * grid[2]), r // grid[2] % grid[1], r % grid[2])
    lo = tuple(c[d] * n[d] // grid[d] for d in range(3))
    hi = tuple((c[d] + 1) * n[d] // grid[d] for d in range(3))
    return (lo, hi, tuple(order))


def _slab(n, dim, P, r):
    g = [1, 1, 1]
    g[dim] = P
    return _in_grid(n, g, r)


def proc_grid(P, n, split):
    """tide_proc_grid: the grid of P ranks over the dimensions allowed to split with the
    smallest block surface (ranks beyond a dimension's size are penalised)."""
    best, best_s = None, 0.0
    for a in range(1, P + 1):
        if P % a or (a > 1 and not split[0]):
            continue
        for b in range(1, P // a + 1):
            if (P // a) % b or (b > 1 and not split[1]):
                continue
            c = P // a // b
            if c > 1 and not split[2]:
                continue
            g = (a, b, c)
            blk = [n[d] / g[d] for d in range(3)]
            s = blk[0] * blk[1] + blk[1] * blk[2] + blk[0] * blk[2]
            if any(g[d] > n[d] for d in range(3)):
                s += 1e300 / 2
            if best is None or s < best_s:
                best, best_s = g, s
    return best


# ---- the FFT plan's chain and programs (src/fft.c, src/layout.c, src/program.c) ---------------

class _Chain:
    """The layout chain of one plan on P ranks with the library's default boxes: which layout
    each stage runs in, and where reshapes (exchanges) go."""

    def __init__(self, n, P, mode, r2c, half, transform, mid_whole, gpu, transposed):
        self.n, self.P, self.mode, self.gpu = tuple(n), P, mode, gpu
        self.transform = transform
        nout = list(n)
        if r2c:
            nout[half] = n[half] // 2 + 1
        self.nout = tuple(nout)
        # set_stages
        self.cut2 = 2 if (mid_whole is not None and (mid_whole & 2) and P <= nout[2]) else 1
        whole, group = self._layouts()
        self.stages = []  # dicts: whole, resize_dim, resize_to, gpu_real, dims, lay
        for ds in range(len(group)):
            dims = group[ds] & transform
            if not dims:
                continue
            first = not self.stages
            self.stages.append({"whole": dims, "resize_dim": half if first and r2c else -1,
                                "resize_to": nout[half], "gpu_real": first and r2c and gpu,
                                "dims": dims, "lay": ds})
        if mid_whole is not None:
            need, last = mid_whole, self.stages[-1]["lay"]
            ds = last
            while ds >= 0 and (whole[ds] & need) != need:
                ds -= 1
            if ds < 0:
                ds = last
                while ds < len(whole) - 1 and (whole[ds] & need) != need:
                    ds += 1
            self.stages.append({"whole": need, "resize_dim": -1, "resize_to": 0,
                                "gpu_real": False, "dims": 0, "lay": ds})
        self.pg = (1, 1)
        if mode == "pencils":
            g3 = proc_grid(P, n, (1, 1, 0))
            self.pg = (g3[0], g3[1])
        self._cache = {}
        self._build(transposed)

    def _layouts(self):
        if self.mode == "slabs":
            return [6, 7 & ~(1 << self.cut2)], [6, 1]
        if self.mode == "pencils":
            return [4, 2, 1], [4, 2, 1]
        return [7], [7]

    def deflt(self, s, g):
        """default_layout: stage s's layout on grid g (slabs, pencils or the whole grid)."""
        ds = self.stages[s]["lay"]
        key = (ds, tuple(g))
        if key in self._cache:
            return self._cache[key]
        grid = [1, 1, 1]
        if self.mode == "slabs":
            grid[0 if ds == 0 else self.cut2] = self.P
        elif self.mode == "pencils":
            wholed, k = 2 - ds, 0
            for d in range(3):
                if d != wholed:
                    grid[d] = self.pg[k]
                    k += 1
        order = [d for d in range(3) if not (self.transform >> d) & 1] + \
                [d for d in range(3) if (self.transform >> d) & 1]
        lay = [_in_grid(g, grid, r, order) for r in range(self.P)]
        self._cache[key] = lay
        return lay

    def _holds(self, lay, s, g):
        st = self.stages[s]
        w = st["whole"]
        for b in lay:
            if _count(b) == 0:
                continue
            for d in range(3):
                if (w >> d) & 1 and (b[0][d] != 0 or b[1][d] != g[d]):
                    return False
            if st["gpu_real"]:
                o = b[2]
                if o[2] != st["resize_dim"]:
                    return False
                for k in (1, 2):
                    if not (w >> o[k]) & 1 and (w >> o[k - 1]) & 1:
                        return False
        return True

    @staticmethod
    def _same(a, b):
        if a is b:
            return True
        for x, y in zip(a, b):
            if not (_count(x) == 0 and _count(y) == 0) and x != y:
                return False
        return True

    def _regrid(self, lay, d, length):
        out = []
        for b in lay:
            lo, hi = list(b[0]), list(b[1])
            empty = _count(b) == 0
            if not empty or lo[d] == 0:
                lo[d] = 0
                hi[d] = 0 if (empty and hi[d] == 0) else length
            else:
                lo[d] = hi[d] = min(lo[d], length)
            out.append((tuple(lo), tuple(hi), b[2]))
        return out

    def _across(self, lay, s, direction):
        st = self.stages[s]
        if st["resize_dim"] < 0:
            return lay
        d = st["resize_dim"]
        return self._regrid(lay, d, self.grid[s + 1][d] if direction > 0 else self.grid[s][d])

    def _build(self, transposed):
        S = len(self.stages)
        self.grid = [tuple(self.n)]
        for s in range(S):
            g = list(self.grid[s])
            if self.stages[s]["resize_dim"] >= 0:
                g[self.stages[s]["resize_dim"]] = self.stages[s]["resize_to"]
            self.grid.append(tuple(g))
        self.inl = self.deflt(0, self.n)
        out = None if transposed else self.deflt(0, self.nout)
        cur, self.A, self.B = self.inl, [], []
        for s in range(S):
            last = s == S - 1
            if self._holds(cur, s, self.grid[s]):
                a = cur
            elif last and out is not None and self._holds(out, s, self.grid[s + 1]):
                a = self._across(out, s, -1)
            else:
                a = self.deflt(s, self.grid[s])
            self.A.append(a)
            self.B.append(self._across(a, s, +1))
            cur = self.B[s]
        self.outl = out if out is not None else cur

    def steps(self, reverse):
        """tide_chain_steps: (stage or -1 for a reshape, from, to, from_grid, to_grid)."""
        S = len(self.stages)
        cur = self.outl if reverse else self.inl
        g = S if reverse else 0
        st = []
        for k in range(S):
            s = S - 1 - k if reverse else k
            frm, to = (self.B[s], self.A[s]) if reverse else (self.A[s], self.B[s])
            if not self._same(cur, frm):
                st.append((-1, cur, frm, g, g))
            g2 = s if reverse else s + 1
            st.append((s, frm, to, g, g2))
            cur, g = to, g2
        end = self.inl if reverse else self.outl
        if not self._same(cur, end):
            st.append((-1, cur, end, g, g))
        return st


class _Op:
    """One op of a program: its kind, what it costs on each rank; for an FFT the number of
    dimensions it transforms, its size (the product of their lengths) and whether no
    dimension is left to cut it along (uncut); mid: a solve's middle op."""

    def __init__(self, kind, what, cost, reshape=None, dims=0, size=0, uncut=False, mid=False):
        self.kind, self.what, self.cost, self.reshape = kind, what, cost, reshape
        self.dims, self.size, self.uncut, self.mid = dims, size, uncut, mid


def _program(ch, direction, r2c, scalar, batch, real_n, mid=None, scale=1.0, fuse_mid=False,
             fft_line=False):
    """make_program: the ops of the forward (-1), backward (+1) or solve (0) program, each
    with a function rank -> (flops, mem_bytes, net_bytes). fuse_mid: a diagonal middle op
    runs inside the local FFT right before it (cuFFT's store callback: the GPU, double data,
    every transformed dimension a DFT), costing no pass of its own. fft_line: the middle op
    transforms the periodic dimension mid itself (_spectral_op)."""
    in_elem = scalar if r2c else 2 * scalar
    out_elem = 2 * scalar
    fwd = ch.steps(False) if direction <= 0 else []
    back = len(fwd)
    steps = list(fwd)
    mid_at = len(fwd) - 1 if direction == 0 else -1
    if direction >= 0:
        rev = ch.steps(True)
        steps += rev[1:] if direction == 0 else rev
    ops = []
    for i, (stage, frm, to, fg, tg) in enumerate(steps):
        if i == mid_at:
            fused = fuse_mid and mid is None and i > 0 and steps[i - 1][0] >= 0
            ops.append(_spectral_op(frm, batch, scalar, mid, fused, fft_line))
        elif stage < 0:
            elem = in_elem if (r2c and fg == 0) else out_elem
            ops.append(_reshape_op(frm, to, elem * batch))
        else:
            ops.append(_fft_op(ch, stage, frm, to, i >= back, r2c, scalar, batch, real_n))
    if scale != 1.0:
        box_of = ch.inl if direction > 0 else ch.outl
        per = 1 if (direction > 0 and r2c) else 2

        def scost(r, box_of=box_of, per=per):
            cnt = _count(box_of[r]) * batch * per
            return (cnt, 2.0 * cnt * scalar, 0.0)
        ops.append(_Op("pointwise", "scale", scost))
    return ops


def _reshape_op(frm, to, elem):
    def cost(r):
        i, o, stay = _count(frm[r]), _count(to[r]), _inter(frm[r], to[r])
        return (0.0, 2.0 * (i + o) * elem, (i - stay) * elem)
    return _Op("reshape", "reshape", cost, reshape=(frm, to, elem))


def _fft_op(ch, stage, frm, to, reverse, r2c, scalar, batch, real_n):
    st = ch.stages[stage]
    real = r2c and stage == 0
    kind = "c2c" if not real else ("c2r" if reverse else "r2c")
    dims = [d for d in range(3) if (st["dims"] >> d) & 1]
    half = st["resize_dim"]

    def cost(r):
        ib, ob = frm[r], to[r]
        lines = 1.0
        for d in dims:
            if kind != "c2c" and d == half:
                lines *= real_n
            elif kind == "c2r":
                lines *= ob[1][d] - ob[0][d]
            else:
                lines *= ib[1][d] - ib[0][d]
        cin, cout = _count(ib) * batch, _count(ob) * batch
        lg = math.log2(lines) if lines > 1 else 0.0
        if kind == "c2c":
            flops = 5.0 * cin * lg
        else:
            flops = 2.5 * (cin if kind == "r2c" else cout) * lg
        mem = (cin * (1 if kind == "r2c" else 2) + cout * (1 if kind == "c2r" else 2)) * scalar
        return (flops, mem, 0.0)
    return _Op("fft", "fft(%s)" % ",".join("xyz"[d] for d in dims), cost, dims=len(dims),
               size=math.prod(ch.n[d] for d in dims),
               uncut=len(dims) == 3 or kind != "c2c" and ch.gpu and batch > 1)


def _spectral_op(frm, batch, scalar, line, fused=False, fft_line=False):
    """The Poisson solve's middle op: eigenvalue scaling (line None), or tridiagonal solves
    along dimension `line`, or (fft_line) the scaling between the transforms of the periodic
    dimension `line`, done by the op itself (tide_op_spectral's cost); fused: the scaling
    inside the FFT before it (tide_op_spectral_fused: no bytes of its own)."""
    def cost(r):
        pts = _count(frm[r]) * batch
        e = 2 * scalar
        if fft_line:
            n = frm[r][1][line] - frm[r][0][line]
            return (6.0 * pts + (10.0 * math.log2(n) * pts if n > 1 else 0.0),
                    2.0 * pts * e, 0.0)
        if line is not None:
            return (16.0 * pts, 2.0 * pts * e * 2 + 2.0 * pts * 8, 0.0)
        return (6.0 * pts, 0.0 if fused else 2.0 * pts * e, 0.0)
    name = ("eigen(in fft)" if fused else "eigen" if line is None else
            "fft+eigen(%s)" % "xyz"[line] if fft_line else "tridiag(%s)" % "xyz"[line])
    return _Op("pointwise" if line is None else "line", name, cost, mid=True)


def _sum_costs(ops, r):
    c = dict.fromkeys(FIELDS, 0.0)
    c["pointwise_bytes"] = c["gpu_fft_bytes"] = 0.0
    for o in ops:
        fl, mem, net = o.cost(r)
        c["flops"] += fl
        c["exchange_bytes"] += net
        if o.kind == "fft":
            c["fft_bytes"] += mem
            c["gpu_fft_bytes"] += mem * o.dims
            c["fft_passes"] += 1
        else:
            c["move_bytes"] += mem
            if o.kind != "reshape":
                c["pointwise_bytes"] += mem
        c["exchanges"] += o.kind == "reshape"
    return c


def _parse_size(size):
    """512, '512', '512x256x128' or (512, 256, 128) -> (nx, ny, nz)."""
    if isinstance(size, (tuple, list)):
        return tuple(int(v) for v in size)
    s = str(size).lower()
    if "x" in s:
        v = tuple(int(p) for p in s.split("x"))
        if len(v) != 3:
            raise ValueError("size %r: give N or NXxNYxNZ" % size)
        return v
    return (int(s),) * 3


def _decomp(P, n, decomposition):
    if P == 1:
        return "one rank"
    if decomposition in (None, "auto"):
        return "slabs" if P <= n[0] and P <= n[1] else "pencils"
    return decomposition


def _scalar(precision):
    return 8 if precision == "double" else 4


class Plan:
    """The model of one plan: its programs and what each rank's run costs.

    counts is the busiest rank's cost of one run (each field the largest over the ranks; an
    fft run is the mean of a forward and a backward transform), with the keys of the JSON's
    "cost" plus pointwise_bytes (the part of move_bytes that is not packing), decomposition,
    streamed and round_trips. programs holds the op lists whose reshapes the time model
    prices rank by rank."""

    def __init__(self, op, n, P, counts, programs, info):
        self.op, self.n, self.P, self.counts, self.programs = op, n, P, counts, programs
        self.info = info

    def describe(self):
        """The first program's steps, like the library's plan description (without the
        exchange backend's name)."""
        if not self.programs:
            return self.info.get("describe", "")
        return " > ".join(o.what for o in self.programs[0])


def _max_counts(per_rank):
    out = {}
    for k in per_rank[0]:
        out[k] = max(c[k] for c in per_rank)
    out["exchanges"] = int(out["exchanges"])
    out["fft_passes"] = int(out["fft_passes"])
    return out


def fft_plan(size, P, precision="float", type="c2c", arrays="device", variant="natural",
             decomposition="auto", batch=1, scaling="none", backend="cuda", budget_gb=None):
    """The model of `tide fft TYPE BACKEND PRECISION N N N` on P ranks with default boxes.

    arrays 'host' with backend cuda: one rank streams through the GPU (the data resident on
    the device between the passes when it fits half the budget); several ranks copy their
    arrays up whole unless the plan would exceed the device budget (estimated as 6 times the
    rank's data: two work arrays, exchange staging both ways and the two device copies; cuFFT's
    work area not counted), in which case they stream (src/fft.c: create)."""
    n = _parse_size(size)
    r2c = type == "r2c"
    s = _scalar(precision)
    transposed = variant == "transposed"
    gpu = backend != "cpu"
    nout = (n[0], n[1], n[2] // 2 + 1 if r2c else n[2])
    N = n[0] * n[1] * n[2]
    in_elem, out_elem = (s if r2c else 2 * s), 2 * s
    mode = _decomp(P, n, decomposition)
    budget = budget_gb * 1e9 if budget_gb else None
    streams_ok = (gpu and arrays == "host" and P <= n[0] and P <= n[1]
                  and mode in ("one rank", "slabs"))
    planes = -(-n[0] // P)  # the thickest x-slab
    data = planes * n[1] * max(n[2] * in_elem, nout[2] * out_elem)
    streamed = streams_ok and (P == 1 or (budget is not None and 6 * data * batch > budget))
    if streamed:
        moves = 0 if P == 1 else (1 if transposed else 2)
        field = max(N * in_elem, nout[0] * nout[1] * nout[2] * out_elem)
        resident = P == 1 and (budget is None or field * (2 if batch > 1 else 1) < budget / 2)
        per = []
        for r in range(P):
            ib = _count(_slab(n, 0, P, r)) * in_elem * batch
            ob = _count(_slab(nout, 1 if moves == 1 else 0, P, r)) * out_elem * batch
            c = {"flops": (2.5 if r2c else 5.0) * N * math.log2(N) * batch / P,
                 "fft_bytes": ib + 3.0 * ob, "move_bytes": 4.0 * ob if resident else 0.0,
                 "pointwise_bytes": 0.0, "gpu_fft_bytes": 2.0 * (ib + ob) + 2.0 * ob,
                 "exchange_bytes": moves * ob * (P - 1) / P, "exchanges": moves,
                 "fft_passes": 2}
            fwd = (ib + (0 if resident else ob), ob + (0 if resident else ob))
            bwd = (ob + (0 if resident else ob), ib + (0 if resident else ob))
            c["h2d_bytes"] = (fwd[0] + bwd[0]) / 2
            c["d2h_bytes"] = (fwd[1] + bwd[1]) / 2
            per.append(c)
        counts = _max_counts(per)
        counts.update(decomposition="slabs" if P > 1 else "one rank", streamed=True,
                      round_trips=1 if resident else 2)
        return Plan("fft", n, P, counts, [], {"describe": "stream fft(y,z) > stream fft(x)"})
    ch = _Chain(n, P, mode, r2c, 2, 7, None, gpu, transposed)
    sym = 1.0 / math.sqrt(N)
    fs = sym if scaling == "symmetric" else 1.0
    bs = sym if scaling == "symmetric" else (1.0 / N if scaling == "full" else 1.0)
    fwd = _program(ch, -1, r2c, s, batch, n[2], scale=fs)
    bwd = _program(ch, +1, r2c, s, batch, n[2], scale=bs)
    host_gpu = gpu and arrays == "host"
    per = []
    for r in range(P):
        a, b = _sum_costs(fwd, r), _sum_costs(bwd, r)
        c = {k: (a[k] + b[k]) / 2 for k in a}
        ib = _count(ch.inl[r]) * in_elem * batch
        ob = _count(ch.outl[r]) * out_elem * batch
        c["h2d_bytes"] = (ib + ob) / 2 if host_gpu else 0.0
        c["d2h_bytes"] = (ob + ib) / 2 if host_gpu else 0.0
        per.append(c)
    counts = _max_counts(per)
    counts.update(decomposition=mode, streamed=False, round_trips=1 if host_gpu else 0)
    return Plan("fft", n, P, counts, [fwd, bwd], {"chain": ch})


def _poisson_streamed(n, P, s, batch, half, L):
    """The counts of a Poisson solve of host arrays streamed through the GPU with every
    transform there (src/solver_stream.c; the CPU's x transforms, which the plan takes only
    where it measures them faster than the link, are not modelled): three passes over o-, m-
    and o-planes, each uploading its input and downloading its results in real scalars (complex
    data twice as many along z), two exchanges of the spectral data across ranks; the costs as
    src/fft.c's stream_cost reports them. None when the solve cannot stream (src/solver_stream.c:
    tide_solver_streamed_outer)."""
    o = 1 if L == 1 or (L != 0 and half == 0) else 0
    S = list(n)
    if half >= 0:
        S[half] = n[half] // 2 + 1
    if any(P > S[k] or P > n[k] for k in (0, 1)):
        return None
    zr = 2 * S[2] if half >= 0 else S[2]   # the spectral grid in real scalars along z
    celem = 2 * s if half >= 0 else s
    N = n[0] * n[1] * n[2]
    per = []
    for r in range(P):
        R_o = _count(_slab(n, o, P, r))
        S_o = _count(_slab((S[0], S[1], zr), o, P, r))
        S_m = _count(_slab((S[0], S[1], zr), 1 - o, P, r))
        ib = R_o * s * batch
        ob = _count(_slab(tuple(S), 1 - o, P, r)) * celem * batch  # the plan's outbox
        moves = 2 if P > 1 else 0
        c = {"flops": 2 * 2.5 * N * math.log2(N) * batch / P, "fft_bytes": 2 * ib + 6 * ob,
             "move_bytes": 0.0, "pointwise_bytes": 2.0 * ob, "gpu_fft_bytes": 2 * ib + 6 * ob,
             "exchange_bytes": moves * ob * (P - 1) / P, "exchanges": moves, "fft_passes": 4,
             "h2d_bytes": float((R_o + S_m + S_o) * s * batch),
             "d2h_bytes": float((S_o + S_m + R_o) * s * batch)}
        per.append(c)
    counts = _max_counts(per)
    counts.update(decomposition="slabs" if P > 1 else "one rank", streamed=True, round_trips=3)
    return counts, o


def _fft_what(dims, letters):
    """An FFT op's name as the library gives it (src/program.c): the DFT's dimensions, then
    the real-to-real ones, e.g. "fft(y)+r2r(x)"."""
    dft = [d for d in dims if letters[d] == "p"]
    r2r = [d for d in dims if letters[d] != "p"]
    parts = []
    if dft:
        parts.append("fft(" + ",".join("xyz"[d] for d in dft) + ")")
    if r2r:
        parts.append("r2r(" + ",".join("xyz"[d] for d in r2r) + ")")
    return "+".join(parts)


def poisson_plan(size, P, precision="float", bc="ppp", arrays="device", batch=1,
                 backend="cuda", decomposition="auto", budget_gb=None):
    """The model of `tide poisson BACKEND PRECISION N N N -bc BC` on P ranks: a real forward
    transform of the periodic dimensions, the spectral op (eigenvalue scaling, or tridiagonal
    solves along the bounded dimension) and the inverse transform as one program, the middle
    op where the last forward stage leaves the data (two exchanges on slabs, not four). Host
    arrays on the GPU are copied whole unless the solve would exceed the device budget
    (estimated as 4 times the rank's largest slab: its input and output copies and two work
    arrays), in which case they stream (_poisson_streamed)."""
    n = _parse_size(size)
    s = _scalar(precision)
    bc = bc.lower()
    letters = bc if len(bc) == 3 else bc[0::2]
    bounded = [d for d in range(3) if letters[d] != "p"]
    L = bounded[-1] if bounded else -1
    gpu = backend != "cpu"
    # every dimension periodic: x transformed inside the spectral op (poisson.c's
    # choose_fft_line) on the CPU, and on the GPU with device arrays where the backend's
    # kernel takes the line (gpu/poisson.cu: a power of two from 8 to 2048)
    nx = n[0]
    F = 0 if not bounded and (not gpu or (arrays == "device" and 8 <= nx <= 2048 and
                                          nx & (nx - 1) == 0)) else -1
    bit = (1 << L) if L >= 0 else (1 << F) if F >= 0 else 0
    transform = 7 & ~bit
    half = max(d for d in range(3) if (transform >> d) & 1)
    mode = _decomp(P, n, decomposition)
    budget = budget_gb * 1e9 if budget_gb else None
    if gpu and arrays == "host" and budget is not None and mode in ("one rank", "slabs"):
        data = -(-n[0] // P) * n[1] * n[2] * 2 * s  # a slab of the spectral data, about
        dft = [d for d in range(3) if (transform >> d) & 1 and letters[d] == "p"]
        h = max(dft) if dft else -1  # the halved dimension (r2r ones are not)
        streamed = _poisson_streamed(n, P, s, batch, h, L) if 4 * data * batch > budget \
            else None
        if streamed:
            counts, o = streamed
            outer = [d for d in (0, 1, 2) if d != o and d != L]
            mid = "tridiag(%s)" % "xyz"[L] if L >= 0 else "eigen"
            if o != L:
                x = _fft_what([o], letters)
                mid = "%s > %s > %s" % (x, mid, x)
            what = _fft_what(outer, letters)
            desc = "stream %s > stream %s > stream %s" % (what, mid, what)
            return Plan("poisson", n, P, counts, [], {"describe": desc})
    ch = _Chain(n, P, mode, True, half, transform, bit, gpu, True)
    prog = _program(ch, 0, True, s, batch, n[half],
                    mid=L if L >= 0 else F if F >= 0 else None,
                    fuse_mid=gpu and precision == "double" and not bounded, fft_line=F >= 0)
    host_gpu = gpu and arrays == "host"
    per = []
    for r in range(P):
        c = _sum_costs(prog, r)
        ib = _count(ch.inl[r]) * s * batch
        c["h2d_bytes"] = ib if host_gpu else 0.0
        c["d2h_bytes"] = ib if host_gpu else 0.0
        per.append(c)
    counts = _max_counts(per)
    counts.update(decomposition=mode, streamed=False, round_trips=1 if host_gpu else 0)
    return Plan("poisson", n, P, counts, [prog], {"chain": ch})


def gemm_plan(size, gpus=1, precision="double", beta=1.0, shared_a=False):
    """The model of `tide gemm cuda PRECISION M [N K] -gpus G` on host matrices: G GPUs each
    computing n / G columns of C (the largest share counted), each reading all of A (m x k),
    or with A shared between the GPUs (tide gemm -share-a) its share of A's blocks (the others
    reach it over NVLink, not counted), and its share of B (k x n/G) and, with beta != 0, of
    C, and writing its share of C back; A and B kept on the device, so each of their blocks
    crosses PCIe once."""
    if isinstance(size, (tuple, list)) or "x" in str(size):
        m, n, k = _parse_size(size)
    else:
        m = n = k = int(size)
    s = _scalar(precision)
    G = max(1, int(gpus))
    ng = -(-n // G)
    up = ((m * k / G if shared_a and G > 1 else m * k) + k * ng +
          (m * ng if beta != 0 else 0)) * s
    down = m * ng * s
    counts = {"flops": 2.0 * m * n * k, "gpu_flops": 2.0 * m * ng * k, "h2d_bytes": float(up),
              "d2h_bytes": float(down), "gpus": G}
    return Plan("gemm", (m, n, k), 1, counts, [], {})


def stencil_plan(size, P, precision="float", steps=20, fuse=1, radius=1, bc="ddd",
                 arrays="device"):
    """The model of a weak-scaling stencil run: each of P ranks keeps a size grid (the global
    grid is P times as long along x), advances it `steps` steps, `fuse` per pass, and every
    fuse steps exchanges fuse * radius planes with each neighbour along x (two for an
    interior rank or a periodic x, the largest counted). Host arrays (on the GPU: out of card)
    count the passes and the bytes each moves over PCIe: up the grid and its halo (the box
    grown by the planes it receives), down the grid. side_cells: the cells the split passes'
    side sweeps update (3 k r planes next to each neighbour, k steps a pass)."""
    n = _parse_size(size)
    s = _scalar(precision)
    k = max(1, int(fuse))
    plane = n[1] * n[2] * s
    neighbours = 0 if P == 1 else (2 if (P > 2 or bc[0] == "p") else 1)
    counts = {"cells": float(n[0] * n[1] * n[2] * steps),
              "exchanges": 0 if P == 1 else -(-steps // k),
              "exchange_bytes": float(neighbours * k * radius * plane),
              "messages": neighbours, "fuse": k, "host": arrays == "host",
              "side_cells": float(neighbours * 3 * k * radius * n[1] * n[2] * steps),
              "passes": -(-steps // k), "grid_bytes": float(n[0] * plane),
              "grown_bytes": float((n[0] + (neighbours * k * radius if P > 1 else 0)) * plane)}
    return Plan("stencil", n, P, counts, [], {})


def plan(op, size, P, **opts):
    """The model of one plan: op 'fft', 'poisson', 'gemm' (P is the GPU count) or 'stencil'."""
    if op == "fft":
        keys = ("precision", "type", "arrays", "variant", "decomposition", "batch", "scaling",
                "backend", "budget_gb")
        return fft_plan(size, P, **{k: opts[k] for k in keys if opts.get(k) is not None})
    if op == "poisson":
        keys = ("precision", "bc", "arrays", "batch", "backend", "decomposition", "budget_gb")
        return poisson_plan(size, P, **{k: opts[k] for k in keys if opts.get(k) is not None})
    if op == "gemm":
        keys = ("precision", "beta", "shared_a")
        return gemm_plan(size, P, **{k: opts[k] for k in keys if opts.get(k) is not None})
    if op == "stencil":
        keys = ("precision", "steps", "fuse", "radius", "bc", "arrays")
        return stencil_plan(size, P, **{k: opts[k] for k in keys if opts.get(k) is not None})
    raise ValueError("unknown op %r" % op)


def check_counts(model, cost, rel=1e-9):
    """Differences between the model's counts (a Plan or its counts) and a JSON row's "cost"
    object: a list of 'field: model X, plan Y' strings, empty when every field agrees to rel
    (relative) or exactly for integers."""
    counts = model.counts if isinstance(model, Plan) else model
    diffs = []
    for k in FIELDS:
        if k not in cost or cost[k] is None:
            continue
        a, b = float(counts.get(k, 0.0)), float(cost[k])
        if abs(a - b) > rel * max(abs(a), abs(b)):
            diffs.append("%s: model %.17g, plan %.17g" % (k, a, b))
    return diffs


# ---- time -------------------------------------------------------------------------------------

def _exchange_seconds(reshape, P, ranks, rates, system, latency_us):
    """The slowest of `ranks` in one reshape: bytes to ranks of its node at the node's exchange
    rate and bytes to other nodes at the GPU's share of the node's injection bandwidth, the two
    over different links at once, plus a latency per message to another node. Sends and
    receives are priced alike; the larger counts. Returns (seconds, terms of the slowest)."""
    frm, to, elem = reshape
    G = system["gpus_per_node"] if system else P
    net = system["node_injection_gbps"] / G if system else None
    lat = (latency_us if latency_us is not None else
           (system["latency_us"] if system else 0.0)) * 1e-6
    worst = (0.0, {})
    for r in ranks:
        node = r // G
        for side in (0, 1):  # sends, receives
            b_in = b_off = 0.0
            m_off = m_in = 0
            for q in range(P):
                if q == r:
                    continue
                c = _inter(frm[r], to[q]) if side == 0 else _inter(frm[q], to[r])
                if not c:
                    continue
                if q // G == node:
                    b_in += c * elem
                    m_in += 1
                else:
                    b_off += c * elem
                    m_off += 1
            t_in = b_in / (rates["exchange"] * 1e9)
            t_off = b_off / (net * 1e9) if b_off else 0.0
            t = max(t_in, t_off) + m_off * lat
            if t > worst[0]:
                worst = (t, {"in_node_bytes": b_in, "off_node_bytes": b_off,
                             "in_node_messages": m_in, "off_node_messages": m_off,
                             "in_node_s": t_in, "off_node_s": t_off,
                             "latency_s": m_off * lat})
    return worst


def _sample_ranks(P, G):
    return sorted({r for r in (0, 1, G - 1, G, P // 2, P - 1) if 0 <= r < P})


def _programs_exchange(p, rates, system, latency_us):
    """Seconds of the exchanges of one run (the mean of the programs: forward and backward for
    an fft, the solve for poisson), and the summed terms."""
    G = system["gpus_per_node"] if system else p.P
    ranks = _sample_ranks(p.P, G)
    total, terms = 0.0, {"off_node_bytes": 0.0, "in_node_bytes": 0.0, "latency_s": 0.0,
                         "off_node_messages": 0}
    for prog in p.programs:
        for o in prog:
            if o.kind != "reshape":
                continue
            t, tr = _exchange_seconds(o.reshape, p.P, ranks, rates, system, latency_us)
            total += t / len(p.programs)
            for k in terms:
                terms[k] += tr.get(k, 0) / len(p.programs)
    return total, terms


def overlap_chunks(chunks, gpu, P, exchange_kind):
    """The chunks in which a plan's exchanges overlap the FFTs beside them on GPUs
    (src/fft/fft_build.c, overlap_chunks): `chunks` where given (TIDE_FFT_CHUNKS; 0 or 1: none),
    else 8 where the GPUs exchange GPU to GPU (NCCL or direct stores) on several ranks. None on
    the CPU, which runs a plan's chunks one after the other."""
    if not gpu or P < 2:
        return 0
    if chunks is not None:
        return chunks if chunks >= 2 else 0
    return 8 if exchange_kind in (None, "nccl", "direct") else 0


def overlap_pairs(ops):
    """partner[j] = i and partner[i] = j where reshape j runs as one op with FFT i beside it
    (src/fft/fft_build.c, overlap_pairs): each reshape in turn takes the larger of the free
    FFTs before and after it (the earlier on a tie); not an FFT that transforms every dimension
    (nothing left to cut), a real one of a batch, or the one right before a solve's middle op."""
    partner = [-1] * len(ops)
    for j, o in enumerate(ops):
        if o.kind != "reshape":
            continue
        best = -1
        for i in (j - 1, j + 1):
            if not 0 <= i < len(ops) or partner[i] >= 0 or ops[i].kind != "fft" or \
                    ops[i].uncut or i + 1 < len(ops) and ops[i + 1].mid:
                continue
            if best < 0 or ops[i].size > ops[best].size:
                best = i
        if best >= 0:
            partner[j], partner[best] = best, j
    return partner


def _overlapped_seconds(p, rates, local_rate, gpu, chunks, system, latency_us):
    """Seconds of one run whose exchanges overlap the FFTs beside them, on the slowest of the
    sampled ranks (the mean of the programs): an overlapped op takes the longer of its FFT and
    its exchange plus one chunk's FFT (the pipeline's fill: the first chunk's FFT before any
    exchange, or the last chunk's after it); the other ops take their own time."""
    G = system["gpus_per_node"] if system else p.P
    worst = 0.0
    for r in _sample_ranks(p.P, G):
        total = 0.0
        for prog in p.programs:
            t = []
            for o in prog:
                if o.kind == "reshape":
                    t.append(_exchange_seconds(o.reshape, p.P, [r], rates, system,
                                               latency_us)[0])
                else:
                    mem = o.cost(r)[1] * (o.dims if o.kind == "fft" and gpu else 1)
                    t.append(mem / (local_rate * 1e9))
            partner = overlap_pairs(prog)
            for j, o in enumerate(prog):
                i = partner[j]
                if i < 0:
                    total += t[j]
                elif o.kind == "reshape":  # the pair, counted once: at its reshape
                    total += max(t[i], t[j]) + t[i] / chunks
        worst = max(worst, total / len(p.programs))
    return worst


def predict(op, size, P, rates=None, system=None, latency_us=None, exchange_kind=None,
            gcells=None, chunks=None, **opts):
    """Predicted seconds of one run and its terms.

    rates: measured rates (keys of DEFAULT_RATES; missing or None: the defaults); system: a
    key of SYSTEMS or a dict like them for runs beyond one node (None: one node, every peer
    reached at the measured exchange rate); exchange_kind: the exchange the run used ('nccl',
    'cuda-mpi', 'direct', 'a2av', 'p2p'; None: NCCL on the GPU), which decides the exchange rate
    of GPU data and whether an FFT's exchanges overlap the FFTs beside them; chunks: their
    chunks (TIDE_FFT_CHUNKS; None: the library's default, overlap_chunks); gcells: the in-card
    stencil rate (GCell/s). opts: the plan's options (plan()).
    Returns a dict: seconds, terms (seconds of each part and the bytes behind them), plan."""
    if isinstance(system, str):
        system = SYSTEMS[system]
    backend = opts.get("backend") or "cuda"
    gpu = backend != "cpu"
    r = rates_with_defaults(rates, P) if gpu else \
        {k: (float(v) if v not in (None, "") else None) for k, v in (rates or {}).items()}
    p = plan(op, size, P, **opts)
    c = p.counts
    if op == "gemm":
        rate = r.get("gemm")
        if not gpu or not rate:
            return {"seconds": None, "plan": p, "terms": {"why": "no in-card GEMM rate"}}
        t_comp = c["gpu_flops"] / (rate * 1e9)
        up, down = c["h2d_bytes"], c["d2h_bytes"]
        t_pcie = max(up / (r["h2d"] * 1e9), down / (r["d2h"] * 1e9),
                     (up + down) / (r["both"] * 1e9))
        return {"seconds": max(t_comp, t_pcie), "plan": p,
                "terms": {"compute_s": t_comp, "pcie_s": t_pcie, "up_bytes": up,
                          "down_bytes": down}}
    if op == "stencil":
        prec = opts.get("precision") or "float"
        rate = gcells or r.get("gcells_" + prec)
        if not rate:
            return {"seconds": None, "plan": p, "terms": {"why": "no in-card stencil rate"}}
        t_comp = c["cells"] / (rate * 1e9)
        lat = (latency_us if latency_us is not None else 0.0) * 1e-6
        # the halo's transport: NCCL between the GPUs of device arrays, else MPI in host memory
        # (the rate the run measured, else the defaults'); device data then crosses PCIe down
        # and up (out of core the halo is exchanged in host memory)
        nccl = gpu and exchange_kind in (None, "nccl") and not c["host"]
        measured = float((rates or {}).get("exchange") or 0)
        xr = (measured or DEFAULT_RATES["exchange" if nccl else "exchange_host"]) \
            if P > 1 else 1.0
        b = c["exchange_bytes"]
        pcie = b / (r["d2h"] * 1e9) + b / (r["h2d"] * 1e9) \
            if gpu and P > 1 and not nccl and not c["host"] else 0.0
        t_x = c["exchanges"] * (b / (xr * 1e9) + pcie + c["messages"] * lat)
        terms = {"compute_s": t_comp, "exchange_s": t_x, "gcells": rate, "exchange_rate": xr}
        if gpu and P > 1 and not c["host"]:
            # split passes (docs/design.md): the halo travels as the own planes are swept, then
            # the sides, which write the planes next to the halo
            t_side = c["side_cells"] / (rate * 1e9)
            terms.update(side_s=t_side)
            return {"seconds": max(t_comp, t_x) + t_side, "plan": p, "terms": terms}
        if not (gpu and c["host"]):
            return {"seconds": t_comp + t_x, "plan": p, "terms": terms}
        g, gu = c["grid_bytes"], c["grown_bytes"]
        t_pcie = c["passes"] * max(gu / (r["h2d"] * 1e9), g / (r["d2h"] * 1e9),
                                   (gu + g) / (r["both"] * 1e9))
        terms.update(pcie_s=t_pcie)
        return {"seconds": max(t_comp, t_pcie) + t_x, "plan": p, "terms": terms}
    # fft, poisson
    local_rate = r.get("d2d") if gpu else r.get("host_copy")
    if not local_rate:
        return {"seconds": None, "plan": p, "terms": {"why": "no local copy rate measured"}}
    t_local = (c["gpu_fft_bytes" if gpu else "fft_bytes"] + c["pointwise_bytes"]) / \
        (local_rate * 1e9)
    rx = dict(r)
    if gpu and exchange_kind in ("a2av", "p2p") and not (rates or {}).get("exchange"):
        rx["exchange"] = DEFAULT_RATES["exchange_host"]
    if c["exchanges"] and not rx.get("exchange"):
        return {"seconds": None, "plan": p, "terms": {"why": "no exchange rate measured"}}
    if c["streamed"]:
        t_x = 0.0
        xt = {}
        if c["exchanges"]:
            t_x = c["exchange_bytes"] / (rx["exchange"] * 1e9)
            xt = {"exchange_rate": rx["exchange"]}
        if c["round_trips"] >= 2:
            t_pcie = (c["h2d_bytes"] + c["d2h_bytes"]) / (r["both"] * 1e9)
        else:
            t_pcie = c["h2d_bytes"] / (r["h2d"] * 1e9) + c["d2h_bytes"] / (r["d2h"] * 1e9)
        inside = (exchange_kind or "nccl") == "nccl"
        secs = max(t_pcie, t_local + t_x) if inside else t_pcie + t_x
        return {"seconds": secs, "plan": p,
                "terms": dict(local_s=t_local, exchange_s=t_x, pcie_s=t_pcie,
                              exchange_inside_pipeline=inside, **xt)}
    t_x, xt = _programs_exchange(p, rx, system, latency_us) if c["exchanges"] else (0.0, {})
    t_pcie = 0.0
    if gpu and c["h2d_bytes"]:
        t_pcie = c["h2d_bytes"] / (r["h2d"] * 1e9) + c["d2h_bytes"] / (r["d2h"] * 1e9)
    terms = {"local_s": t_local, "exchange_s": t_x, "pcie_s": t_pcie}
    terms.update(xt)
    k = overlap_chunks(chunks, gpu, P, exchange_kind) if c["exchanges"] else 0
    if k:
        t_run = _overlapped_seconds(p, rx, local_rate, gpu, k, system, latency_us)
        terms.update(chunks=k, overlapped_s=t_run)
        return {"seconds": t_run + t_pcie, "plan": p, "terms": terms}
    return {"seconds": t_local + t_x + t_pcie, "plan": p, "terms": terms}


# ---- rows: measured runs (bench/scaling's CSV, or a -json file) -------------------------------

RATE_KEYS = ("d2d", "h2d", "d2h", "both", "exchange", "host_copy")


def row_options(row):
    """The plan options of a CSV row (bench/scaling's columns)."""
    def get(k, default=None):
        v = row.get(k)
        return default if v in (None, "") else v
    opts = {"precision": get("precision", "float"), "backend": get("backend", "cuda")}
    op = row["op"]
    if op == "fft":
        opts.update(type=get("type", "c2c"), arrays=get("arrays", "device"),
                    variant=get("variant", "natural"),
                    decomposition=get("decomposition", "auto"),
                    budget_gb=float(get("budget_gb")) if get("budget_gb") else None)
    elif op == "poisson":
        opts.update(bc=get("bc", "ppp"), arrays=get("arrays", "device"),
                    decomposition=get("decomposition", "auto"),
                    budget_gb=float(get("budget_gb")) if get("budget_gb") else None)
    elif op == "gemm":
        opts.update(beta=float(get("beta", 1.0)), shared_a=get("shared_a") == "true")
    elif op == "stencil":
        opts.update(steps=int(get("steps", 20)), fuse=int(get("fuse", 1) or 1),
                    arrays=get("arrays", "device"))
    return opts


def row_ranks(row):
    """P of the model: GPUs for gemm (one rank drives them), ranks otherwise."""
    if row["op"] == "gemm":
        return max(1, int(float(row.get("gpus") or 1)))
    return int(float(row["ranks"]))


def row_rates(row):
    rates = {k: row.get(k) for k in RATE_KEYS}
    if row.get("gemm_gflops"):
        rates["gemm"] = row["gemm_gflops"]
    return {k: float(v) for k, v in rates.items() if v not in (None, "") and float(v) > 0}


def row_chunks(row):
    """The chunks of a row's overlapped exchanges, read from its plan (an overlapped op is
    named 'fft(y,z)+nccl x8'): 0 where the plan overlaps none, None where the row has no plan
    (the library's default then)."""
    plan = row.get("plan") or ""
    if not plan:
        return None
    m = re.search(r"\S\+\S+ x(\d+)", plan)
    return int(m.group(1)) if m else 0


def predict_row(row, system=None, latency_us=None, gcells=None, local_rate=None):
    """The model's prediction for one measured row (its own measured rates, the defaults where
    it measured none; local_rate, GB/s: the local passes' rate instead of its d2d)."""
    rates = row_rates(row)
    if local_rate:
        rates["d2d"] = local_rate
    chunks = row_chunks(row) if row["op"] in ("fft", "poisson") else None
    return predict(row["op"], row["size"], row_ranks(row), rates=rates,
                   system=system, latency_us=latency_us,
                   exchange_kind=row.get("exchange_kind") or None, gcells=gcells,
                   chunks=chunks, **row_options(row))


def _case_key(row):
    return (row["op"], row["size"], row.get("precision"), row.get("type") or "c2c",
            row.get("bc") or "", row.get("backend") or "cuda")


def incard_local_rates(rows):
    """The in-card rate of the local passes of each case that has a one-rank run on device
    arrays: the bytes of its plan's passes over its measured time (GB/s). cuFFT reads and
    writes device memory several times per 3D transform, so this is well under the copy
    rate; it is the FFT's counterpart of the in-card GEMM and stencil rates."""
    out = {}
    for row in rows:
        if row.get("op") in ("fft", "poisson") and row.get("status") == "ok" and \
                str(row.get("ranks")) == "1" and row.get("arrays") == "device" and \
                row.get("time"):
            c = plan(row["op"], row["size"], 1, **row_options(row)).counts
            out[_case_key(row)] = (c["gpu_fft_bytes"] + c["pointwise_bytes"]) / \
                float(row["time"]) / 1e9
    return out


def validate(rows, tolerance=0.20, local="d2d"):
    """Prediction against measured time_per_run for each row that ran: a list of dicts with
    the row, measured, predicted, ratio (predicted / measured) and flag (|ratio - 1| >
    tolerance; the issue's 20%). Stencil rows take the in-card rate of the one-rank
    device-array row of the same size and precision when there is one; that row is then the
    calibration itself (marked so, not flagged).

    local: 'd2d' (the model as documented: local passes at the device copy rate measured in
    the run), or 'incard': device-array fft and poisson rows take the local-pass rate of the
    one-rank run of the same case (incard_local_rates); those one-rank rows are then the
    calibration itself (ratio 1 by construction) and are marked so, not flagged."""
    out = []
    incard = {}
    for row in rows:
        if row.get("op") == "stencil" and row.get("status") == "ok" and \
                str(row.get("ranks")) == "1" and row.get("time") and \
                row.get("arrays", "device") != "host":
            cells = plan("stencil", row["size"], 1, **row_options(row)).counts["cells"]
            incard[(row["size"], row["precision"])] = cells / float(row["time"]) / 1e9
    local_rates = incard_local_rates(rows) if local == "incard" else {}
    for row in rows:
        if row.get("status") not in ("ok", None, "") or not row.get("time"):
            continue
        measured = float(row["time"])
        g = None
        one_incard = row["op"] == "stencil" and str(row.get("ranks")) == "1" and \
            row.get("arrays", "device") != "host"
        if row["op"] == "stencil":
            g = incard.get((row["size"], row["precision"]))
        lr = local_rates.get(_case_key(row)) if row.get("arrays") == "device" else None
        try:
            pr = predict_row(row, gcells=g, local_rate=lr)
        except (KeyError, ValueError, TypeError, ZeroDivisionError) as e:
            out.append({"row": row, "measured": measured, "predicted": None, "ratio": None,
                        "flag": None, "why": str(e)})
            continue
        pred = pr["seconds"]
        ratio = pred / measured if pred else None
        calib = (lr is not None and str(row.get("ranks")) == "1") or one_incard
        out.append({"row": row, "measured": measured, "predicted": pred, "ratio": ratio,
                    "flag": None if ratio is None or calib else abs(ratio - 1) > tolerance,
                    "calibration": calib, "terms": pr["terms"]})
    return out


def rates_from_rows(rows):
    """Median in-node rates (d2d, exchange, PCIe) of the GPU rows of a measured CSV, for
    predictions of larger runs."""
    r = {}
    for k in RATE_KEYS + ("gemm_gflops",):
        v = [float(x[k]) for x in rows if x.get(k) not in (None, "") and float(x[k]) > 0
             and x.get("backend", "cuda") != "cpu"]
        if v:
            r["gemm" if k == "gemm_gflops" else k] = statistics.median(v)
    return r


# ---- beyond one node --------------------------------------------------------------------------

def predict_large(ops=("fft", "poisson"), sizes=(2048, 4096),
                  gpus=(64, 128, 256, 512, 1024, 2048, 4096), system="dgx-h100", rates=None,
                  precision="float", variant="natural", latency_us=None):
    """Predicted times of complex FFTs and periodic Poisson solves of size^3 on many GPUs of
    `system` (device arrays, one GPU per rank, NCCL within a node, the network beyond).

    For each (op, size, P): the time with the library's automatic decomposition ('auto':
    slabs while P <= size, pencils beyond) and with the other one where it applies, the best
    of them, the parallel efficiency of the automatic choice against the first GPU count
    (t0 P0 / (t P)), and the terms. Rates: `rates` (e.g. rates_from_rows of a measured CSV)
    over the defaults (DEFAULT_RATES, one and four H200)."""
    sysd = SYSTEMS[system] if isinstance(system, str) else system
    out = []
    for op in ops:
        for n in sizes:
            base = None
            for P in gpus:
                res = {}
                for dec in ("slabs", "pencils"):
                    if dec == "slabs" and (P > n):
                        continue
                    kw = {"precision": precision, "decomposition": dec}
                    if op == "fft":
                        kw.update(type="c2c", variant=variant)
                    else:
                        kw.update(bc="ppp")
                    res[dec] = predict(op, n, P, rates=rates, system=sysd,
                                       latency_us=latency_us, **kw)
                auto = _decomp(P, (n, n, n), "auto")
                a = res[auto]
                best = min(res, key=lambda d: res[d]["seconds"])
                if base is None:
                    base = (P, a["seconds"])
                out.append({
                    "op": op, "size": n, "gpus": P, "nodes": -(-P // sysd["gpus_per_node"]),
                    "decomposition": auto, "seconds": a["seconds"],
                    "efficiency": base[1] * base[0] / (a["seconds"] * P),
                    "best": best, "best_seconds": res[best]["seconds"],
                    "other": {d: res[d]["seconds"] for d in res if d != auto},
                    "terms": a["terms"], "exchanges": a["plan"].counts["exchanges"],
                    "variant": variant if op == "fft" else "",
                    "precision": precision, "system": sysd["name"]})
    return out


def anchor_comparison(rows):
    """Lines comparing predict_large's fft rows of the anchor's size with the anchor's times
    (and the model at the anchor's 8 GPUs on one node of the system)."""
    lines = []
    fft = {r["gpus"]: r for r in rows if r["op"] == "fft" and r["size"] == ANCHOR["size"]}
    for P, t in sorted(ANCHOR["times"].items()):
        if P in fft:
            m = fft[P]
            lines.append("%d GPUs: model %.2f ms (%s), best %.2f ms (%s); anchor %.0f ms: "
                         "model / anchor %.2f" % (
                             P, m["seconds"] * 1e3, m["decomposition"],
                             m["best_seconds"] * 1e3, m["best"], t * 1e3, m["seconds"] / t))
    return lines
