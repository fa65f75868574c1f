#!/usr/bin/env python3
"""Fails when the modules of a crate import each other in a cycle.

Usage: scripts/import_cycles.py SRC_DIR [SRC_DIR ...]

Each `.rs` file under SRC_DIR is a module; an edge A -> B is a `crate::`
path in A (outside its `#[cfg(test)]` part) that names B or an item of B.
A module's own ancestors and descendants are not edges: a parent that
declares and re-exports its child, and a child that uses its parent's
items, is how Rust modules are built, not a cycle between two peers.
Prints each crate's graph with --verbose and every cycle found; exits 1 if
there is one. It reads text, not the compiler's view, so a `crate::` path
inside a string or a comment counts too (which errs towards reporting).
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


def resolve(modules, segments):
    """The deepest module named by the path `segments` (after `crate::`)."""
    for n in range(len(segments), 0, -1):
        name = "::".join(segments[:n])
        if name in modules:
            return name
    return ""


def related(a, b):
    """Whether one module is the other or an ancestor of it."""
    return a == b or a == "" or b == "" or a.startswith(b + "::") or b.startswith(a + "::")


def graph_of(root):
    sources = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".rs"):
                path = os.path.join(dirpath, f)
                sources[module_of(root, path)] = open(path, encoding="utf-8").read()
    modules = set(sources)
    graph = {}
    for name, text in sources.items():
        text = text.split("#[cfg(test)]")[0]
        # `use crate::{a, b::c}` names crate::a and crate::b::c.
        text = re.sub(
            r"crate::\{([^}]*)\}",
            lambda m: " ".join("crate::" + x.strip() for x in m.group(1).split(",")),
            text,
        )
        deps = set()
        for m in re.finditer(r"crate::((?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)", text):
            target = resolve(modules, m.group(1).split("::"))
            if target and not related(name, target):
                deps.add(target)
        graph[name] = sorted(deps)
    return graph


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
            print(f"{root}: import cycle: {' -> '.join(cycle)}")
        if not cycles:
            print(f"{root}: no import cycle among {len(graph)} modules")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
