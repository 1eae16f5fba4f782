# SPDX-License-Identifier: Apache-2.0
"""Lists the Python interpreters (3.11 or newer, with headers) to build
ncclscope's extension for: the one running this first, then Debian's
/usr/bin/python3, then pyenv's versions (PYENV_ROOT or ~/.pyenv), or the
ones named on the command line. One line per interpreter, tab-separated:

    executable  version  include-dir  EXT_SUFFIX  site-packages-under-PREFIX

Asked of each interpreter itself (sysconfig), so no build module of
Python's is needed (meson's python module wants distutils, gone in 3.12).
The first interpreter of each EXT_SUFFIX wins (one build per ABI).

    find_pythons.py PREFIX [interpreter...]
"""
import glob
import os
import subprocess
import sys

PROBE = r"""
import os, sys, sysconfig
prefix = sys.argv[1]
inc = sysconfig.get_paths()["include"]
schemes = sysconfig.get_scheme_names()
if "posix_local" in schemes and prefix == "/usr/local":
    # Debian: /usr/local/lib/python3/dist-packages is on its sys.path
    site = sysconfig.get_path("platlib", "posix_local", vars={"base": "/usr", "platbase": "/usr"})
else:
    site = sysconfig.get_path("platlib", "posix_prefix", vars={"base": prefix, "platbase": prefix})
ok = os.path.exists(os.path.join(inc, "Python.h")) and not sysconfig.get_config_var("Py_GIL_DISABLED")
print("%s\t%d.%d\t%s\t%s\t%s\t%d" % (sys.executable, sys.version_info[0], sys.version_info[1],
      inc, sysconfig.get_config_var("EXT_SUFFIX"), site, ok))
"""


def candidates():
    yield sys.executable
    yield "/usr/bin/python3"
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for d in sorted(glob.glob(os.path.join(root, "versions", "3.*"))):
        parts = os.path.basename(d).split(".")
        if len(parts) >= 2 and parts[1].isdigit():
            yield os.path.join(d, "bin", "python3.%s" % parts[1])


def main():
    prefix = sys.argv[1] if len(sys.argv) > 1 else "/usr/local"
    exes = sys.argv[2:] or list(candidates())
    seen, suffixes = set(), set()
    for exe in exes:
        if not exe or not os.access(exe, os.X_OK) or os.path.realpath(exe) in seen:
            continue
        seen.add(os.path.realpath(exe))
        try:
            out = subprocess.run([exe, "-c", PROBE, prefix], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
            ex, ver, inc, suffix, site, ok = out.split("\t")
        except (OSError, ValueError, subprocess.SubprocessError):
            continue
        major, minor = (int(x) for x in ver.split("."))
        if (major, minor) < (3, 11) or ok != "1" or suffix in suffixes:
            continue
        suffixes.add(suffix)
        print("\t".join((exe, ver, inc, suffix, site)))


main()
