#!/usr/bin/env python3
"""Every path a map of the code names exists in the tree.

ARCHITECTURE.md and docs/reliability.md name files and directories so that
a reader can open them; when a module moves and the page does not follow,
the page sends the reader nowhere. This script reads those pages (or the
ones given) and fails, listing each name with its line, when a named path
matches no tracked file.

What counts as a name:
  * a `code span` that looks like a path: it has a `/`, or it ends with a
    file extension the tree uses (.rs, .md, .sh, .py, .toml, .scn, .java);
  * a bare word in the prose starting with one of the tree's top-level
    directories (crates/, apps/, bench/, docs/, scripts/, peers/, fuzz/,
    .ci/);
  * a markdown link's target that is not a URL or an anchor;
  * in a ```text block that draws a directory tree (its first line is a
    directory from the root, such as `bench/src/`), every `*.rs` word and
    every word ending with `/`, as the path the drawing gives it: a line
    starting with a directory opens it for the lines indented deeper, and
    the words after a directory on its line are inside it.

How a name is resolved: the pages speak of a crate's files relative to the
crate they are describing (`src/cell.rs`, then `cell/lifecycle.rs`, then
`bank_account.rs` among the examples), so a name matches when it is the
tail of a tracked path, whole components only, inside the scope of its
section: the crate or directory a `### ` heading names in backticks
(`crates/troupe`, `apps/primes`, `bench`, ...), else the whole tree. `<x>`
and `*` match any one component (part). A name ending in `/` must be a
directory holding a tracked file.

The unsafe list of ARCHITECTURE.md (the "**Unsafe code**" bullet) is
checked both ways besides: every file of `crates/troupe/src` with `unsafe`
in its code is in the list, and every file in the list has some.

    python3 scripts/doc_paths.py                 # the two pages
    python3 scripts/doc_paths.py docs/guide/*.md  # any others
"""

import fnmatch
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DEFAULT_PAGES = ["ARCHITECTURE.md", "docs/reliability.md"]
EXTENSIONS = (".rs", ".md", ".sh", ".py", ".toml", ".scn", ".java")
TOP_DIRS = ("crates/", "apps/", "bench/", "docs/", "scripts/", "peers/", "fuzz/", ".ci/")

# Files a program writes (named as its output, never tracked).
OUTPUTS = {"summary.md", "results.json", "index.html"}

# A path-like code span: path characters only, placeholders allowed.
PATHLIKE = re.compile(r"^[A-Za-z0-9_.<>*/-]+$")
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\]\(([^)\s]+)\)")
BARE = re.compile(r"(?<![\w/.`-])((?:%s)[A-Za-z0-9_.<>*/-]*)" % "|".join(re.escape(d) for d in TOP_DIRS))
TREE_WORD = re.compile(r"(?<![\w/.-])([A-Za-z0-9_<>./-]+?(?:\.rs|/))(?![\w])")


def tracked_files():
    """The checkout's tracked files (a plain walk outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "ls-files", "-z"], check=True, capture_output=True
        ).stdout.decode()
        return [p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dirpath, dirnames, filenames in os.walk(ROOT):
            dirnames[:] = [d for d in dirnames if d not in (".git", "target", ".tools")]
            for f in filenames:
                files.append(os.path.relpath(os.path.join(dirpath, f), ROOT))
        return files


def as_pattern(name):
    """A name's components as fnmatch patterns (`<x>` and `*` match a part)."""
    name = re.sub(r"<[^>/]*>", "*", name)
    return [c for c in name.split("/") if c and c != "."]


def matches(name, files, scope, anchored=False):
    """Whether `name` is the tail of a tracked path (or directory) in `scope`,
    or, `anchored`, a tracked path (or directory) from the root."""
    only_dir = name.endswith("/")
    want = as_pattern(name.rstrip("/"))
    if not want:
        return True
    for path in files:
        if scope and not path.startswith(scope + "/"):
            continue
        parts = path.split("/")
        # A directory matches any tracked file's parent directories; a name
        # without a trailing `/` may be a file or a directory.
        candidates = [parts[:i] for i in range(1, len(parts))]
        if not only_dir:
            candidates.append(parts)
        for cand in candidates:
            if len(cand) < len(want) or (anchored and len(cand) != len(want)):
                continue
            tail = cand[len(cand) - len(want):]
            if all(fnmatch.fnmatchcase(c, w) for c, w in zip(tail, want)):
                return True
    return False


def looks_like_path(span):
    if not PATHLIKE.match(span) or span.startswith(("-", "<")) or "://" in span:
        return False
    if span.startswith(TOP_DIRS):
        return True
    if "/" in span:
        # `a/b` between words (`Up / Down`) never has spaces here; a ratio
        # such as `1/2` or an op like `tell/ask` is not a path: require a
        # file-like or directory-like shape.
        last = span.rstrip("/").split("/")[-1]
        return span.endswith("/") or last.endswith(EXTENSIONS) or "." in last
    return span.endswith(EXTENSIONS)


def tree_names(lines):
    """(line number, path from the root, "") for a drawn directory tree; no
    names unless its first line is a directory from the root."""
    if not lines or not lines[0][1].strip().startswith(TOP_DIRS):
        return []
    out = []
    stack = []  # (indent, directory path)
    for number, line in lines:
        indent = len(line) - len(line.lstrip(" "))
        words = TREE_WORD.findall(line)
        if not words:
            continue
        first_at_start = line.lstrip(" ").startswith(words[0])
        if first_at_start:
            while stack and stack[-1][0] >= indent:
                stack.pop()
        base = stack[-1][1] if stack else ""
        current = base
        for i, word in enumerate(words):
            path = word if word.startswith(TOP_DIRS) else f"{current}{word}"
            out.append((number, path, ""))
            if word.endswith("/"):
                current = path
                if i == 0 and first_at_start:
                    stack.append((indent, path))
    return out


def names_in(page):
    """(line number, name, scope) for every path the page names."""
    scope = ""
    in_code = False
    code_is_tree = False
    tree_lines = []
    out = []
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, 1):
        fence = line.strip().startswith("```")
        if fence:
            if not in_code:
                in_code = True
                code_is_tree = line.strip() == "```text"
            else:
                in_code = False
                out.extend(tree_names(tree_lines))
                tree_lines = []
            continue
        if in_code:
            if code_is_tree:
                tree_lines.append((number, line))
            continue
        if line.startswith("#"):
            # A `### `crates/x`` heading scopes what follows; any other
            # heading of that level or above ends the scope.
            level = len(line) - len(line.lstrip("#"))
            heading = CODE_SPAN.findall(line)
            if level <= 3:
                scope = ""
                if heading and level == 3:
                    candidate = heading[0].rstrip("/")
                    if os.path.isdir(os.path.join(ROOT, candidate)):
                        scope = candidate
        for span in CODE_SPAN.findall(line):
            # `scripts/x.sh N`: a command line names its program first.
            first = span.split(" ")[0]
            if first != span and not first.startswith(TOP_DIRS):
                continue
            if looks_like_path(first) and first not in OUTPUTS:
                out.append((number, first, scope))
        prose = CODE_SPAN.sub(" ", line)
        for target in LINK.findall(prose):
            if not target.startswith(("http:", "https:", "#", "mailto:")):
                target = target.split("#")[0]
                if target:
                    base = os.path.dirname(page)
                    out.append((number, os.path.normpath(os.path.join(base, target)), None))
        prose = LINK.sub(" ", prose)
        for word in BARE.findall(prose):
            out.append((number, word.rstrip(".,;:"), ""))
    return out


UNSAFE_CRATE_SRC = "crates/troupe/src"
UNSAFE_WORD = re.compile(r"\bunsafe\b")


def unsafe_list_problems(files):
    """Differences between ARCHITECTURE.md's unsafe list and the files of
    the runtime's `src/` whose code (not comments) says `unsafe`."""
    with open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.find("- **Unsafe code**")
    if start < 0:
        return ["ARCHITECTURE.md has no \"**Unsafe code**\" bullet"]
    end = text.find("\n- **", start + 1)
    bullet = text[start:end if end >= 0 else len(text)]
    listed = {n for n in CODE_SPAN.findall(bullet) if n.endswith(".rs")}
    have = set()
    for path in files:
        if not (path.startswith(UNSAFE_CRATE_SRC + "/") and path.endswith(".rs")):
            continue
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            code = [l.split("//")[0] for l in f]
        if any(UNSAFE_WORD.search(l) for l in code):
            have.add(path[len(UNSAFE_CRATE_SRC) + 1:])
    problems = [f"ARCHITECTURE.md's unsafe list lacks `{n}` ({UNSAFE_CRATE_SRC}/{n} has unsafe code)"
                for n in sorted(have - listed)]
    problems += [f"ARCHITECTURE.md's unsafe list names `{n}`, which has no unsafe code "
                 f"in {UNSAFE_CRATE_SRC}/" for n in sorted(listed - have)]
    return problems


def main(argv):
    pages = argv[1:] or DEFAULT_PAGES
    files = tracked_files()
    missing = []
    checked = 0
    for page in pages:
        for number, name, scope in names_in(page):
            checked += 1
            if scope is None:
                # A link: relative to the page, exactly.
                if not os.path.exists(os.path.join(ROOT, name)):
                    missing.append((page, number, name, "the link's target"))
                continue
            name = name.lstrip("./") if name.startswith("./") else name
            # Root-relative names resolve from the root wherever they are.
            if name.startswith(TOP_DIRS) and matches(name, files, "", anchored=True):
                continue
            if matches(name, files, scope):
                continue
            missing.append((page, number, name, f"in {scope}/" if scope else "in the tree"))
    for page, number, name, where in missing:
        print(f"{page}:{number}: `{name}` names no tracked path ({where})")
    unsafe = unsafe_list_problems(files) if "ARCHITECTURE.md" in pages else []
    for problem in unsafe:
        print(problem)
    if missing or unsafe:
        print(f"doc_paths: {len(missing)} of {checked} named paths do not exist, "
              f"{len(unsafe)} differences in the unsafe list; fix the page or the code "
              "(scripts/doc_paths.py says how names resolve)")
        return 1
    print(f"doc_paths: all {checked} named paths in {', '.join(pages)} exist"
          + (", and the unsafe list matches the code" if "ARCHITECTURE.md" in pages else ""))
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv))
