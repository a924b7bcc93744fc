#!/usr/bin/env python3
"""What series.sh does to put the module's out-of-tree build pieces where the
kernel tree keeps them. Each is a fixed rule, so the series is generated, never
edited:

    intree.py bindings <module dir> <kernel tree> <part>
        What the patch <part> ("abstraction NAME" or "driver") needs of the
        bindings, with that patch: the group of the module's
        glue/bindings_helper.h that a "/* For <part>" comment opens goes
        into rust/bindings/bindings_helper.h: its <...> includes into the
        sorted include list (a header that only include/uapi/ has into
        rust/uapi/uapi_helper.h instead), its RUST_CONST_HELPER_ constants
        after the kernel's own, its quoted includes of the driver's headers
        under the driver's Kconfig symbol at the end (the IB core's private
        one stays out: the series moves what the crate needs of it to
        ib_verbs.h first). Each glue/helpers/<name>.c that the abstractions
        table gives the part goes to rust/helpers/<name>.c: a new file,
        listed in helpers.c and under the part's MAINTAINERS entry, or,
        where the kernel has that file, its missing includes and helpers
        added to it. The driver's part comes last and fails if a helper of
        glue/helpers/ but fallback.c (out of tree only) is in no patch
        before it (the kernel crate patches in patches/ carry their own).

    intree.py abstraction <module dir> <kernel tree> <name>
        The module's <name> (glue/<name>.rs, or a top-level module with its
        directory), as tools/upstream/abstractions lists it, becomes the
        kernel crate's, at the path the table gives: its differences between
        kernels are resolved for this tree (each #[cfg(umad_rs_<probe>)] or
        #[cfg(not(...))] item or statement kept or dropped as the module's
        Kbuild probes find this tree; a kept `let x = ...;` that a block then
        returns as `x` folded into that expression), its bindings are the crate's, as are
        its paths to itself and to the modules the table lists before it
        (crate::glue::chrdev, $crate:: in macros), what it made pub(crate) is
        pub, its macros are #[macro_export]ed (their pub use stays), its
        code's kernel:: paths are crate:: (its doc tests keep kernel::,
        being outside the crate; its macros may have none), and its
        "Upstream counterpart" paragraph goes (it is that counterpart). Its
        parent module declares it (under the table's condition), and its
        MAINTAINERS entry lists it.

    intree.py glue <module dir> <kernel tree>
        The driver in the tree: each moved glue module is the kernel crate's,
        re-exported in glue.rs under its old name; each moved top-level
        module is imported in its place.

    intree.py kbuild <module Kbuild> <output>
        The module's Kbuild, as the tree builds it: the probe for the kernel's
        bindings goes, with the out-of-tree branch it chooses against (the
        module-local bindgen run and helpers), and so do the feature probes:
        the tree's driver has its #[cfg]s resolved (resolve).

    intree.py resolve <module dir> <kernel tree>
        The driver in the tree (after glue): each #[cfg(umad_rs_<probe>)]
        item or statement kept or dropped as the module's Kbuild probes find
        this tree, as for an abstraction, with the kernel's bindings
        covering it; then formatted with the tree's rules.
"""
import os
import re
import subprocess
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


GROUP = re.compile(r"^/\* For (abstraction \w+|driver)\b")


def binding_groups(module):
    """glue/bindings_helper.h's lines by the patch that needs them: a group
    runs from its "/* For <part>" comment to the next one."""
    groups, part = {}, None
    for line in read(os.path.join(module, "glue/bindings_helper.h")):
        m = GROUP.match(line)
        if m:
            part = m.group(1)
            groups[part] = []
        elif part and (INCLUDE.match(line) or QUOTED.match(line) or CONST.match(line)):
            groups[part].append(line)
    return groups


def uapi_only(tree, header):
    """Whether `header` (as <...> names it) is a uAPI header alone."""
    return (not os.path.exists(os.path.join(tree, "include", header))
            and os.path.exists(os.path.join(tree, "include/uapi", header)))


def bindings(module, tree, part):
    groups = binding_groups(module)
    if part not in groups:
        sys.exit(f"glue/bindings_helper.h has no group for {part}")
    ours = groups[part]
    path = os.path.join(tree, "rust/bindings/bindings_helper.h")
    theirs = read(path)

    # <...> includes: into the list that has <linux/slab.h>; uAPI headers
    # into rust/uapi/uapi_helper.h's list.
    anchor = theirs.index("#include <linux/slab.h>")
    block = run_around(theirs, anchor, INCLUDE)
    have = {line for line in theirs if INCLUDE.match(line)}
    headers = [INCLUDE.match(line).group(1) for line in ours if INCLUDE.match(line)]
    new = [f"#include <{h}>" for h in headers if not uapi_only(tree, h)]
    insert_sorted(theirs, block, [line for line in new if line not in have], key=include_key)
    uapi = [f"#include <uapi/{h}>" for h in headers if uapi_only(tree, h)]
    if uapi:
        uapi_path = os.path.join(tree, "rust/uapi/uapi_helper.h")
        lines = read(uapi_path)
        first = next(i for i, line in enumerate(lines) if INCLUDE.match(line))
        insert_sorted(lines, run_around(lines, first, INCLUDE),
                      [line for line in uapi if line not in lines], key=include_key)
        write(uapi_path, lines)

    # Constants: a paragraph after the kernel's own, before the first
    # conditional that follows them.
    consts = [line for line in ours if CONST.match(line)]
    if consts:
        first = next(i for i, line in enumerate(theirs) if CONST.match(line))
        at = next(i for i in range(first, len(theirs)) if theirs[i].startswith("#if"))
        theirs[at:at] = consts + [""]

    # The driver's own headers, found beside the glue, under the driver's
    # symbol. The IB core's private one, which out of tree gives struct
    # ib_client_nl_info, stays out: the series' RDMA/core patch before the
    # IB abstractions moves that struct to ib_verbs.h.
    driver = []
    for line in ours:
        m = QUOTED.match(line)
        if not m:
            continue
        name = m.group(1)
        if os.path.exists(os.path.join(module, "glue", name)):
            driver.append(f'#include "../../{IB_CORE}/umad_rs/glue/{name}"')
        elif name == "core_priv.h":
            verbs = "\n".join(read(os.path.join(tree, "include/rdma/ib_verbs.h")))
            if "struct ib_client_nl_info {" not in verbs:
                sys.exit("bindings_helper.h: ib_verbs.h lacks struct ib_client_nl_info; "
                         "the series moves it there before the IB abstractions")
        else:
            sys.exit(f"bindings_helper.h: {name} is neither beside the glue nor core_priv.h")
    if driver:
        while theirs and theirs[-1] == "":
            theirs.pop()
        theirs += ["", f"#if IS_ENABLED({KCONFIG})"] + driver + ["#endif", ""]
    write(path, theirs)

    if part == "driver":
        helpers_in_tree(module, tree)
    else:
        _, _, entry, _, names = abstractions(module)[part.split()[1]]
        helpers(module, tree, names, entry)


def helpers_in_tree(module, tree):
    """Fails unless every helper of glue/helpers/ but fallback.c is in the
    tree's rust/helpers/ file of its name."""
    here = os.path.join(module, "glue/helpers")
    for name in sorted(os.listdir(here)):
        if name == "fallback.c" or not name.endswith(".c"):
            continue
        target = os.path.join(tree, "rust/helpers", name)
        theirs = set(HELPER.findall("\n".join(read(target)))) if os.path.exists(target) else set()
        missing = set(HELPER.findall("\n".join(read(os.path.join(here, name))))) - theirs
        if missing:
            sys.exit(f"glue/helpers/{name}: {', '.join(sorted(missing))} in no patch of the series")


def maintain(tree, entry, path):
    """Lists `path` among the F: lines of MAINTAINERS' `entry`, in order."""
    target = os.path.join(tree, "MAINTAINERS")
    lines = read(target)
    start = lines.index(entry)
    end = lines.index("", start)
    if f"F:\t{path}" in lines[start:end]:
        return
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


def helpers(module, tree, names, entry):
    here = os.path.join(module, "glue/helpers")
    there = os.path.join(tree, "rust/helpers")
    listing = os.path.join(there, "helpers.c")
    for name in names:
        ours = read(os.path.join(here, name))
        target = os.path.join(there, name)
        if not os.path.exists(target):
            write(target, ours)
            lines = read(listing)
            insert_sorted(lines, (0, len(lines)), [f'#include "{name}"'], key=local_key)
            write(listing, lines)
            maintain(tree, entry, f"rust/helpers/{name}")
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
    # The tree's driver has its #[cfg]s resolved (resolve_driver): no
    # probe, no cfg for the kernel's bindings.
    taken = [line for line in taken if "umad_rs_kernel_bindings" not in line]
    while taken and taken[0].startswith("#"):
        taken.pop(0)
    lines[probe:i + 1] = taken
    first = next(i for i, line in enumerate(lines) if line.startswith("# Feature probes"))
    last = next(i for i, line in enumerate(lines) if line.startswith("# The tracepoints' header"))
    del lines[first:last]
    # The tree has the Kconfig symbol: no module by default, and no word
    # about building out of tree.
    obj = "obj-$(or $(CONFIG_INFINIBAND_USER_MAD_RUST),m) += ib_umad_rs.o"
    if obj not in lines:
        sys.exit(f"{source}: no {obj!r} to give the tree's symbol")
    lines[lines.index(obj)] = "obj-$(CONFIG_INFINIBAND_USER_MAD_RUST) += ib_umad_rs.o"
    comment = next(i for i, line in enumerate(lines) if line.startswith("# ib_umad_rs. In a kernel tree"))
    end = lines.index("", comment)
    del lines[comment:end + 1]
    # The tree's driver takes ib_umad's own tracepoint header (trace_header).
    header = lines.index("# The tracepoints' header sits beside the glue.")
    if lines[header + 1] != "ccflags-y += -I $(src)/glue":
        sys.exit(f"{source}: the tracepoints' header's include path is not as intree.py knows it")
    del lines[header:header + 2]
    # One newline at the end.
    while len(lines) > 1 and not lines[-1] and not lines[-2]:
        lines.pop()
    write(output, lines)


def abstractions(module):
    """{name: (its source under the module, its path in the tree, its
    MAINTAINERS entry, the cfg its parent declares it under or None, the
    helper files of glue/helpers/ it adds)}."""
    table = os.path.join(os.path.dirname(os.path.abspath(__file__)), "abstractions")
    rows = {}
    for line in read(table):
        if line and not line.startswith("#"):
            source, path, entry, condition, names = (None if column == "-" else column
                                                     for column in line.split("\t"))
            rows[os.path.basename(source)] = (source, path, entry, condition,
                                              names.split() if names else [])
    return rows


def crate_path(path):
    """rust/kernel/print/ratelimit.rs: kernel::print::ratelimit."""
    return "kernel::" + path[len("rust/kernel/"):-len(".rs")].replace("/", "::")


PROBE = re.compile(r"\$\(call umad_rs_(?:probe|kernel_has),([^,]+),(.+?),(\w+)(?:,\w+)?\)")


def probes(module, tree):
    """The features the module's Kbuild can probe, and those it finds in
    `tree`, found as Kbuild finds them (grep -E on the tree's files)."""
    known, found = set(), set()
    for file, pattern, name in PROBE.findall("\n".join(read(os.path.join(module, "Kbuild")))):
        known.add(name)
        if subprocess.run(["grep", "-qsE", pattern, os.path.join(tree, file)]).returncode == 0:
            found.add(name)
    return known, found


CFG = re.compile(r"^\s*#\[cfg\((not\()?umad_rs_(\w+)\)?\)\]$")
# rules/'s test modules: compiled for `cargo test` and, where the kernel
# has #[kunit_tests], in the kernel; a kernel build never sets `test`.
TEST_CFG = re.compile(r"^\s*#\[cfg\(any\(test, umad_rs_(\w+)\)\)\]$")
PROBE_NAME = re.compile(r"\bumad_rs_\w+")


def code_of(line, where):
    """A line's code for counting brackets: without its comment, string
    and character literals; refused where a literal or a comment does not
    end on the line."""
    code = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    code = re.sub(r"'(?:\\.[^']*|[^'\\])'", "' '", code)
    code = code.split("//")[0].rstrip()
    if '"' in code.replace('""', "") or "/*" in code:
        sys.exit(f"{where}: a string or a block comment across lines, which this does not "
                 f"parse: {line.strip()}")
    return code


def skip_attributes(lines, i, where):
    """The index of the first line after the comments and attributes
    (each possibly over several lines) from `i`."""
    while i < len(lines) and lines[i].lstrip().startswith(("//", "#[")):
        depth = 0
        while True:
            code = code_of(lines[i], where) if not lines[i].lstrip().startswith("//") else ""
            depth += sum(map(code.count, "([{")) - sum(map(code.count, ")]}"))
            i += 1
            if depth <= 0 or i == len(lines):
                break
    return i


def resolve_cfgs(lines, known, found, where):
    """Keeps the statements and items whose #[cfg(umad_rs_<probe>)] holds
    for the tree (without the attribute), drops the others with their doc
    comments and attributes (a comment about a statement goes after its
    #[cfg], as in compat.rs). #[cfg(any(test, umad_rs_<probe>))] is the
    probe's alone, a kernel build never being a test; rules/'s KUnit tests
    go behind the driver's Kconfig option for them. Refused rather than
    guessed at: a probe the Kbuild does not have, any other use of a probe,
    a cfg on what ends with a comma (a field, a variant, an arm), and a
    dropped part with a string or a block comment across lines."""
    out, i = [], 0
    while i < len(lines):
        m = CFG.match(lines[i])
        test = TEST_CFG.match(lines[i])
        if test and test.group(1) == "kunit_tests":
            # rules/'s unit tests: in the tree, behind their Kconfig
            # option, under #[kunit_tests] alone.
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            # Their comment says where they run: here, in KUnit alone.
            while out and out[-1].lstrip().startswith("//"):
                out.pop()
            out.append(f"{indent}// Run by KUnit when the module loads.")
            out.append(f"{indent}#[cfg(CONFIG_INFINIBAND_USER_MAD_RUST_KUNIT_TEST)]")
            attr = re.match(r"^(\s*)#\[cfg_attr\(not\(test\), (.*)\)\]$", lines[i + 1])
            if not attr:
                sys.exit(f"{where}: #[cfg(any(test, umad_rs_kunit_tests))] without its #[cfg_attr(not(test), ...)]")
            out.append(f"{attr.group(1)}#[{attr.group(2)}]")
            i += 2
            continue
        if test:
            m, negated = test, False
        elif m:
            negated = bool(m.group(1))
        else:
            if PROBE_NAME.search(code_of(lines[i], where)):
                sys.exit(f"{where}: a probe used other than as #[cfg] of an item: {lines[i].strip()}")
            out.append(lines[i])
            i += 1
            continue
        name = m.group(m.lastindex)
        if name not in known:
            sys.exit(f"{where}: no Kbuild probe is called {name}: {lines[i].strip()}")
        i += 1
        if (name in found) != negated:
            continue
        while out and out[-1].lstrip().startswith(("///", "#[")):
            out.pop()
        if out and out[-1].rstrip().endswith(("(", ",")):
            sys.exit(f"{where}: a multi-line attribute before a #[cfg] that is dropped")
        i = skip_attributes(lines, i, where)
        depth = 0
        while True:
            if i == len(lines):
                sys.exit(f"{where}: a dropped #[cfg] item runs to the end of the file")
            code = code_of(lines[i], where)
            depth += sum(map(code.count, "([{")) - sum(map(code.count, ")]}"))
            i += 1
            if depth < 0 or (depth == 0 and code.endswith(",")):
                sys.exit(f"{where}: a #[cfg] on what is not a statement or an item")
            if depth == 0 and code.endswith((";", "}")):
                break
    return out


def fold_let_returns(lines):
    """`let x = e;` then `x` at the end of a block becomes `e`: what a
    resolved pair of #[cfg] statements leaves (`let x` for each kernel,
    then `x`), which clippy's let_and_return would report."""
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)let (\w+) = (.*)$", lines[i])
        # An attribute on the `let` could not go on the expression.
        if m and not (out and out[-1].lstrip().startswith("#[")):
            depth, j = 0, i
            while j < len(lines):
                code = lines[j].split("//")[0].rstrip()
                depth += sum(map(code.count, "([{")) - sum(map(code.count, ")]}"))
                if depth == 0 and code.endswith(";"):
                    break
                j += 1
            if j + 2 < len(lines) and lines[j + 1].strip() == m.group(2) and \
                    lines[j + 2].strip().startswith("}"):
                statement = [m.group(1) + m.group(3)] + lines[i + 1:j + 1]
                statement[-1] = statement[-1].rstrip()[:-1]
                out.extend(statement)
                i = j + 2
                continue
        out.append(lines[i])
        i += 1
    return out


def moved_files(module, source, path):
    """(file in the module, file in the tree) for `source` and its directory."""
    files = [(os.path.join(module, source + ".rs"), path)]
    directory = os.path.join(module, source)
    if os.path.isdir(directory):
        for name in sorted(os.listdir(directory)):
            if name.endswith(".rs"):
                files.append((os.path.join(directory, name), os.path.join(path[:-len(".rs")], name)))
    return files


def driver_paths(module, name):
    """{the driver's path of a module moved into the crate: its crate path,
    without "kernel::"}, for `name` and the modules moved before it (the
    ones it may use), and the bindings."""
    paths = {"glue::bindings": "bindings"}
    for other, (source, path, _, _, _) in abstractions(module).items():
        paths[source.replace("/", "::")] = crate_path(path)[len("kernel::"):]
        if other == name:
            return paths
    sys.exit(f"abstractions does not list {name}")


def move(lines, paths, nested, where):
    """One file's rewrite into the kernel crate (see abstraction): `paths`
    maps the driver's paths of moved modules to the crate's
    (driver_paths); `nested` says whether this is one of the module's
    submodules' files, which may use super::."""
    out, skipping, macro_depth = [], False, 0
    moved = re.compile(r"(?<![\w:])(\$?crate)::(" + "|".join(map(re.escape, paths)) + r")\b")
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
            code = line.replace("use super::bindings;", "")
            code = moved.sub("", code)
            if re.search(r"\bcrate::|\bpub\(in\b", code) or \
                    (not nested and re.search(r"\bsuper::|\bpub\(super\)", code)):
                sys.exit(f"{where} is not self-contained: {line.strip()}")
            if code.lstrip().startswith("macro_rules!"):
                macro_depth = 0
            in_macro = macro_depth > 0 or code.lstrip().startswith("macro_rules!")
            if in_macro:
                macro_depth += code.count("{") - code.count("}")
            if re.search(r'"[^"]*kernel::', line) or (in_macro and re.search(r"\bkernel::", code)):
                sys.exit(f"{where}: a string or a macro with kernel:: paths in code, which the "
                         f"rewrite of kernel:: paths does not handle: {line.strip()}")
            line = line.replace("use super::bindings;", "use crate::bindings;")
            line = moved.sub(lambda m: f"{m.group(1)}::{paths[m.group(2)]}", line)
            line = line.replace("pub(crate) ", "pub ")
            line = re.sub(r"(?<![\w`:$])kernel::", "crate::", line)
            if line.lstrip().startswith("macro_rules!"):
                # Exported from the crate, as its macros are; the module's
                # `pub use` of it stays.
                out.append(line[:len(line) - len(line.lstrip())] + "#[macro_export]")
        out.append(line)
    return out


def abstraction(module, tree, name):
    source, path, entry, condition, _ = abstractions(module)[name]
    known, found = probes(module, tree)
    # Inside the crate, the code may use the crate's private items, and
    # its bindings are the kernel's.
    inside = {"in_kernel_crate", "kernel_bindings"}
    known, found = known | inside, found | inside
    files = moved_files(module, source, path)
    for index, (ours, theirs) in enumerate(files):
        where = os.path.relpath(ours, module)
        lines = fold_let_returns(resolve_cfgs(read(ours), known, found, where))
        target = os.path.join(tree, theirs)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        write(target, move(lines, driver_paths(module, name), index > 0, where))
    # The rewrite shortens lines (pub(crate) to pub) and renames imports
    # (kernel:: to crate::, which sorts first): formatted again, with the
    # tree's own rules, as `make rustfmt` would.
    subprocess.run([os.environ.get("RUSTFMT", "rustfmt"), "--edition", "2021",
                    "--config-path", os.path.join(tree, ".rustfmt.toml")] +
                   [os.path.join(tree, theirs) for _, theirs in files], check=True)

    target = os.path.join(tree, path)
    parent = os.path.dirname(target) + ".rs"
    if os.path.basename(os.path.dirname(target)) == "kernel":
        parent = os.path.join(os.path.dirname(target), "lib.rs")
    lines = read(parent)
    decl = re.compile(r"^(?:pub )?mod (\w+);$")
    new = ([f"#[cfg({condition})]"] if condition else []) + [f"pub mod {name};"]
    if any(decl.match(line) for line in lines):
        # After the last declaration that sorts before it (and its
        # attributes), else before the first (and its attributes).
        names = [(i, decl.match(line).group(1)) for i, line in enumerate(lines) if decl.match(line)]
        before = [i for i, other in names if other <= name]
        if before:
            at = before[-1] + 1
        else:
            at = names[0][0]
            while lines[at - 1].startswith("#["):
                at -= 1
        lines[at:at] = new
    else:
        # The parent's first submodule: before its imports.
        at = next(i for i, line in enumerate(lines) if line.startswith("use "))
        lines[at:at] = new + [""]
    write(parent, lines)
    maintain(tree, entry, path)
    if len(files) > 1:
        maintain(tree, entry, path[:-len(".rs")] + "/")


def glue(module, tree):
    path = os.path.join(tree, IB_CORE, "umad_rs/glue.rs")
    lines = read(path)
    uses = []
    main = os.path.join(tree, IB_CORE, "umad_rs/ib_umad_rs_main.rs")
    main_lines = read(main)
    for name, (source, target, _, _, _) in abstractions(module).items():
        if source == name:
            old = f"mod {name};"
            if old not in main_lines:
                sys.exit(f"ib_umad_rs_main.rs does not declare {name}")
            main_lines.remove(old)
            # With the crate's other imports, before the modules.
            first_mod = next(i for i, line in enumerate(main_lines) if line.startswith("mod "))
            main_lines.insert(first_mod - 1, f"use {crate_path(target)};")
            continue
        old = f"pub(crate) mod {name};"
        if old not in lines:
            sys.exit(f"glue.rs does not declare {name}")
        lines.remove(old)
        uses.append(f"pub(crate) use {crate_path(target)};")
    last = max(i for i, line in enumerate(lines) if line.startswith("pub(crate) mod "))
    # In rustfmt's order: by path segment.
    uses.sort(key=lambda line: line.rstrip(";").split("::"))
    lines[last + 1:last + 1] = ["", "// What the kernel crate has, under the names the driver uses."] + uses
    write(path, lines)
    write(main, main_lines)


# What compat.rs keeps for this tree, as the tree has it: a name it
# re-exports, the kernel crate's path of it; a function or macro of its,
# how a call of it is written in the tree.
COMPAT_REEXPORTS = {
    "ARef": "kernel::sync::aref::ARef",
    "File": "kernel::fs::File",
    "IdPool": "kernel::id_pool::IdPool",
    "IovIterDest": "kernel::iov::IovIterDest",
    "IovIterSource": "kernel::iov::IovIterSource",
    "Kiocb": "kernel::fs::Kiocb",
    "MutexGuard": "kernel::sync::MutexGuard",
    "PollCondVar": "kernel::sync::poll::PollCondVar",
    "PollTable": "kernel::sync::poll::PollTable",
    "dev_notice": "kernel::dev_notice",
    "dev_warn": "kernel::dev_warn",
    "warn_on_once": "kernel::warn_on_once",
}
# name: (the call's start, a function of its arguments, the paths the
# tree's form needs).
COMPAT_CALLS = {
    "compat::is_nonblocking": (lambda a: f"{a[0].lstrip('&')}.file_flags() & O_NONBLOCK != 0",
                               ["kernel::fs::file::flags::O_NONBLOCK"]),
    "compat::file_is_nonblocking": (lambda a: f"{a[0]}.flags() & O_NONBLOCK != 0",
                                    ["kernel::fs::file::flags::O_NONBLOCK"]),
    "eopnotsupp": (lambda a: "EOPNOTSUPP", []),
    "user_slice": (lambda a: f"UserSlice::new(UserPtr::from_addr({a[0]}), {a[1]})",
                   ["kernel::uaccess::UserPtr", "kernel::uaccess::UserSlice"]),
    "current_comm": (lambda a: "kernel::current!().comm()", []),
    "get_user_u32": (lambda a: f"UserPtr::from_addr({a[0]}).get::<u32>()", ["kernel::uaccess::UserPtr"]),
    "put_user_u32": (lambda a: f"UserPtr::from_addr({a[0]}).put({a[1]})", ["kernel::uaccess::UserPtr"]),
    "this_module!": (lambda a: "&<crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE", []),
}


def call_args(text, start):
    """The arguments of the call whose "(" is at text[start], split at its
    top-level commas, and the index after its ")"."""
    depth, i, args, cur = 0, start, [], ""
    while True:
        c = text[i]
        if c in "([{":
            depth += 1
            if depth > 1:
                cur += c
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                if cur.strip():
                    args.append(cur.strip())
                return args, i + 1
            cur += c
        elif c == "," and depth == 1:
            args.append(cur.strip())
            cur = ""
        elif depth >= 1:
            cur += c
        i += 1


def decompat(text, where):
    """A driver file without glue::compat: its imports of compat's
    re-exports become the kernel crate's, its calls of compat's functions
    and macros the tree's forms."""
    needs, items = set(), []
    # The compat group of the glue import, or a single compat item.
    m = re.search(r"\bcompat::\{([^}]*)\},?\s*", text) or re.search(r"\bcompat::(\w+),\s*", text)
    if m:
        items = [item.strip() for item in m.group(1).split(",") if item.strip()]
        text = text[:m.start()] + text[m.end():]
        for item in items:
            if item in COMPAT_REEXPORTS:
                needs.add(COMPAT_REEXPORTS[item])
            elif item not in ("self", "ETIMEDOUT", "DisplayCStr") and \
                    item not in {k.rstrip("!").split("::")[-1] for k in COMPAT_CALLS}:
                sys.exit(f"{where}: compat::{item} has no form in the tree")
    # A glue group left empty by it.
    text = re.sub(r"\bglue::\{\s*\},?\s*", "", text)
    text = re.sub(r"glue::\{(\s*)([\w:]+)(\s*)\}", r"glue::\2", text)
    # compat's ETIMEDOUT is the errno's value, the crate's an Error.
    if m and "ETIMEDOUT" in items:
        text = re.sub(r"\bstatus: ETIMEDOUT,", "status: ETIMEDOUT.to_errno().unsigned_abs(),", text)
    for name, (form, paths) in COMPAT_CALLS.items():
        at = 0
        while True:
            i = text.find(name + "(", at)
            if i < 0:
                break
            # A call of this name, not of one ending in it.
            if i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_:"):
                at = i + 1
                continue
            args, end = call_args(text, i + len(name))
            text = text[:i] + form(args) + text[end:]
            needs.update(paths)
    # fmt::Display of a CStr in a core::fmt impl: kernel::fmt's.
    text = re.sub(r"\bfmt::Display::fmt\(&DisplayCStr\(([^()]*)\), (\w+)\)",
                  r"kernel::fmt::Display::fmt(\1, \2)", text)
    # compat's list item macro, for the one form of it the driver uses.
    text = re.sub(r"compat::impl_list_item!\((\w+) \{ (\w+) \}\);",
                  r"kernel::list::impl_list_item! {\n    impl ListItem<0> for \1 { using ListLinks { self.\2 }; }\n}",
                  text)
    if "glue::compat::module_by!" in text:
        text = text.replace("glue::compat::module_by!", "module!")
        text = re.sub(r"\n    author: (\"[^\"]*\"),", r"\n    authors: [\1],", text)
    if re.search(r"\bcompat::|\bDisplayCStr\b|\bmodule_by\b", text):
        sys.exit(f"{where}: compat is still used: {re.search(r'.*compat::.*', text)}")
    if needs:
        uses = "".join(f"use {path};\n" for path in sorted(needs))
        first = re.search(r"^use ", text, re.M)
        text = text[:first.start()] + uses + text[first.start():]
    return text


# What the driver's comments say of the out-of-tree build (compat.rs, the
# module's own bindings, the host tests), in the tree's words.
IN_TREE_WORDS = {
    "ib_umad_rs_main.rs": (
        ("""//! The crate is in four parts (Documentation/ib_umad_rs.rst, "Module
//! layout", says where new code goes):""",
         """//! The crate is in four parts (Documentation/infiniband/ib_umad_rs.rst,
//! "Module layout", says where new code goes):"""),
        ("//! - `rules`: the ABI and MAD rules, plain `core` Rust, host-tested;",
         "//! - `rules`: the ABI and MAD rules, plain `core` Rust, unit-tested by KUnit;"),
        ("//! - `infiniband`: safe types over the IB core and its MAD layer (in a tree\n"
         "//!   with the patch series, the kernel crate's `kernel::infiniband`);",
         "//! - `infiniband`: the kernel crate's safe types over the IB core and its\n"
         "//!   MAD layer;"),
        ("//! - `glue`: safe types over generic kernel interfaces the `kernel` crate\n"
         "//!   lacks, and the one place where kernel versions differ (`glue::compat`).",
         "//! - `glue`: the kernel's bindings, the tracepoints, and the kernel crate's\n"
         "//!   generic abstractions under the names the driver uses."),
        (" or `glue`, a difference between kernels in\n//! `glue::compat`, and what the driver does with them here.",
         " or `glue`, and what the driver does with\n//! them here."),
    ),
    "rules.rs": (
        ("//! unit-tested on the host (`cargo test`, through `tools/host-tests/`).",
         "//! unit-tested by KUnit (`CONFIG_INFINIBAND_USER_MAD_RUST_KUNIT_TEST`)."),
    ),
    "glue.rs": (
        ("""//! Generic kernel glue: safe types over the C interfaces ib_umad_rs needs
//! that the `kernel` crate it builds against does not offer. Each file
//! names the upstream abstraction that would replace it. Nothing here knows
//! about MADs or ports; the InfiniBand glue is in `infiniband`.
//!
//! - `bindings`: the kernel crate's bindings in the kernel tree, the
//!   module's own bindgen output out of it, for the glue only; the driver's
//!   logic never uses them (`tools/rig/lint.sh` checks).
""", """//! Generic kernel glue: what the driver's logic uses of C, and of the
//! kernel crate's generic abstractions, under the names it uses. Nothing
//! here knows about MADs or ports.
//!
//! - `bindings`: the kernel crate's bindings, for the glue only; the
//!   driver's logic never uses them.
"""),
        ("""//! - `compat`: what differs between the kernels the module builds for,
//!   and what the `kernel` crate has only with the series' patches to it
//!   (`warn_on_once!`, `Task::comm`, `UserPtr::get` and `put`, a
//!   lock-free wait on a `CondVar`, `Kiocb::file_flags`), and `kernel::fs`
//!   and `kernel::iov` for 6.12.
""", ""),
        ("""//! - `chrdev`: device number regions, a class, device nodes, the file
//!   operations of their files (`chrdev::file`), and the class's and its
//!   devices' read-only attributes (`chrdev::attributes`).
//! - `ratelimit`: rate limits for messages userspace can provoke.
//! - `nospec`: speculation-safe indexing.
//! - `trace`: the C tracepoints.
//!
//! `helpers.c` and `helpers/` hold out-of-line copies of the static inline
//! helpers the glue calls, and nothing else, as `rust/helpers/` in the
//! kernel tree, where the patch series puts them.
""", """//! - `trace`: the C tracepoints.
//! - `chrdev`, `ratelimit` and `nospec`: the kernel crate's.
"""),
    ),
    "glue/trace.rs": (
        ("""//! The C ib_umad's tracepoints (`ib_umad:ib_umad_write`, `ib_umad_read_recv`,
//! `ib_umad_read_send`), defined in C (`ib_umad_rs_trace.h`, created in
//! `ib_umad_rs_events.c`). In the kernel tree, where the kernel's bindings
//! carry them, the `kernel` crate's `declare_trace!` fires them: it checks
//! each tracepoint's key inline, a patched jump where the kernel has jump
//! labels. Out of tree, `declare_trace!` cannot reach them, and the
//! module's helpers check the key (`trace_*_enabled()`, as a C caller
//! would) and fire the event: a call and a return for an event nobody
//! enabled, asked before the event's record is put together; in the tree,
//! the 24-byte copy of the MAD header comes first.
//!
//! Upstream counterpart: `kernel::tracepoint::declare_trace!`.
""", """//! ib_umad's tracepoints (`ib_umad:ib_umad_write`, `ib_umad_read_recv`,
//! `ib_umad_read_send`), defined in `include/trace/events/ib_umad.h` and
//! created in `ib_umad_rs_events.c`, which the kernel's bindings carry.
//! The `kernel` crate's `declare_trace!` fires them: it checks each
//! tracepoint's key inline, a patched jump where the kernel has jump labels.
"""),
        ("""/// The C entry point that fires `event`: `declare_trace!`'s in the tree,
/// which asks the key itself, the module's helper out of it.""",
         """/// The C entry point that fires `event`: `declare_trace!`'s, which asks
/// the key itself."""),
        ("""/// Fires `event` for a MAD whose common header is `mad`, if anyone listens.
/// Out of tree the key is asked first; in the tree `declare_trace!` asks
/// it, after the 24-byte copy of the header.""",
         """/// Fires `event` for a MAD whose common header is `mad`, if anyone listens
/// (`declare_trace!` asks, after the 24-byte copy of the header)."""),
    ),
    "glue/bindings.rs": (
        ("""//! The bindings the glue uses, for `glue` and `infiniband` only: the
//! kernel crate's own where the tree has the patch series (its
//! `rust/bindings/bindings_helper.h` and `rust/helpers/` carry what the
//! driver needs), else the module's own, made by bindgen at build time over
//! the same lines (`bindings_helper.h`, `helpers.c` and `helpers/`) with the
//! kernel's own flags (see `Kbuild`) and the allowlist in
//! `bindgen_parameters`. Either way the names are the same. Where a type
//! crosses into userspace, the layout the driver uses is asserted against
//! the kernel header here.
//!
//! Upstream counterpart: the `kernel` crate's `bindings`.
""", """//! The bindings the glue uses: the kernel crate's own, whose
//! `rust/bindings/bindings_helper.h` includes the driver's header. Where a
//! type crosses into userspace, the layout the driver uses is asserted
//! against the kernel header here.
"""),
    ),
}


def resolve_driver(module, tree):
    """The driver in the tree, every #[cfg(umad_rs_*)] resolved for it:
    in a tree with the series every probe that matters holds (the kernel
    crate's bindings cover the driver, its own patches are in), so what
    the glue keeps for other kernels goes, and the Kbuild (see kbuild)
    runs no probe. Then compat.rs goes too: what imported its
    re-exports imports the kernel crate's items, and its calls of
    compat's functions and macros take the tree's forms (decompat)."""
    known, found = probes(module, tree)
    bindings_helper = "\n".join(read(os.path.join(tree, "rust/bindings/bindings_helper.h")))
    if "umad_rs/glue/ib_umad_rs.h" not in bindings_helper:
        sys.exit("rust/bindings/bindings_helper.h does not cover the driver: intree.py bindings ... driver first")
    known, found = known | {"kernel_bindings", "in_kernel_crate"}, found | {"kernel_bindings"}
    here = os.path.join(tree, IB_CORE, "umad_rs")
    files = sorted(os.path.join(root, name) for root, _, names in os.walk(here)
                   for name in names if name.endswith(".rs"))
    for path in files:
        where = os.path.relpath(path, here)
        write(path, fold_let_returns(resolve_cfgs(read(path), known, found, where)))
    # One kernel: compat.rs goes, and what uses it takes the tree's forms.
    os.remove(os.path.join(here, "glue/compat.rs"))
    files.remove(os.path.join(here, "glue/compat.rs"))
    for path in files:
        where = os.path.relpath(path, here)
        text = "\n".join(read(path))
        if where == "glue.rs":
            text = text.replace("pub(crate) mod compat;\n", "")
        if where in IN_TREE_WORDS:
            for old, new in IN_TREE_WORDS[where]:
                if old not in text:
                    sys.exit(f"{where}: its words about the out-of-tree build are not as "
                             f"intree.py knows them: {old.strip()[:60]}")
                text = text.replace(old, new)
        if "compat" in text:
            text = decompat(text, where)
        write(path, (text.rstrip("\n") + "\n").split("\n"))
    subprocess.run([os.environ.get("RUSTFMT", "rustfmt"), "--edition", "2021",
                    "--config-path", os.path.join(tree, ".rustfmt.toml")] + files, check=True)


def trace_header(tree):
    """The tree's driver fires ib_umad's own tracepoints, from ib_umad's
    header, which the rdma-rc fix "RDMA/umad: Do not reach the IB device
    from the tracepoints" gives the driver's prototype: the module's copy
    of it (for kernels without that fix) goes, and what included it
    includes ib_umad's."""
    glue = os.path.join(tree, IB_CORE, "umad_rs/glue")
    header = os.path.join(tree, "include/trace/events/ib_umad.h")
    if "TP_PROTO(u32 dev_index, u32 port_num," not in "\n".join(read(header)):
        sys.exit("include/trace/events/ib_umad.h has not the driver's prototype: the rdma-rc fix first")
    os.remove(os.path.join(glue, "ib_umad_rs_trace.h"))
    for name, old_comment, new_comment in (
        ("ib_umad_rs.h", None, None),
        ("ib_umad_rs_events.c",
         """/*
 * ib_umad_rs's tracepoints, created here; CREATE_RUST_TRACE_POINTS adds
 * the entry points the kernel crate's declare_trace! calls, where the
 * kernel has them.
 */""",
         """/*
 * ib_umad's tracepoints, created in this module as in ib_umad (the two are
 * never loaded together); CREATE_RUST_TRACE_POINTS adds the entry points
 * the kernel crate's declare_trace! calls.
 */"""),
    ):
        path = os.path.join(glue, name)
        text = "\n".join(read(path))
        if '#include "ib_umad_rs_trace.h"' not in text or (old_comment and old_comment not in text):
            sys.exit(f"glue/{name}: not as intree.py knows it")
        # ib_umad's header names the MAD headers' structs, as user_mad.c
        # includes them before it.
        needed = ["rdma/ib_mad.h", "rdma/ib_user_mad.h", "trace/events/ib_umad.h"]
        text = text.replace('#include "ib_umad_rs_trace.h"', "\n".join(
            f"#include <{h}>" for h in needed if f"#include <{h}>" not in text))
        if old_comment:
            text = text.replace(old_comment, new_comment)
        write(path, text.split("\n"))


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "bindings":
        bindings(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 5 and sys.argv[1] == "abstraction":
        abstraction(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 4 and sys.argv[1] == "glue":
        glue(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "resolve":
        resolve_driver(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "trace_header":
        trace_header(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "kbuild":
        kbuild(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
