#!/usr/bin/env python3
"""Fails when the modules of a crate import each other in a cycle.

Usage: scripts/import_cycles.py [--verbose] SRC_DIR [SRC_DIR ...]

Each `.rs` file under SRC_DIR is a module; an edge A -> B is a path in A
(outside its `#[cfg(test)]` part) that starts with `crate::`, `super::` or
`self::` and names B or an item of B. Groups are expanded at any depth:
`use super::{a, b::{c, d}}` names super::a, super::b::c and super::b::d.
A module's own ancestors and descendants are not edges: a parent that
declares and re-exports its child, and a child that uses its parent's
items, is how Rust modules are built, not a cycle between two peers.

A private `use` of a module is its importer's own shorthand, not an API:
a path from elsewhere that goes through it (`crate::old_name::x` where the
root has `use crate::new::place::old_name;`) is an edge to the importer
and from the importer to the module, ancestors or not, so a module that
keeps old paths alive for its descendants shows as the cycle it is.

Prints each crate's graph with --verbose and every cycle found; exits 1 if
there is one. It reads text, not the compiler's view, so such a path
inside a string or a comment counts too (which errs towards reporting),
and a `super::` inside an inline `mod {}` block is read as the file's.
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


def graph_of(root):
    sources = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".rs"):
                path = os.path.join(dirpath, f)
                text = open(path, encoding="utf-8").read()
                sources[module_of(root, path)] = text.split("#[cfg(test)]")[0]
    modules = set(sources)

    # Each module's private imports of modules: the name they bind there.
    aliases = {}
    for name, text in sources.items():
        for m in PRIVATE_USE.finditer(text):
            for segments in use_tree(text, m.end()):
                if not segments:
                    continue
                bound = segments[-1].split("#")[-1]
                path = absolute(name, m.group(1), segments)
                if path and "::".join(path) in modules:
                    aliases.setdefault(name, {})[bound] = "::".join(path)

    graph = {name: set() for name in sources}
    for name, text in sources.items():
        for m in START.finditer(text):
            for segments in use_tree(text, m.end()):
                path = absolute(name, m.group(1), segments)
                if path is None:
                    continue
                # Walk the path a segment at a time, through any private
                # import it passes (whose importer and module it depends on).
                here, target = [], ""
                for i, seg in enumerate(path):
                    step = "::".join(here + [seg])
                    here_name = "::".join(here)
                    if step in modules:
                        here, target = here + [seg], step
                    elif seg in aliases.get(here_name, {}) and here_name != name:
                        via = aliases[here_name][seg]
                        graph[name].add(here_name)
                        graph[here_name].add(via)
                        here, target = via.split("::"), via
                    else:
                        break
                if target and not related(name, target):
                    graph[name].add(target)
    return {name: sorted(deps - {name}) for name, deps in graph.items()}


def cycles_of(graph):
    state, found = {}, []

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for dep in graph.get(node, []):
            if state.get(dep) == "open":
                found.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return found


def main(args):
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
        cycles = cycles_of(graph)
        for cycle in cycles:
            failed = True
            print(f"{root}: import cycle: {' -> '.join(c or '(root)' for c in cycle)}")
        if not cycles:
            print(f"{root}: no import cycle among {len(graph)} modules")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
