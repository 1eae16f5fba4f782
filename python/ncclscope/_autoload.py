# SPDX-License-Identifier: Apache-2.0
"""Imported by ncclscope-autoload.pth at interpreter start when
NCCLSCOPE_PYTHON is set: starts tracing with the environment's settings.
A failure is reported on stderr and never stops the program."""
import os
import sys


def _start():
    mode = os.environ.get("NCCLSCOPE_PYTHON", "").strip()
    if mode.lower() in ("", "0", "off", "no", "none"):
        return
    try:
        import ncclscope
        from ncclscope import _env

        ncclscope.trace(**_env.options(mode))
    except Exception as e:  # the program runs on without us
        sys.stderr.write("ncclscope: NCCLSCOPE_PYTHON=%s not started: %s\n" % (mode, e))


_start()
