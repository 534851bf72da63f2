#!/usr/bin/env python3
"""The help texts agree with what the commands accept: every command `ferry --help` lists has a
help of its own, every sub-command a command's usage names appears in the top-level summary,
and an unknown command or option is a usage error (exit 2).

usage: test_help_cli.py FERRY
"""
import re
import subprocess
import sys

FERRY = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([FERRY, *args], capture_output=True, text=True, timeout=60)


top = run("--help")
check(top.returncode == 0, "ferry --help exits 0")
commands = dict(re.findall(r"^  ([a-z]+)\s{2,}(.+)$", top.stdout, re.M))
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
v = run("--version")
check(v.returncode == 0 and re.match(r"ferry \d+\.\d+\.\d+", v.stdout), "version: %r" % v.stdout)
print("%d failure(s)" % len(failures) if failures else "ok")
sys.exit(1 if failures else 0)
