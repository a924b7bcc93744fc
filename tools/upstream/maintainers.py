#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Puts an entry into MAINTAINERS where its title sorts, as the file keeps
them: maintainers.py MAINTAINERS ENTRY."""
import re
import sys

path, entry_path = sys.argv[1:]
lines = open(path).read().split('\n')
entry = open(entry_path).read().rstrip('\n').split('\n')
title = entry[0]
field = re.compile(r'^[A-Z]:\t')
# Entries: a title line followed by field lines; they start after the
# line "Maintainers List".
start = lines.index('Maintainers List') if 'Maintainers List' in lines else 0
for i in range(start, len(lines) - 1):
    line = lines[i]
    if line and not field.match(line) and field.match(lines[i + 1]) and line > title:
        lines[i:i] = entry + ['']
        break
else:
    sys.exit(f'{path}: no entry sorts after {title!r}')
open(path, 'w').write('\n'.join(lines))
