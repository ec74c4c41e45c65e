#!/usr/bin/env python3
"""Checks the sentry's dependency direction (ARCHITECTURE.md §2).

Every top-level module of sentry/src has a layer; a module may use only
modules of lower layers (and itself). The kernel never imports a
filesystem or a syscall handler: where it must reach up it owns a trait or
a registry that the higher layer fills at boot. Test code (a `#[cfg(test)]`
module, inline or in its own file) is exempt: tests may build a tmpfs to
exercise the VFS.

Exit status 0 when every import points down; 1 with one line per import
against the direction (file:line, the two modules, the text); 2 on a
module the table does not place.
"""

import os
import re
import sys

# Highest first. Modules on one line share a layer and may not use each
# other (leaves: none uses another).
LAYERS = [
    ["boot"],          # host side: boot, confinement, seccomp, console, signals, control server
    ["syscalls"],      # the system call table and handlers
    ["fs"],            # filesystems and file implementations
    ["kernel"],        # tasks, threads, signals, processes, futexes, timers
    ["loader"],        # ELF loading and the initial stack
    ["vfs"],           # mounts, dentries, path walk, descriptions, fd tables
    ["mm"],            # MemoryFile, address spaces
    ["platform"],      # ptrace (and later systrap, kvm)
    ["auth", "waiter", "host", "audit"],  # leaves: credentials and capabilities; wait queues; host calls; the audit log writer
    ["abi"],           # Linux's ABI: errno, layouts
]

# The attributes that make a module test code.
TEST_CFG = re.compile(r'#\[cfg\((test|any\(test, feature = "testing"\))\)\]')

RANK = {m: len(LAYERS) - i for i, group in enumerate(LAYERS) for m in group}

# `crate::x`, `super::super::x`, and the groups `crate::{x, y::z}`.
REF = re.compile(r"\b(crate::|(?:super::)+)([a-z_][a-z0-9_]*|\{)")


def group_heads(rest):
    """The first name of each item of a `{…}` group whose text follows."""
    heads, depth, item = [], 1, ""
    for ch in rest:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                break
        if depth == 1 and ch == ",":
            heads.append(item)
            item = ""
        elif depth >= 1:
            item += ch
    heads.append(item)
    return [re.match(r"\s*(\w*)", h).group(1) for h in heads if h.strip()]


def module_path(rel):
    """kernel/task.rs -> ['kernel', 'task']; kernel/mod.rs -> ['kernel']."""
    parts = rel[:-3].split("/")
    if parts[-1] in ("mod", "lib"):
        parts.pop()
    return parts


def code_lines(text):
    """(line number, code) outside comments and inline #[cfg(test)] modules."""
    skipping = False
    depth = 0
    pending_cfg_test = False
    for n, line in enumerate(text.splitlines(), 1):
        code = re.sub(r"//.*", "", line)
        stripped = code.strip()
        if skipping:
            depth += code.count("{") - code.count("}")
            if depth <= 0:
                skipping = False
            continue
        if stripped.startswith("#[cfg(test)]"):
            pending_cfg_test = True
            continue
        if pending_cfg_test:
            pending_cfg_test = False
            if re.match(r"(pub(\([a-z]+\))?\s+)?mod\s+\w+\s*\{", stripped):
                skipping = True
                depth = code.count("{") - code.count("}")
                if depth <= 0:
                    skipping = False
                continue
            if re.match(r"(pub(\([a-z]+\))?\s+)?mod\s+\w+\s*;", stripped):
                continue
        yield n, code


def statements(lines):
    """Joins a `use` statement that rustfmt spread over several lines into
    one (numbered by its first line); other lines pass through."""
    pending = None
    for n, code in lines:
        if pending is not None:
            pending = (pending[0], pending[1] + " " + code.strip())
            if ";" in code:
                yield pending
                pending = None
            continue
        if re.match(r"\s*(pub(\([a-z]+\))?\s+)?use\b", code) and ";" not in code:
            pending = (n, code)
            continue
        yield n, code
    if pending is not None:
        yield pending


def test_files(root):
    """Files of modules declared behind #[cfg(test)] (`mod kernel_tests;`)."""
    out = set()
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            lines = open(path, encoding="utf-8").read().splitlines()
            base = dirpath if f in ("mod.rs", "lib.rs") else os.path.join(dirpath, f[:-3])
            for a, b in zip(lines, lines[1:]):
                m = re.match(r"\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+(\w+)\s*;", b)
                if TEST_CFG.match(a.strip()) and m:
                    for cand in (os.path.join(base, m.group(1) + ".rs"), os.path.join(base, m.group(1), "mod.rs")):
                        out.add(os.path.normpath(cand))
    return out


def main():
    # The sentry's sources, or the tree given with --root (the self-test).
    if len(sys.argv) == 3 and sys.argv[1] == "--root":
        root = sys.argv[2]
    elif len(sys.argv) == 1:
        root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sentry", "src")
    else:
        print("usage: check_layering.py [--root SRC_DIR]", file=sys.stderr)
        return 2
    root = os.path.normpath(root)
    if not os.path.isfile(os.path.join(root, "lib.rs")):
        print(f"{root}: no lib.rs: not a crate's source folder", file=sys.stderr)
        return 2
    skip = test_files(root)
    bad = []
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(dirpath, f)
            if os.path.normpath(path) in skip:
                continue
            rel = os.path.relpath(path, root)
            mod = module_path(rel)
            if not mod:
                continue  # lib.rs: the crate root declares every module
            top = mod[0]
            if top not in RANK:
                print(f"{rel}: module `{top}` has no layer in tools/check_layering.py", file=sys.stderr)
                return 2
            # What `super` names, by depth: a file's module is mod; its
            # parent is mod[:-1].
            for n, code in statements(code_lines(open(path, encoding="utf-8").read())):
                for m in REF.finditer(code):
                    head, name = m.group(1), m.group(2)
                    names = group_heads(code[m.end():]) if name == "{" else [name]
                    for name in names:
                        if head == "crate::":
                            target = name
                        else:
                            base = mod[: len(mod) - head.count("super::")]
                            target = base[0] if base else name
                        if target != top and target in RANK and RANK[target] >= RANK[top]:
                            bad.append(f"{rel}:{n}: {top} -> {target}: {code.strip()}")
    for b in bad:
        print(b)
    if bad:
        print(f"{len(bad)} import(s) against the sentry's layering (see tools/check_layering.py)")
        return 1
    print("sentry layering: every import points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
