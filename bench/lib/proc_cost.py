#!/usr/bin/env python3
"""What a server's processes have cost so far, for the warm passes of bench/proxy_wan.sh: CPU
seconds (user + system, every thread) of the processes PID... and all their descendants, and
the read syscalls (/proc/PID/io syscr: read, pread, readv, preadv, and read() on sockets) of
those of them named xrootd. Read before and after a pass; the difference is the pass's
(pass_cpu_s). /proc/PID/stat counts 10 ms ticks, and a warm pass of the replay costs 5-7 of
them; each live thread's run time in ns (/proc/PID/task/TID/schedstat) is kept too, so that the
difference is exact unless threads ended during the pass.

usage: proc_cost.py PID...   -> {"cpu_s": X, "task_ns": {TID: NS}, "syscr": N, "pids": [...]}
(zeros when none runs). Needs root for another account's /proc/PID/io.
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


def task_ns(pid):
    """{tid: ns on CPU} of the live threads of pid."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                out[tid] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return out


def pass_cpu_s(before, after):
    """CPU seconds between two readings: from the threads' ns when they account for the ticks
    (within 2 ticks), else the ticks (threads that ended took their ns with them)."""
    ticks = after["cpu_s"] - before["cpu_s"]
    t0, t1 = before.get("task_ns") or {}, after.get("task_ns") or {}
    if not t1:
        return ticks
    # A thread id seen before with more time than now is a new thread under a reused id.
    ns = sum(v - t0[k] if k in t0 and v >= t0[k] else v for k, v in t1.items())
    return ns / 1e9 if ticks <= ns / 1e9 + 2.0 / TICK else ticks


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
    tasks = {}
    for p in tree:
        tasks.update(task_ns(p))
    print(json.dumps({"cpu_s": round(sum(procs[p][1] for p in tree), 3), "task_ns": tasks,
                      "syscr": sum(syscr(p) for p in tree if procs[p][2] == "xrootd"),
                      "pids": sorted(tree)}))


if __name__ == "__main__":
    main(sys.argv)
