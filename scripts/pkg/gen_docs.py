#!/usr/bin/python3
"""Man pages and bash completion for ferry, made from the binary's own command table.

usage: gen_docs.py FERRY OUT_DIR VERSION
Writes OUT_DIR/man/ferry.1, OUT_DIR/man/ferry-<command>.1 for every command `ferry --help`
lists (its --help, then the --help of each of its subcommands), and OUT_DIR/completion/ferry
(bash). The table (src/cli/command_spec.h) is the one source: `ferry --help` texts are rendered
from it, and the hidden `ferry --list-commands` prints it, one command per line with its
options, for the completion. Exits 1 when a command has no help of its own.
"""
import os
import re
import subprocess
import sys

FERRY, OUT, VERSION = sys.argv[1:4]


def help_of(*args):
    p = subprocess.run([FERRY, *args, "--help"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit("ferry %s --help exited %d" % (" ".join(args), p.returncode))
    return p.stdout


def roff(text):
    """Plain text as roff: escape backslashes, guard lines starting with . or '."""
    out = []
    for line in text.splitlines():
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def man_page(name, summary, body):
    return "\n".join([
        '.TH %s 1 "" "ferry %s" "ferry manual"' % (name.upper(), VERSION),
        ".SH NAME", "%s \\- %s" % (name, summary),
        ".SH SYNOPSIS AND OPTIONS", ".nf", roff(body), ".fi",
        ".SH SEE ALSO", "ferry(1), and the project's README.md, docs/*.md and docs/format/*.md.", ""])


def command_table():
    """{path: [options]} for every command, "" being ferry itself; groups have no options."""
    p = subprocess.run([FERRY, "--list-commands"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit("ferry --list-commands exited %d" % p.returncode)
    table = {}  # in the order of the table: depth first
    for line in p.stdout.splitlines():
        path, _, options = line.partition("\t")
        table[path] = options.split()
    return table


def completion(table):
    """A bash function: the command words typed so far pick an entry of the table; it offers that
    group's subcommands, or that command's options."""
    subs = {path: [] for path in table}
    for path in table:
        if path:
            parent, _, name = path.rpartition(" ")
            subs[parent].append(name)
    lines = ["# bash completion for ferry (generated from its command table by gen_docs.py)",
             "_ferry() {",
             "  local cur=${COMP_WORDS[COMP_CWORD]} path='' next words i",
             "  for ((i = 1; i < COMP_CWORD; i++)); do",
             "    next=\"${path:+$path }${COMP_WORDS[i]}\"",
             "    case \"$next\" in",
             "      %s) path=$next ;;" % "|".join("'%s'" % p for p in sorted(table) if p),
             "      *) break ;;",
             "    esac",
             "  done",
             "  case \"$path\" in"]
    for path in sorted(table):
        if subs[path]:
            words = subs[path] + ["--help"] + (["--version"] if not path else [])
        else:
            words = table[path] + ["--help"]
        lines.append("    '%s') words=\"%s\" ;;" % (path, " ".join(words)))
    lines += ["  esac",
              "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))",
              "  [ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- \"$cur\"))",
              "}",
              "complete -F _ferry ferry", ""]
    return "\n".join(lines)


def main():
    top = help_of()
    # "  name       summary", a long summary continued on lines indented as far.
    commands = [(name, " ".join(summary.split()))
                for name, summary in re.findall(r"^  ([a-z]+)\s{2,}(.+(?:\n {13}\S.*)*)", top, re.M)]
    if not commands:
        sys.exit("ferry --help lists no commands")
    table = command_table()
    os.makedirs(os.path.join(OUT, "man"), exist_ok=True)
    os.makedirs(os.path.join(OUT, "completion"), exist_ok=True)
    with open(os.path.join(OUT, "man", "ferry.1"), "w") as f:
        f.write(man_page("ferry", "remote HEP data at the speed of the hardware", top))
    for name, summary in commands:
        # The command's help, then each subcommand's: the man page has every option's help.
        texts = [help_of(*path.split()) for path in table
                 if path == name or path.startswith(name + " ")]
        with open(os.path.join(OUT, "man", "ferry-%s.1" % name), "w") as f:
            f.write(man_page("ferry-" + name, summary, "\n\n".join(texts)))
    with open(os.path.join(OUT, "completion", "ferry"), "w") as f:
        f.write(completion(table))


main()
