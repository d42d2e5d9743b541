"""The C interface of libtide (src/tide.h) as ctypes declarations: the structs, the status
codes and enums, and the prototypes. Nothing here converts or checks; tide/__init__.py does."""
import ctypes
import ctypes.util
import os
from ctypes import (POINTER, Structure, c_char, c_char_p, c_double, c_int, c_longlong, c_size_t,
                    c_void_p)

SUCCESS, ERR_ARGUMENT, ERR_BOX, ERR_MISMATCH, ERR_UNSUPPORTED, ERR_NOMEM, ERR_MPI, \
    ERR_BACKEND, ERR_TOO_LARGE = range(9)
BACKEND = {"auto": 0, "cpu": 1, "cuda": 2}
EXCHANGE = {"auto": 0, "a2av": 1, "p2p": 2, "nccl": 3, "cuda-mpi": 4, "direct": 5}
FFT_TYPE = {"c2c": 0, "r2c": 1}
PRECISION = {"double": 0, "float": 1}
SCALING = {"none": 0, "full": 1, "symmetric": 2}
LOCATION = {"host": 0, "device": 1}
DECOMPOSITION = {"auto": 0, "slabs": 1, "pencils": 2}
PLANNING = {"estimate": 0, "measure": 1}
BC = {"periodic": 0, "neumann": 1, "dirichlet": 2}
EIGEN = {"fd2": 0, "spectral": 1}
OUT_OF_CARD = {"auto": 0, "stream": 1, "stream-cpu-x": 2}
STENCIL_SHAPE = {"7pt": 0, "27pt": 1, "star": 2, "box": 3}
TRANSPOSE = {"N": 0, "T": 1, "C": 2}
DOMAIN = {"real": 0, "complex": 1}
MATRIX_ORDER = {"F": 0, "C": 1}
DEVICE_AUTO, DEVICE_CURRENT = -1, -2


class Box(Structure):
    _fields_ = [("lo", c_int * 3), ("hi", c_int * 3), ("order", c_int * 3)]


class ContextOptions(Structure):
    _fields_ = [("size", c_size_t), ("backend", c_int), ("threads", c_int),
                ("device_budget", c_size_t), ("bind", c_int), ("device", c_int)]


class DeviceInfo(Structure):
    _fields_ = [("device", c_int), ("name", c_char * 128), ("pci_bus_id", c_char * 32),
                ("cc_major", c_int), ("cc_minor", c_int), ("total_bytes", c_size_t),
                ("free_bytes", c_size_t), ("budget_bytes", c_size_t), ("cpuset", c_char * 128),
                ("cuda_aware_mpi", c_int), ("nccl_version", c_int)]


class Rates(Structure):
    _fields_ = [("host_copy", c_double), ("h2d", c_double), ("d2h", c_double),
                ("both", c_double), ("d2d", c_double)]


class FFTOptions(Structure):
    _fields_ = [("size", c_size_t), ("type", c_int), ("precision", c_int), ("backend", c_int),
                ("decomposition", c_int), ("exchange", c_int), ("scaling", c_int),
                ("planning", c_int), ("batch", c_int), ("transposed_out", c_int),
                ("location", c_int), ("stream", c_void_p), ("async_", c_int),
                ("arrays_kept", c_int)]


class FFTInfo(Structure):
    _fields_ = [("in_count", c_longlong), ("out_count", c_longlong), ("in_bytes", c_size_t),
                ("out_bytes", c_size_t), ("inplace_bytes", c_size_t), ("host_bytes", c_size_t),
                ("pinned_bytes", c_size_t), ("device_bytes", c_size_t), ("exchanges", c_int),
                ("local_transforms", c_int), ("flops", c_double), ("backend", c_int),
                ("exchange", c_int), ("decomposition", c_int), ("location", c_int),
                ("chunks", c_int), ("streams", c_int), ("slots", c_int), ("round_trips", c_int)]


class FFTCost(Structure):
    _fields_ = [("flops", c_double), ("fft_bytes", c_double), ("move_bytes", c_double),
                ("exchange_bytes", c_double), ("h2d_bytes", c_double), ("d2h_bytes", c_double),
                ("exchanges", c_int), ("fft_passes", c_int), ("cpu_seconds", c_double)]


class PoissonOptions(Structure):
    _fields_ = [("size", c_size_t), ("precision", c_int), ("backend", c_int),
                ("location", c_int), ("decomposition", c_int), ("exchange", c_int),
                ("planning", c_int), ("batch", c_int), ("bc", (c_int * 2) * 3),
                ("h", c_double * 3), ("alpha", c_double), ("eigen", c_int),
                ("stream", c_void_p), ("faces", c_void_p * 3), ("out_of_card", c_int)]


class PoissonInfo(Structure):
    _fields_ = [("count", c_longlong), ("bytes", c_size_t), ("host_bytes", c_size_t),
                ("pinned_bytes", c_size_t), ("device_bytes", c_size_t), ("exchanges", c_int),
                ("passes", c_int), ("fused_scaling", c_int), ("singular", c_int),
                ("flops", c_double), ("backend", c_int), ("decomposition", c_int),
                ("exchange", c_int), ("location", c_int), ("round_trips", c_int),
                ("cpu_transforms", c_int), ("chunks", c_int)]


class StencilOptions(Structure):
    _fields_ = [("size", c_size_t), ("precision", c_int), ("backend", c_int),
                ("location", c_int), ("shape", c_int), ("weights", c_void_p),
                ("radius", c_int), ("npoints", c_int), ("offsets", c_void_p),
                ("bc", c_int * 3), ("source", c_void_p), ("fuse", c_int), ("stream", c_void_p),
                ("level_steps", c_int), ("overlap", c_int), ("exchange", c_int)]


class StencilInfo(Structure):
    _fields_ = [("count", c_longlong), ("bytes", c_size_t), ("host_bytes", c_size_t),
                ("pinned_bytes", c_size_t), ("device_bytes", c_size_t), ("taps", c_int),
                ("radius", c_int), ("fuse", c_int), ("flops", c_double),
                ("bytes_per_step", c_double), ("backend", c_int), ("location", c_int),
                ("box", Box), ("grid", c_int * 3), ("halo_points", c_longlong),
                ("exchanges", c_longlong), ("halo_seconds", c_double), ("slabs", c_int),
                ("level_steps", c_int), ("halo_exchange", c_int), ("overlapped", c_int)]


class BandOptions(Structure):
    _fields_ = [("size", c_size_t), ("precision", c_int), ("backend", c_int),
                ("location", c_int), ("kl", c_int), ("ku", c_int), ("diagonals", c_void_p),
                ("steps_per_pass", c_int), ("stream", c_void_p), ("slab_rows", c_int)]


class BandInfo(Structure):
    _fields_ = [("lo", c_int), ("hi", c_int), ("bytes", c_size_t), ("host_bytes", c_size_t),
                ("pinned_bytes", c_size_t), ("device_bytes", c_size_t), ("kl", c_int),
                ("ku", c_int), ("steps_per_pass", c_int), ("flops", c_double),
                ("bytes_per_step", c_double), ("backend", c_int), ("location", c_int),
                ("halo_rows", c_longlong), ("exchanges", c_longlong),
                ("halo_seconds", c_double), ("slabs", c_int), ("slab_rows", c_int)]


class GEMMOptions(Structure):
    _fields_ = [("size", c_size_t), ("precision", c_int), ("backend", c_int),
                ("location", c_int), ("order", c_int), ("transa", c_int), ("transb", c_int),
                ("lda", c_longlong), ("ldb", c_longlong), ("ldc", c_longlong), ("tile", c_int),
                ("panel", c_int), ("grid", c_int * 2), ("stream", c_void_p),
                ("blocks", c_void_p * 4), ("gpus", c_int), ("share_a", c_int),
                ("domain", c_int), ("exchange", c_int)]


class GEMMInfo(Structure):
    _fields_ = [("m", c_longlong), ("n", c_longlong), ("k", c_longlong), ("flops", c_double),
                ("host_bytes", c_size_t), ("pinned_bytes", c_size_t),
                ("device_bytes", c_size_t), ("tile_m", c_longlong), ("tile_n", c_longlong),
                ("panel", c_longlong), ("tiles", c_int), ("panels", c_int), ("slots", c_int),
                ("bytes_up", c_double), ("bytes_down", c_double), ("rate_up", c_double),
                ("rate_down", c_double), ("rate_both", c_double), ("rate_gemm", c_double),
                ("bound", c_double), ("gpus", c_int), ("shared_a", c_int), ("grid", c_int * 2),
                ("backend", c_int), ("location", c_int)]


STRUCTS = {"tide_box": Box, "tide_context_options": ContextOptions,
           "tide_device_info": DeviceInfo, "tide_rates": Rates, "tide_fft_options": FFTOptions,
           "tide_fft_info": FFTInfo, "tide_fft_cost": FFTCost,
           "tide_poisson_options": PoissonOptions, "tide_poisson_info": PoissonInfo,
           "tide_stencil_options": StencilOptions, "tide_stencil_info": StencilInfo,
           "tide_band_options": BandOptions, "tide_band_info": BandInfo,
           "tide_gemm_options": GEMMOptions, "tide_gemm_info": GEMMInfo}

P = c_void_p
_int3 = POINTER(c_int)
PROTOTYPES = {
    # name: (restype, argtypes)
    "tide_version": (c_char_p, []),
    "tide_strerror": (c_char_p, [c_int]),
    "tide_last_error": (c_char_p, [P]),
    "tide_context_options_init": (None, [POINTER(ContextOptions)]),
    "tide_context_create": (c_int, [P, POINTER(ContextOptions), POINTER(P)]),
    "tide_context_destroy": (c_int, [P]),
    "tide_context_backend": (c_int, [P, POINTER(c_int)]),
    "tide_context_gpu_status": (c_char_p, [P]),
    "tide_context_threads": (c_int, [P, POINTER(c_int)]),
    "tide_context_set_progress": (c_int, [P, c_double]),
    "tide_context_device": (c_int, [P, POINTER(DeviceInfo)]),
    "tide_measure_rates": (c_int, [P, c_size_t, POINTER(Rates)]),
    "tide_measure_rates_together": (c_int, [P, c_size_t, POINTER(Rates)]),
    "tide_measure_exchange": (c_int, [P, c_int, c_size_t, POINTER(c_double)]),
    "tide_host_alloc": (c_int, [P, c_size_t, POINTER(P)]),
    "tide_host_free": (c_int, [P, P]),
    "tide_device_alloc": (c_int, [P, c_size_t, POINTER(P)]),
    "tide_device_free": (c_int, [P, P]),
    "tide_copy": (c_int, [P, P, P, c_size_t]),
    "tide_box_count": (c_longlong, [POINTER(Box)]),
    "tide_proc_grid": (c_int, [c_int, _int3, _int3, _int3]),
    "tide_box_in_grid": (c_int, [_int3, _int3, c_int, POINTER(Box)]),
    "tide_box_slab": (c_int, [_int3, c_int, c_int, c_int, POINTER(Box)]),
    "tide_box_pencil": (c_int, [_int3, c_int, c_int, c_int, POINTER(Box)]),
    "tide_fft_options_init": (None, [POINTER(FFTOptions)]),
    "tide_fft_plan_create": (c_int, [P, _int3, POINTER(Box), POINTER(Box), POINTER(FFTOptions),
                                     POINTER(P)]),
    "tide_fft_plan_destroy": (c_int, [P]),
    "tide_fft_plan_boxes": (c_int, [P, POINTER(Box), POINTER(Box)]),
    "tide_fft_plan_info": (c_int, [P, POINTER(FFTInfo)]),
    "tide_fft_plan_cost": (c_int, [P, c_int, POINTER(FFTCost)]),
    "tide_fft_plan_describe": (c_int, [P, c_char_p, c_size_t]),
    "tide_fft_forward": (c_int, [P, P, P]),
    "tide_fft_backward": (c_int, [P, P, P]),
    "tide_fft_plan_set_stream": (c_int, [P, P]),
    "tide_poisson_options_init": (None, [POINTER(PoissonOptions)]),
    "tide_poisson_plan_create": (c_int, [P, _int3, POINTER(Box), POINTER(PoissonOptions),
                                         POINTER(P)]),
    "tide_poisson_plan_destroy": (c_int, [P]),
    "tide_poisson_plan_box": (c_int, [P, POINTER(Box)]),
    "tide_poisson_plan_info": (c_int, [P, POINTER(PoissonInfo)]),
    "tide_poisson_plan_cost": (c_int, [P, POINTER(FFTCost)]),
    "tide_poisson_plan_describe": (c_int, [P, c_char_p, c_size_t]),
    "tide_poisson_solve": (c_int, [P, P, P]),
    "tide_poisson_mean": (c_int, [P, POINTER(c_double)]),
    "tide_poisson_plan_set_stream": (c_int, [P, P]),
    "tide_stencil_options_init": (None, [POINTER(StencilOptions)]),
    "tide_stencil_plan_create": (c_int, [P, _int3, POINTER(Box), POINTER(StencilOptions),
                                         POINTER(P)]),
    "tide_stencil_plan_destroy": (c_int, [P]),
    "tide_stencil_plan_info": (c_int, [P, POINTER(StencilInfo)]),
    "tide_stencil_plan_describe": (c_int, [P, c_char_p, c_size_t]),
    "tide_stencil_run": (c_int, [P, P, c_longlong]),
    "tide_stencil_plan_set_stream": (c_int, [P, P]),
    "tide_band_options_init": (None, [POINTER(BandOptions)]),
    "tide_band_plan_create": (c_int, [P, c_int, c_int, c_int, POINTER(BandOptions), POINTER(P)]),
    "tide_band_plan_destroy": (c_int, [P]),
    "tide_band_plan_info": (c_int, [P, POINTER(BandInfo)]),
    "tide_band_plan_describe": (c_int, [P, c_char_p, c_size_t]),
    "tide_band_run": (c_int, [P, P, c_longlong]),
    "tide_band_plan_set_stream": (c_int, [P, P]),
    "tide_gemm_options_init": (None, [POINTER(GEMMOptions)]),
    "tide_gemm_plan_create": (c_int, [P, c_longlong, c_longlong, c_longlong,
                                      POINTER(GEMMOptions), POINTER(P)]),
    "tide_gemm_plan_destroy": (c_int, [P]),
    "tide_gemm_plan_info": (c_int, [P, POINTER(GEMMInfo)]),
    "tide_gemm_plan_describe": (c_int, [P, c_char_p, c_size_t]),
    "tide_gemm_execute": (c_int, [P, c_double, P, P, c_double, P]),
    "tide_gemm_execute_complex": (c_int, [P, POINTER(c_double), P, P, POINTER(c_double), P]),
    "tide_gemm_plan_set_stream": (c_int, [P, P]),
    "tide_gemm": (c_int, [P, c_longlong, c_longlong, c_longlong, c_double, P, P, c_double, P,
                          POINTER(GEMMOptions)]),
}


def library_path():
    """Where libtide.so is: $TIDE_LIBRARY, else the path written in at install (by meson
    install or pip install: tide/_install.py), else the loader's search
    (ctypes.util.find_library)."""
    path = os.environ.get("TIDE_LIBRARY")
    if path:
        return path
    try:
        from ._install import LIBRARY
        if os.path.exists(LIBRARY):
            return LIBRARY
    except ImportError:
        pass
    return ctypes.util.find_library("tide") or "libtide.so"


def load(path=None):
    """libtide with every function of PROTOTYPES declared."""
    path = path or library_path()
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        raise ImportError(f"tide: cannot load libtide ({e}); name it in TIDE_LIBRARY, or "
                          "reinstall the package once the library is built (docs/python.md)"
                          ) from None
    for name, (restype, argtypes) in PROTOTYPES.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = restype, argtypes
    return lib
