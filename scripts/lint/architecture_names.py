#!/usr/bin/env python3
"""Checks that docs/ARCHITECTURE.md names every file under src/ (CONTRIBUTING: "the tree
explains itself").

A file src/LIB/.../NAME is named when the section of its library (the "## LIB" heading, e.g.
"## cache", "## plugin/proxy") has, between backticks, NAME itself, its stem with ".*", ".h",
".cc" or without an extension (`relocate.*`, `rntuple_anchor`: a header and its source are
one unit), or a glob that matches it (`rntuple*`, `*_test.cc`); or when anywhere in the document such a token carries the file's path below
src/ (`readahead/open_sequence.*`). CMakeLists.txt files and dotfiles (.clang-tidy) are the
build's, not named.

usage: architecture_names.py [REPO]   (exit 1 and the unnamed files listed when any)
"""
import fnmatch
import os
import re
import sys


def tokens(text):
    """The file-like words between backticks."""
    out = set()
    text = re.sub(r"```.*?```", "", text, flags=re.S)  # fenced blocks pair no backticks
    for span in re.findall(r"`([^`]+)`", text):
        for word in re.findall(r"[A-Za-z0-9_./*+-]+", span):
            out.add(word.strip("./") if not word.startswith("*") else word)
    return out


def sections(doc):
    """{library: text} for each '## LIB ...' heading (the first word of the heading)."""
    out = {}
    for part in re.split(r"^## ", doc, flags=re.M)[1:]:
        lib = part.split(None, 1)[0]
        out[lib] = out.get(lib, "") + part
    return out


def named(rel, lib_tokens, all_tokens):
    base = os.path.basename(rel)
    stem = base.split(".", 1)[0]
    # A header and its source are one unit: naming one names the pair.
    forms = {base, stem + ".*", stem, stem + ".h", stem + ".cc"}
    for t in lib_tokens:
        if t in forms or ("*" in t and fnmatch.fnmatch(base, t.rsplit("/", 1)[-1])):
            return True
    path_forms = {rel, rel.rsplit(".", 1)[0] + ".*", rel.split(".", 1)[0]}
    for t in all_tokens:
        if "/" in t and any(p == t or p.endswith("/" + t) or t.endswith(p) for p in path_forms):
            return True
    return False


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    with open(os.path.join(repo, "docs", "ARCHITECTURE.md"), encoding="utf-8") as f:
        doc = f.read()
    secs = {lib: tokens(text) for lib, text in sections(doc).items()}
    all_tokens = tokens(doc)
    src = os.path.join(repo, "src")
    missing = []
    for root, _, files in os.walk(src):
        for name in files:
            if name == "CMakeLists.txt" or name.startswith("."):
                continue
            rel = os.path.relpath(os.path.join(root, name), src)
            parts = rel.split(os.sep)
            lib = "/".join(parts[:2]) if parts[0] == "plugin" else parts[0]
            if not named(rel, secs.get(lib, set()), all_tokens):
                missing.append(rel)
    for rel in sorted(missing):
        print(f"docs/ARCHITECTURE.md does not name src/{rel}")
    print(f"architecture_names: {len(missing)} unnamed file(s) under src/")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
