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

# Every (sub)command's parser against its usage text: each option the parser takes is in the
# usage, each option the usage names is taken by some parser of that command.
FORMS = {
    "root": [["ls"], ["dump"], ["baskets"]], "gen": [["nanoaod"]], "analyze": [["agc"]],
    "store": [["convert"], ["append"], ["get"], ["scan"], ["info"], ["verify"]], "send": [[]], "recv": [[]],
    "cache": [[s] for s in ["enable", "disable", "status", "ls", "stats", "verify", "evict",
                            "clear", "pin"]] + [["replica", s] for s in ["build", "status", "drop"]],
    "proxy": [["config"], ["run"]],
}
groups = {}  # the usage text a form is documented in -> its forms
for name, forms in FORMS.items():
    for form in forms:
        groups.setdefault(tuple([name] + form[:-1]), []).append(form[len(form) - 1:] if form else [])
for where, forms in groups.items():
    name = " ".join(where)
    usage = run(*where, "--help").stdout
    usage_opts = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", usage)) - {"--help"}
    taken = set()
    for form in forms:
        p = run(*where, *form, "--list-options")
        ok = p.returncode == 0 and p.stdout.startswith("options:")
        check(ok, "ferry %s --list-options: exit %d %s%s"
              % (" ".join([name] + form), p.returncode, p.stdout[:80], p.stderr[:200]))
        if not ok:
            continue
        opts = set(p.stdout.split()[1:]) - {"--help"}
        taken |= opts
        check(opts <= usage_opts, "ferry %s takes %s, its usage does not name them"
              % (" ".join([name] + form), sorted(opts - usage_opts)))
        h = run(*where, *form, "--help")
        check(h.returncode == 0 and "usage:" in h.stdout,
              "ferry %s --help exits 0 with the usage" % " ".join([name] + form))
    check(usage_opts <= taken, "ferry %s --help names %s, no parser of it takes them"
          % (name, sorted(usage_opts - taken)))
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
print("%d failure(s)" % len(failures) if failures else "ok")
sys.exit(1 if failures else 0)
