# SPDX-License-Identifier: Apache-2.0
"""Which ncclscope plugin the Python package records through.

The one NCCL will load when NCCL_PROFILER_PLUGIN names an ncclscope plugin
(resolved like NCCL does: the value as given to dlopen, then
libnccl-profiler-<value>.so): loading the same file gives the same copy, so
Python's records and NCCL's share rings, string table and file. Otherwise an
explicit path, NCCLSCOPE_PLUGIN, the build tree's plugin (when imported
from the build tree) and the installed one, in that order.
"""
import os

from . import _native

try:
    from . import _paths
except ImportError:  # a copy of the sources, not built by meson
    _paths = None


def _nccl_candidates():
    v = os.environ.get("NCCL_PROFILER_PLUGIN", "").strip()
    if not v or v.lower() == "none":
        return []
    return [v, "libnccl-profiler-%s.so" % v]


def _own_candidates(explicit):
    c = []
    if explicit:
        c.append(explicit)
    if os.environ.get("NCCLSCOPE_PLUGIN"):
        c.append(os.environ["NCCLSCOPE_PLUGIN"])
    if _paths is not None:
        here = os.path.dirname(os.path.abspath(__file__))
        if os.path.realpath(here).startswith(os.path.realpath(_paths.BUILD_ROOT) + os.sep):
            c.append(_paths.BUILD_PLUGIN)
        c.append(_paths.INSTALLED_PLUGIN)
    c.append("libnccl-profiler-ncclscope.so")
    return c


def load(explicit=None):
    """Loads the plugin; returns (path, NCCL loads it too)."""
    errors = []
    if not explicit:
        for c in _nccl_candidates():
            try:
                _native.load(c)
                return c, True
            except OSError as e:
                errors.append(str(e))
    for c in _own_candidates(explicit):
        try:
            _native.load(c)
            return c, False
        except OSError as e:
            errors.append(str(e))
    raise OSError("no ncclscope plugin found (set NCCLSCOPE_PLUGIN):\n  " + "\n  ".join(errors))
