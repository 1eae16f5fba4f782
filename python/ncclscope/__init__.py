# SPDX-License-Identifier: Apache-2.0
"""ncclscope: Python calls in the same trace as NCCL's events.

    import ncclscope
    ncclscope.trace()                      # caller mode: who issued each collective
    ncclscope.trace(mode="functions", include=["__main__", "mypkg"], rate_limit=1000)
    ncclscope.stop()

or without changing the program: ``python -m ncclscope.run script.py`` and
``NCCLSCOPE_PYTHON=caller|functions`` (the .pth hook installed with the
package). docs/python.md describes the modes, their costs and the design.
"""
import atexit
import fnmatch
import os
import sys

from . import _native, _plugin

__all__ = ["trace", "stop", "status", "DEFAULT_TARGETS", "DEFAULT_EXCLUDE"]

# Calls that issue NCCL operations, by "module.qualname" (a prefix followed
# by "." matches too, and glob patterns work): torch.distributed's functions
# and ProcessGroup methods; backward(), which runs DDP's all-reduces on
# autograd's threads; JAX's compiled callables, whose collectives XLA's
# threads launch. Callable objects match by their type's name.
DEFAULT_TARGETS = (
    "torch.distributed",
    "torch._C._distributed_c10d",
    "torch._tensor.Tensor.backward",
    "torch.autograd.backward",
    "torch.autograd.grad",
    "*.PjitFunction",
    "*.PmapFunction",
)

# functions mode: modules never traced (ourselves, the import system).
DEFAULT_EXCLUDE = ("ncclscope", "importlib", "_frozen_importlib", "_frozen_importlib_external")

MODES = ("caller", "functions")

_active = None  # the settings of the running trace


def _matches(name, patterns):
    if not name:
        return False
    for p in patterns:
        if name == p or name.startswith(p + ".") or (
            any(c in p for c in "*?[") and fnmatch.fnmatchcase(name, p)
        ):
            return True
    return False


def _module_filter(include, exclude):
    include, exclude = tuple(include or ()), tuple(exclude or ())

    def is_traced(module, _unused=None):
        module = module if isinstance(module, str) else ""
        if _matches(module, exclude):
            return False
        return not include or _matches(module, include)

    return is_traced


def _target_filter(targets):
    targets = tuple(targets)

    def is_target(name, type_name=None):
        return _matches(name, targets) or (type_name is not None and _matches(type_name, targets))

    return is_target


def _library_paths():
    """Where library code lives: frames there are not "the caller"."""
    import site
    import sysconfig

    paths = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            paths.add(p)
    try:
        paths.update(site.getsitepackages())
    except AttributeError:  # virtualenv's old site.py
        pass
    user = getattr(site, "getusersitepackages", lambda: None)()
    if user:
        paths.add(user)
    paths.add(os.path.dirname(os.path.abspath(__file__)))
    out = [os.path.join(os.path.realpath(p), "") for p in paths] + [os.path.join(p, "") for p in paths]
    return sorted(set(out)) + ["<frozen "]


def trace(mode="caller", *, backend="auto", include=None, exclude=None, targets=None,
          rate_limit=0, c_calls=True, depth=3, plugin=None, session=None):
    """Starts recording Python into ncclscope's trace (stops a running one first).

    mode:       "caller" (default): each NCCL API call carries the Python code
                that made it (py_caller); nothing is recorded for other calls.
                "functions": every call and return of traced Python functions
                (and of C functions they call, unless c_calls=False).
    backend:    "auto" (sys.monitoring on 3.12+, else setprofile),
                "monitoring" or "setprofile".
    include, exclude: module name prefixes (functions mode); include empty =
                every module; exclude defaults to DEFAULT_EXCLUDE.
    targets:    calls that set the caller (caller mode; DEFAULT_TARGETS).
    rate_limit: calls recorded per function per second (0: all).
    depth:      frames kept in a caller stack (1..8).
    plugin:     the ncclscope plugin to use (default: the one NCCL will load,
                else NCCLSCOPE_PLUGIN, else the one installed with us).
    session:    "own" (default): a session of our own from now on, which
                NCCL's communicators join when NCCL loads this plugin (one
                file; nothing is lost before the first communicator, nor in
                a program without NCCL); "nccl": record only while NCCL's
                session is open.
    Returns status().
    """
    global _active
    if mode not in MODES:
        raise ValueError("mode must be one of %s, not %r" % (", ".join(MODES), mode))
    if backend == "auto":
        backend = "monitoring" if _native.HAVE_MONITORING else "setprofile"
    if backend not in ("monitoring", "setprofile"):
        raise ValueError("backend must be auto, monitoring or setprofile, not %r" % (backend,))
    if backend == "monitoring" and not _native.HAVE_MONITORING:
        raise RuntimeError(
            "sys.monitoring needs Python 3.12 or newer (this is %d.%d); use backend='setprofile'"
            % sys.version_info[:2]
        )
    depth = int(depth)
    if not 1 <= depth <= 8:
        raise ValueError("depth must be 1..8, not %d" % depth)
    rate_limit = int(rate_limit)
    if rate_limit < 0:
        raise ValueError("rate_limit must be >= 0")
    if session not in (None, "own", "nccl"):
        raise ValueError("session must be own or nccl, not %r" % (session,))
    stop()
    path, _nccl_loads_it = _plugin.load(plugin)
    # Our own session even where NCCL loads the plugin: NCCL's session opens
    # only at its first communicator, and a program may make none. NCCL's
    # communicators join ours; the file learns NCCL's profiler API version
    # at the first (docs/python.md).
    own = session != "nccl"
    if own and not _native.session_open("python"):
        raise RuntimeError("the ncclscope plugin (%s) refused to open a session: "
                           "see its warning above (NCCLSCOPE_* settings)" % path)
    try:
        _native.start(
            mode, backend, c_calls=bool(c_calls), rate_limit=rate_limit, depth=depth,
            is_traced=_module_filter(include, DEFAULT_EXCLUDE if exclude is None else exclude),
            is_target=_target_filter(DEFAULT_TARGETS if targets is None else targets),
            library=_library_paths(), cwd=os.getcwd(),
        )
    except BaseException:
        _native.session_close()
        raise
    _active = dict(mode=mode, backend=backend, plugin=path, own=own)
    return status()


def stop():
    """Stops recording; a session of our own ends (its file is complete)."""
    global _active
    if _active is None:
        return
    _active = None
    _native.stop()
    _native.session_close()


def status():
    """Settings and counters: mode, backend, plugin, own_session, session_live,
    records (written), not_kept (no session open), ring_full, rate_limited,
    callers (target calls that set a caller), stacks, unmatched, errors."""
    return _native.status()


atexit.register(stop)
