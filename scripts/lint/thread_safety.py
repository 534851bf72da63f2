#!/usr/bin/env python3
"""clang's thread-safety analysis over every source that uses ferry's annotated mutexes.

usage: thread_safety.py BUILD_DIR [-j N]

The build (g++) does not run the analysis; clang does, from the same flags. Sources are those
that include src/base/mutex.h directly or through other project headers (found from the
#include lines, so no build is needed beyond CMake's compile_commands.json). Each is parsed with
`clang++ -fsyntax-only -Wthread-safety -Werror=thread-safety`: a member read without the mutex
that guards it, a lock not released on every path, or a call that needs a lock the caller does
not hold fails the check. Exits 1 on any finding, 2 on a usage error.
"""
import concurrent.futures
import os
import re
import subprocess
import sys

import compile_db

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# The flags clang needs to parse a source as the build does; the rest (warnings, -O, -g, -o)
# belong to the build.
KEEP = re.compile(r"^(-I|-isystem|-D|-std=|-include)")


def includes_of(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [os.path.join(SRC, inc) for inc in INCLUDE.findall(f.read())]
    except OSError:
        return []


def users_of(header, sources):
    """The sources that include `header`, directly or through project headers."""
    memo = {}

    def reaches(path, stack):
        if path in memo:
            return memo[path]
        if path in stack:
            return False
        stack.add(path)
        hit = any(inc == header or (os.path.exists(inc) and reaches(inc, stack))
                  for inc in includes_of(path))
        stack.discard(path)
        memo[path] = hit
        return hit

    return [s for s in sources if reaches(s, set())]


def clang_args(entry):
    flags = []
    it = iter(compile_db.words(entry)[1:])
    for w in it:
        if w in ("-I", "-isystem", "-D", "-include"):
            flags += [w, next(it)]
        elif KEEP.match(w):
            flags.append(w)
    return ["clang++", *flags, "-fsyntax-only", "-Wno-everything", "-Wthread-safety",
            "-Werror=thread-safety", entry["file"]]


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    jobs = int(args[args.index("-j") + 1]) if "-j" in args else os.cpu_count() or 1
    try:
        db = compile_db.load(args[0])
    except OSError as e:
        print("thread_safety: %s (configure the build first)" % e, file=sys.stderr)
        return 2
    header = os.path.join(SRC, "base", "mutex.h")
    sources = sorted(p for p in db if p.startswith(SRC + os.sep) and p.endswith(".cc"))
    todo = users_of(header, sources)
    if not todo:
        print("thread_safety: no source includes base/mutex.h?", file=sys.stderr)
        return 1

    def check(path):
        p = subprocess.run(clang_args(db[path]), capture_output=True, text=True,
                           cwd=db[path].get("directory", ROOT))
        return path, p.returncode, p.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for path, rc, err in pool.map(check, todo):
            if rc != 0:
                failed += 1
                sys.stderr.write(err)
    print("thread-safety analysis: %d sources, %d with findings" % (len(todo), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
