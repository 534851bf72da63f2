#!/usr/bin/env python3
"""clang-tidy over ferry's sources, with a result cache so that CI re-checks only what changed.

usage: tidy.py BUILD_DIR [-j N] [--no-cache] [FILE...]

Checks every non-test source under src/ (or the FILEs given) with the repository's .clang-tidy
(WarningsAsErrors: every finding fails). A clean result is remembered under
$XDG_CACHE_HOME/ferry/tidy (default ~/.cache/ferry/tidy), keyed by the SHA-256 of the
clang-tidy version, the .clang-tidy file, the source's path in the repository and its
preprocessed text (which holds every header it includes, so a header change re-checks its
users). Findings are never cached: they show on every run. The idea is ccache's, applied to
clang-tidy (as ctcache does); a full run costs ~6 s of CPU per source, a cached one the
preprocessing (~0.3 s). Exits 1 on any finding, 2 on a usage error.
"""
import concurrent.futures
import hashlib
import os
import subprocess
import sys

import compile_db

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def preprocess_args(entry):
    """The build's command turned into `-E -P` (no line markers: no absolute paths in the key)."""
    out = []
    it = iter(compile_db.words(entry))
    for w in it:
        if w == "-o":
            next(it)
        elif w != "-c":
            out.append(w)
    return out + ["-E", "-P"]


def cache_key(entry, salt):
    pre = subprocess.run(preprocess_args(entry), capture_output=True,
                         cwd=entry.get("directory", ROOT))
    if pre.returncode != 0:
        return None  # let clang-tidy report why it does not compile
    h = hashlib.sha256(salt)
    h.update(os.path.relpath(entry["file"], ROOT).encode())
    # Warning flags change what clang-tidy reports (clang's own diagnostics); paths do not.
    h.update(" ".join(w for w in preprocess_args(entry) if w.startswith(("-W", "-std="))).encode())
    h.update(pre.stdout)
    return h.hexdigest()


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    build, rest = args[0], args[1:]
    jobs = os.cpu_count() or 1
    use_cache = "--no-cache" not in rest
    files = []
    it = iter(rest)
    for a in it:
        if a == "-j":
            jobs = int(next(it))
        elif a != "--no-cache":
            files.append(os.path.realpath(a))
    try:
        db = compile_db.load(build)
    except OSError as e:
        print("tidy: %s (configure the build first)" % e, file=sys.stderr)
        return 2
    if not files:
        listed = subprocess.run(["git", "ls-files", "src/*.cc"], cwd=ROOT, capture_output=True,
                                text=True, check=True).stdout.split()
        files = [os.path.join(ROOT, p) for p in listed if not p.endswith("_test.cc")]
    missing = [f for f in files if f not in db]
    files = [f for f in files if f in db]
    for f in missing:
        # Sources outside this build's configuration (e.g. the fuzz-only ones) are not checked.
        print("tidy: not in %s: %s" % (build, os.path.relpath(f, ROOT)), file=sys.stderr)

    version = subprocess.run(["clang-tidy", "--version"], capture_output=True).stdout
    with open(os.path.join(ROOT, ".clang-tidy"), "rb") as f:
        salt = version + f.read()
    cache_dir = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                             "ferry", "tidy")
    os.makedirs(cache_dir, exist_ok=True)

    def check(path):
        entry = db[path]
        key = cache_key(entry, salt) if use_cache else None
        stamp = os.path.join(cache_dir, key) if key else None
        if stamp and os.path.exists(stamp):
            return path, 0, "", True
        p = subprocess.run(["clang-tidy", "-p", build, "--quiet", path], capture_output=True,
                           text=True)
        findings = p.returncode != 0 or "warning:" in p.stdout or "error:" in p.stdout
        if stamp and not findings:
            with open(stamp, "w") as f:
                f.write(os.path.relpath(path, ROOT) + "\n")
        return path, 1 if findings else 0, p.stdout + p.stderr, False

    bad = 0
    cached = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for path, rc, out, hit in pool.map(check, files):
            cached += hit
            if rc != 0:
                bad += 1
                sys.stderr.write(out)
    print("clang-tidy: %d sources (%d unchanged since a clean run), %d with findings"
          % (len(files), cached, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
