#!/usr/bin/env python3
"""`ferry root ls|dump` over root:// URLs (a real origin on 127.0.0.1) print what they print for
the local file, except the file name.

usage: test_cli_root_url.py FERRY_BINARY DATA_DIR     (exit 77 when it cannot run here)
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "testing"))
from ferry_harness import check, finish, skip  # noqa: E402
from ferry_testbed import Origin, Skip  # noqa: E402

FERRY, DATA = sys.argv[1], sys.argv[2]
if not os.path.isdir(DATA):
    skip("no data folder " + DATA)


def ferry(*args):
    p = subprocess.run([FERRY, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


try:
    with Origin(DATA) as origin:
        for name in ["nano_dy.root", "uproot-HZZ-zstd.root", "uproot-nesteddirs.root"]:
            rc_l, out_l, _ = ferry("root", "ls", os.path.join(DATA, name), "--json")
            rc_r, out_r, err_r = ferry("root", "ls", origin.url_for(name), "--json")
            check(rc_l == 0 and rc_r == 0, f"ls {name}: exit {rc_l}/{rc_r} {err_r.strip()}")
            if rc_l == 0 and rc_r == 0:
                local, remote = json.loads(out_l), json.loads(out_r)
                check(remote["file"] == origin.url_for(name), f"ls {name}: file {remote['file']}")
                local.pop("file")
                remote.pop("file")
                check(local == remote, f"ls {name}: remote listing differs")
        args = ["--tree", "events", "--branch", "Muon_Px", "--entries", "0:50", "--json"]
        _, out_l, _ = ferry("root", "dump", os.path.join(DATA, "uproot-HZZ-lz4.root"), *args)
        rc, out_r, err = ferry("root", "dump", origin.url_for("uproot-HZZ-lz4.root"), *args)
        check(rc == 0 and out_l == out_r, f"dump over root:// differs (exit {rc}) {err.strip()}")
        rc, _, err = ferry("root", "ls", origin.url_for("missing.root"))
        check(rc == 1 and "missing.root" in err, f"missing remote file: exit {rc}, {err.strip()}")
except Skip as e:
    skip(e)

finish()
