#!/usr/bin/python3
"""Man pages and bash completion for ferry, made from the binary's own --help texts.

usage: gen_docs.py FERRY OUT_DIR VERSION
Writes OUT_DIR/man/ferry.1, OUT_DIR/man/ferry-<command>.1 for every command `ferry --help`
lists, and OUT_DIR/completion/ferry (bash). The help texts are the one source: what --help says
is what the man page says, and the completion offers exactly the commands and --options named
there. Exits 1 when a command listed by `ferry --help` has no help of its own.
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
        ".SH SEE ALSO", "ferry(1), and the project's README.md and docs/format/*.md.", ""])


def main():
    top = help_of()
    commands = re.findall(r"^  ([a-z]+)\s{2,}(.+)$", top, re.M)
    if not commands:
        sys.exit("ferry --help lists no commands")
    os.makedirs(os.path.join(OUT, "man"), exist_ok=True)
    os.makedirs(os.path.join(OUT, "completion"), exist_ok=True)
    with open(os.path.join(OUT, "man", "ferry.1"), "w") as f:
        f.write(man_page("ferry", "remote HEP data at the speed of the hardware", top))
    options = {}
    words = {}
    for name, summary in commands:
        text = help_of(name)
        with open(os.path.join(OUT, "man", "ferry-%s.1" % name), "w") as f:
            f.write(man_page("ferry-" + name, summary, text))
        options[name] = sorted(set(re.findall(r"(--[a-z][a-z0-9-]*)", text)) | {"--help"})
        # Sub-commands: the first word after "ferry NAME" on each usage line.
        words[name] = sorted(set(re.findall(r"ferry %s ([a-z][a-z0-9-]*)" % name, text)))
    lines = ["# bash completion for ferry (generated from its --help texts by gen_docs.py)",
             "_ferry() {",
             "  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}",
             "  if [ \"$COMP_CWORD\" -eq 1 ]; then",
             "    COMPREPLY=($(compgen -W \"%s --help --version\" -- \"$cur\"))" %
             " ".join(n for n, _ in commands),
             "    return",
             "  fi",
             "  case \"$cmd\" in"]
    for name, _ in commands:
        lines.append("    %s)" % name)
        lines.append("      if [ \"$COMP_CWORD\" -eq 2 ] && [[ \"$cur\" != -* ]]; then")
        lines.append("        COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))" % " ".join(words[name]))
        lines.append("      else")
        lines.append("        COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))" % " ".join(options[name]))
        lines.append("      fi")
        lines.append("      ;;")
    lines += ["  esac",
              "  [ ${#COMPREPLY[@]} -eq 0 ] && COMPREPLY=($(compgen -f -- \"$cur\"))",
              "}",
              "complete -F _ferry ferry", ""]
    with open(os.path.join(OUT, "completion", "ferry"), "w") as f:
        f.write("\n".join(lines))


main()
