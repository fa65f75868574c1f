#!/usr/bin/env python3
"""Fails when the modules of a crate import each other in a cycle.

Usage: scripts/import_cycles.py [--verbose] SRC_DIR [SRC_DIR ...]

Each `.rs` file under SRC_DIR is a module, and so is each inline
`mod name { ... }` block in it (named after its path: the `tests` block of
`dispatch/pool.rs` is `dispatch::pool::tests`). An edge A -> B is a path in
A's code that starts with `crate::`, `super::` or `self::` and names B or an
item of B. Groups are expanded at any depth: `use super::{a, b::{c, d}}`
names super::a, super::b::c and super::b::d.

What is read, and what is not:
- The whole file. Code under `#[cfg(test)]` is code: a `#[cfg(test)] use`
  at the top of a file is that module's import. A test module is a module
  of its own, the file module's child, so what it imports is its own
  arrows, and its `use super::*` is a child using its parent: not an
  arrow, and nothing imports a test module, so it cannot close a cycle.
- Comments (`//`, `/* */`, doc comments and the intra-doc links in them),
  string and character literals are not code and name nothing.
- A visibility (`pub(in crate::a)`) is not an import.
- A module's own ancestors and descendants are not edges: a parent that
  declares and re-exports its child, and a child that uses its parent's
  items, is how Rust modules are built, not a cycle between two peers.

A private `use` of a module is its importer's own shorthand, not an API:
a path from elsewhere that goes through it (`crate::old_name::x` where the
root has `use crate::new::place::old_name;`) is an edge to the importer
and from the importer to the module, ancestors or not, so a module that
keeps old paths alive for its descendants shows as the cycle it is.

Prints each crate's graph with --verbose; for each crate, how many modules
and arrows it has, and each group of modules that import each other in a
cycle (a strongly connected component) with one cycle through it; exits 1
if there is one. It reads text, not the compiler's view: a macro that
builds a path from pieces is not seen.
"""
import os
import re
import sys


def module_of(root, path):
    rel = os.path.relpath(path, root)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel in (["lib"], ["main"]):
        return ""
    return "::".join(rel)


def related(a, b):
    """Whether one module is the other or an ancestor of it."""
    return a == b or a == "" or b == "" or a.startswith(b + "::") or b.startswith(a + "::")


# Where a path starts that names a module relative to the crate or to the
# current module; the lookbehind keeps `$crate::` (a macro's) and
# identifiers that merely end in `self` or `super` out.
START = re.compile(r"(?<![A-Za-z0-9_$])(crate|super|self)::")
SEGMENT = re.compile(r"\s*(\{|\*|[A-Za-z_][A-Za-z0-9_]*)")
# A private `use` at the start of a line (`pub use` and `pub(crate) use`
# are a module's API, so they do not match).
PRIVATE_USE = re.compile(r"^[ \t]*use[ \t]+(crate|super|self)::", re.M)
# A re-export (`pub use`, `pub(crate) use`, ...): a path through it names
# the module the item comes from.
PUBLIC_USE = re.compile(r"^[ \t]*pub(?:\s*\([a-z]+\))?[ \t]+use[ \t]+([A-Za-z_][A-Za-z0-9_]*)::", re.M)
ALIAS = re.compile(r"\s+as\s+([A-Za-z_][A-Za-z0-9_]*)")


def use_tree(text, pos):
    """The paths of the use tree that starts at `pos` (just after a `::`),
    each a list of segments whose last is the name it binds (its `as` name
    if it has one, after a `#`), with `{...}` groups expanded at any depth.
    A `self` in a group names the group's prefix; `*` adds nothing."""
    m = SEGMENT.match(text, pos)
    if m is None or m.group(1) == "*":
        return [[]]
    if m.group(1) == "{":
        paths, depth, item, i = [], 0, m.end(), m.end()
        while i < len(text):
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}" and depth > 0:
                depth -= 1
            elif c in ",}" and depth == 0:
                part = text[item:i]
                if part.strip():
                    paths.extend([] if p[:1] == ["self"] else p for p in use_tree(part, 0))
                if c == "}":
                    break
                item = i + 1
            i += 1
        return paths or [[]]
    head, pos = m.group(1), m.end()
    if text.startswith("::", pos):
        return [[head] + rest for rest in use_tree(text, pos + 2)]
    alias = ALIAS.match(text, pos)
    return [[head + ("#" + alias.group(1) if alias else "")]]


def absolute(name, kind, segments):
    """The path from the crate root of `segments`, written in module `name`
    after `crate::`, `super::` or `self::` (`kind`); None above the root."""
    base = [] if kind == "crate" else (name.split("::") if name else [])
    for step in ["super"] * (kind == "super") + segments:
        if step not in ("super", "self"):
            break
        segments = segments[1:] if segments[:1] == [step] else segments
        if step == "super":
            if not base:
                return None
            base = base[:-1]
    return base + [s.split("#")[0] for s in segments]


def strip(text):
    """`text` with its comments, string and character literals and `pub(in
    ...)` visibilities blanked out (newlines kept, so offsets and lines stay
    where they were)."""
    out, i, n = list(text), 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif (m := RAW_STRING.match(text, i)) and (i == 0 or not IDENT_CHAR.match(text[i - 1])):
            close = '"' + "#" * len(m.group(1))
            j = text.find(close, m.end())
            j = n if j < 0 else j + len(close)
            blank(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            blank(i, j + 1)
            i = j + 1
        elif c == "'":
            # A character literal ('x', '\n', '\u{7f}', '\''), not a
            # lifetime or a label ('a, 'outer:).
            if text.startswith("\\", i + 1):
                j = text.find("'", i + 3)
                j = n if j < 0 else j + 1
                blank(i, j)
                i = j
            elif i + 2 < n and text[i + 2] == "'":
                blank(i, i + 3)
                i += 3
            else:
                i += 1
        else:
            i += 1
    stripped = "".join(out)
    return VISIBILITY.sub(lambda m: " " * len(m.group(0)), stripped)


RAW_STRING = re.compile(r'b?r(#*)"')
IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")
VISIBILITY = re.compile(r"\bpub\s*\(\s*in\s+[^)]*\)")
INLINE_MOD = re.compile(r"\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{")


def inline_modules(code):
    """The inline `mod name { ... }` blocks of stripped `code`, nested ones
    too: (start, end, path below the file's module), innermost last."""
    found = []
    for m in INLINE_MOD.finditer(code):
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        found.append([m.start(), j, [m.group(1)]])
    # A block inside another takes the outer one's path as its prefix.
    for inner in found:
        outers = [o for o in found if o is not inner and o[0] < inner[0] and inner[1] <= o[1]]
        inner[2] = [seg for o in sorted(outers) for seg in o[2][-1:]] + inner[2]
    return found


def node_at(file_module, blocks, pos):
    """The module that the code at `pos` of a file is in."""
    inside = [b for b in blocks if b[0] <= pos < b[1]]
    path = max(inside, key=lambda b: len(b[2]))[2] if inside else []
    return "::".join(([file_module] if file_module else []) + path)


def read_crate(root):
    """{file module: stripped code} for every `.rs` file under `root`."""
    sources = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".rs"):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    sources[module_of(root, path)] = strip(fh.read())
    return sources


def graph_of(root):
    return graph_of_sources(read_crate(root))


def graph_of_sources(sources):
    """The import graph of a crate given as {file module: code}."""
    sources = {name: strip(code) for name, code in sources.items()}
    blocks = {name: inline_modules(code) for name, code in sources.items()}
    modules = set(sources)
    for name, bs in blocks.items():
        modules.update(node_at(name, bs, b[0] + 1) for b in bs)

    # Each module's private imports of modules (the name they bind there),
    # and its re-exports (the path each name stands for).
    aliases, exports = {}, {}
    for file_module, text in sources.items():
        for m in PRIVATE_USE.finditer(text):
            name = node_at(file_module, blocks[file_module], m.start())
            for segments in use_tree(text, m.end()):
                if not segments:
                    continue
                bound = segments[-1].split("#")[-1]
                path = absolute(name, m.group(1), segments)
                if path and "::".join(path) in modules:
                    aliases.setdefault(name, {})[bound] = "::".join(path)
        for m in PUBLIC_USE.finditer(text):
            name = node_at(file_module, blocks[file_module], m.start())
            kind, child = m.group(1), []
            if kind not in ("crate", "super", "self"):
                # `pub use child::Item` (a path relative to this module);
                # another crate's items are not this crate's modules.
                if "::".join(([name] if name else []) + [kind]) not in modules:
                    continue
                kind, child = "self", [kind]
            for segments in use_tree(text, m.end()):
                path = absolute(name, kind, child + segments)
                if segments and path:
                    exports.setdefault(name, {})[segments[-1].split("#")[-1]] = path

    def walk(name, path, hops=0):
        """The module `path` (from the crate root) names, and the modules it
        passes through private imports of, written in module `name`."""
        here, target, via_importers = [], "", []
        for i, seg in enumerate(path):
            step = "::".join(here + [seg])
            here_name = "::".join(here)
            if step in modules:
                here, target = here + [seg], step
            elif seg in aliases.get(here_name, {}) and here_name != name:
                via = aliases[here_name][seg]
                via_importers.append((here_name, via))
                here, target = via.split("::"), via
            elif seg in exports.get(here_name, {}) and hops < 8:
                # A re-export names where the item lives.
                inner, more = walk(here_name, exports[here_name][seg] + path[i + 1 :], hops + 1)
                return (inner or target), via_importers + more
            else:
                break
        return target, via_importers

    graph = {name: set() for name in modules}
    for file_module, text in sources.items():
        for m in START.finditer(text):
            name = node_at(file_module, blocks[file_module], m.start())
            for segments in use_tree(text, m.end()):
                path = absolute(name, m.group(1), segments)
                if path is None:
                    continue
                target, via_importers = walk(name, path)
                for importer, via in via_importers:
                    graph[name].add(importer)
                    graph[importer].add(via)
                if target:
                    graph[name].add(target)
    return {name: sorted(d for d in deps if not related(name, d)) for name, deps in graph.items()}


def components_of(graph):
    """The strongly connected components with more than one module: the
    groups of modules that import each other, each sorted, in name order."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        # Tarjan's algorithm, iterative so a deep graph cannot overflow.
        work = [(v, iter(graph.get(v, [])))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        while work:
            node, deps = work[-1]
            for w in deps:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(graph.get(w, []))))
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        group.append(w)
                        if w == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def cycle_through(graph, group):
    """One cycle through the first module of `group`, within the group."""
    members, first = set(group), group[0]
    paths, seen = [[first]], {first}
    while paths:
        path = paths.pop(0)
        for dep in graph.get(path[-1], []):
            if dep == first:
                return path + [first]
            if dep in members and dep not in seen:
                seen.add(dep)
                paths.append(path + [dep])
    return group


def main(args):
    if "--self-test" in args:
        import unittest

        here = os.path.dirname(os.path.abspath(__file__))
        suite = unittest.defaultTestLoader.discover(here, pattern="import_cycles_test.py")
        return 0 if unittest.TextTestRunner().run(suite).wasSuccessful() else 1
    verbose = "--verbose" in args
    roots = [a for a in args if a != "--verbose"]
    if not roots:
        print(__doc__)
        return 2
    failed = False
    for root in roots:
        graph = graph_of(root)
        if verbose:
            for name in sorted(graph):
                print(f"{root}: {name or '(root)'} -> {', '.join(graph[name]) or '-'}")
        groups = components_of(graph)
        arrows = sum(len(d) for d in graph.values())
        inside = sum(1 for g in groups for m in g for d in graph[m] if d in g)
        for group in groups:
            failed = True
            print(f"{root}: {len(group)} modules import each other: {', '.join(group)}")
            print(f"{root}:   for example: {' -> '.join(cycle_through(graph, group))}")
        print(
            f"{root}: {len(graph)} modules, {arrows} arrows; "
            f"{sum(len(g) for g in groups)} modules in cycles, {inside} arrows within them"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
