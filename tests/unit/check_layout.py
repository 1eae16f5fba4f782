#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_layout.py - the dependency rule of the source layout, checked on
the #include "..." lines (docs/design.md, "Source map"):

    util/, format/, nccl/   depend on nothing of ours
    reader/                 <- format/, nccl/, util/, include/ (the API it implements)
    harness/                <- reader/ and what it uses
    plugin/                 <- format/, nccl/, util/ (never reader/ or harness/)
    examples/read_trace.c   <- the installed public header only

Fails listing every include that breaks it, or a header it cannot place."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = {'format', 'nccl', 'util'}
ALLOWED = {
    'format': {'format'},
    'nccl': {'nccl'},
    'util': {'util'},
    'reader': {'reader', 'include'} | BASE,  # include/: the public API it implements
    'harness': {'harness', 'reader'} | BASE,
    'plugin': {'plugin', 'include'} | BASE,
}
GENERATED = {'version.h': 'format'}  # format/version.h.in -> version.h


def headers():
    where = dict(GENERATED)
    for d in list(ALLOWED) + ['include']:
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for f in files:
                if f.endswith(('.h', '.def')):
                    where.setdefault(f, d)
    return where


def main():
    where = headers()
    bad = []
    checked = 0
    for d, allowed in ALLOWED.items():
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for f in sorted(files):
                if not f.endswith(('.c', '.h', '.def')):
                    continue
                path = os.path.join(dirpath, f)
                for n, line in enumerate(open(path, encoding='utf-8'), 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                    if not m:
                        continue
                    checked += 1
                    name = os.path.basename(m.group(1))
                    owner = where.get(name)
                    if owner is None:
                        bad.append(f'{os.path.relpath(path, ROOT)}:{n}: "{name}" is in no known directory')
                    elif owner not in allowed:
                        bad.append(f'{os.path.relpath(path, ROOT)}:{n}: {d}/ may not include {owner}/{name}')
    # A user's program: system headers and <ncclscope/...> only.
    ex = os.path.join(ROOT, 'examples', 'read_trace.c')
    for n, line in enumerate(open(ex, encoding='utf-8'), 1):
        m = re.match(r'\s*#\s*include\s+([<"])([^>"]+)[>"]', line)
        if not m:
            continue
        checked += 1
        if m.group(1) == '"' or (m.group(2).startswith('ncclscope') and
                                 not m.group(2).startswith('ncclscope/')):
            bad.append(f'examples/read_trace.c:{n}: a user includes only <ncclscope/...> '
                       f'and system headers, not {m.group(2)}')
    for b in bad:
        print(b)
    print(f'{checked} includes checked, {len(bad)} break the layout rule')
    return 1 if bad or checked < 50 else 0


if __name__ == '__main__':
    sys.exit(main())
