#!/usr/bin/env python3
"""scripts/pkg/gen_docs.py makes, from the binary's command table, a man page per command that
holds the help of each of its subcommands, and a bash completion that completes every
subcommand (nested ones too) and the options of the command being typed.

usage: test_docs_cli.py FERRY GEN_DOCS
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import check, finish  # noqa: E402

FERRY, GEN_DOCS = sys.argv[1:3]


def complete(comp, *words):
    """COMPREPLY of the completion for `ferry WORDS...`, the last word being completed."""
    script = ('source %s; COMP_WORDS=(ferry %s); COMP_CWORD=%d; _ferry; echo "${COMPREPLY[*]}"'
              % (comp, " ".join("'%s'" % w for w in words), len(words)))
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "completion of %s: %s" % (words, p.stderr))
    return set(p.stdout.split())


with tempfile.TemporaryDirectory() as out:
    p = subprocess.run([sys.executable, GEN_DOCS, FERRY, out, "0.0.0"], capture_output=True,
                       text=True, timeout=300)
    check(p.returncode == 0, "gen_docs.py: %s" % p.stderr)
    man = os.path.join(out, "man")
    for name in ["ferry", "ferry-root", "ferry-gen", "ferry-analyze", "ferry-store", "ferry-send",
                 "ferry-recv", "ferry-cache", "ferry-proxy"]:
        check(os.path.isfile(os.path.join(man, name + ".1")), "man page " + name)
    cache = open(os.path.join(man, "ferry-cache.1")).read()
    for text in ["usage: ferry cache enable --dir DIR", "--repair", "usage: ferry cache replica build",
                 "--background"]:
        check(text in cache, "ferry-cache.1 has %r" % text)
    comp = os.path.join(out, "completion", "ferry")
    check(subprocess.run(["bash", "-n", comp]).returncode == 0, "the completion is valid bash")
    check({"root", "store", "cache", "proxy", "--version"} <= complete(comp, ""), "commands")
    check(complete(comp, "cache", "rep") == {"replica"}, "cache rep -> replica")
    check(complete(comp, "cache", "replica", "") == {"build", "status", "drop", "--help"},
          "cache replica subcommands")
    check(complete(comp, "cache", "replica", "build", "--co") == {"--codec", "--conf-dir"},
          "cache replica build options: %s" % complete(comp, "cache", "replica", "build", "--co"))
    check(complete(comp, "store", "get", "DIR", "--event", "1:2:3", "--ev") ==
          {"--event", "--events-file"}, "store get options after positionals")
    check("--listen" in complete(comp, "recv", "--li"), "recv options")
finish()
