#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Puts an entry into MAINTAINERS after the entry whose title sorts last
before its own (the file is sorted but for a few misplaced entries, so the
first title after it is not the place): maintainers.py MAINTAINERS ENTRY."""
import re
import sys

path, entry_path = sys.argv[1:]
lines = open(path).read().split('\n')
entry = open(entry_path).read().rstrip('\n').split('\n')
title = entry[0]
field = re.compile(r'^[A-Z]:\t')
start = lines.index('Maintainers List')
# Each entry: a title line, then its field lines up to a blank line.
best = None
for i in range(start, len(lines) - 1):
    line = lines[i]
    if line and not field.match(line) and field.match(lines[i + 1]) and line < title:
        if best is None or line > lines[best]:
            best = i
if best is None:
    sys.exit(f'{path}: no entry sorts before {title!r}')
end = lines.index('', best)
lines[end + 1:end + 1] = entry + ['']
open(path, 'w').write('\n'.join(lines))
