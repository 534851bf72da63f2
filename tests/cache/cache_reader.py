"""Reader child for test_cache_plugin.py: reads through XrdCl (and so through the ferry cache
plug-in when XRD_PLUGINCONFDIR names its conf) and checks every byte against local copies.

usage: cache_reader.py MODE ARGS...     (run with /usr/bin/python3: it can import XRootD)
  pass URL LOCAL SEED              64-chunk vector reads + plain reads over the whole file
  ranges URL LOCAL OFF:LEN...      plain reads of the given ranges
  loop URL LOCAL SEED              endless vector reads of fresh random ranges (killed by test),
                                   a line "read" after each
  threads THREADS ROUNDS SEED URL=LOCAL...   threads x rounds of vector reads over several files
  copy URL OUT                     the whole file in 256 KiB reads into OUT (created only once
                                   the open succeeded): what a user got, byte for byte
  slow URL LOCAL COUNT SLEEP_MS [PROGRESS]   one read at a time, tolerating errors: prints
                                   "ok=N err=M"; appends a line "ok" or "err" to the file
                                   PROGRESS after each read (a test waits on it)
Exit 0 when every byte read matched; 1 (with a message) otherwise.
"""
import random
import sys
import threading
import time

from XRootD import client
from XRootD.client.flags import OpenFlags


def open_file(url):
    f = client.File()
    st, _ = f.open(url, OpenFlags.READ)
    if not st.ok:
        sys.exit("open %s: %s" % (url, st.message))
    return f


def chunks_for(size, rnd, n=64):
    slot = size // n
    out = []
    for i in range(n):
        ln = rnd.randrange(2048, 16384)
        out.append((i * slot + rnd.randrange(0, slot - ln), ln))
    return out


def vector_check(f, data, chunks):
    st, res = f.vector_read(chunks)
    if not st.ok:
        return "vector_read: %s" % st.message
    for c in res.chunks:
        if c.buffer != data[c.offset:c.offset + c.length]:
            return "mismatch at %d+%d" % (c.offset, c.length)
    return None


def main():
    mode = sys.argv[1]
    if mode == "pass":
        url, local, seed = sys.argv[2], sys.argv[3], int(sys.argv[4])
        data = open(local, "rb").read()
        f = open_file(url)
        st, info = f.stat()
        if not st.ok or info.size != len(data):
            sys.exit("stat: %s size %s" % (st.message, getattr(info, "size", None)))
        rnd = random.Random(seed)
        for _ in range(3):
            err = vector_check(f, data, chunks_for(len(data), rnd))
            if err:
                sys.exit(err)
        for off, ln in [(0, 1000), (len(data) // 3, 70000), (len(data) - 100, 4096)]:
            st, buf = f.read(off, ln)
            if not st.ok or buf != data[off:off + ln]:
                sys.exit("read %d+%d: %s" % (off, ln, st.message))
        f.close()
    elif mode == "ranges":
        url, local = sys.argv[2], sys.argv[3]
        data = open(local, "rb").read()
        f = open_file(url)
        for spec in sys.argv[4:]:
            off, ln = (int(x) for x in spec.split(":"))
            st, buf = f.read(off, ln)
            if not st.ok or buf != data[off:off + ln]:
                sys.exit("read %d+%d: %s" % (off, ln, st.message))
        f.close()
    elif mode == "loop":
        url, local, seed = sys.argv[2], sys.argv[3], int(sys.argv[4])
        data = open(local, "rb").read()
        f = open_file(url)
        rnd = random.Random(seed)
        for _ in range(100000):
            err = vector_check(f, data, chunks_for(len(data), rnd, 32))
            if err:
                sys.exit(err)
            print("read", flush=True)  # the killing test waits for the first
    elif mode == "threads":
        nthreads, rounds, seed = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        files = [spec.split("=", 1) for spec in sys.argv[5:]]
        datas = [open(local, "rb").read() for _, local in files]
        errors = []

        def work(t):
            rnd = random.Random(seed * 100 + t)
            handles = [open_file(url) for url, _ in files]
            for _ in range(rounds):
                k = rnd.randrange(len(files))
                err = vector_check(handles[k], datas[k], chunks_for(len(datas[k]), rnd, 16))
                if err:
                    errors.append(err)
                    return
            for h in handles:
                h.close()

        threads = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            sys.exit("; ".join(errors))
    elif mode == "copy":
        f = open_file(sys.argv[2])
        st, info = f.stat()
        if not st.ok:
            sys.exit("stat: %s" % st.message)
        with open(sys.argv[3], "wb") as out:
            for off in range(0, info.size, 256 * 1024):
                st, buf = f.read(off, min(256 * 1024, info.size - off))
                if not st.ok:
                    sys.exit("read %d: %s" % (off, st.message))
                out.write(buf)
        f.close()
    elif mode == "slow":
        url, local, count, sleep_ms = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        progress = open(sys.argv[6], "a", buffering=1) if len(sys.argv) > 6 else None
        data = open(local, "rb").read()
        f = open_file(url)
        rnd = random.Random(3)
        ok = err = 0
        ok_after_err = 0
        for _ in range(count):
            off = rnd.randrange(0, len(data) - 20000)
            ln = rnd.randrange(100, 20000)
            st, buf = f.read(off, ln)
            if st.ok:
                if buf != data[off:off + ln]:
                    sys.exit("mismatch at %d+%d" % (off, ln))
                ok += 1
                if err:
                    ok_after_err += 1
            else:
                err += 1
            if progress:
                progress.write("ok\n" if st.ok else "err\n")
            time.sleep(sleep_ms / 1000.0)
        print("ok=%d err=%d ok_after_err=%d" % (ok, err, ok_after_err))
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":  # tests/proxy/proxy_reader.py imports the helpers
    main()
