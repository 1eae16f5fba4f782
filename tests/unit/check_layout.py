#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_layout.py - the dependency rule of the source layout, checked on
the #include "..." lines (docs/design.md, "Source map"):

    util/, format/, nccl/   depend on nothing of ours
    reader/                 <- format/, nccl/, util/, include/ (the API it implements)
    harness/                <- reader/ and what it uses
    plugin/                 <- format/, nccl/, util/ (never reader/ or harness/)
    examples/read_trace.c   <- the installed public header only

and inside plugin/, by the thread that runs the code (plugin/meson.build):

    record/     what NCCL's threads run   <- config.h, log.h (lifecycle) only
    engine/     drainers, compressors     <- record/, config.h, log.h, bg_thread.h
    watch/      the hang watchdog         <- record/, engine/engine.h, config.h, log.h, bg_thread.h
    services/   ops thread, control, metrics <- the same, and chain.h
    writer/     the writer process (its own program) <- engine/writer_proto.h, engine/io_loops.h only
    api/, the lifecycle files at the top  <- anything of plugin/

It also fails on an include loop between plugin modules (a .c/.h pair
whose includes lead back to it) and on a plugin source file over 800 lines.

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
    bad += plugin_rooms()
    for b in bad:
        print(b)
    print(f'{checked} includes checked, {len(bad)} break the layout rule')
    return 1 if bad or checked < 50 else 0


PLUGIN = os.path.join(ROOT, 'plugin')
LIFECYCLE_LOW = {'config.h', 'log.h'}
ROOMS = {
    'record': ({'record'}, LIFECYCLE_LOW),
    'engine': ({'engine', 'record'}, LIFECYCLE_LOW | {'bg_thread.h'}),
    'watch': ({'watch', 'record'}, LIFECYCLE_LOW | {'bg_thread.h', 'engine.h'}),
    'services': ({'services', 'record'}, LIFECYCLE_LOW | {'bg_thread.h', 'engine.h', 'chain.h'}),
    'writer': ({'writer'}, {'writer_proto.h', 'io_loops.h'}),
}
MAX_LINES = 800


def plugin_rooms():
    """Which room of plugin/ may include which header; loops; file size."""
    room_of, files = {}, []
    for dirpath, _, names in os.walk(PLUGIN):
        rel = os.path.relpath(dirpath, PLUGIN)
        room = 'top' if rel == '.' else rel.split(os.sep)[0]
        for f in names:
            if f.endswith(('.c', '.h')):
                room_of[f] = room
                files.append((room, os.path.join(dirpath, f)))
    bad, deps = [], {}
    for room, path in files:
        name = os.path.basename(path)
        lines = open(path, encoding='utf-8').read().split('\n')
        if len(lines) > MAX_LINES:
            bad.append(f'{os.path.relpath(path, ROOT)}: {len(lines)} lines (at most {MAX_LINES}: split it by role)')
        module = os.path.splitext(name)[0].removesuffix('_int')  # X_int.h: X's own
        for n, line in enumerate(lines, 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m or m.group(1) not in room_of:
                continue
            inc = m.group(1)
            deps.setdefault(module, set()).add(os.path.splitext(inc)[0].removesuffix('_int'))
            if room not in ROOMS:
                continue
            rooms, headers = ROOMS[room]
            if room_of[inc] not in rooms and inc not in headers:
                bad.append(f'{os.path.relpath(path, ROOT)}:{n}: {room}/ may not include '
                           f'{room_of[inc]}/{inc}' if room_of[inc] != 'top' else
                           f'{os.path.relpath(path, ROOT)}:{n}: {room}/ may not include {inc}')
    # A loop: module A's .c or .h includes B's header, and B's lead back to A.
    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for d in deps.get(todo.pop(), ()):
                if d not in seen:
                    seen.add(d)
                    todo.append(d)
        return seen
    for mod in sorted(deps):
        back = [d for d in deps[mod] if d != mod and mod in reach(d)]
        for d in sorted(back):
            if mod < d:
                bad.append(f'plugin: include loop between {mod} and {d}')
    return bad


if __name__ == '__main__':
    sys.exit(main())
