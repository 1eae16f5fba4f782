#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_pipeline.py - the converter's dependency rule, checked on the
#include "..." lines (docs/converter.md, "Pipeline"):

    job.c, main.c   -> anything of the converter
    model/          -> the read side only (reader/, format/, nccl/, util/)
    timeline/       -> model/, sinks/
    sinks/          -> nothing of the converter but sinks/
    reports/        -> model/, reports/, and the byte streams of sinks/
                       (json_writer.h, json_escape.h, out_file.h) to write
                       their files
    parallel.h, cli_opts.h -> used by any stage (utilities, part of none:
                       the thread pool; option values parsed strictly)

Fails listing every include that breaks it, or a header it cannot place."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CONV = os.path.join(ROOT, 'converter')
STAGES = ['model', 'timeline', 'sinks', 'reports']
OUTSIDE = {'reader', 'format', 'nccl', 'util', 'include'}
ALLOWED = {
    'model': {'model'},
    'timeline': {'timeline', 'model', 'sinks'},
    'sinks': {'sinks'},
    'reports': {'reports', 'model', 'sinks:json_writer.h', 'sinks:json_escape.h', 'sinks:out_file.h'},
}


def where():
    """header name -> 'model', 'sinks', ... or 'outside' or 'top'."""
    w = {'version.h': 'outside'}
    for d in OUTSIDE:
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for f in files:
                if f.endswith(('.h', '.def')):
                    w[f] = 'outside'
    for f in os.listdir(CONV):
        if f.endswith('.h'):
            w[f] = 'top'
    for s in STAGES:
        for f in os.listdir(os.path.join(CONV, s)):
            if f.endswith('.h'):
                w[f] = s
    return w


def main():
    w = where()
    bad, checked = [], 0
    for s in STAGES:
        for f in sorted(os.listdir(os.path.join(CONV, s))):
            if not f.endswith(('.c', '.h')):
                continue
            path = os.path.join(CONV, s, f)
            for n, line in enumerate(open(path, encoding='utf-8'), 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                checked += 1
                name = os.path.basename(m.group(1))
                owner = w.get(name)
                if owner is None:
                    bad.append(f'converter/{s}/{f}:{n}: "{name}" is in no known directory')
                elif owner == 'outside' or name in ('parallel.h', 'cli_opts.h'):
                    continue
                elif owner == 'top':
                    bad.append(f'converter/{s}/{f}:{n}: {s}/ may not include the job\'s {name}')
                elif owner not in ALLOWED[s] and f'{owner}:{name}' not in ALLOWED[s]:
                    bad.append(f'converter/{s}/{f}:{n}: {s}/ may not include {owner}/{name}')
    for b in bad:
        print('FAIL:', b)
    if bad or checked < 50:
        print('FAIL: %d includes break the pipeline (%d checked)' % (len(bad), checked))
        sys.exit(1)
    print('ok: %d includes of converter/ follow job -> model -> timeline -> sinks, model -> reports'
          % checked)


main()
