"""Tide from Python: distributed 3D FFTs, Poisson solves, stencils and matrix multiplies on
MPI ranks, over libtide through ctypes.

    from mpi4py import MPI
    import tide
    with tide.Context(MPI.COMM_WORLD) as ctx, tide.FFT(ctx, (64, 64, 64)) as plan:
        a = plan.empty_in()              # this rank's box, a NumPy array indexed a[x, y, z]
        b = plan.forward(a)              # or plan.forward(a, out=b)

Arrays are NumPy arrays in host memory or, on plans with location="device", any object with
__cuda_array_interface__ (CuPy, PyTorch, Numba) or DLPack (JAX, PyTorch, CuPy); they are passed
to the library as they are, never copied. docs/python.md is the guide.
"""
import ctypes
import gc
import weakref

import numpy as np

from . import _capi as C

__all__ = ["Error", "ArgumentError", "BoxError", "MismatchError", "UnsupportedError",
           "NoMemoryError", "MPIError", "BackendError", "TooLargeError", "Box", "Context", "FFT",
           "Poisson", "Stencil", "GEMM", "DeviceArray", "version", "proc_grid"]

_lib = C.load()


# ---- errors ---------------------------------------------------------------------------------
class Error(Exception):
    """A Tide call failed: code is the TIDE_ERR_* status, message tide_last_error()'s text (the
    same on every rank for a collective call)."""

    def __init__(self, code, message):
        self.code = code
        self.name = _lib.tide_strerror(code).decode()
        self.message = message
        super().__init__(f"{self.name}: {message}")


class ArgumentError(Error, ValueError):
    pass


class BoxError(Error, ValueError):
    pass


class MismatchError(Error, ValueError):
    pass


class UnsupportedError(Error, NotImplementedError):
    pass


class NoMemoryError(Error, MemoryError):
    pass


class MPIError(Error, RuntimeError):
    pass


class BackendError(Error, RuntimeError):
    pass


class TooLargeError(Error, OverflowError):
    pass


_ERRORS = {C.ERR_ARGUMENT: ArgumentError, C.ERR_BOX: BoxError, C.ERR_MISMATCH: MismatchError,
           C.ERR_UNSUPPORTED: UnsupportedError, C.ERR_NOMEM: NoMemoryError,
           C.ERR_MPI: MPIError, C.ERR_BACKEND: BackendError, C.ERR_TOO_LARGE: TooLargeError}


def _raise(status, handle, local=""):
    """Raises the exception of a failed call on the context handle (None: no context)."""
    message = _lib.tide_last_error(handle).decode()
    if local:
        message += f" (on this rank: {local})"
    raise _ERRORS.get(status, Error)(status, message)


def _check(status, handle=None):
    if status:
        _raise(status, handle)


def version():
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return _lib.tide_version().decode()


def _enum(table, value, what):
    if isinstance(value, int) and value in table.values():
        return value
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError(f"{what} {value!r}: expected one of {', '.join(table)}") from None


def _name(table, value):
    return next((k for k, v in table.items() if v == value), value)


def _stream(stream):
    """A CUDA stream as an address: None, an int, CuPy's Stream (.ptr) or PyTorch's
    (.cuda_stream)."""
    if stream is None or isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream"):
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"stream {stream!r}: expected an int, a CuPy or a PyTorch stream")


def _int3(values):
    return (ctypes.c_int * 3)(*values)


def _struct_dict(s):
    return {name: getattr(s, name) for name, _ in s._fields_}


# ---- boxes ----------------------------------------------------------------------------------
class Box:
    """A rank's piece of a grid: lo (inclusive) and hi (exclusive) per dimension x, y, z, and
    order, the dimensions from slowest to fastest varying in memory: "C" (0, 1, 2: z
    contiguous, a C-ordered NumPy array indexed a[x, y, z]) or "F" (2, 1, 0: x contiguous, a
    Fortran-ordered one), or any permutation."""
    __slots__ = ("lo", "hi", "order")

    def __init__(self, lo, hi, order="C"):
        self.lo, self.hi = tuple(int(v) for v in lo), tuple(int(v) for v in hi)
        self.order = {"C": (0, 1, 2), "F": (2, 1, 0)}.get(order) or tuple(int(v) for v in order)
        if len(self.lo) != 3 or len(self.hi) != 3 or sorted(self.order) != [0, 1, 2]:
            raise ValueError(f"Box({lo}, {hi}, {order}): lo and hi take 3 values, order a "
                             "permutation of (0, 1, 2), 'C' or 'F'")

    @classmethod
    def _from_c(cls, b):
        return cls(b.lo, b.hi, tuple(b.order))

    def _c(self):
        return C.Box(_int3(self.lo), _int3(self.hi), _int3(self.order))

    @property
    def shape(self):
        """Points along x, y, z: the shape of the NumPy array a[x, y, z] holding the box."""
        return tuple(max(h - l, 0) for l, h in zip(self.lo, self.hi))

    @property
    def count(self):
        s = self.shape
        return s[0] * s[1] * s[2]

    def strides(self, itemsize):
        """Byte strides of the array a[x, y, z] stored in this box's order."""
        s, st, step = self.shape, [0, 0, 0], itemsize
        for d in reversed(self.order):
            st[d] = step
            step *= s[d]
        return tuple(st)

    def with_order(self, order):
        return Box(self.lo, self.hi, order)

    def __eq__(self, other):
        return isinstance(other, Box) and (self.lo, self.hi, self.order) == \
            (other.lo, other.hi, other.order)

    def __repr__(self):
        return f"Box(lo={self.lo}, hi={self.hi}, order={self.order})"

    @classmethod
    def slab(cls, n, split_dim, nranks, rank, order="C"):
        """Slabs: dimension split_dim of grid n cut over nranks (tide_box_slab)."""
        b = C.Box()
        _check(_lib.tide_box_slab(_int3(n), split_dim, nranks, rank, ctypes.byref(b)))
        return cls._from_c(b).with_order(order)

    @classmethod
    def pencil(cls, n, whole_dim, nranks, rank, order="C"):
        """Pencils: whole along whole_dim, the others cut over an automatic grid."""
        b = C.Box()
        _check(_lib.tide_box_pencil(_int3(n), whole_dim, nranks, rank, ctypes.byref(b)))
        return cls._from_c(b).with_order(order)

    @classmethod
    def in_grid(cls, n, grid, rank, order="C"):
        """The box of rank in a grid[0] x grid[1] x grid[2] process grid over n."""
        b = C.Box()
        _check(_lib.tide_box_in_grid(_int3(n), _int3(grid), rank, ctypes.byref(b)))
        return cls._from_c(b).with_order(order)


def proc_grid(nranks, n, split=(1, 1, 1)):
    """The process grid of least surface for nranks over the dimensions split (tide_proc_grid)."""
    g = _int3((0, 0, 0))
    _check(_lib.tide_proc_grid(nranks, _int3(n), _int3(split), g))
    return tuple(g)


# ---- arrays ---------------------------------------------------------------------------------
def _array(a, device, dtype, shape, strides, writable, stream=None):
    """(address, why): the array's address when a matches, else (None, the reason). stream:
    the plan's, for a DLPack producer to order its work before (None: the default stream)."""
    if not device and type(a) is np.ndarray and a.dtype == dtype and a.shape == shape and \
            a.strides == strides and (not writable or a.flags.writeable):
        return a.__array_interface__["data"][0], ""
    if device:
        view, why = _device_view(a, stream)
        if view is None:
            return None, why
        address, got_dtype, got_shape, got_strides, readonly = view
    else:
        if not isinstance(a, np.ndarray):
            return None, f"{type(a).__name__} is not a NumPy array (a host plan)"
        got_dtype, got_shape, got_strides = a.dtype, a.shape, a.strides
        readonly = not a.flags.writeable
    if got_dtype != dtype:
        return None, f"an array of {got_dtype}, not {np.dtype(dtype)}"
    if got_shape != shape:
        return None, f"an array of shape {got_shape}, not {shape}"
    if any(g != w for g, w, e in zip(got_strides, strides, shape) if e > 1):
        return None, (f"an array with strides {tuple(got_strides)} bytes, not {strides} (the "
                      "box's order, dense)")
    if writable and readonly:
        return None, "a read-only array to write to"
    return (address if device else a.ctypes.data), ""


def _device_view(a, stream=None):
    """((address, dtype, shape, byte strides, readonly), "") of an array in device memory, read
    from __cuda_array_interface__ or else DLPack; (None, why) for anything else, a producer's
    own error included (so that the call is refused on every rank alike)."""
    try:
        return _read_device(a, stream)
    except Exception as e:   # noqa: BLE001 (any producer's failure is this rank's reason)
        return None, f"{type(a).__name__} could not be read as a device array: {e}"


def _read_device(a, stream):
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        dtype, shape = np.dtype(cai["typestr"]), tuple(cai["shape"])
        strides = cai.get("strides") or _dense_strides(shape, dtype.itemsize)
        address, readonly = cai["data"]
        return (address, dtype, shape, tuple(strides), readonly), ""
    if hasattr(a, "__dlpack__"):
        device_type = a.__dlpack_device__()[0] if hasattr(a, "__dlpack_device__") else None
        if device_type in (None, _DL_CUDA, _DL_CUDA_MANAGED):
            view, device_type = _dlpack(a, None if device_type is None else stream or 1)
        if device_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
            return None, (f"a DLPack array on device type {device_type}, not in GPU memory "
                          "(a device plan)")
        return view, ""
    return None, (f"{type(a).__name__} has neither __cuda_array_interface__ nor __dlpack__ "
                  "(a device plan)")


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int),
                ("device_id", ctypes.c_int), ("ndim", ctypes.c_int), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DL_CPU, _DL_CUDA, _DL_CUDA_MANAGED = 1, 2, 13
_DL_KINDS = {0: "i", 1: "u", 2: "f", 5: "c"}
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                       ctypes.c_char_p]


def _dlpack(a, stream):
    """((address, dtype, shape, byte strides, readonly), device type) of a DLPack producer's
    array, without taking its capsule (the producer's deleter runs when the capsule goes; a
    keeps the memory). stream: the consumer's CUDA stream (1: the legacy default), which the
    producer orders its work before (None: not passed, as for host memory)."""
    if stream is None:
        capsule = a.__dlpack__()
    else:
        try:
            capsule = a.__dlpack__(stream=stream)
        except TypeError:
            capsule = a.__dlpack__()
    t = _DLTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    kind = _DL_KINDS.get(t.dtype.code)
    if kind is None or t.dtype.lanes != 1:
        raise TypeError(f"DLPack dtype code {t.dtype.code} lanes {t.dtype.lanes}: not a "
                        "NumPy kind")
    dtype = np.dtype(f"{kind}{t.dtype.bits // 8}")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[i] * dtype.itemsize for i in range(t.ndim))
    else:
        strides = _dense_strides(shape, dtype.itemsize)
    address = (t.data or 0) + t.byte_offset
    return (address, dtype, shape, strides, False), t.device_type


def _dense_strides(shape, itemsize):
    """Byte strides of a C-contiguous array of shape."""
    strides, step = [], itemsize
    for e in reversed(shape):
        strides.append(step)
        step *= e
    return tuple(reversed(strides))


def _aligned(nbytes):
    """A zeroed uint8 buffer of nbytes at a 64-byte boundary: SIMD-aligned, as tide_host_alloc
    and fftw_malloc give C callers, so FFTW's aligned plans run."""
    raw = np.zeros(nbytes + 64, np.uint8)
    skip = -raw.ctypes.data % 64
    return raw[skip:skip + nbytes]


def _empty(ctx, memory, dtype, shape, strides):
    """An array for a plan: memory "numpy" (a NumPy array, 64-byte aligned), "host"
    (tide_host_alloc's) or "device" (a DeviceArray)."""
    if memory == "numpy":
        return _new(False, dtype, shape, strides)
    if memory == "host":
        return ctx.host_empty(shape, dtype, strides)
    if memory == "device":
        return DeviceArray(ctx, shape, dtype, strides)
    raise ValueError(f"memory {memory!r}: expected one of numpy, host, device")


def _new(device, dtype, shape, strides):
    """A host array of shape with these byte strides (a dense layout), 64-byte aligned."""
    if device:
        raise ValueError("a device plan needs out=: an array in device memory")
    dtype = np.dtype(dtype)
    return np.ndarray(shape, dtype, _aligned(int(np.prod(shape)) * dtype.itemsize), 0, strides)


def _field_layout(box, batch, itemsize):
    """Shape and byte strides of batch fields in box: fields slowest, (batch, x, y, z), or the
    box alone when batch is 1."""
    shape, strides = box.shape, box.strides(itemsize)
    if batch == 1:
        return shape, strides
    return (batch,) + shape, (box.count * itemsize,) + strides


# ---- context --------------------------------------------------------------------------------
class Context:
    """A Tide context over an mpi4py communicator (collective). Close it with close() or a
    with block, after its plans (close() closes the plans still open first)."""

    def __init__(self, comm=None, *, backend="auto", threads=0, device_budget=0, bind=True,
                 device="auto"):
        from mpi4py import MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        o = C.ContextOptions()
        _lib.tide_context_options_init(ctypes.byref(o))
        o.backend = _enum(C.BACKEND, backend, "backend")
        o.threads, o.device_budget, o.bind = threads, device_budget, int(bool(bind))
        o.device = {"auto": C.DEVICE_AUTO, "current": C.DEVICE_CURRENT}.get(device, device)
        handle = ctypes.c_void_p()
        _check(_lib.tide_context_create(_comm_handle(self.comm), ctypes.byref(o),
                                        ctypes.byref(handle)))
        self._handle = handle.value
        self._plans = weakref.WeakSet()
        self._memory = {}   # address: "host" | "device", allocations not yet freed

    def close(self):
        """Collective: closes the plans made from this context, then the context. Refused
        (ArgumentError on every rank) while arrays from host_empty or device_empty live on
        any rank: delete them first."""
        if self._handle:
            if self._memory:
                gc.collect()
            live = self.comm.allreduce(len(self._memory))
            if live:
                raise ArgumentError(C.ERR_ARGUMENT, f"{live} arrays of this context's memory "
                                    "(host_empty, device_empty) are alive: delete them before "
                                    "closing it")
            for plan in list(self._plans):
                plan.close()
            _check(_lib.tide_context_destroy(self._handle), self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def handle(self):
        """The tide_context pointer, for C code that takes it."""
        return self._handle

    @property
    def backend(self):
        b = ctypes.c_int()
        _check(_lib.tide_context_backend(self._handle, ctypes.byref(b)), self._handle)
        return _name(C.BACKEND, b.value)

    @property
    def threads(self):
        t = ctypes.c_int()
        _check(_lib.tide_context_threads(self._handle, ctypes.byref(t)), self._handle)
        return t.value

    def set_progress(self, seconds):
        """Progress lines of long calls on rank 0 every `seconds` (0: none; tide_context_set_progress)."""
        _check(_lib.tide_context_set_progress(self._handle, float(seconds)), self._handle)

    @property
    def gpu_status(self):
        return _lib.tide_context_gpu_status(self._handle).decode()

    @property
    def last_error(self):
        return _lib.tide_last_error(self._handle).decode()

    def device(self):
        """This rank's GPU (tide_context_device) as a dict."""
        d = C.DeviceInfo()
        _check(_lib.tide_context_device(self._handle, ctypes.byref(d)), self._handle)
        return {k: v.decode() if isinstance(v, bytes) else v for k, v in _struct_dict(d).items()}

    def measure_rates(self, nbytes=0, together=False):
        """Transfer rates in GB/s (tide_measure_rates; together: collective, all ranks at once)."""
        r = C.Rates()
        f = _lib.tide_measure_rates_together if together else _lib.tide_measure_rates
        _check(f(self._handle, nbytes, ctypes.byref(r)), self._handle)
        return _struct_dict(r)

    def _alloc(self, kind, nbytes):
        """An address of nbytes (at least 1) from tide_host_alloc or tide_device_alloc, and the
        finalizer that frees it."""
        alloc, free = ((_lib.tide_host_alloc, _lib.tide_host_free) if kind == "host" else
                       (_lib.tide_device_alloc, _lib.tide_device_free))
        p = ctypes.c_void_p()
        _check(alloc(self._handle, max(int(nbytes), 1), ctypes.byref(p)), self._handle)
        self._memory[p.value] = kind

        def release(handle=self._handle, address=p.value, memory=self._memory):
            memory.pop(address, None)
            free(handle, address)
        return p.value, release

    def host_empty(self, shape, dtype=np.float64, order="C"):
        """A zeroed NumPy array in memory from tide_host_alloc: pinned on a CUDA context (host
        arrays then move at full PCIe rate), 64-byte aligned on the CPU. order "C", "F" or byte
        strides. Freed when the last view of it goes (local)."""
        dtype, shape = np.dtype(dtype), tuple(int(e) for e in shape)
        strides = _order_strides(shape, dtype.itemsize, order)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        address, release = self._alloc("host", nbytes)
        buf = (ctypes.c_uint8 * max(nbytes, 1)).from_address(address)
        weakref.finalize(buf, release).atexit = False
        return np.ndarray(shape, dtype, np.frombuffer(buf, np.uint8), 0, strides)

    def device_empty(self, shape, dtype=np.float64, order="C"):
        """A DeviceArray in the GPU's memory from tide_device_alloc (CUDA contexts; else
        UnsupportedError). order "C", "F" or byte strides. Local."""
        return DeviceArray(self, shape, dtype, order)

    def copy(self, dst, src):
        """Local: copies src's bytes to dst (tide_copy), each a dense NumPy array, a
        DeviceArray or an object with __cuda_array_interface__, of the same number of bytes;
        returns dst once the copy is done."""
        (pd, nd), (ps, ns) = _extent(dst, True), _extent(src, False)
        if nd != ns:
            raise ValueError(f"copy of {ns} bytes into {nd}")
        _check(_lib.tide_copy(self._handle, pd, ps, nd), self._handle)
        return dst

    def measure_exchange(self, how="auto", nbytes=0):
        """Collective: the all-to-all rate of an exchange, GB/s leaving each rank."""
        g = ctypes.c_double()
        _check(_lib.tide_measure_exchange(self._handle, _enum(C.EXCHANGE, how, "exchange"),
                                          nbytes, ctypes.byref(g)), self._handle)
        return g.value


def _order_strides(shape, itemsize, order):
    """Byte strides of a dense array of shape: order "C", "F" or the strides themselves."""
    if order == "C":
        return _dense_strides(shape, itemsize)
    if order == "F":
        return tuple(reversed(_dense_strides(tuple(reversed(shape)), itemsize)))
    return tuple(int(v) for v in order)


def _extent(a, writable):
    """(address, bytes) of a dense array in host or device memory, for tide_copy."""
    if isinstance(a, np.ndarray):
        if not (a.flags.c_contiguous or a.flags.f_contiguous):
            raise ValueError("copy: a NumPy array that is not contiguous")
        if writable and not a.flags.writeable:
            raise ValueError("copy: a read-only destination")
        return a.ctypes.data, a.nbytes
    view, why = _device_view(a)
    if view is None:
        raise TypeError(f"copy: {why}")
    address, dtype, shape, strides, readonly = view
    if not any(all(g == w for g, w, e in zip(strides, _order_strides(shape, dtype.itemsize, o),
                                             shape) if e > 1) for o in "CF"):
        raise ValueError(f"copy: a device array with strides {strides}, not dense")
    if writable and readonly:
        raise ValueError("copy: a read-only destination")
    return address, int(np.prod(shape)) * dtype.itemsize


class DeviceArray:
    """An array in the GPU's memory from tide_device_alloc (Context.device_empty,
    plan.empty_in(memory="device")), described by __cuda_array_interface__ (so CuPy, PyTorch
    and Numba take it without a copy) and taken by device plans. set(host) and get() copy
    through tide_copy. Freed when it goes (local)."""

    def __init__(self, ctx, shape, dtype=np.float64, order="C"):
        self.ctx, self.dtype = ctx, np.dtype(dtype)
        self.shape = tuple(int(e) for e in shape)
        self.strides = _order_strides(self.shape, self.dtype.itemsize, order)
        self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
        self.ptr, self._release = ctx._alloc("device", self.nbytes)
        weakref.finalize(self, self._release).atexit = False

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.shape, "typestr": self.dtype.str, "version": 3,
                "data": (self.ptr, False), "strides": self.strides}

    def set(self, host):
        """Copies host (a NumPy array of this shape, dtype and strides) in; returns self."""
        if not isinstance(host, np.ndarray) or host.dtype != self.dtype or \
                host.shape != self.shape or host.strides != self.strides:
            raise ValueError(f"DeviceArray.set: expected a NumPy array of {self.dtype}, shape "
                             f"{self.shape}, strides {self.strides}")
        _check(_lib.tide_copy(self.ctx._handle, self.ptr, host.ctypes.data, self.nbytes),
               self.ctx._handle)
        return self

    def get(self):
        """A new NumPy array (same shape, dtype and strides) holding the device data."""
        host = _new(False, self.dtype, self.shape, self.strides)
        _check(_lib.tide_copy(self.ctx._handle, host.ctypes.data, self.ptr, self.nbytes),
               self.ctx._handle)
        return host

    def __repr__(self):
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, ptr={self.ptr:#x})"


def _comm_handle(comm):
    """The C MPI_Comm of an mpi4py communicator (a pointer in Open MPI, an int in MPICH)."""
    from mpi4py import MPI
    f = _lib.tide_context_create
    if MPI._sizeof(MPI.Comm) == ctypes.sizeof(ctypes.c_int):
        f.argtypes = [ctypes.c_int] + f.argtypes[1:]
        return ctypes.c_int.from_address(MPI._addressof(comm)).value
    return ctypes.c_void_p.from_address(MPI._addressof(comm)).value


# ---- plans ----------------------------------------------------------------------------------
class _Plan:
    """What every plan shares: its context, its handle, closing (local) and describe()."""
    _destroy = _describe = None

    def _made(self, ctx, handle, stream):
        self.ctx, self._handle, self._h, self._stream = ctx, handle, ctx._handle, stream
        ctx._plans.add(self)

    def close(self):
        """Local: frees the plan (also done when it is garbage collected)."""
        if getattr(self, "_handle", None):
            _check(type(self)._destroy(self._handle), self._h)
            self._handle = None

    def __del__(self):
        if getattr(self, "_handle", None) and getattr(self.ctx, "_handle", None):
            self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def describe(self):
        buf = ctypes.create_string_buffer(1024)
        _check(type(self)._describe(self._handle, buf, len(buf)), self._h)
        return buf.value.decode()

    def __str__(self):
        return self.describe()

    def _info(self, fn, struct):
        s = struct()
        _check(fn(self._handle, ctypes.byref(s)), self._h)
        return s

    def set_stream(self, stream):
        """Local: the CUDA stream later calls are ordered after (None: the default stream)."""
        s = _stream(stream)
        _check(type(self)._set_stream(self._handle, s), self._h)
        self._stream = s

    def _call(self, fn, arrays, args=None):
        """Calls fn(handle, *args(addresses)) for arrays [(a, device, dtype, shape, strides,
        writable)] (args None: the addresses alone); an array refused here goes in as NULL,
        so that the library refuses the call on every rank alike, and this rank's reason
        joins its message."""
        addresses, why = [], ""
        for spec in arrays:
            address, reason = _array(*spec, self._stream)
            addresses.append(address)
            why = why or reason
        st = fn(self._handle, *(addresses if args is None else args(addresses)))
        if st or why:
            _raise(st or C.ERR_ARGUMENT, self._h, why)


    def _run(self, fn, a, a_dtype, a_layout, out, out_dtype, out_layout):
        """fn(handle, a, out) for a read and out written (the FFTs' and the solve's calls,
        kept short: they are the ones run in loops); returns out."""
        pa, why = _array(a, self.device, a_dtype, a_layout[0], a_layout[1], False,
                         self._stream)
        pout, why_out = _array(out, self.device, out_dtype, out_layout[0], out_layout[1], True,
                               self._stream)
        st = fn(self._handle, pa, pout)
        if st or why or why_out:
            _raise(st or C.ERR_ARGUMENT, self._h, why or why_out)
        return out


_FFT_DTYPES = {(0, 0): (np.complex128, np.complex128), (0, 1): (np.complex64, np.complex64),
               (1, 0): (np.float64, np.complex128), (1, 1): (np.float32, np.complex64)}


class FFT(_Plan):
    """A distributed 3D FFT plan (tide_fft_plan_create, collective). shape is the real-space
    grid (nx, ny, nz); inbox and outbox this rank's boxes (None on every rank: the plan's
    choice). Keywords are tide_fft_options' fields, enums by name: type "c2c" | "r2c",
    precision "double" | "float", scaling "none" | "full" | "symmetric", location "host" |
    "device", decomposition, exchange, planning, backend, batch, transposed_out, stream,
    async_, arrays_kept."""
    _destroy, _describe = _lib.tide_fft_plan_destroy, _lib.tide_fft_plan_describe
    _set_stream = _lib.tide_fft_plan_set_stream

    def __init__(self, ctx, shape, inbox=None, outbox=None, *, type="c2c", precision="double",
                 backend="auto", decomposition="auto", exchange="auto", scaling="none",
                 planning="estimate", batch=1, transposed_out=False, location="host",
                 stream=None, async_=False, arrays_kept=False):
        o = C.FFTOptions()
        _lib.tide_fft_options_init(ctypes.byref(o))
        o.type, o.precision = _enum(C.FFT_TYPE, type, "type"), _enum(C.PRECISION, precision,
                                                                     "precision")
        o.backend = _enum(C.BACKEND, backend, "backend")
        o.decomposition = _enum(C.DECOMPOSITION, decomposition, "decomposition")
        o.exchange, o.scaling = _enum(C.EXCHANGE, exchange, "exchange"), _enum(
            C.SCALING, scaling, "scaling")
        o.planning, o.location = _enum(C.PLANNING, planning, "planning"), _enum(
            C.LOCATION, location, "location")
        o.batch, o.transposed_out, o.async_ = batch, int(bool(transposed_out)), int(bool(async_))
        o.arrays_kept = int(bool(arrays_kept))
        o.stream = _stream(stream)
        handle = ctypes.c_void_p()
        ib, ob = (b._c() if b is not None else None for b in (inbox, outbox))
        _check(_lib.tide_fft_plan_create(ctx._handle, _int3(shape), ib, ob, ctypes.byref(o),
                                         ctypes.byref(handle)), ctx._handle)
        self._made(ctx, handle.value, o.stream)
        self.shape, self.batch, self.device = tuple(shape), batch, o.location == 1
        ib, ob = C.Box(), C.Box()
        _check(_lib.tide_fft_plan_boxes(self._handle, ctypes.byref(ib), ctypes.byref(ob)),
               self._h)
        self.inbox, self.outbox = Box._from_c(ib), Box._from_c(ob)
        self.in_dtype, self.out_dtype = (np.dtype(t) for t in _FFT_DTYPES[o.type, o.precision])
        self._in = _field_layout(self.inbox, batch, self.in_dtype.itemsize)
        self._out = _field_layout(self.outbox, batch, self.out_dtype.itemsize)
        self.in_shape, self.out_shape = self._in[0], self._out[0]

    @property
    def info(self):
        """tide_fft_info as a dict."""
        return _struct_dict(self._info(_lib.tide_fft_plan_info, C.FFTInfo))

    def cost(self, direction=-1):
        c = C.FFTCost()
        _check(_lib.tide_fft_plan_cost(self._handle, direction, ctypes.byref(c)), self._h)
        return _struct_dict(c)

    def empty_in(self, memory="numpy"):
        """An array for this rank's input, in the input box's order: memory "numpy" (a NumPy
        array, 64-byte aligned as FFTW's aligned plans want; any array of the right layout is
        taken), "host" (tide_host_alloc: pinned on a CUDA context) or "device" (a
        DeviceArray)."""
        return _empty(self.ctx, memory, self.in_dtype, *self._in)

    def empty_out(self, memory="numpy"):
        return _empty(self.ctx, memory, self.out_dtype, *self._out)

    def inplace(self):
        """(input, output) host arrays over one buffer of inplace_bytes, for in-place
        transforms: plan.forward(a, out=b) with (a, b) = plan.inplace()."""
        buf = _aligned(self.info["inplace_bytes"])
        return (np.ndarray(self._in[0], self.in_dtype, buf, 0, self._in[1]),
                np.ndarray(self._out[0], self.out_dtype, buf, 0, self._out[1]))

    def forward(self, a, out=None):
        """Collective: out = the forward transform of a (exp(-2 pi i jk/n)); returns out."""
        if out is None:
            out = _new(self.device, self.out_dtype, *self._out)
        return self._run(_fft_forward, a, self.in_dtype, self._in, out, self.out_dtype,
                         self._out)

    def backward(self, a, out=None):
        """Collective: out = the backward transform of a (exp(+2 pi i jk/n)); returns out."""
        if out is None:
            out = _new(self.device, self.in_dtype, *self._in)
        return self._run(_fft_backward, a, self.out_dtype, self._out, out, self.in_dtype,
                         self._in)


_fft_forward, _fft_backward = _lib.tide_fft_forward, _lib.tide_fft_backward


_REAL = {0: np.dtype(np.float64), 1: np.dtype(np.float32)}


def _bcs(bc, faces):
    """bc per dimension: a name for both faces, or (low, high)."""
    if isinstance(bc, str):
        bc = (bc,) * 3
    out = []
    for d in bc:
        pair = (d, d) if isinstance(d, (str, int)) else tuple(d)
        out.append(tuple(_enum(C.BC, v, "bc") for v in pair[:faces]))
    return out


class Poisson(_Plan):
    """A Poisson or Helmholtz solver, lap(u) - alpha u = f (tide_poisson_plan_create,
    collective). Keywords are tide_poisson_options' fields: bc per dimension ("periodic",
    "neumann", "dirichlet", or a (low, high) pair; one name for all), h, alpha, eigen ("fd2" |
    "spectral"), faces (per dimension None or n + 1 face positions), precision, batch,
    location, decomposition, exchange, planning, backend, out_of_card, stream."""
    _destroy, _describe = _lib.tide_poisson_plan_destroy, _lib.tide_poisson_plan_describe
    _set_stream = _lib.tide_poisson_plan_set_stream

    def __init__(self, ctx, shape, box=None, *, bc="periodic", h=(1.0, 1.0, 1.0), alpha=0.0,
                 eigen="fd2", faces=(None, None, None), precision="double", batch=1,
                 location="host", decomposition="auto", exchange="auto", planning="estimate",
                 backend="auto", out_of_card="auto", stream=None):
        o = C.PoissonOptions()
        _lib.tide_poisson_options_init(ctypes.byref(o))
        o.precision, o.backend = _enum(C.PRECISION, precision, "precision"), _enum(
            C.BACKEND, backend, "backend")
        o.location = _enum(C.LOCATION, location, "location")
        o.decomposition = _enum(C.DECOMPOSITION, decomposition, "decomposition")
        o.exchange, o.planning = _enum(C.EXCHANGE, exchange, "exchange"), _enum(
            C.PLANNING, planning, "planning")
        o.batch, o.alpha, o.eigen = batch, alpha, _enum(C.EIGEN, eigen, "eigen")
        for d, pair in enumerate(_bcs(bc, 2)):
            o.bc[d][0], o.bc[d][1] = pair
            o.h[d] = h[d]
        keep = [None if f is None else np.ascontiguousarray(f, np.float64) for f in faces]
        for d, f in enumerate(keep):
            o.faces[d] = None if f is None else f.ctypes.data
        o.out_of_card = _enum(C.OUT_OF_CARD, out_of_card, "out_of_card")
        o.stream = _stream(stream)
        handle = ctypes.c_void_p()
        _check(_lib.tide_poisson_plan_create(ctx._handle, _int3(shape),
                                             box._c() if box is not None else None,
                                             ctypes.byref(o), ctypes.byref(handle)), ctx._handle)
        self._made(ctx, handle.value, o.stream)
        self.shape, self.batch, self.device = tuple(shape), batch, o.location == 1
        b = C.Box()
        _check(_lib.tide_poisson_plan_box(self._handle, ctypes.byref(b)), self._h)
        self.box, self.dtype = Box._from_c(b), _REAL[o.precision]
        self._layout = _field_layout(self.box, batch, self.dtype.itemsize)
        self.array_shape = self._layout[0]

    @property
    def info(self):
        return _struct_dict(self._info(_lib.tide_poisson_plan_info, C.PoissonInfo))

    def cost(self):
        return _struct_dict(self._info(_lib.tide_poisson_plan_cost, C.FFTCost))

    def empty(self, memory="numpy"):
        """An array for this rank's f or u, in the box's order (memory: as FFT.empty_in)."""
        return _empty(self.ctx, memory, self.dtype, *self._layout)

    def solve(self, f, out=None):
        """Collective: out = u with lap(u) - alpha u = f (out=f solves in place); returns out."""
        if out is None:
            out = _new(self.device, self.dtype, *self._layout)
        return self._run(_lib.tide_poisson_solve, f, self.dtype, self._layout, out, self.dtype,
                         self._layout)

    @property
    def mean(self):
        """The mean of each field of f in the last solve (removed from f when singular)."""
        m = (ctypes.c_double * self.batch)()
        _check(_lib.tide_poisson_mean(self._handle, m), self._h)
        return list(m)


class Stencil(_Plan):
    """Explicit stencil time steps u <- S u + s (tide_stencil_plan_create, collective).
    shape_ "7pt" | "27pt" | "star" | "box"; weights (None: the built-in diffusion weights);
    offsets (user shapes: one (dx, dy, dz) per weight); radius; bc per dimension "dirichlet" |
    "periodic"; source: an array like u, read at every run (the plan keeps it); fuse,
    level_steps, overlap, exchange, precision, location, backend, stream as
    tide_stencil_options."""
    _destroy, _describe = _lib.tide_stencil_plan_destroy, _lib.tide_stencil_plan_describe
    _set_stream = _lib.tide_stencil_plan_set_stream

    def __init__(self, ctx, shape, box=None, *, shape_="7pt", weights=None, offsets=None,
                 radius=0, bc="dirichlet", source=None, fuse=0, precision="double",
                 location="host", backend="auto", level_steps=0, overlap=0, exchange="auto",
                 stream=None):
        o = C.StencilOptions()
        _lib.tide_stencil_options_init(ctypes.byref(o))
        o.precision, o.backend = _enum(C.PRECISION, precision, "precision"), _enum(
            C.BACKEND, backend, "backend")
        o.location, o.shape = _enum(C.LOCATION, location, "location"), _enum(
            C.STENCIL_SHAPE, shape_, "shape")
        w = None if weights is None else np.ascontiguousarray(weights, np.float64)
        off = None if offsets is None else np.ascontiguousarray(offsets, np.intc)
        o.weights = None if w is None else w.ctypes.data
        o.offsets = None if off is None else off.ctypes.data
        o.npoints = 0 if w is None else w.size
        o.radius, o.fuse, o.level_steps, o.overlap = radius, fuse, level_steps, overlap
        o.exchange = _enum(C.EXCHANGE, exchange, "exchange")
        for d, (b,) in enumerate(_bcs(bc, 1)):
            o.bc[d] = b
        o.stream = _stream(stream)
        self.dtype, self.device = _REAL[o.precision], o.location == 1
        why = ""
        if source is not None:
            o.source, why = self._source_address(ctx, shape, box, source)
        handle = ctypes.c_void_p()
        st = _lib.tide_stencil_plan_create(ctx._handle, _int3(shape),
                                           box._c() if box is not None else None,
                                           ctypes.byref(o), ctypes.byref(handle))
        if st:
            _raise(st, ctx._handle, why)
        self._made(ctx, handle.value, o.stream)
        self.shape, self.source = tuple(shape), source
        self.box = Box._from_c(self.info_struct().box)
        self._layout = _field_layout(self.box, 1, self.dtype.itemsize)
        if why:   # a rank whose box is empty took no source
            _raise(C.ERR_ARGUMENT, self._h, why)

    def _source_address(self, ctx, shape, box, source):
        """The source's address, or (an invalid one that makes the plan refuse it on every
        rank, the reason)."""
        if box is None:
            if ctx.comm.Get_size() > 1:
                return None, "give box= with source= on several ranks"
            box = Box((0, 0, 0), shape)
        address, why = _array(source, self.device, self.dtype, box.shape,
                              box.strides(self.dtype.itemsize), False)
        return address, why

    def info_struct(self):
        return self._info(_lib.tide_stencil_plan_info, C.StencilInfo)

    @property
    def info(self):
        d = _struct_dict(self.info_struct())
        d["box"], d["grid"] = Box._from_c(d["box"]), tuple(d["grid"])
        return d

    def empty(self, memory="numpy"):
        """An array for this rank's u, in the box's order (memory: as FFT.empty_in)."""
        return _empty(self.ctx, memory, self.dtype, *self._layout)

    def run(self, u, steps):
        """Collective: advances u (this rank's box, in place) by steps time steps; returns u."""
        self._call(_lib.tide_stencil_run, [(u, self.device, self.dtype, *self._layout, True)],
                   lambda a: (a[0], steps))
        return u


class Band(_Plan):
    """x <- A^steps x for an n x n band matrix A (tide_band_plan_create, collective). This rank
    owns the rows [lo, hi) (None: an even share); diagonals: its rows of A as a (kl + ku + 1,
    hi - lo) array, row d + kl holding A(lo + i, lo + i + d) in column i (entries past the
    matrix's edge are not read); read here only, the plan keeps its copy. kl, ku,
    steps_per_pass, slab_rows, precision, location, backend, stream as tide_band_options."""
    _destroy, _describe = _lib.tide_band_plan_destroy, _lib.tide_band_plan_describe
    _set_stream = _lib.tide_band_plan_set_stream

    def __init__(self, ctx, n, rows=None, *, diagonals, kl=1, ku=1, steps_per_pass=0,
                 slab_rows=0, precision="double", location="host", backend="auto",
                 stream=None):
        o = C.BandOptions()
        _lib.tide_band_options_init(ctypes.byref(o))
        o.precision, o.backend = _enum(C.PRECISION, precision, "precision"), _enum(
            C.BACKEND, backend, "backend")
        o.location = _enum(C.LOCATION, location, "location")
        o.kl, o.ku, o.steps_per_pass, o.slab_rows = kl, ku, steps_per_pass, slab_rows
        o.stream = _stream(stream)
        P, r = ctx.comm.Get_size(), ctx.comm.Get_rank()
        lo, hi = rows if rows is not None else _block(r, n, P)
        self.dtype, self.device = _REAL[o.precision], o.location == 1
        want = (kl + ku + 1, hi - lo)
        diag = np.asarray(diagonals)
        why = "" if diag.shape == want else (f"diagonals of shape {diag.shape}, not "
                                              f"{want} (kl + ku + 1, rows)")
        diag = np.ascontiguousarray(diag, self.dtype) if not why else None
        o.diagonals = None if diag is None or diag.size == 0 else diag.ctypes.data
        handle = ctypes.c_void_p()
        st = _lib.tide_band_plan_create(ctx._handle, n, lo, hi, ctypes.byref(o),
                                        ctypes.byref(handle))
        if st:
            _raise(st, ctx._handle, why)
        self._made(ctx, handle.value, o.stream)
        self.n, self.rows = n, (lo, hi)
        self._layout = ((hi - lo,), (self.dtype.itemsize,))
        if why:
            _raise(C.ERR_ARGUMENT, self._h, why)

    def info_struct(self):
        return self._info(_lib.tide_band_plan_info, C.BandInfo)

    @property
    def info(self):
        return _struct_dict(self.info_struct())

    def empty(self, memory="numpy"):
        """An array for this rank's rows of x (memory: as FFT.empty_in)."""
        return _empty(self.ctx, memory, self.dtype, *self._layout)

    def run(self, x, steps):
        """Collective: x <- A^steps x on this rank's rows, in place; returns x."""
        self._call(_lib.tide_band_run, [(x, self.device, self.dtype, *self._layout, True)],
                   lambda a: (a[0], steps))
        return x


_GEMM_DTYPES = {np.dtype(np.float64): (0, 0), np.dtype(np.float32): (1, 0),
                np.dtype(np.complex128): (0, 1), np.dtype(np.complex64): (1, 1)}


def _block(i, n, p, bounds=None):
    """Part i of n over p parts: [bounds[i], bounds[i + 1]) when given, else balanced."""
    if bounds is not None:
        return int(bounds[i]), int(bounds[i + 1])
    return i * n // p, (i + 1) * n // p


class GEMM(_Plan):
    """C = alpha op(A) op(B) + beta C (tide_gemm_plan_create, collective) for m x k op(A) and
    k x n op(B). dtype float64 | float32 | complex128 | complex64; transa, transb "N" | "T" |
    "C"; order "F" (column major, the default: Fortran-ordered NumPy arrays) or "C"; lda, ldb,
    ldc, tile, panel, grid, gpus, share_a, exchange, location, backend, stream as
    tide_gemm_options;
    blocks: the boundaries of the blocks on several ranks (C's rows, C's columns, A's columns,
    B's rows; each None for balanced blocks, or grid + 1 values from 0 to the extent). On
    several ranks each rank passes its blocks (a_shape, b_shape, c_shape tell)."""
    _destroy, _describe = _lib.tide_gemm_plan_destroy, _lib.tide_gemm_plan_describe
    _set_stream = _lib.tide_gemm_plan_set_stream

    def __init__(self, ctx, m, n, k, *, dtype=np.float64, transa="N", transb="N", order="F",
                 lda=0, ldb=0, ldc=0, tile=0, panel=0, grid=(0, 0), gpus=0, share_a=0,
                 exchange="auto", location="host", backend="auto", stream=None,
                 blocks=(None,) * 4):
        o = C.GEMMOptions()
        _lib.tide_gemm_options_init(ctypes.byref(o))
        self.dtype = np.dtype(dtype)
        if self.dtype not in _GEMM_DTYPES:
            raise TypeError(f"dtype {self.dtype}: expected float64, float32, complex128 or "
                            "complex64")
        o.precision, o.domain = _GEMM_DTYPES[self.dtype]
        o.transa, o.transb = _enum(C.TRANSPOSE, transa, "transa"), _enum(C.TRANSPOSE, transb,
                                                                         "transb")
        o.order = _enum(C.MATRIX_ORDER, order, "order")
        o.lda, o.ldb, o.ldc, o.tile, o.panel, o.gpus, o.share_a = lda, ldb, ldc, tile, panel, \
            gpus, share_a
        o.grid[0], o.grid[1] = grid
        o.exchange = _enum(C.EXCHANGE, exchange, "exchange")
        o.location, o.backend = _enum(C.LOCATION, location, "location"), _enum(
            C.BACKEND, backend, "backend")
        o.stream = _stream(stream)
        bounds = [None if b is None else np.ascontiguousarray(b, np.int64) for b in blocks]
        for i, b in enumerate(bounds):
            o.blocks[i] = None if b is None else b.ctypes.data
        handle = ctypes.c_void_p()
        _check(_lib.tide_gemm_plan_create(ctx._handle, m, n, k, ctypes.byref(o),
                                          ctypes.byref(handle)), ctx._handle)
        self._made(ctx, handle.value, o.stream)
        self.m, self.n, self.k, self.device = m, n, k, o.location == 1
        self._complex = o.domain == 1
        g = self.info["grid"]
        rank = ctx.comm.Get_rank()
        row, col = rank // g[1], rank % g[1]
        rm, cn = _block(row, m, g[0], bounds[0]), _block(col, n, g[1], bounds[1])
        ka, kb = _block(col, k, g[1], bounds[2]), _block(row, k, g[0], bounds[3])
        self.c_rows, self.c_cols = rm, cn  # this rank's block of C: rows [lo, hi), columns
        op_a = (rm[1] - rm[0], ka[1] - ka[0])
        op_b = (kb[1] - kb[0], cn[1] - cn[0])
        self._a = self._layout(op_a if o.transa == 0 else op_a[::-1], o.order, lda)
        self._b = self._layout(op_b if o.transb == 0 else op_b[::-1], o.order, ldb)
        self._c = self._layout((op_a[0], op_b[1]), o.order, ldc)
        self.a_shape, self.b_shape, self.c_shape = self._a[0], self._b[0], self._c[0]

    def _layout(self, shape, order, ld):
        s = self.dtype.itemsize
        if order == 0:
            return shape, (s, (ld or max(shape[0], 1)) * s)
        return shape, ((ld or max(shape[1], 1)) * s, s)

    @property
    def info(self):
        d = _struct_dict(self._info(_lib.tide_gemm_plan_info, C.GEMMInfo))
        d["grid"] = tuple(d["grid"])
        return d

    def __call__(self, a, b, c, alpha=1.0, beta=0.0):
        """Collective: c = alpha op(a) op(b) + beta c; returns c."""
        arrays = [(a, self.device, self.dtype, *self._a, False),
                  (b, self.device, self.dtype, *self._b, False),
                  (c, self.device, self.dtype, *self._c, True)]
        if self._complex or isinstance(alpha, complex) or isinstance(beta, complex):
            al = (ctypes.c_double * 2)(complex(alpha).real, complex(alpha).imag)
            be = (ctypes.c_double * 2)(complex(beta).real, complex(beta).imag)
            self._call(_lib.tide_gemm_execute_complex, arrays,
                       lambda p: (al, p[0], p[1], be, p[2]))
        else:
            self._call(_lib.tide_gemm_execute, arrays,
                       lambda p: (float(alpha), p[0], p[1], float(beta), p[2]))
        return c

    execute = __call__
