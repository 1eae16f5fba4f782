# SPDX-License-Identifier: Apache-2.0
"""Settings from the environment (the .pth hook and ncclscope.run use them):

    NCCLSCOPE_PYTHON          caller | functions (| 0, off: nothing)
    NCCLSCOPE_PY_BACKEND      auto | monitoring | setprofile
    NCCLSCOPE_PY_INCLUDE      comma-separated module prefixes (functions mode)
    NCCLSCOPE_PY_EXCLUDE      the same, never traced
    NCCLSCOPE_PY_TARGETS      comma-separated targets (caller mode); a leading
                              "+" adds to the defaults
    NCCLSCOPE_PY_RATE_LIMIT   calls per function per second (0: all)
    NCCLSCOPE_PY_C_CALLS      0: no C function events
    NCCLSCOPE_PY_DEPTH        frames per caller stack (1..8)
    NCCLSCOPE_PY_SESSION      own | nccl
"""
import os


def _list(name):
    v = os.environ.get(name)
    if v is None:
        return None
    return [x.strip() for x in v.split(",") if x.strip()]


def options(mode=None):
    """trace()'s keyword arguments from the environment."""
    from . import DEFAULT_TARGETS

    o = {"mode": mode or os.environ.get("NCCLSCOPE_PYTHON", "caller").strip() or "caller"}
    if os.environ.get("NCCLSCOPE_PY_BACKEND"):
        o["backend"] = os.environ["NCCLSCOPE_PY_BACKEND"].strip()
    for key, name in (("include", "NCCLSCOPE_PY_INCLUDE"), ("exclude", "NCCLSCOPE_PY_EXCLUDE")):
        v = _list(name)
        if v is not None:
            o[key] = v
    t = os.environ.get("NCCLSCOPE_PY_TARGETS", "").strip()
    if t:
        extra = [x.strip() for x in t.lstrip("+").split(",") if x.strip()]
        o["targets"] = list(DEFAULT_TARGETS) + extra if t.startswith("+") else extra
    for key, name in (("rate_limit", "NCCLSCOPE_PY_RATE_LIMIT"), ("depth", "NCCLSCOPE_PY_DEPTH")):
        if os.environ.get(name):
            o[key] = int(os.environ[name])
    if os.environ.get("NCCLSCOPE_PY_C_CALLS"):
        o["c_calls"] = os.environ["NCCLSCOPE_PY_C_CALLS"].strip() not in ("0", "off", "no")
    if os.environ.get("NCCLSCOPE_PY_SESSION"):
        o["session"] = os.environ["NCCLSCOPE_PY_SESSION"].strip()
    return o
