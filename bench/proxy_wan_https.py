#!/usr/bin/env python3
"""The HTTPS pass of bench/proxy_wan.sh: the replay's sparse pattern read with curl.

usage: proxy_wan_https.py MODE URL_PREFIX CA_PEM DATA_DIR NAME... [--threads N] [--every K]
                          [--per-get N] [--seed S]
  MODE multi   every chunk of the pattern, PER_GET (64) ranges per GET (multipart/byteranges),
               like the replay's 64-chunk vector reads
  MODE single  every K-th (16) chunk, one range per GET (a plain 206 answer)

The pattern is cache_wan_replay's construction (each file cut into equal slots, one chunk of
2-16 KiB at a random offset in each, 6% of the file), drawn with Python's own generator: the
same shape, not the same offsets. THREADS (4) curl processes run at once, each reading its
files' GETs one after another over one kept-alive connection (a curl config file with `next`
between requests), as a client of the proxy or of the origin would. Every answer is checked
against DATA_DIR/NAME after the clock stops. Prints one JSON object: wall_s, bytes (the
ranges' bytes), body_bytes (what curl received, multipart framing included), requests,
connects (TCP connections curl opened), ranges. Exit 1 on a failed request or a wrong byte.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

MIN_LEN, MAX_LEN, FRACTION = 2048, 16384, 0.06


def pattern(size, seed):
    """[(offset, length)] in file order: cache_wan_replay's slots, Python's generator."""
    rng = random.Random(seed)
    n = max(1, int(FRACTION * size / (0.5 * (MIN_LEN + MAX_LEN))))
    slot = size // n
    out = []
    for i in range(n):
        length = min(rng.randint(MIN_LEN, MAX_LEN), slot)
        out.append((i * slot + rng.randint(0, slot - length), length))
    return out


def requests_for(mode, chunks, per_get, every):
    """The GETs of one file: lists of (offset, length), one list per request."""
    if mode == "single":
        return [[c] for c in chunks[::every]]
    return [chunks[i:i + per_get] for i in range(0, len(chunks), per_get)]


def parse_multipart(headers, body):
    """{first: bytes} of a multipart/byteranges answer (None if it is not one)."""
    boundary = None
    for line in headers.splitlines():
        if line.lower().startswith("content-type:") and "boundary=" in line:
            boundary = line.split("boundary=", 1)[1].strip().strip('"')
    if boundary is None:
        return None
    parts = {}
    for chunk in body.split(b"--" + boundary.encode())[1:]:
        if chunk.startswith(b"--"):
            break
        head, _, data = chunk.partition(b"\r\n\r\n")
        for line in head.decode(errors="replace").splitlines():
            if line.lower().startswith("content-range"):
                first, last = line.split("bytes", 1)[1].strip().split("/")[0].split("-")
                parts[int(first)] = data[:int(last) - int(first) + 1]
    return parts


def covered(parts, o, data):
    """A part of the answer holds `data` at offset o (a server may merge adjacent ranges)."""
    return any(first <= o and got[o - first:o - first + len(data)] == data
               for first, got in parts.items())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("multi", "single"))
    ap.add_argument("prefix")
    ap.add_argument("ca")
    ap.add_argument("data")
    ap.add_argument("names", nargs="+")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--every", type=int, default=16)
    ap.add_argument("--per-get", type=int, default=64)
    ap.add_argument("--seed", type=int, default=42)
    a = ap.parse_args()

    work = tempfile.mkdtemp(prefix="pwan-https-")
    try:
        jobs = [[] for _ in range(a.threads)]  # per worker: [(name, ranges, body, headers)]
        k = 0
        for i, name in enumerate(a.names):
            size = os.path.getsize(os.path.join(a.data, name))
            for rq in requests_for(a.mode, pattern(size, a.seed + i), a.per_get, a.every):
                jobs[i % a.threads].append((name, rq, os.path.join(work, "b%06d" % k),
                                            os.path.join(work, "h%06d" % k)))
                k += 1
        cfgs = []
        for w, job in enumerate(jobs):
            if not job:
                continue
            cfg = os.path.join(work, "curl-%d.cfg" % w)
            with open(cfg, "w") as f:
                for n, (name, rq, body, hdr) in enumerate(job):
                    if n:
                        f.write("next\n")
                    f.write('url = "%s%s"\nrange = "%s"\noutput = "%s"\ndump-header = "%s"\n'
                            'cacert = "%s"\nsilent\nshow-error\nmax-time = 120\n'
                            'write-out = "%%{http_code} %%{size_download} %%{num_connects}\\n"\n'
                            % (a.prefix, name, ",".join("%d-%d" % (o, o + n_ - 1)
                                                        for o, n_ in rq), body, hdr, a.ca))
            cfgs.append((cfg, job))
        t0 = time.monotonic()
        procs = [(subprocess.Popen(["curl", "-K", cfg], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True), job) for cfg, job in cfgs]
        outs = []
        for p, job in procs:
            try:
                out, err = p.communicate(timeout=900)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
                err += " (timed out)"
            outs.append((p.returncode, out, err, job))
        wall = time.monotonic() - t0

        result = {"mode": a.mode, "wall_s": wall, "bytes": 0, "body_bytes": 0, "requests": 0,
                  "connects": 0, "ranges": 0, "files": len(a.names)}
        bad = []
        files = {}  # name: open file, for the expected bytes
        for rc, out, err, job in outs:
            lines = out.split("\n")
            if rc != 0:
                bad.append("curl exit %d: %s" % (rc, err.strip()[-300:]))
            for n, (name, rq, body_path, hdr_path) in enumerate(job):
                code, got, conns = (lines[n].split() + ["0", "0", "0"])[:3] \
                    if n < len(lines) else ("0", "0", "0")
                result["requests"] += 1
                result["body_bytes"] += int(got)
                result["connects"] += int(conns)
                result["ranges"] += len(rq)
                result["bytes"] += sum(length for _, length in rq)
                if code != "206":
                    bad.append("%s %s: HTTP %s" % (name, rq[0], code))
                    continue
                if name not in files:
                    files[name] = open(os.path.join(a.data, name), "rb")

                def want(o, length, f=files[name]):
                    f.seek(o)
                    return f.read(length)
                with open(body_path, "rb") as f:
                    body = f.read()
                if len(rq) == 1:
                    o, length = rq[0]
                    if body != want(o, length):
                        bad.append("%s %d+%d: wrong bytes" % (name, o, length))
                    continue
                with open(hdr_path) as f:
                    parts = parse_multipart(f.read(), body)
                if parts is None or any(not covered(parts, o, want(o, length)) for o, length in rq):
                    bad.append("%s: a multi-range answer of %d ranges from %d is wrong" % (
                        name, len(rq), rq[0][0]))
        for f in files.values():
            f.close()
        result["failed"] = len(bad)
        print(json.dumps(result))
        for b in bad[:10]:
            print("proxy_wan_https: " + b, file=sys.stderr)
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
