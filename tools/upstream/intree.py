#!/usr/bin/env python3
"""What series.sh does to put the module's out-of-tree build pieces where the
kernel tree keeps them. Each is a fixed rule, so the series is generated, never
edited:

    intree.py bindings <module dir> <kernel tree>
        The module's glue/bindings_helper.h goes into
        rust/bindings/bindings_helper.h: its <...> includes into the sorted
        include list, its RUST_CONST_HELPER_ constants after the kernel's own,
        its quoted includes (the driver's headers and the IB core's private
        one) under the driver's Kconfig symbol at the end. Each
        glue/helpers/<name>.c but fallback.c (out of tree only) goes to
        rust/helpers/<name>.c: a new file, listed in helpers.c, or, where the
        kernel has that file, its missing includes and helpers added to it.
        rust/helpers/infiniband.c goes under INFINIBAND SUBSYSTEM in
        MAINTAINERS, as subsystems list their helpers.

    intree.py abstraction <module dir> <kernel tree> <name>
        The glue module glue/<name>.rs becomes the kernel crate's, at the
        path tools/upstream/abstractions gives: its bindings are the crate's,
        what it made pub(crate) is pub, its code's kernel:: paths are crate::
        (its doc tests keep kernel::, being outside the crate), and its
        "Upstream counterpart" paragraph goes (it is that counterpart). Its
        parent module declares it, and its MAINTAINERS entry lists it.

    intree.py glue <module dir> <kernel tree>
        The driver's glue.rs in the tree: each moved module is the kernel
        crate's, re-exported under its old name.

    intree.py kbuild <module Kbuild> <output>
        The module's Kbuild, as the tree builds it: the probe for the kernel's
        bindings goes, with the out-of-tree branch it chooses against (the
        module-local bindgen run and helpers), so the cfg is set plainly.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^#include <([^>]+)>$')
QUOTED = re.compile(r'^#include "([^"]+)"$')
CONST = re.compile(r'^const .* RUST_CONST_HELPER_')
HELPER = re.compile(r'\brust_helper_(\w+)\(')
KCONFIG = "CONFIG_INFINIBAND_USER_MAD_RUST"
IB_CORE = "drivers/infiniband/core"


def include_key(line):
    m = INCLUDE.match(line)
    return m and m.group(1)


def local_key(line):
    m = QUOTED.match(line)
    return m and m.group(1)


def read(path):
    with open(path) as f:
        return f.read().split("\n")


def write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines))


def insert_sorted(lines, block, new, key):
    """Puts each of `new` into lines[block[0]:block[1]] after the last line
    of the pattern `key` reads that sorts before it (the kernel's lists are
    sorted only in runs), and after the #endif that may close that line's
    conditional; before the first, if none does."""
    start, end = block
    for line in sorted(new, key=key):
        before = [i for i in range(start, end) if key(lines[i]) is not None
                  and key(lines[i]) <= key(line)]
        if before:
            at = before[-1] + 1
            if at < len(lines) and lines[at] == "#endif":
                at += 1
        else:
            at = next(i for i in range(start, end) if key(lines[i]) is not None)
        lines.insert(at, line)
        end += 1


def run_around(lines, index, pattern):
    """The contiguous run of lines matching `pattern` that holds `index`."""
    start = index
    while start > 0 and pattern.match(lines[start - 1]):
        start -= 1
    end = index
    while end < len(lines) and pattern.match(lines[end]):
        end += 1
    return start, end


def bindings(module, tree):
    ours = read(os.path.join(module, "glue/bindings_helper.h"))
    path = os.path.join(tree, "rust/bindings/bindings_helper.h")
    theirs = read(path)

    # <...> includes: into the list that has <linux/slab.h>.
    anchor = theirs.index("#include <linux/slab.h>")
    block = run_around(theirs, anchor, INCLUDE)
    have = {line for line in theirs if INCLUDE.match(line)}
    new = [line for line in ours if INCLUDE.match(line) and line not in have]
    insert_sorted(theirs, block, new, key=include_key)

    # Constants: a paragraph after the kernel's own, before the first
    # conditional that follows them.
    first = next(i for i, line in enumerate(theirs) if CONST.match(line))
    at = next(i for i in range(first, len(theirs)) if theirs[i].startswith("#if"))
    consts = [line for line in ours if CONST.match(line)]
    theirs[at:at] = consts + [""]

    # The driver's own headers, found beside the glue or in the IB core.
    quoted = []
    for line in ours:
        m = QUOTED.match(line)
        if not m:
            continue
        name = m.group(1)
        if os.path.exists(os.path.join(module, "glue", name)):
            where = os.path.join(IB_CORE, "umad_rs/glue", name)
        elif os.path.exists(os.path.join(tree, IB_CORE, name)):
            where = os.path.join(IB_CORE, name)
        else:
            sys.exit(f"bindings_helper.h: {name} is neither beside the glue nor in {IB_CORE}")
        quoted.append(f'#include "../../{where}"')
    while theirs and theirs[-1] == "":
        theirs.pop()
    theirs += ["", f"#if IS_ENABLED({KCONFIG})"] + quoted + ["#endif", ""]
    write(path, theirs)

    helpers(module, tree)
    maintain(tree, "INFINIBAND SUBSYSTEM", "rust/helpers/infiniband.c")


def maintain(tree, entry, path):
    """Lists `path` among the F: lines of MAINTAINERS' `entry`, in order."""
    target = os.path.join(tree, "MAINTAINERS")
    lines = read(target)
    start = lines.index(entry)
    end = lines.index("", start)
    files = re.compile(r"^F:\t(.*)$")
    insert_sorted(lines, (start, end), [f"F:\t{path}"],
                  key=lambda line: files.match(line) and files.match(line).group(1))
    write(target, lines)


def split_helpers(lines):
    """A helpers file's includes and its helpers, each helper the lines from
    its `__rust_helper` to its closing brace."""
    includes, functions, current = [], [], None
    for line in lines:
        if current is None and line.startswith("#include"):
            includes.append(line)
        elif current is None and line.startswith("__rust_helper"):
            current = [line]
        elif current is not None:
            current.append(line)
            if line == "}":
                functions.append(current)
                current = None
    return includes, functions


def helpers(module, tree):
    here = os.path.join(module, "glue/helpers")
    there = os.path.join(tree, "rust/helpers")
    listing = os.path.join(there, "helpers.c")
    for name in sorted(os.listdir(here)):
        if name == "fallback.c" or not name.endswith(".c"):
            continue
        ours = read(os.path.join(here, name))
        target = os.path.join(there, name)
        if not os.path.exists(target):
            write(target, ours)
            lines = read(listing)
            insert_sorted(lines, (0, len(lines)), [f'#include "{name}"'], key=local_key)
            write(listing, lines)
            continue
        theirs = read(target)
        includes, functions = split_helpers(ours)
        have = set(HELPER.findall("\n".join(theirs)))
        first = next(i for i, line in enumerate(theirs) if line.startswith("#include"))
        block = run_around(theirs, first, INCLUDE)
        new = [line for line in includes if line not in theirs]
        insert_sorted(theirs, block, new, key=include_key)
        while theirs and theirs[-1] == "":
            theirs.pop()
        for function in functions:
            name_of = HELPER.search("\n".join(function)).group(1)
            if name_of not in have:
                theirs += [""] + function
        write(target, theirs + [""])


def kbuild(source, output):
    lines = read(source)
    probe = next(i for i, line in enumerate(lines) if line.startswith("umad_rs_kernel_bindings :="))
    if lines[probe + 1] != "ifdef umad_rs_kernel_bindings":
        sys.exit("Kbuild: the kernel-bindings probe is not followed by its ifdef")
    depth, i, taken, branch = 0, probe + 1, [], "then"
    while True:
        line = lines[i]
        if re.match(r"^if(n?def|n?eq)\b", line):
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif line.split("#")[0].strip() == "else" and depth == 1:
            branch = "else"
            i += 1
            continue
        elif line.split("#")[0].strip() == "endif":
            depth -= 1
            if depth == 0:
                break
        if branch == "then":
            taken.append(line)
        i += 1
    lines[probe:i + 1] = taken
    write(output, lines)


def abstractions(module):
    """{glue module: (its path in the tree, its MAINTAINERS entry)}."""
    table = os.path.join(os.path.dirname(os.path.abspath(__file__)), "abstractions")
    rows = {}
    for line in read(table):
        if line and not line.startswith("#"):
            name, path, entry = line.split("\t")
            rows[name] = (path, entry)
    return rows


def crate_path(path):
    """rust/kernel/sync/semaphore.rs: kernel::sync::semaphore."""
    return "kernel::" + path[len("rust/kernel/"):-len(".rs")].replace("/", "::")


def abstraction(module, tree, name):
    path, entry = abstractions(module)[name]
    lines = read(os.path.join(module, "glue", f"{name}.rs"))
    out, skipping = [], False
    for line in lines:
        if line.startswith("//! Upstream counterpart:"):
            skipping = True
            if out and out[-1] == "//!":
                out.pop()
            continue
        if skipping:
            if line.startswith("//!") and line != "//!":
                continue
            skipping = False
        comment = line.lstrip().startswith("//")
        if not comment:
            if re.search(r"\bsuper::|\bcrate::|\bpub\((super|in)\b", line) and \
                    "use super::bindings;" not in line:
                sys.exit(f"glue/{name}.rs is not self-contained: {line.strip()}")
            line = line.replace("use super::bindings;", "use crate::bindings;")
            line = line.replace("pub(crate) ", "pub ")
            if '"' in line or "macro_rules!" in line or "$crate" in line:
                sys.exit(f"glue/{name}.rs: a string or macro in code, which the rewrite of "
                         f"kernel:: paths does not handle: {line.strip()}")
            line = re.sub(r"(?<![\w`:$])kernel::", "crate::", line)
        out.append(line)
    target = os.path.join(tree, path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    write(target, out)

    parent = os.path.dirname(target) + ".rs"
    if os.path.basename(os.path.dirname(target)) == "kernel":
        parent = os.path.join(os.path.dirname(target), "lib.rs")
    lines = read(parent)
    decl = re.compile(r"^(?:pub )?mod (\w+);$")
    if any(decl.match(line) for line in lines):
        insert_sorted(lines, (0, len(lines)), [f"pub mod {name};"],
                      key=lambda line: decl.match(line) and decl.match(line).group(1))
    else:
        # The parent's first submodule: before its imports.
        at = next(i for i, line in enumerate(lines) if line.startswith("use "))
        lines[at:at] = [f"pub mod {name};", ""]
    write(parent, lines)
    maintain(tree, entry, path)


def glue(module, tree):
    path = os.path.join(tree, IB_CORE, "umad_rs/glue.rs")
    lines = read(path)
    uses = []
    for name, (target, _) in abstractions(module).items():
        old = f"pub(crate) mod {name};"
        if old not in lines:
            sys.exit(f"glue.rs does not declare {name}")
        lines.remove(old)
        uses.append(f"pub(crate) use {crate_path(target)};")
    last = max(i for i, line in enumerate(lines) if line.startswith("pub(crate) mod "))
    lines[last + 1:last + 1] = ["", "// What the kernel crate has, under the names the driver uses."] + sorted(uses)
    write(path, lines)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "bindings":
        bindings(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "abstraction":
        abstraction(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 4 and sys.argv[1] == "glue":
        glue(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "kbuild":
        kbuild(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
