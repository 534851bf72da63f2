#!/usr/bin/env python3
"""What a server's processes have cost so far, for the warm passes of bench/proxy_wan.sh: CPU
seconds (user + system, every thread) of the processes PID... and all their descendants, and
the read syscalls (/proc/PID/io syscr: read, pread, readv, preadv, and read() on sockets) of
those of them named xrootd. Read before and after a pass; the difference is the pass's.

usage: proc_cost.py PID...   -> {"cpu_s": X, "syscr": N, "pids": [...]} (zeros when none runs)
Needs root for another account's /proc/PID/io.
"""
import json
import os
import sys

TICK = os.sysconf("SC_CLK_TCK")


def stat(pid):
    """(ppid, cpu seconds, comm) of a live process, None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            text = f.read()
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    # fields[0] is state (stat field 3): ppid is field 4, utime 14, stime 15.
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK, comm


def syscr(pid):
    try:
        with open("/proc/%d/io" % pid) as f:
            for line in f:
                if line.startswith("syscr:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main(argv):
    roots = {int(p) for p in argv[1:] if p.strip().isdigit()}
    procs = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            s = stat(int(name))
            if s:
                procs[int(name)] = s
    tree, todo = set(), [p for p in roots if p in procs]
    while todo:
        p = todo.pop()
        if p not in tree:
            tree.add(p)
            todo += [c for c, s in procs.items() if s[0] == p]
    print(json.dumps({"cpu_s": round(sum(procs[p][1] for p in tree), 3),
                      "syscr": sum(syscr(p) for p in tree if procs[p][2] == "xrootd"),
                      "pids": sorted(tree)}))


if __name__ == "__main__":
    main(sys.argv)
