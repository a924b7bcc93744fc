#!/usr/bin/env python3
"""Puts the umad selftests into a kernel tree's tools/testing/selftests/rdma/,
a step at a time (series.sh's "gen selftests N", tools/upstream/selftests
lists the files of each step), so that every step builds by itself:

    selftests.py <repository's rdma dir> <tree's rdma dir> <kernel's Makefile> <file>...

copies the files, then makes the tree's Makefile the kernel's (as the
pristine tree has it) with ours
merged in: our lines before its "include ../lib.mk" and our rules after it,
each list of programs holding only those whose source the tree has so far
(a part whose programs are all missing goes: the libibumad programs' build,
the 32-bit programs'). When the step brings config, the tree's fragment
gets a value for each of its bare options and the lines of ours it
lacks."""
import os
import re
import shutil
import sys

LISTS = ("TEST_GEN_PROGS", "TEST_GEN_PROGS_EXTENDED", "TEST_PROGS", "TEST_FILES",
         "UMAD_LIBIBUMAD_PROGS", "LOCAL_HDRS")
INCLUDE = "include ../lib.mk"


def lines_of(text):
    """The Makefile's lines, an assignment to one of LISTS with its
    continuations joined, every other line as it is."""
    out, joining = [], False
    for line in text.split("\n"):
        if joining:
            out[-1] = out[-1][:-1].rstrip() + " " + line.strip()
        elif re.match(rf"^({'|'.join(LISTS)}) ", line):
            out.append(line)
        else:
            out.append(line)
            continue
        joining = out[-1].endswith("\\")
    return out


def present(word, tree):
    """Whether a word of a list names something the tree has: a program's
    source (NAME.c, or NAME.c of NAME_32), a script, a header; a make
    expression is always kept."""
    if word.startswith("$("):
        return True
    if word.endswith((".sh", ".h")):
        return os.path.exists(os.path.join(tree, word))
    return os.path.exists(os.path.join(tree, re.sub(r"_32$", "", word) + ".c"))


def wrap(name, op, words):
    """An assignment, wrapped at 80 columns with continuations."""
    lines, line = [], f"{name} {op}"
    for word in words:
        if len(line) + 1 + len(word) > 78:
            lines.append(line + " \\")
            line = "\t" + word
        else:
            line += " " + word
    lines.append(line)
    return lines


def drop_block(lines, start):
    """Drops the ifeq/else/endif block that starts at lines[start]."""
    depth, i = 0, start
    while True:
        if re.match(r"^if(n?eq|n?def)\b", lines[i]):
            depth += 1
        elif lines[i].strip() == "endif":
            depth -= 1
        i += 1
        if depth == 0:
            break
    del lines[start:i]


def render(ours, tree):
    """Our Makefile for what the tree has: (lines before the include,
    lines after it)."""
    out, empty, lines = [], set(), lines_of(ours)
    # A list in a list: kept where it holds something.
    nonempty = {m.group(1) for m in (re.match(r"^(\w+) \+?:?=(.*)$", line) for line in lines)
                if m and m.group(1) in LISTS
                and any(present(w, tree) for w in m.group(2).split())}
    for line in lines:
        m = re.match(r"^(\w+) (\+?:?=)(.*)$", line)
        if m and m.group(1) in LISTS:
            words = [w for w in m.group(3).split()
                     if (w[2:-1] in nonempty if w[2:-1] in LISTS else present(w, tree))]
            if not words:
                empty.add(m.group(1))
                if m.group(2) == "+=":
                    continue
            out += wrap(m.group(1), m.group(2), words)
            continue
        out.append(line)
    if "UMAD_LIBIBUMAD_PROGS" in empty:
        out = [line for line in out
               if not line.startswith(("UMAD_LIBIBUMAD :=", "UMAD_LIBIBUMAD_PROGS :="))]
        drop_block(out, out.index("ifeq ($(UMAD_LIBIBUMAD),y)"))
    text = "\n".join(out)
    before, _, after = text.partition(INCLUDE)
    # Our SPDX line is the kernel Makefile's.
    before = "\n".join(line for line in before.split("\n") if "SPDX-License-Identifier" not in line)
    return before.strip("\n"), after.strip("\n")


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    src, tree, kernel_makefile, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    for name in files:
        if name == "config":
            # The tree's fragment, each of its options with a value (a bare
            # name is not one merge_config.sh takes): ours where we have
            # one, y where not; then our options it lacks.
            ours = {line.split("=")[0]: line for line in
                    open(os.path.join(src, "config")).read().split("\n") if line}
            theirs = [line for line in open(os.path.join(tree, "config")).read().split("\n") if line]
            merged = [ours.get(line, line + "=y") if "=" not in line else line for line in theirs]
            names = {line.split("=")[0] for line in merged}
            merged += [line for name, line in ours.items() if name not in names]
            with open(os.path.join(tree, "config"), "w") as f:
                f.write("".join(line + "\n" for line in merged))
        else:
            shutil.copy2(os.path.join(src, name), os.path.join(tree, name))
    makefile = os.path.join(tree, "Makefile")
    kernel = open(kernel_makefile).read()
    if kernel.count(INCLUDE) != 1:
        sys.exit("selftests.py: the tree's rdma/Makefile has no one include of lib.mk")
    before, after = render(open(os.path.join(src, "Makefile")).read(), tree)
    head, _, tail = kernel.partition(INCLUDE)
    merged = head.rstrip("\n") + "\n\n" + before + "\n\n" + INCLUDE + "\n\n" + after + "\n"
    if tail.strip():
        merged += tail
    open(makefile, "w").write(merged)


if __name__ == "__main__":
    main()
