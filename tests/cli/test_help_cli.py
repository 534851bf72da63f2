#!/usr/bin/env python3
"""The help texts agree with what the commands accept. Both come from one table
(src/cli/command_spec.h), so most of this is a guard: every command `ferry --help` lists has a
help of its own, every subcommand a group's usage names appears in its summary, every command of
the table (`ferry --list-commands`) answers --help and takes exactly the options its help names,
and an unknown command or option is a usage error (exit 2) with a "did you mean".

usage: test_help_cli.py FERRY
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import check, finish  # noqa: E402

FERRY = sys.argv[1]


def run(*args):
    return subprocess.run([FERRY, *args], capture_output=True, text=True, timeout=60)


top = run("--help")
check(top.returncode == 0, "ferry --help exits 0")
# "  name       summary", a long summary continued on lines indented as far.
commands = {name: " ".join(summary.split())
            for name, summary in re.findall(r"^  ([a-z]+)\s{2,}(.+(?:\n {13}\S.*)*)", top.stdout, re.M)}
check(len(commands) >= 8, "ferry --help lists the commands: %s" % sorted(commands))
for name, summary in commands.items():
    h = run(name, "--help")
    check(h.returncode == 0 and "usage:" in h.stdout, "ferry %s --help" % name)
    subs = set(re.findall(r"ferry %s ([a-z][a-z0-9-]*)" % name, h.stdout))
    # A single sub-command is the command's own form (gen nanoaod, analyze agc), not a list.
    if len(subs) > 1:
        listed = set(re.findall(r"[a-z][a-z0-9-]*", summary))
        check(subs <= listed, "the summary of %s lists %s, its usage names %s"
              % (name, sorted(listed & subs), sorted(subs)))
    bad = run(name, "--no-such-option")
    check(bad.returncode == 2, "ferry %s --no-such-option exits 2 (got %d)" % (name, bad.returncode))
check(run("no-such-command").returncode == 2, "an unknown command exits 2")

# Options that contradict each other are refused before anything is done.
with tempfile.TemporaryDirectory() as tmp:
    conf, cache = os.path.join(tmp, "conf"), os.path.join(tmp, "cache")
    both = run("cache", "enable", "--system", "--conf-dir", conf, "--dir", cache)
    check(both.returncode == 2 and "--system and --conf-dir cannot be used together" in both.stderr,
          "cache enable --system --conf-dir exits 2 naming both (got %d: %s)"
          % (both.returncode, both.stderr.strip()))
    check(not os.path.exists(conf) and not os.path.exists(cache),
          "a refused cache enable writes nothing")
    got = run("store", "get", tmp, "--event", "1:1:1", "--out", os.path.join(tmp, "p.root"),
              "--json")
    check(got.returncode == 2 and "cannot be used together" in got.stderr,
          "store get --out --json exits 2 (got %d)" % got.returncode)

# The table: every command with its options ("cache replica build\t--dir --conf-dir ...").
listed = run("--list-commands")
check(listed.returncode == 0, "ferry --list-commands exits 0")
table = {}
for line in listed.stdout.splitlines():
    path, _, options = line.partition("\t")
    table[path] = options.split()
# Forms that must exist: a table that loses one fails here.
FORMS = {
    "root": ["ls", "dump", "baskets"], "gen": ["nanoaod"], "analyze": ["agc"],
    "store": ["convert", "append", "get", "scan", "info", "verify"], "send": [], "recv": [],
    "cache": ["enable", "disable", "status", "ls", "stats", "verify", "evict", "clear", "pin",
              "replica", "replica build", "replica status", "replica drop"],
    "proxy": ["config", "run"],
}
for name, subs in FORMS.items():
    for path in [name] + ["%s %s" % (name, s) for s in subs]:
        check(path in table, "ferry --list-commands has %s" % path)
groups = {path for path in table if any(p.startswith(path + " ") for p in table) or not path}
opt_re = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
for path, options in table.items():
    words = path.split()
    h = run(*words, "--help")
    check(h.returncode == 0 and h.stdout.startswith(("usage:", "ferry - ")),
          "ferry %s --help exits 0 with the usage" % path)
    named = set(opt_re.findall(h.stdout)) - {"--help"}
    if path in groups:
        # A group's usage names the options of its own leaves, and no others.
        subs = [p for p in table if p and p != path and p.rpartition(" ")[0] == path]
        leaves = [p for p in subs if p not in groups]
        taken = set().union(*[set(table[p]) for p in leaves]) if leaves else set()
        if path:
            check(taken <= named, "ferry %s --help misses %s" % (path, sorted(taken - named)))
            check(named <= taken, "ferry %s --help names %s, none of its commands takes them"
                  % (path, sorted(named - taken)))
        for sub in subs:
            check(re.search(r"^  %s\s" % re.escape(sub.split()[-1]), h.stdout, re.M),
                  "ferry %s --help lists %s" % (path, sub))
        continue
    p = run(*words, "--list-options")
    check(p.returncode == 0 and p.stdout.split()[1:] == options,
          "ferry %s --list-options: %s %s" % (path, p.stdout.strip(), p.stderr[:200]))
    check(set(options) == named, "ferry %s: takes %s, its help names %s"
          % (path, sorted(options), sorted(named)))
    bad = run(*words, "--no-such-option")
    check(bad.returncode == 2 and "unknown option --no-such-option" in bad.stderr,
          "ferry %s --no-such-option exits 2 (got %d)" % (path, bad.returncode))
check(run().returncode == 2, "ferry without a command exits 2")
typo = run("sned")
check(typo.returncode == 2 and "did you mean 'send'" in typo.stderr, "ferry sned: %s" % typo.stderr)
typo = run("cache", "stauts")
check(typo.returncode == 2 and "did you mean 'status'" in typo.stderr,
      "ferry cache stauts: %s" % typo.stderr)
typo = run("send", "--streems", "1", "f", "h:1")
check(typo.returncode == 2 and "did you mean '--streams'" in typo.stderr,
      "ferry send --streems: %s" % typo.stderr)
v = run("--version")
check(v.returncode == 0 and re.match(r"ferry \d+\.\d+\.\d+", v.stdout), "version: %r" % v.stdout)
finish()
