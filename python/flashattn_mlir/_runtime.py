"""libflashattn_rt through ctypes: the C structs of flashattn/runtime.h, the
library's functions, and one fa_runtime per thread and device.

Nothing here knows PyTorch: tensors arrive as (data pointer, shape) pairs.
Every fa_status other than FA_OK becomes a FlashAttnError carrying the
status name and the runtime's message (fa_runtime_last_error).
"""

import ctypes as C
import os
import threading

from . import _paths

FA_OK = 0
STATUS_NAMES = {
    0: "FA_OK", 1: "FA_ERROR_INVALID_ARGUMENT", 2: "FA_ERROR_SHAPE_MISMATCH",
    3: "FA_ERROR_BAD_INPUT", 4: "FA_ERROR_OUT_OF_MEMORY", 5: "FA_ERROR_IO",
    6: "FA_ERROR_CORRUPT_ARTIFACT", 7: "FA_ERROR_CACHE_MISS", 8: "FA_ERROR_COMPILE_FAILED",
    9: "FA_ERROR_NO_DRIVER", 10: "FA_ERROR_CUDA", 11: "FA_ERROR_UNSUPPORTED",
    12: "FA_ERROR_LOAD_FAILED",
}
FA_ERROR_UNSUPPORTED = 11

# fa_target, fa_dtype, fa_causal and the config flags (runtime.h).
TARGETS = {"host": 0, "sm90": 1}
DTYPES = {"f32": 0, "f16": 1, "bf16": 2}
CAUSAL = {"none": 0, "top_left": 1, "bottom_right": 2}
FLAGS = {"varlen_q": 1 << 0, "varlen_k": 1 << 1, "seqused_k": 1 << 2, "paged": 1 << 3,
         "append": 1 << 4, "with_lse": 1 << 5, "alibi": 1 << 6, "alibi_per_batch": 1 << 7}


class FlashAttnError(RuntimeError):
    """A call the runtime refused or could not complete: `status` is the
    fa_status name (e.g. "FA_ERROR_BAD_INPUT"), the message the runtime's."""

    def __init__(self, status, message):
        self.status = STATUS_NAMES.get(status, str(status))
        super().__init__("%s: %s" % (self.status, message))


class FlashAttnUnsupportedError(FlashAttnError, NotImplementedError):
    """A valid request this build cannot serve (FA_ERROR_UNSUPPORTED)."""


class Config(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("target", C.c_int), ("dtype", C.c_int),
                ("out_dtype", C.c_int), ("num_q_heads", C.c_int32),
                ("num_kv_heads", C.c_int32), ("head_dim", C.c_int32),
                ("head_dim_v", C.c_int32), ("flags", C.c_uint32), ("page_size", C.c_int32),
                ("causal", C.c_int), ("window_left", C.c_int32),
                ("window_right", C.c_int32), ("softcap", C.c_float), ("scale", C.c_float),
                ("num_splits", C.c_int32), ("pack_gqa", C.c_int32), ("regions", C.c_char_p)]


class Options(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("cache_dir", C.c_char_p),
                ("disable_disk_cache", C.c_int32), ("memory_entries", C.c_int32),
                ("compiler_library", C.c_char_p), ("compile_timeout_s", C.c_int32)]


class Tensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("rank", C.c_int32), ("shape", C.c_int64 * 4)]


ARG_NAMES = ("q", "k", "v", "out", "lse", "cu_seqlens_q", "cu_seqlens_k", "seqused_k",
             "block_table", "alibi_slopes", "k_new", "v_new", "cache_seqlens")


class Args(C.Structure):
    _fields_ = ([("struct_size", C.c_uint32)] + [(n, Tensor) for n in ARG_NAMES] +
                [("stream", C.c_void_p)])


class CacheStats(C.Structure):
    _fields_ = [(n, C.c_uint64) for n in ("memory_hits", "disk_hits", "misses", "compiles",
                                          "rebuilt_corrupt", "disk_writes",
                                          "disk_write_failures")] + [
        ("disk_enabled", C.c_int32)]


def library_path():
    """$FLASHATTN_RT_LIB, else the library of the tree this package belongs
    to (its build or install), else the loader's search path."""
    env = os.environ.get("FLASHATTN_RT_LIB")
    if env:
        return env
    if _paths.LIB_DIR:
        candidate = os.path.join(_paths.LIB_DIR, "libflashattn_rt.so.1")
        if os.path.exists(candidate):
            return candidate
    return "libflashattn_rt.so.1"


_lib = None
_lib_lock = threading.Lock()


def lib():
    """The loaded libflashattn_rt with its prototypes (loaded once)."""
    global _lib
    with _lib_lock:
        if _lib is None:
            _lib = _load(library_path())
    return _lib


def _load(path):
    try:
        l = C.CDLL(path)
    except OSError as e:
        raise ImportError("flashattn_mlir: cannot load libflashattn_rt (%s); set "
                          "FLASHATTN_RT_LIB to its path" % e) from None
    p, i32 = C.c_void_p, C.c_int
    protos = {
        "fa_status_string": (C.c_char_p, [i32]),
        "fa_runtime_abi_version": (C.c_uint32, []),
        "fa_attention_config_default": (Config, []),
        "fa_config_validate": (i32, [C.POINTER(Config), C.c_char_p, C.c_size_t]),
        "fa_config_canonical": (i32, [C.POINTER(Config), C.c_char_p, C.c_size_t]),
        "fa_runtime_create": (i32, [C.POINTER(Options), C.POINTER(p)]),
        "fa_runtime_destroy": (None, [p]),
        "fa_runtime_last_error": (C.c_char_p, [p]),
        "fa_runtime_cache_stats": (i32, [p, C.POINTER(CacheStats)]),
        "fa_kernel_get": (i32, [p, C.POINTER(Config), C.POINTER(p)]),
        "fa_attention_run": (i32, [p, p, C.POINTER(Args)]),
        "fa_cuda_probe": (i32, [p, C.POINTER(C.c_int32)]),
    }
    for name, (res, argtypes) in protos.items():
        fn = getattr(l, name)
        fn.restype, fn.argtypes = res, argtypes
    return l


def config_struct(fields):
    """An fa_attention_config from a dict of its fields by name, with the
    enums as strings ("sm90", "bf16", "bottom_right") and flags a list of
    FLAGS names; missing fields keep fa_attention_config_default's values."""
    c = lib().fa_attention_config_default()
    for name, value in fields.items():
        if name == "target":
            value = TARGETS[value]
        elif name in ("dtype", "out_dtype"):
            value = DTYPES[value]
        elif name == "causal":
            value = CAUSAL[value]
        elif name == "flags":
            value = sum(FLAGS[f] for f in value)
        elif name == "regions":
            value = value.encode() if value else None
        setattr(c, name, value)
    why = C.create_string_buffer(256)
    if lib().fa_config_validate(C.byref(c), why, len(why)) != FA_OK:
        raise ValueError("flashattn_mlir: invalid configuration: %s" % why.value.decode())
    return c


class Runtime:
    """One fa_runtime (not thread-safe: runtime_for gives each thread and
    device its own) and the kernels it returned, by config fields."""

    def __init__(self, cache_dir=None, compiler_library=None, disable_disk_cache=False):
        self._keep = [s.encode() if s is not None else None for s in (cache_dir, compiler_library)]
        opts = Options(C.sizeof(Options), self._keep[0], int(disable_disk_cache), 0,
                       self._keep[1], 0)
        handle = C.c_void_p()
        st = lib().fa_runtime_create(C.byref(opts), C.byref(handle))
        if st != FA_OK:
            raise FlashAttnError(st, "fa_runtime_create failed")
        self.handle = handle
        self.kernels = {}
        self.bound = False
        self.args = Args()

    def __del__(self):
        if getattr(self, "handle", None) and _lib is not None:
            _lib.fa_runtime_destroy(self.handle)
            self.handle = None

    def check(self, status, what):
        if status == FA_OK:
            return
        message = "%s: %s" % (what, lib().fa_runtime_last_error(self.handle).decode())
        cls = FlashAttnUnsupportedError if status == FA_ERROR_UNSUPPORTED else FlashAttnError
        raise cls(status, message)

    def kernel(self, fields):
        """The kernel for a config (a hashable tuple of (name, value)
        pairs): the runtime's caches, else a compile."""
        k = self.kernels.get(fields)
        if k is None:
            _record(fields)
            c = config_struct(dict(fields))
            handle = C.c_void_p()
            self.check(lib().fa_kernel_get(self.handle, C.byref(c), C.byref(handle)),
                       "fa_kernel_get")
            k = self.kernels[fields] = handle
        return k

    def bind(self):
        """Binds the runtime to the CUDA device current on this thread."""
        self.check(lib().fa_cuda_probe(self.handle, None), "fa_cuda_probe")
        self.bound = True

    def run(self, kernel, tensors, stream=None):
        """fa_attention_run with `tensors` {name: torch tensor} (anything with
        data_ptr() and shape), filled into this runtime's one fa_attention_args."""
        args = self.args
        C.memset(C.addressof(args), 0, C.sizeof(Args))
        args.struct_size = C.sizeof(Args)
        for name, t in tensors.items():
            field = getattr(args, name)
            field.data = t.data_ptr()
            shape = t.shape
            field.rank = len(shape)
            field.shape[:len(shape)] = shape
        args.stream = stream
        self.check(lib().fa_attention_run(self.handle, kernel, C.byref(args)),
                   "fa_attention_run")

    def cache_stats(self):
        s = CacheStats()
        self.check(lib().fa_runtime_cache_stats(self.handle, C.byref(s)), "cache stats")
        return {n: getattr(s, n) for n, _ in CacheStats._fields_}


_settings = {"cache_dir": None, "compiler_library": None}
_generation = [0]
_local = threading.local()
# Every runtime made lives until the process ends: a CUDA graph captured
# from its calls replays them after the calling thread is gone
# (runtime.h: destroy a runtime after the graphs that replay its calls).
_every_runtime = []
_every_lock = threading.Lock()


def configure(cache_dir=None, compiler_library=None):
    """Where runtimes used from now on, in every thread, keep their disk
    cache (None: $FLASHATTN_CACHE_DIR, else ~/.cache/flashattn) and which
    compiler library compiles on a miss (None: the runtime's default,
    beside libflashattn_rt; "" compiles nothing). The earlier runtimes stay
    alive for the graphs that replay their calls."""
    with _every_lock:
        _settings.update(cache_dir=cache_dir, compiler_library=compiler_library)
        _generation[0] += 1


def runtime_for(device):
    """This thread's runtime for `device` ("cpu" or a CUDA index), made
    with the settings of the last configure()."""
    runtimes = getattr(_local, "runtimes", None)
    if runtimes is None:
        runtimes = _local.runtimes = {}
    generation, rt = runtimes.get(device, (-1, None))
    if generation != _generation[0]:
        with _every_lock:
            rt = Runtime(**_settings)
            _every_runtime.append(rt)
            runtimes[device] = (_generation[0], rt)
    return rt


def _record(fields):
    """Appends a config seen for the first time by this runtime to
    $FLASHATTN_RECORD_CONFIGS (JSON lines, precompile's input), if set."""
    path = os.environ.get("FLASHATTN_RECORD_CONFIGS")
    if path:
        import json
        with open(path, "a") as f:
            f.write(json.dumps(dict(fields)) + "\n")
