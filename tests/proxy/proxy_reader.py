"""Reader child for test_proxy.py: reads through XrdCl and checks every byte against local copies
(the helpers of tests/cache/cache_reader.py do the checking; its own modes, e.g. `pass`, are
used directly).

usage: proxy_reader.py MODE ARGS...     (run with /usr/bin/python3: it can import XRootD)
  missing URL                         open a file that does not exist: prints the error number
  bigv URL LOCAL                      the largest vector reads XrdCl sends: 1024 chunks (32 MiB in
                                      all), and chunks of readv_ior_max (2097136 bytes)
  concurrent MODE N URL=LOCAL...      N async requests at once (MODE readv or read), one file
                                      each (or N on one file): prints {"seconds":S,"ok":bool}
  storm THREADS OPENS SEED URL=LOCAL... each thread opens files at random, reads 2 bytes,
                                      stats and closes, OPENS times: prints {"opens":N,...}
  rounds URL LOCAL SEED N GATE        opens URL once, then N rounds of 32-chunk vector reads of
                                      random ranges; after half of them prints "half" and waits
                                      (at most 120 s) until the file GATE exists, then reads the
                                      rest through the same open file (a test kills a server
                                      before it makes GATE: XrdCl must recover)
  answers URL LOCAL OFF:LEN...        opens URL, reads each range (a read, then a one-chunk
                                      vector read): prints {"open":A,"reads":[A...]}, each A
                                      "ok" or [errno, code, message]; bytes read are checked
  reads URL LOCAL SIZE                opens URL and reads it whole in plain reads (kXR_read) of
                                      SIZE bytes, one after the other: prints {"reads":N}
  span URL LOCAL SIZE FROM TO ORDER GATE
                                      opens URL and reads [FROM, TO) in plain reads of SIZE bytes,
                                      in file order (ORDER up) or backwards (down); prints "read",
                                      then keeps the file open until the file GATE exists (at
                                      most 120 s; GATE "-": closes at once)
Exit 0 when every byte read matched; 1 (with a message) otherwise.
"""
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cache"))
from cache_reader import chunks_for, open_file, vector_check  # noqa: E402
from XRootD import client  # noqa: E402
from XRootD.client.flags import OpenFlags  # noqa: E402


def do_rounds(url, local, seed, n, gate):
    data = open(local, "rb").read()
    f = open_file(url)
    rnd = random.Random(seed)
    for k in range(n):
        if k == n // 2:
            print("half", flush=True)
            deadline = time.time() + 120
            while not os.path.exists(gate) and time.time() < deadline:
                time.sleep(0.05)
        err = vector_check(f, data, chunks_for(len(data), rnd, 32))
        if err:
            sys.exit("round %d: %s" % (k, err))
    print("rounds %d" % n, flush=True)


def pairs(args):
    out = []
    for a in args:
        url, local = a.split("=", 1)
        out.append((url, open(local, "rb").read()))
    return out


def do_concurrent(mode, n, files):
    handles = [(open_file(url), data) for url, data in files]
    # Connections past TCP slow start, origin files open: what is timed is the reads.
    for f, _ in handles:
        f.read(len(_) - 1, 1)
    done, lock, ev = [], threading.Lock(), threading.Event()
    bad = []

    def make_cb(data, chunks):
        def cb(status, resp, hosts):
            good = status.ok
            if good and mode == "readv":
                good = all(c.buffer == data[c.offset:c.offset + c.length] for c in resp.chunks)
            elif good:
                good = resp == data[chunks[0][0]:chunks[0][0] + chunks[0][1]]
            with lock:
                done.append(time.time())
                if not good:
                    bad.append(status.message)
                if len(done) == n:
                    ev.set()
        return cb

    rnd = random.Random(n)
    t0 = time.time()
    for i in range(n):
        f, data = handles[i % len(handles)]
        if mode == "readv":
            # Small chunks: what is measured is latency, not the link's throughput.
            chunks = [(c[0], 512) for c in chunks_for(len(data), rnd, 8)]
            f.vector_read(chunks, callback=make_cb(data, chunks))
        else:
            # Just above XrdXrootd's smallest asynchronous read (96 KiB).
            off = rnd.randrange(0, len(data) - 100000)
            f.read(off, 100000, callback=make_cb(data, [(off, 100000)]))
    ev.wait(120)
    print(json.dumps({"seconds": time.time() - t0, "ok": len(done) == n and not bad,
                      "errors": bad[:3]}))
    for f, _ in handles:
        f.close()


def do_storm(threads, opens, seed, files):
    errors, counts = [], [0] * threads

    def worker(k):
        rnd = random.Random(seed * 1000 + k)
        for _ in range(opens):
            url, data = files[rnd.randrange(len(files))]
            f = client.File()
            st, _ = f.open(url, OpenFlags.READ)
            if not st.ok:
                errors.append("open: " + st.message)
                continue
            off = rnd.randrange(0, len(data) - 2)
            st, buf = f.read(off, 2)
            if not st.ok or buf != data[off:off + 2]:
                errors.append("read: %s" % st.message)
            st, info = f.stat()
            if not st.ok or info.size != len(data):
                errors.append("stat: %s" % st.message)
            f.close()
            counts[k] += 1

    t0 = time.time()
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print(json.dumps({"opens": sum(counts), "errors": len(errors), "first": errors[:3],
                      "seconds": time.time() - t0}))
    if errors:
        sys.exit(1)


def answer(st):
    return "ok" if st.ok else [st.errno, st.code, st.message]


def do_answers(url, local, ranges):
    """What the proxy answers, error or bytes, to an open and to reads of `ranges`."""
    data = open(local, "rb").read()
    f = client.File()
    st, _ = f.open(url, OpenFlags.READ)
    out = {"open": answer(st), "reads": []}
    if st.ok:
        for r in ranges:
            off, n = (int(x) for x in r.split(":"))
            st, buf = f.read(off, n)
            if st.ok and buf != data[off:off + n]:
                sys.exit("read mismatch at %d+%d" % (off, n))
            st2, res = f.vector_read([(off, n)])
            if st2.ok and res.chunks[0].buffer != data[off:off + n]:
                sys.exit("vector read mismatch at %d+%d" % (off, n))
            out["reads"].append([answer(st), answer(st2)])
        f.close()
    print(json.dumps(out))


def do_reads(url, local, size):
    data = open(local, "rb").read()
    f = open_file(url)
    n = 0
    for off in range(0, len(data), size):
        st, buf = f.read(off, size)
        if not st.ok:
            sys.exit("read at %d+%d: %s" % (off, size, st.message))
        if buf != data[off:off + size]:
            sys.exit("read mismatch at %d+%d" % (off, size))
        n += 1
    f.close()
    print(json.dumps({"reads": n}))


def do_span(url, local, size, lo, hi, order, gate):
    data = open(local, "rb").read()
    f = open_file(url)
    offsets = list(range(lo, hi, size))
    if order == "down":
        offsets.reverse()
    for off in offsets:
        n = min(size, hi - off)
        st, buf = f.read(off, n)
        if not st.ok or buf != data[off:off + n]:
            sys.exit("span: read at %d: %s" % (off, st.message if not st.ok else "wrong bytes"))
    print("read", flush=True)
    deadline = time.monotonic() + 120
    while gate != "-" and not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.02)
    f.close()


def main():
    mode = sys.argv[1]
    if mode == "bigv":
        url, local = sys.argv[2], sys.argv[3]
        data = open(local, "rb").read()
        f = open_file(url)
        slot = len(data) // 1024
        for chunks in ([(i * slot, 32768) for i in range(1024)],
                       [(i * 2200000, 2097136) for i in range(len(data) // 2200000)]):
            st, res = f.vector_read(chunks)
            if not st.ok:
                sys.exit("vector_read of %d chunks: %s" % (len(chunks), st.message))
            for c in res.chunks:
                if c.buffer != data[c.offset:c.offset + c.length]:
                    sys.exit("mismatch at %d+%d" % (c.offset, c.length))
        f.close()
    elif mode == "missing":
        f = client.File()
        st, _ = f.open(sys.argv[2], OpenFlags.READ)
        print("ok" if st.ok else "errno %d %s" % (st.errno, st.message))
    elif mode == "concurrent":
        do_concurrent(sys.argv[2], int(sys.argv[3]), pairs(sys.argv[4:]))
    elif mode == "answers":
        do_answers(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif mode == "reads":
        do_reads(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif mode == "span":
        do_span(sys.argv[2], sys.argv[3], *(int(x) for x in sys.argv[4:7]), *sys.argv[7:9])
    elif mode == "rounds":
        do_rounds(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
    elif mode == "storm":
        do_storm(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), pairs(sys.argv[5:]))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
