#!/usr/bin/env python3
"""An uproot-like reader for bench/readahead_wan and tests/cache/test_readahead.py: per file, the
header, then one vector read per cluster of the baskets of the given branches, each waiting for
the previous one (no read-ahead of its own). Run with /usr/bin/python3 (XRootD bindings).

usage: readahead_client.py PLAN.json URL [PLAN.json URL]... [--verify LOCAL_DIR]
  PLAN.json: the output of `ferry root baskets FILE --branch B...` for the file at URL.
  --verify: compare every chunk with the file of the same name in LOCAL_DIR.
Prints one JSON line: seconds, bytes, vector_reads, files.
"""
import json
import os
import sys
import time

from XRootD import client
from XRootD.client.flags import OpenFlags

MAX_CHUNKS = 1024


def main():
    args = sys.argv[1:]
    verify = None
    if "--verify" in args:
        i = args.index("--verify")
        verify = args[i + 1]
        del args[i:i + 2]
    pairs = list(zip(args[0::2], args[1::2]))
    total = 0
    vreads = 0
    t0 = time.monotonic()
    for plan_path, url in pairs:
        with open(plan_path) as f:
            plan = json.load(f)
        local = None
        if verify:
            with open(os.path.join(verify, url.rsplit("/", 1)[-1]), "rb") as f:
                local = f.read()
        fh = client.File()
        st, _ = fh.open(url, OpenFlags.READ)
        if not st.ok:
            sys.exit("open %s: %s" % (url, st.message))
        st, _ = fh.read(0, 1024)  # the header, as every ROOT reader starts
        if not st.ok:
            sys.exit("read header: %s" % st.message)
        for cluster in plan["clusters"]:
            for k in range(0, len(cluster), MAX_CHUNKS):
                chunks = [(off, ln) for off, ln in cluster[k:k + MAX_CHUNKS]]
                st, res = fh.vector_read(chunks)
                if not st.ok:
                    sys.exit("vector_read %s: %s" % (url, st.message))
                vreads += 1
                for c in res.chunks:
                    total += c.length
                    if local is not None and c.buffer != local[c.offset:c.offset + c.length]:
                        sys.exit("mismatch in %s at %d+%d" % (url, c.offset, c.length))
        fh.close()
    print(json.dumps({"seconds": time.monotonic() - t0, "bytes": total, "vector_reads": vreads,
                      "files": len(pairs)}))


if __name__ == "__main__":
    main()
