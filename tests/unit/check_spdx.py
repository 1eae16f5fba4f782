#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_spdx.py - every tracked source file (C, Python, shell, meson) names its
license in an SPDX line within its first three lines, as LICENSE (Apache-2.0)
and meson.build's project() say. Fails listing the files without one."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = re.compile(r'\.(c|h|py|sh|def)$|\.(h|py)\.in$|(^|/)meson\.build$|(^|/)meson_options\.txt$|^\.ci/run$')


def tracked():
    try:
        out = subprocess.check_output(['git', 'ls-files'], cwd=ROOT, text=True,
                                      stderr=subprocess.DEVNULL)
        return out.split()
    except (OSError, subprocess.CalledProcessError):  # a tarball: walk the tree
        files = []
        for dirpath, dirs, names in os.walk(ROOT):
            dirs[:] = [d for d in dirs if not d.startswith(('.', 'build'))]
            files += [os.path.relpath(os.path.join(dirpath, n), ROOT) for n in names]
        return files


def main():
    missing, checked = [], 0
    for f in tracked():
        if not SOURCE.search(f):
            continue
        checked += 1
        with open(os.path.join(ROOT, f), encoding='utf-8', errors='replace') as fh:
            head = [fh.readline() for _ in range(3)]
        if not any('SPDX-License-Identifier: Apache-2.0' in line for line in head):
            missing.append(f)
    if not os.path.exists(os.path.join(ROOT, 'LICENSE')):
        missing.append('LICENSE (the file itself)')
    for f in missing:
        print(f'{f}: no "SPDX-License-Identifier: Apache-2.0" in its first three lines')
    print(f'{checked} source files checked, {len(missing)} without a license line')
    return 1 if missing else 0


if __name__ == '__main__':
    sys.exit(main())
