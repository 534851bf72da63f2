#!/usr/bin/python3
"""Session fuzzer for the site proxy's ports: whole XRootD and HTTPS conversations, generated
and mutated with structure, replayed byte for byte, and a runner that watches the server's own
xrootd process (not `ferry`, which may supervise and restart it).

A session is a target and a list of chunks:
  target  x: the xroot port;  h: the HTTPS port, inside TLS;  t: the HTTPS port, raw TCP
  chunks  S(bytes) send,  R read one answer (xroot: one response; HTTPS: until quiet),
          C shut the write side,  P(ms) pause
and is stored as a small binary file (.fses, see Session.encode):
  b"FSES" 1 | target (1 byte) | u16 note length | note (UTF-8) | chunks: op (1 byte) u32 len data

usage (the servers are started by test_session_fuzz.py, or point it at any host:port):
  session_fuzz.py run --xroot-port P [--https-port H] [--pid-file F] [--seed S] [--count N]
                      [--concurrency C] [--seconds T] [--corpus DIR] [--out DIR]
  session_fuzz.py replay --xroot-port P [--https-port H] [--pid-file F] FILE|DIR...
  session_fuzz.py show FILE...          a session, decoded for reading
  session_fuzz.py gen --seed S --count N --out DIR     generated sessions, not run
  session_fuzz.py pick --seed S --count N --out DIR    the smallest generated session of each
                                                       kind (features()), for a corpus
Run with /usr/bin/python3. Only 127.0.0.1 is targeted unless --host says otherwise.
"""
import argparse
import concurrent.futures
import hashlib
import os
import random
import re
import socket
import ssl
import struct
import sys
import threading
import time

# ---------------------------------------------------------------------------------------------
# The session file

MAGIC = b"FSES\x01"
TARGETS = (b"x", b"h", b"t")


class Session:
    def __init__(self, target, chunks, note=""):
        self.target = target  # "x", "h" or "t"
        self.chunks = list(chunks)  # [(op, bytes)]: ("S", data), ("R", b""), ("C", b""), ("P", ms)
        self.note = note

    def encode(self):
        note = self.note.encode()[:65535]
        out = [MAGIC, self.target.encode(), struct.pack(">H", len(note)), note]
        for op, data in self.chunks:
            if op == "P":
                data = struct.pack(">I", data)
            out.append(op.encode() + struct.pack(">I", len(data)) + data)
        return b"".join(out)

    @staticmethod
    def decode(blob):
        if not blob.startswith(MAGIC) or blob[5:6] not in TARGETS:
            raise ValueError("not a session file")
        n = struct.unpack(">H", blob[6:8])[0]
        note = blob[8:8 + n].decode(errors="replace")
        pos, chunks = 8 + n, []
        while pos + 5 <= len(blob):
            op = chr(blob[pos])
            size = struct.unpack(">I", blob[pos + 1:pos + 5])[0]
            data = blob[pos + 5:pos + 5 + size]
            pos += 5 + size
            if op == "P":
                data = struct.unpack(">I", data)[0] if len(data) == 4 else 0
            elif op not in "SRC":
                raise ValueError("unknown chunk %r" % op)
            chunks.append((op, data))
        return Session(blob[5:6].decode(), chunks, note)

    def digest(self):
        return hashlib.sha1(self.encode()).hexdigest()[:12]

    def describe(self):
        lines = ["target %s  note: %s" % (self.target, self.note)]
        for op, data in self.chunks:
            if op == "S":
                lines.append("  S %6d  %s" % (len(data), describe_bytes(self.target, data)))
            elif op == "P":
                lines.append("  P %d ms" % data)
            else:
                lines.append("  " + op)
        return "\n".join(lines)


def load(path):
    with open(path, "rb") as f:
        return Session.decode(f.read())


def corpus_files(paths):
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, n) for n in os.listdir(p) if n.endswith(".fses"))
        else:
            out.append(p)
    return out


def save(session, directory, prefix):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "%s-%s.fses" % (prefix, session.digest()))
    with open(path, "wb") as f:
        f.write(session.encode())
    return path


# ---------------------------------------------------------------------------------------------
# XRootD requests (XProtocol.hh, 5.5.3): a request is a 24-byte header (stream id[2],
# request id u16, 16 bytes of parameters, dlen i32) and dlen bytes of data.

REQ = dict(auth=3000, query=3001, chmod=3002, close=3003, dirlist=3004, gpfile=3005,
           protocol=3006, login=3007, mkdir=3008, mv=3009, open=3010, ping=3011, chkpoint=3012,
           read=3013, rm=3014, rmdir=3015, sync=3016, stat=3017, set=3018, write=3019,
           fattr=3020, prepare=3021, statx=3022, endsess=3023, bind=3024, readv=3025,
           pgwrite=3026, locate=3027, truncate=3028, sigver=3029, pgread=3030, writev=3031)
REQ_NAME = {v: k for k, v in REQ.items()}
HANDSHAKE = struct.pack(">iiiii", 0, 0, 0, 4, 2012)
FILE_SIZE = 3 * 1024 * 1024 + 123  # the test bed's files
PATHS = [b"/data/a/alice.bin", b"/data/b/bob.bin", b"/public/pub.bin", b"/data/a", b"/data",
         b"/", b"", b"//data/a/alice.bin", b"/data/a/../a/alice.bin",
         b"/public/../data/a/alice.bin", b"/data/a/alice.bin?authz=Bearer%20x",
         b"/data/a/alice.bin?xrd.wantprot=unix", b"/data/a/alice.bin?ofs.posc=1",
         b"/nope/none.bin", b"/data/a/alice.bin\0/public/pub.bin", b"/%2e%2e/data/a/alice.bin",
         b"/public/pub.bin?" + b"x=" * 300, b"/" + b"a" * 4100, b"/public/new.bin",
         b"/data/a/alice.bin ", b"\xff\xfe/data", b"/data/a/alice.bin/."]


class XGen:
    """Structured XRootD requests from one random generator."""

    def __init__(self, rng):
        self.r = rng
        self.lies = []

    def sid(self):
        r = self.r.random()
        if r < 0.6:
            return bytes([0, self.r.randint(1, 8)])
        return self.r.choice([b"\0\0", b"\xff\xff", self.r.randbytes(2)])

    def fh(self):
        return self.r.choice([b"\0\0\0\0", b"\0\0\0\0", b"\1\0\0\0", b"\0\0\0\1", b"\xff" * 4,
                              self.r.randbytes(4)])

    def offset(self):
        return self.r.choice([0, 0, 1, 4096, 65536, FILE_SIZE - 1, FILE_SIZE, FILE_SIZE + 1,
                              (1 << 63) - 1, -1, -4096, self.r.randint(-(1 << 63), (1 << 63) - 1),
                              self.r.randint(0, FILE_SIZE)])

    def length(self):
        return self.r.choice([0, 1, 100, 4096, 4096, 65536, 1 << 20, (1 << 31) - 1, -1,
                              -(1 << 31), self.r.randint(-(1 << 31), (1 << 31) - 1)])

    def path(self):
        if self.r.random() < 0.1:
            return self.r.randbytes(self.r.randint(0, 300))
        p = self.r.choice(PATHS)
        if self.r.random() < 0.15:
            p += b"?" + self.r.choice([b"authz=", b"xrd.gsiusrpxy=", b"tried=", b"ferry.x="]) + \
                self.r.randbytes(self.r.randint(0, 40)).replace(b"&", b"")
        return p

    def dlen(self, data):
        """The length the header states: mostly the truth, else a lie."""
        if self.r.random() < 0.8:
            return len(data)
        lie = self.r.choice([len(data) - 1, len(data) + 1, len(data) + self.r.randint(2, 2000), 0,
                             -1, -self.r.randint(2, 1 << 31), (1 << 31) - 1, 1 << 24,
                             self.r.randint(-(1 << 31), (1 << 31) - 1)])
        self.lies.append(lie)
        return lie

    def request(self, code, params, data=b"", dlen=None):
        params = (params + b"\0" * 16)[:16]
        return struct.pack(">2sH16si", self.sid(), code, params,
                           self.dlen(data) if dlen is None else dlen) + data

    # -- the session's first steps
    def handshake(self):
        kind = self.r.choices(["right", "truncated", "wrong", "none", "twice"],
                              [70, 8, 10, 6, 6])[0]
        if kind == "right":
            return kind, HANDSHAKE
        if kind == "truncated":
            return kind, HANDSHAKE[:self.r.randint(1, 19)]
        if kind == "wrong":
            vals = [0, 0, 0, 4, 2012]
            vals[self.r.randint(0, 4)] = self.r.randint(-(1 << 31), (1 << 31) - 1)
            return kind, struct.pack(">iiiii", *vals)
        if kind == "twice":
            return kind, HANDSHAKE + HANDSHAKE
        return kind, b""

    def protocol(self):
        flags = self.r.choice([1, 1, 0, 3, 9, 0x0b, self.r.randint(0, 255)])
        if flags & 4 and self.r.random() < 0.8:
            flags &= ~4  # wantTLS: the server then waits for a TLS handshake; sometimes kept
        expect = self.r.choice([0, 3, 1, 2, self.r.randint(0, 255)])
        pv = self.r.choice([0x520, 0x500, 0x310, 0, -1, self.r.randint(0, 1 << 31)])
        return self.request(REQ["protocol"], struct.pack(">iBB", pv, flags, expect))

    def login(self):
        user = self.r.choice([b"alice", b"bob", b"mallory", b"ferryc1", b"ferryproxy", b"",
                              b"root", self.r.randbytes(8)])
        cgi = b""
        if self.r.random() < 0.35:
            cgi = self.r.choice([b"xrd.cc=us&xrd.tz=0&xrd.appname=fz&xrd.info=&xrd.hostname=h",
                                 b"&xrd.sectoken=" + self.r.randbytes(20).hex().encode(),
                                 b"&" * self.r.randint(1, 300),
                                 self.r.randbytes(self.r.randint(1, 600)),
                                 b"xrd.rn=" + b"9" * 200])
        params = struct.pack(">i8sBBBB", self.r.choice([os.getpid() & 0x7fffffff, 0, -1]),
                             user.ljust(8, b"\0")[:8], self.r.randint(0, 3),
                             self.r.randint(0, 255), self.r.choice([5, 4, 0, 0x85, 255]), 0)
        return self.request(REQ["login"], params, cgi)

    # -- credentials of each protocol's type
    def credentials(self):
        proto = self.r.choice(["sss", "sss", "unix", "gsi", "ztn", "krb5", "pwd", "host", "\0\0\0"])
        name = proto.encode()[:4].ljust(4, b"\0")
        shape = self.r.choices(["empty", "name", "truncated", "random", "structured", "oversized"],
                               [10, 10, 10, 20, 40, 10])[0]
        if shape == "empty":
            return proto, shape, name, b""
        if shape == "name":
            return proto, shape, name, proto.encode() + b"\0"
        if shape == "oversized":
            return proto, shape, name, proto.encode() + b"\0" + self.r.randbytes(
                self.r.choice([70000, 70000, 300000, 1100000]))
        if shape == "random":
            return proto, shape, name, proto.encode() + b"\0" + self.r.randbytes(
                self.r.randint(1, 2000))
        body = self.structured(proto)
        if shape == "truncated":
            body = body[:self.r.randint(0, max(0, len(body) - 1))]
        return proto, shape, name, proto.encode() + b"\0" + body

    def structured(self, proto):
        r = self.r
        if proto == "sss":
            # XrdSecsss's header: version, the key name size and options, then the sealed
            # credentials (encrypted with a key the fuzzer does not have).
            head = struct.pack(">BBBBq", r.choice([0, 1, 2, 255]), r.choice([0, 1, 2, 255]),
                               r.randint(0, 255), r.randint(0, 255),
                               r.choice([0, 1, -1, r.randint(0, 1 << 62)]))
            return head + r.randbytes(r.choice([0, 8, 16, 32, 200]))
        if proto == "unix":
            return r.choice([b"alice users", b"alice", b"root root", b"", b" ",
                             b"a" * 5000, r.randbytes(30)])
        if proto != "ztn":
            # an XrdSutBuffer: step, then buckets (type, size, data), ended by type 0
            out = struct.pack(">i", r.choice([1000, 1001, 1002, 2000, 0, -1,
                                              r.randint(-(1 << 31), (1 << 31) - 1)]))
            for _ in range(r.randint(0, 5)):
                data = r.randbytes(r.choice([0, 4, 64, 600, 3000]))
                size = r.choice([len(data)] * 4 + [len(data) + 100, -1, (1 << 31) - 1])
                out += struct.pack(">ii", r.choice([3001, 3002, 3004, 3006, 3010, 3020, 0,
                                                    r.randint(0, 5000)]), size) + data
            if r.random() < 0.7:
                out += struct.pack(">i", 0)
            return out
        # ztn: version, option, reserved, token length, token
        token = r.choice([b"", b"x", b"e30.e30.", b"eyJhbGciOiJub25lIn0.eyJzdWIiOiJhbGljZSJ9.",
                          b"A" * 9000, r.randbytes(r.randint(1, 400))])
        return struct.pack(">BBBBH", r.choice([0, 1, 255]), r.randint(0, 255), 0, 0,
                           r.choice([len(token), len(token) + 10, 0, 65535])) + token + b"\0"

    def auth(self):
        proto, shape, name, cred = self.credentials()
        if self.r.random() < 0.15:
            name = self.r.choice([b"sss\0", b"gsi\0", self.r.randbytes(4)])
        return "auth:%s:%s" % (proto, shape), self.request(REQ["auth"], b"\0" * 12 + name, cred)

    # -- every other request
    def any_request(self):
        r = self.r
        name = r.choice(list(REQ) + ["unknown"])
        if name == "unknown":
            code = r.choice([0, 1, 2999, 3032, 3100, 4000, 65535, r.randint(0, 65535)])
            return "req:%d" % code, self.request(code, r.randbytes(16),
                                                 r.randbytes(r.randint(0, 64)))
        code = REQ[name]
        fh, p, pk = self.fh(), self.path(), struct.pack
        if name == "auth":
            return self.auth()
        if name == "protocol":
            return name, self.protocol()
        if name == "login":
            return name, self.login()
        if name == "open":
            opts = r.choice([0x10, 0x10, 0x410, 0x20, 0x08, 0x102, r.randint(0, 65535)])
            return name, self.request(code, pk(">HHH6s4s", r.choice([0, 0o644, 0xffff]), opts,
                                                r.randint(0, 3), b"", r.randbytes(4)), p)
        if name in ("read", "pgread"):
            args = r.choice([b"", b"", pk(">B7s", 0, b""), r.randbytes(r.randint(1, 40))])
            return name, self.request(code, fh + pk(">qi", self.offset(), self.length()), args)
        if name == "readv":
            data = b"".join(fh + pk(">iq", self.length(), self.offset())
                            for _ in range(r.choice([0, 1, 2, 5, 300, 1100])))
            if r.random() < 0.2:
                data += r.randbytes(r.randint(1, 15))  # not a whole number of elements
            return name, self.request(code, b"", data)
        if name in ("write", "pgwrite"):
            data = r.randbytes(r.choice([0, 1, 100, 4100, 70000]))
            return name, self.request(code, fh + pk(">qBB", self.offset(), r.randint(0, 2),
                                                    r.randint(0, 255)), data)
        if name == "writev":
            n = r.choice([0, 1, 3, 2000])
            items = b"".join(fh + pk(">iq", r.choice([1, 10, -1, 1 << 30]), self.offset())
                             for _ in range(n))
            return name, self.request(code, b"", items + r.randbytes(r.randint(0, 100)))
        if name in ("stat", "statx"):
            return name, self.request(code, pk(">B7s4s", r.randint(0, 3), b"", fh),
                                      p if name == "stat" else b"\n".join([p, self.path()]))
        if name in ("close", "sync", "chkpoint"):
            return name, self.request(code, fh + r.choice([b"", r.randbytes(12)]),
                                      r.choice([b"", b"", r.randbytes(8)]))
        if name == "truncate":
            return name, self.request(code, fh + pk(">q", self.offset()),
                                      r.choice([b"", p]))
        if name == "query":
            return name, self.request(code, pk(">H2s4s", r.choice([1, 2, 3, 5, 7, 8, 9, 10,
                                                                    r.randint(0, 65535)]),
                                                b"", fh), r.choice([p, b"config", b"", b"space",
                                                                    r.randbytes(50)]))
        if name in ("dirlist", "locate", "rm", "rmdir", "mkdir", "chmod", "gpfile", "prepare"):
            return name, self.request(code, r.randbytes(16) if r.random() < 0.3 else
                                      pk(">H14s", r.randint(0, 3), b""), p)
        if name == "mv":
            a, b = p, self.path()
            return name, self.request(code, pk(">14sh", b"", r.choice([len(a), -1, 0, 30000])),
                                      a + b" " + b)
        if name == "set":
            return name, self.request(code, b"\0" * 15 + bytes([r.randint(0, 255)]),
                                      r.choice([b"appid fz", b"monitor on", b"cache off", b"",
                                                r.randbytes(100)]))
        if name in ("endsess", "bind"):
            return name, self.request(code, r.choice([b"\0" * 16, r.randbytes(16)]))
        if name == "fattr":
            return name, self.request(code, fh + pk(">BBB", r.randint(0, 6), r.randint(0, 255),
                                                    r.randint(0, 3)),
                                      b"\0" + p + b"\0" + r.randbytes(r.randint(0, 50)))
        if name == "sigver":
            return name, self.request(code, pk(">HBBqB", r.choice([3010, 3013, 0]), 0,
                                               r.randint(0, 255), r.randint(0, 1 << 40), 0),
                                      r.randbytes(r.choice([0, 32, 100])))
        return name, self.request(code, r.randbytes(16), r.randbytes(r.randint(0, 40)))


def gen_xroot(rng):
    g = XGen(rng)
    chunks, steps = [], []

    def send(label, data, read):
        steps.append(label)
        chunks.append(("S", data))
        if read:
            chunks.append(("R", b""))

    kind, hs = g.handshake()
    steps.append("hs:" + kind)
    if kind in ("truncated",) or (kind == "none" and rng.random() < 0.3):
        chunks.append(("S", hs + (rng.randbytes(rng.randint(0, 64)) if kind == "none" else b"")))
        chunks.append(("R", b""))
        return Session("x", chunks, " ".join(steps))
    first = hs
    if rng.random() < 0.8:
        first += g.protocol()
        steps.append("protocol")
    chunks.append(("S", first))
    chunks.append(("R", b""))
    if len(first) > 20:
        chunks.append(("R", b""))
    if rng.random() < 0.85:
        send("login", g.login(), True)
    n_pre = rng.choice([0, 0, 1, 2, 3])
    n_auth = rng.choice([0, 1, 1, 1, 2, 3])
    n_post = rng.choice([0, 1, 2, 3, 4, 6])
    for _ in range(n_pre):
        send(*g.any_request(), rng.random() < 0.7)
    for _ in range(n_auth):
        send(*g.auth(), rng.random() < 0.85)
    for _ in range(n_post):
        send(*g.any_request(), rng.random() < 0.7)
    if rng.random() < 0.25:  # requests pipelined: sends merged into one write
        merged = [c for c in chunks if c[0] == "S"]
        tail = b"".join(d for _, d in merged[1:])
        chunks = chunks[:2] + [("S", tail), ("R", b""), ("R", b"")] if tail else chunks
    if rng.random() < 0.15:  # one request in two writes with a pause
        i = rng.randrange(len(chunks))
        if chunks[i][0] == "S" and len(chunks[i][1]) > 2:
            d = chunks[i][1]
            cut = rng.randint(1, len(d) - 1)
            chunks[i:i + 1] = [("S", d[:cut]), ("P", rng.choice([10, 50, 200])), ("S", d[cut:])]
    if rng.random() < 0.15:
        chunks.append(("C", b""))
    chunks.append(("R", b""))
    if g.lies:
        steps.append("lies:%s" % ",".join(str(x) for x in g.lies[:6]))
    return Session("x", chunks, " ".join(steps))


# ---------------------------------------------------------------------------------------------
# HTTPS requests

HTTP_PATHS = [b"/data/a/alice.bin", b"/data/b/bob.bin", b"/public/pub.bin", b"/", b"/data/a/",
              b"/public/../data/a/alice.bin", b"/%2e%2e/%2e%2e/etc/passwd", b"/data/a/alice.bin%00",
              b"//data/a/alice.bin", b"/public/pub.bin?authz=Bearer%20garbage",
              b"/data/a/alice.bin?authz=" + b"A" * 3000, b"*", b"http://127.0.0.1/public/pub.bin",
              b"/" + b"a" * 9000, b"/public/pub.bin?xrd.wantprot=unix&xrd.gsiusrpxy=/etc/shadow",
              b"/data/a/alice.bin?oss.asize=1", b"/%", b"/public/%zz%", b""]


def gen_range(r):
    kind = r.choice(["ok", "inverted", "overflow", "many", "negative", "suffix", "garbage",
                     "empty", "unit", "huge-list"])
    if kind == "ok":
        return b"bytes=%d-%d" % (r.randint(0, 100), r.randint(100, FILE_SIZE + 100))
    if kind == "inverted":
        return b"bytes=%d-%d" % (r.randint(1000, 9000), r.randint(0, 999))
    if kind == "overflow":
        return r.choice([b"bytes=0-18446744073709551616", b"bytes=18446744073709551615-",
                         b"bytes=9223372036854775807-9223372036854775808",
                         b"bytes=-99999999999999999999999", b"bytes=4294967296-4294967297"])
    if kind == "many":
        return b"bytes=" + b",".join(b"%d-%d" % (i * 10, i * 10 + r.randint(0, 30))
                                     for i in range(r.choice([100, 300, 1000])))
    if kind == "huge-list":
        return b"bytes=" + b",".join(b"0-%d" % r.randint(0, FILE_SIZE) for _ in range(2000))
    if kind == "negative":
        return b"bytes=-1--5"
    if kind == "suffix":
        return r.choice([b"bytes=-0", b"bytes=-1", b"bytes=-%d" % (FILE_SIZE * 2), b"bytes=0-"])
    if kind == "unit":
        return r.choice([b"pages=0-1", b"bytes 0-1", b"=0-1", b"bytes=,,,,", b"bytes=0-1,"])
    if kind == "empty":
        return b""
    return r.randbytes(r.randint(1, 100)).replace(b"\r", b"").replace(b"\n", b"")


def gen_token(r):
    return r.choice([b"", b"x", b"not-a-token", b"e30.e30.", b"a.b.c.d.e",
                     b"eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzY29wZSI6InJlYWQ6LyJ9.",
                     b"eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0." + b"A" * r.randint(1, 20000) + b".x",
                     r.randbytes(r.randint(1, 300)).hex().encode(), b"." * 500])


def gen_http_request(r):
    method = r.choice([b"GET", b"GET", b"GET", b"HEAD", b"PUT", b"DELETE", b"PROPFIND",
                       b"OPTIONS", b"POST", b"MKCOL", b"MOVE", b"COPY", b"PATCH", b"TRACE",
                       b"CONNECT", b"get", r.randbytes(r.randint(1, 10)), b"G" * 5000])
    path = r.choice(HTTP_PATHS)
    version = r.choice([b"HTTP/1.1"] * 6 + [b"HTTP/1.0", b"HTTP/2", b"HTTP/9.9", b"", b"HTTP/"])
    headers = [b"Host: 127.0.0.1"]
    for _ in range(r.choice([0, 1, 2, 3, 5])):
        h = r.choice(["range", "token", "cl", "te", "expect", "digest", "junk", "nocolon",
                      "oversized", "many", "xrd", "dest"])
        if h == "range":
            headers += [b"Range: " + gen_range(r)] * r.choice([1, 1, 2])
        elif h == "token":
            headers.append(b"Authorization: " + r.choice([b"Bearer ", b"Bearer", b"Basic ",
                                                          b"bearer  ", b""]) + gen_token(r))
        elif h == "cl":
            headers.append(b"Content-Length: " + r.choice([b"0", b"10", b"-1", b"99999999999",
                                                           b"18446744073709551616", b"abc",
                                                           b"5, 6"]))
        elif h == "te":
            headers.append(b"Transfer-Encoding: " + r.choice([b"chunked", b"gzip, chunked",
                                                              b"identity", b"x"]))
        elif h == "expect":
            headers.append(b"Expect: 100-continue")
        elif h == "digest":
            headers.append(b"Want-Digest: " + r.choice([b"adler32", b"md5", b"crc32c", b"x" * 900]))
        elif h == "junk":
            headers.append(r.randbytes(r.randint(1, 200)).replace(b"\r", b"").replace(b"\n", b""))
        elif h == "nocolon":
            headers.append(b"NoColonHere")
        elif h == "oversized":
            headers.append(b"X-Big: " + b"a" * r.choice([9000, 70000, 300000]))
        elif h == "many":
            headers += [b"X-%d: %d" % (i, i) for i in range(r.choice([200, 2000]))]
        elif h == "xrd":
            headers.append(r.choice([b"X-Transfer-Status: true", b"TE: trailers",
                                     b"Source: root://127.0.0.1//etc/passwd",
                                     b"Overwrite: T", b"Depth: infinity"]))
        else:
            headers.append(b"Destination: https://127.0.0.1/public/x" + r.randbytes(4).hex().encode())
    eol = r.choice([b"\r\n"] * 8 + [b"\n", b"\r"])
    body = b""
    if method in (b"PUT", b"POST", b"PATCH") or r.random() < 0.1:
        body = r.choice([b"", r.randbytes(r.choice([10, 1000, 70000])),
                         b"5\r\nhello\r\nffffffffffffffff\r\n", b"zz\r\n\r\n"])
    req = method + b" " + path + (b" " + version if version else b"") + eol
    req += b"".join(h + eol for h in headers)
    end = r.random()
    if end < 0.9:
        req += eol + body
    elif end < 0.95:
        pass  # the headers never end: the server must time out or hang up
    else:
        req = req[:r.randint(1, len(req))]
    return req


def gen_https(rng):
    r = rng
    if r.random() < 0.15:  # what is not TLS where TLS should be
        kind = r.choice(["random", "plain", "hello", "sslv2"])
        data = {"random": lambda: r.randbytes(r.randint(1, 4096)),
                "plain": lambda: gen_http_request(r),
                "hello": lambda: b"\x16\x03" + bytes([r.randint(0, 4)]) +
                struct.pack(">H", r.choice([0, 5, 512, 65535])) + r.randbytes(r.randint(0, 600)),
                "sslv2": lambda: b"\x80" + bytes([r.randint(0, 255)]) + b"\x01\x00\x02" +
                r.randbytes(r.randint(0, 100))}[kind]()
        return Session("t", [("S", data), ("R", b"")], "tls:" + kind)
    chunks, notes = [], []
    for _ in range(r.choice([1, 1, 1, 2, 3])):
        req = gen_http_request(r)
        notes.append(req[:40].split(b"\n")[0].decode(errors="replace"))
        if r.random() < 0.2 and len(req) > 10:
            cut = r.randint(1, len(req) - 1)
            chunks += [("S", req[:cut]), ("P", r.choice([10, 100])), ("S", req[cut:])]
        else:
            chunks.append(("S", req))
        if r.random() < 0.7:
            chunks.append(("R", b""))
    if chunks[-1][0] != "R":
        chunks.append(("R", b""))
    return Session("h", chunks, "http: " + " | ".join(notes))


# ---------------------------------------------------------------------------------------------
# Mutation of stored sessions

def mutate(session, rng, others=()):
    chunks = list(session.chunks)
    notes = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        sends = [i for i, c in enumerate(chunks) if c[0] == "S"]
        op = rng.choice(["drop", "dup", "swap", "flip", "dlen", "trunc", "insert", "splice",
                         "read", "sid"])
        notes.append(op)
        if op == "drop" and len(chunks) > 1:
            del chunks[rng.randrange(len(chunks))]
        elif op == "dup" and chunks:
            i = rng.randrange(len(chunks))
            chunks.insert(i, chunks[i])
        elif op == "swap" and len(sends) > 1:
            i, j = rng.sample(sends, 2)
            chunks[i], chunks[j] = chunks[j], chunks[i]
        elif op == "flip" and sends:
            i = rng.choice(sends)
            d = bytearray(chunks[i][1])
            for _ in range(rng.randint(1, 8)):
                if d:
                    d[rng.randrange(len(d))] ^= 1 << rng.randrange(8)
            chunks[i] = ("S", bytes(d))
        elif op in ("dlen", "sid") and sends and session.target == "x":
            i = rng.choice(sends)
            d = bytearray(chunks[i][1])
            if len(d) >= 24:
                if op == "dlen":
                    d[20:24] = struct.pack(">i", rng.choice([0, -1, 1 << 30, len(d) - 24 + 1,
                                                             max(0, len(d) - 25)]))
                else:
                    d[0:2] = rng.randbytes(2)
            chunks[i] = ("S", bytes(d))
        elif op == "trunc" and sends:
            i = rng.choice(sends)
            chunks[i] = ("S", chunks[i][1][:rng.randint(0, len(chunks[i][1]))])
        elif op == "insert":
            if session.target == "x":
                label, data = XGen(rng).any_request()
                notes[-1] += ":" + label
            else:
                data = gen_http_request(rng)
            chunks.insert(rng.randint(0, len(chunks)), ("S", data))
        elif op == "splice" and others:
            other = rng.choice(others)
            if other.target == session.target and other.chunks:
                cut = rng.randint(0, len(chunks))
                chunks = chunks[:cut] + other.chunks[rng.randint(0, len(other.chunks) - 1):]
        elif op == "read":
            chunks.insert(rng.randint(0, len(chunks)), ("R", b""))
    return Session(session.target, chunks[:200], "mutated(%s) of: %s" % (
        ",".join(notes), session.note[:200]))


def make_session(seed, i, https_share=0.0, corpus=()):
    """Session i of a run: a function of (seed, i) alone, whatever the threads do."""
    rng = random.Random("%d:%d" % (seed, i))
    if rng.random() < https_share:
        base = [s for s in corpus if s.target != "x"]
        if base and rng.random() < 0.3:
            return mutate(rng.choice(base), rng, base)
        return gen_https(rng)
    base = [s for s in corpus if s.target == "x"]
    if base and rng.random() < 0.3:
        return mutate(rng.choice(base), rng, base)
    return gen_xroot(rng)


# ---------------------------------------------------------------------------------------------
# Replay

def _tls_context():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _recv_exact(s, n, deadline):
    got = b""
    while len(got) < n and time.monotonic() < deadline:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        chunk = s.recv(min(n - len(got), 1 << 20))
        if not chunk:
            raise EOFError
        got += chunk
    return got


def _read_xroot(s, wait, cap):
    """One response (8-byte header + dlen bytes), whatever came within `wait` seconds."""
    deadline = time.monotonic() + wait
    head = _recv_exact(s, 8, deadline)
    if len(head) < 8:
        return head
    dlen = struct.unpack(">2sHi", head)[2]
    return head + _recv_exact(s, min(max(dlen, 0), cap), deadline + wait)


def _read_quiet(s, wait, cap):
    """What comes until the peer is quiet (0.3 s after the last byte) or hangs up."""
    got = b""
    s.settimeout(wait)
    while len(got) < cap:
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError
        got += chunk
        s.settimeout(0.3)
    return got


class Result:
    def __init__(self):
        self.received = b""
        self.error = ""
        self.seconds = 0.0
        self.closed = False  # the server hung up


def replay(session, host, ports, wait=1.0, cap=4 << 20, budget=10.0):
    """Plays the session's chunks against host (ports: {"x": port, "h": port}); bounded by
    `budget` seconds. Returns a Result (everything received, how it ended)."""
    res = Result()
    t0 = time.monotonic()
    port = ports.get("x" if session.target == "x" else "h")
    if not port:
        res.error = "no port for target %s" % session.target
        return res
    try:
        s = socket.create_connection((host, port), timeout=3)
    except OSError as e:
        res.error = "connect: %s" % e
        return res
    try:
        if session.target == "h":
            s.settimeout(3)
            s = _tls_context().wrap_socket(s)
        for op, data in session.chunks:
            if time.monotonic() - t0 > budget:
                res.error = "budget"
                break
            if op == "S":
                s.settimeout(3)
                s.sendall(data)
            elif op == "R":
                left = cap - len(res.received)
                if left <= 0:
                    break
                if session.target == "x":
                    res.received += _read_xroot(s, wait, left)
                else:
                    res.received += _read_quiet(s, wait * 2, left)
            elif op == "C":
                s.shutdown(socket.SHUT_WR)
            elif op == "P":
                time.sleep(min(data, 500) / 1000.0)
    except EOFError:
        res.closed = True
    except (OSError, ssl.SSLError, ValueError) as e:
        if isinstance(e, socket.timeout):
            res.error = "timeout"
        else:
            res.error = type(e).__name__
            res.closed = isinstance(e, (ConnectionResetError, BrokenPipeError, ssl.SSLError))
    finally:
        try:
            s.close()
        except OSError:
            pass
    res.seconds = time.monotonic() - t0
    return res


# ---------------------------------------------------------------------------------------------
# Protected bytes

class Secrets:
    """Finds any 32 bytes in a row of the protected files in what a session received (XRootD
    answers put headers, and page reads checksums, between a file's bytes)."""

    def __init__(self, named):  # {name: bytes}
        self.index = {}
        for name, data in named.items():
            for off in range(0, len(data) - 16, 16):
                self.index[data[off:off + 16]] = name

    def find(self, got):
        if len(got) < 32:
            return None
        idx = self.index
        for p in range(len(got) - 15):
            name = idx.get(got[p:p + 16])
            if name is not None:
                return name
        return None


def xroot_description(data):
    out, pos = [], 0
    if data.startswith(HANDSHAKE):
        out.append("handshake")
        pos = 20
    while pos + 24 <= len(data) and len(out) < 12:
        sid, code, params, dlen = struct.unpack(">2sH16si", data[pos:pos + 24])
        name = REQ_NAME.get(code, str(code))
        extra = ""
        if code == REQ["auth"]:
            extra = " credtype=%r" % params[12:]
        out.append("%s sid=%s dlen=%d%s" % (name, sid.hex(), dlen, extra))
        pos += 24 + max(0, min(dlen, len(data)))
    if pos < len(data) and len(out) < 12:
        out.append("+%d bytes" % (len(data) - pos))
    return ", ".join(out)


def describe_bytes(target, data):
    if target == "x":
        return xroot_description(data)
    return repr(data[:80]) + ("..." if len(data) > 80 else "")


# ---------------------------------------------------------------------------------------------
# The server under test

class Watch:
    """The xrootd process behind host:port, by the pid in its pid file (xrootd -s): liveness is
    that process's, so a supervisor that restarts it does not hide a crash."""

    def __init__(self, host, ports, pid_file=None):
        self.host, self.ports, self.pid_file = host, ports, pid_file
        self.pid = self.read_pid()

    def read_pid(self):
        if not self.pid_file:
            return None
        try:
            with open(self.pid_file) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def process_alive(self):
        if self.pid is None:
            return True
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            return state not in ("Z", "X")
        except OSError:
            return False

    def check(self, wait=5.0):
        """None when the same xrootd is alive and answers a handshake and kXR_protocol within
        `wait` seconds; else what is wrong ("died", "restarted", "hang", ...)."""
        if not self.process_alive():
            return "died (pid %s)" % self.pid
        if self.pid_file and self.read_pid() not in (None, self.pid):
            return "restarted (pid %s, now %s)" % (self.pid, self.read_pid())
        probe = Session("x", [("S", HANDSHAKE + struct.pack(">2sHiBB10si", b"\0\1", 3006,
                                                            0x520, 1, 0, b"", 0)),
                              ("R", b""), ("R", b"")])
        res = replay(probe, self.host, self.ports, wait=wait, budget=wait + 1)
        if len(res.received) < 16:
            time.sleep(0.2)
            if not self.process_alive():
                return "died (pid %s)" % self.pid
            return "hang or refusal: %r (%s)" % (res.received[:20], res.error or "closed")
        return None


# ---------------------------------------------------------------------------------------------
# The runner

class Finding:
    def __init__(self, kind, session, detail, path=None):
        self.kind, self.session, self.detail, self.path = kind, session, detail, path


class Runner:
    """N sessions at C at a time against a Watch'ed server, deterministic from a seed, bounded
    by count and wall time. After each batch the server must be alive (the same xrootd
    process) and answer; every `read_every` batches and at the end `read_check()` (if given)
    must pass. A batch after which the server died is replayed one session at a time on a
    restarted server (`restart()` returns a new Watch) to find the session that kills it, which
    is minimised and written to `out` (crash-*.fses)."""

    def __init__(self, watch, out=None, secrets=None, restart=None, read_check=None,
                 log=print, minimise_seconds=120, wait=0.5, budget=6.0):
        """wait: how long one read marker waits for an answer; budget: seconds per session.
        avoid: a predicate of sessions not to play (known faults, to look past them)."""
        self.avoid = None
        self.wait, self.budget = wait, budget
        self.watch, self.out, self.secrets = watch, out, secrets
        self.restart, self.read_check, self.log = restart, read_check, log
        self.minimise_seconds = minimise_seconds
        self.findings = []
        self.sessions = 0

    def _play(self, session):
        res = replay(session, self.watch.host, self.watch.ports, wait=self.wait,
                     budget=self.budget)
        if self.secrets is not None:
            leaked = self.secrets.find(res.received)
            if leaked:
                self._record("leak", session, "bytes of %s reached the session" % leaked)
        return res

    def _record(self, kind, session, detail):
        path = None
        if self.out:
            session = Session(session.target, session.chunks,
                              "%s: %s | %s" % (kind, detail, session.note))
            path = save(session, self.out, kind)
        self.findings.append(Finding(kind, session, detail, path))
        self.log("FOUND %s: %s -> %s" % (kind, detail, path))

    def run(self, seed, count, concurrency=16, seconds=600, https_share=0.0, corpus=(),
            read_every=0, batch=None, stop_on_crash=True, first=0):
        """Sessions first..first+count-1 of `seed`. True when the server lived through all
        that ran (and the read checks passed)."""
        sessions = (("seed %d session %d" % (seed, k), make_session(seed, k, https_share, corpus))
                    for k in range(first, first + count))
        if self.avoid:
            sessions = ((label, s) for label, s in sessions if not self.avoid(s))
        return self.play(sessions, concurrency, seconds, read_every, batch, stop_on_crash)

    def play(self, labelled, concurrency=16, seconds=600, read_every=0, batch=None,
             stop_on_crash=True):
        """Plays (label, session) pairs `batch` at a time, `concurrency` at once."""
        batch = batch or concurrency * 4
        deadline = time.monotonic() + seconds
        batches = 0
        labelled = iter(labelled)
        alive = True
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            while time.monotonic() < deadline:
                group = [x for _, x in zip(range(batch), labelled)]
                if not group:
                    break
                list(pool.map(self._play, [s for _, s in group]))
                self.sessions += len(group)
                batches += 1
                bad = self.watch.check()
                if bad:
                    alive = False
                    self.log("after %s .. %s: %s" % (group[0][0], group[-1][0], bad))
                    self._culprit(group, bad)
                    if stop_on_crash or self.restart is None:
                        return False
                    continue
                if self.read_check and read_every and batches % read_every == 0:
                    err = self.read_check()
                    if err:
                        self._record("badread", group[-1][1], err)
                        return False
            else:
                self.log("stopped by the time limit after %d sessions" % self.sessions)
        if self.read_check:
            err = self.read_check()
            if err:
                self.log("the correct read failed: %s" % err)
                self.findings.append(Finding("badread", None, err))
                return False
        return alive

    def _crashes(self, session):
        """Replays session alone on a fresh server; True when the server died or hung."""
        self._play(session)
        time.sleep(0.3)
        bad = self.watch.check(wait=3.0)
        if bad:
            self.watch = self.restart()
        return bad

    def _culprit(self, group, why):
        if self.restart is None:
            for label, s in group:
                self._record("suspect", s, "%s: in the batch after which: %s" % (label, why))
            return
        self.watch = self.restart()
        for label, s in group:
            bad = self._crashes(s)
            if bad:
                self.log("%s alone: %s" % (label, bad))
                small = self.minimise(s) if self.minimise_seconds > 0 else s
                self._record("crash", small, "%s (%s, %d of %d chunks kept)"
                             % (bad.split(" (")[0], label, len(small.chunks), len(s.chunks)))
                return
        for label, s in group:
            self._record("suspect", s, "%s only with its batch (%s)" % (why, label))

    def minimise(self, session):
        """Drops chunks (after splitting sends that hold several requests) while the session
        still kills the server, bounded by minimise_seconds. A candidate always ends with a
        read marker: a session that hangs up at once may be gone before the server reads it."""
        deadline = time.monotonic() + self.minimise_seconds

        def candidate(chunks):
            if not chunks or chunks[-1][0] != "R":
                chunks = chunks + [("R", b"")]
            return Session(session.target, chunks, session.note)

        def drop_loop(cur):
            changed = True
            while changed and time.monotonic() < deadline:
                changed = False
                for i in reversed(range(len(cur.chunks))):
                    if time.monotonic() > deadline or len(cur.chunks) <= 1:
                        break
                    cand = candidate(cur.chunks[:i] + cur.chunks[i + 1:])
                    if len(cand.chunks) < len(cur.chunks) and self._crashes(cand):
                        cur, changed = cand, True
            return cur

        cur = drop_loop(session)
        if cur.target == "x" and time.monotonic() < deadline:
            split = []
            for op, data in cur.chunks:
                split += [("S", p) for p in split_requests(data)] if op == "S" else [(op, data)]
            if len(split) > len(cur.chunks):
                cand = candidate(split)
                if self._crashes(cand):
                    cur = drop_loop(cand)
        return cur


def requests_in(session):
    """(request id, dlen) of the requests the server reads from the session's sends, by their
    stated lengths (after the handshake, when it comes first)."""
    if session.target != "x":
        return []
    data = b"".join(d for op, d in session.chunks if op == "S")
    pos = 20 if data.startswith(HANDSHAKE) else 0
    out = []
    while pos + 24 <= len(data):
        code, dlen = struct.unpack(">H", data[pos + 2:pos + 4])[0], \
            struct.unpack(">i", data[pos + 20:pos + 24])[0]
        out.append((code, dlen))
        if dlen < 0:
            break
        pos += 24 + dlen
    return out


def known_xrd553(session):
    """The faults patches/xrootd fixes. 0001: a kXR_auth without data (dlen 0) kills any xrootd
    5.5.3 with a sec.protocol configured (do_Auth reads the absent argument buffer), whatever
    its credential type; looked for at every offset, since lying lengths make the server's
    framing differ from the session's. 0002: an HTTPS PROPFIND whose body length (its
    Content-Length, or the sum of its Range header's ranges) is over 2 GiB aborts XrdHttp."""
    if session.target == "h":
        return _propfind_over_2g(session)
    if session.target != "x":
        return False
    data = b"".join(d for op, d in session.chunks if op == "S")
    p = data.find(b"\x0b\xb8")
    while 0 <= p:
        if p >= 2 and data[p + 18:p + 22] == b"\0\0\0\0" and len(data) >= p + 22:
            return True
        p = data.find(b"\x0b\xb8", p + 1)
    return False


def _propfind_over_2g(session):
    data = b"".join(d for op, d in session.chunks if op == "S")
    for req in data.split(b"\r\n\r\n"):
        head = req.lstrip()
        if not head.upper().startswith(b"PROPFIND"):
            continue
        total = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length" and value.strip().isdigit():
                total = max(total, int(value.strip()))
            elif name == b"range":
                for r in re.findall(rb"(\d+)-(\d+)", value):
                    total += max(0, int(r[1]) - int(r[0]) + 1)
        if total > 2**31 - 1:
            return True
    return False


def split_requests(data):
    """The handshake and the requests in one send, by their stated lengths; the rest whole."""
    parts, pos = [], 0
    if data.startswith(HANDSHAKE):
        parts.append(HANDSHAKE)
        pos = 20
    while pos + 24 <= len(data):
        dlen = struct.unpack(">i", data[pos + 20:pos + 24])[0]
        if dlen < 0 or pos + 24 + dlen > len(data):
            break
        parts.append(data[pos:pos + 24 + dlen])
        pos += 24 + dlen
    if pos < len(data):
        parts.append(data[pos:])
    return parts


# ---------------------------------------------------------------------------------------------
# Picking a corpus: the smallest generated session of each kind

def _tokens(session):
    return session.note.split()


def _http(pattern):
    return lambda s: s.target == "h" and any(pattern in d for op, d in s.chunks if op == "S")


def features():
    out = []
    for kind in ("truncated", "wrong", "none", "twice"):
        out.append(("x-hs-" + kind, lambda s, k=kind: "hs:" + k in _tokens(s)))
    for name in list(REQ) + ["unknown"]:
        if name == "auth":
            continue
        if name == "unknown":
            pred = (lambda s: any(t.startswith("req:") for t in _tokens(s)))
        else:
            pred = (lambda s, n=name: n in _tokens(s) and "login" in _tokens(s))
        out.append(("x-req-" + name, pred))
    for proto in ("sss", "unix", "gsi", "ztn", "krb5", "host"):
        for shape in ("empty", "name", "truncated", "random", "structured", "oversized"):
            if proto not in ("sss", "unix", "gsi", "ztn") and shape not in ("random", "empty"):
                continue
            out.append(("x-auth-%s-%s" % (proto, shape),
                        lambda s, t="auth:%s:%s" % (proto, shape): t in _tokens(s)))
    out.append(("x-auth-before-login", lambda s: bool(_tokens(s)) and any(
        t.startswith("auth:") for t in _tokens(s)) and "login" not in _tokens(s)))
    out.append(("x-lie-negative", lambda s: any(t.startswith("lies:-") for t in _tokens(s))))
    out.append(("x-lie-huge", lambda s: any(t.startswith("lies:") and "2147483647" in t
                                            for t in _tokens(s))))
    out.append(("x-pipelined", lambda s: s.target == "x" and any(
        op == "S" and len(split_requests(d)) > 4 for op, d in s.chunks)))
    out.append(("x-half-closed", lambda s: s.target == "x" and ("C", b"") in s.chunks))
    for kind in ("random", "plain", "hello", "sslv2"):
        out.append(("t-" + kind, lambda s, k=kind: s.target == "t" and s.note == "tls:" + k))
    for name, pat in (("range-many", b"Range: bytes=0-"), ("range-inverted", None),
                      ("range-overflow", b"18446744073709551616"), ("range-unit", b"pages=0-1"),
                      ("bearer-garbage", b"Bearer not-a-token"), ("bearer-huge", b"AAAAAAAAAA."),
                      ("bearer-alg-none", b"eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0"),
                      ("header-oversized", b"X-Big: aaaa"), ("header-many", b"X-1999: "),
                      ("header-nocolon", b"NoColonHere"), ("chunked", b"Transfer-Encoding: chunked"),
                      ("cl-negative", b"Content-Length: -1"), ("cl-huge", b"99999999999"),
                      ("expect", b"Expect: 100-continue"), ("traversal", b"/public/../data/a/"),
                      ("propfind", b"PROPFIND "), ("put", b"PUT "), ("delete", b"DELETE "),
                      ("copy", b"COPY "), ("long-method", b"GGGGGGGGGG"),
                      ("long-path", b"/aaaaaaaaaaaaaaaa"), ("http2", b" HTTP/2"),
                      ("authz-cgi", b"?authz="), ("bare-lf", b"\nHost: 127.0.0.1\n")):
        if name == "range-inverted":
            pred = (lambda s: s.target == "h" and any(_inverted(d) for op, d in s.chunks
                                                      if op == "S"))
        elif name == "range-many":
            pred = (lambda s: s.target == "h" and any(d.count(b",") > 200 and b"Range:" in d
                                                      for op, d in s.chunks if op == "S"))
        else:
            pred = _http(pat)
        out.append(("h-" + name, pred))
    return out


def _inverted(data):
    import re
    for m in re.finditer(rb"Range: bytes=(\d+)-(\d+)\r", data):
        if int(m.group(1)) > int(m.group(2)):
            return True
    return False


def pick(seed, n, out, https_share=0.3, avoid=known_xrd553):
    """The smallest session of each feature among n generated ones (none with a known fault),
    written to out as FEATURE.fses. Returns the features no session had."""
    best = {}
    feats = features()
    for i in range(n):
        s = make_session(seed, i, https_share)
        if avoid and avoid(s):
            continue
        size = len(s.encode())
        for name, pred in feats:
            if pred(s) and (name not in best or size < best[name][0]):
                best[name] = (size, s)
    os.makedirs(out, exist_ok=True)
    for name, (_, s) in best.items():
        s.note = "%s (seed %d): %s" % (name, seed, s.note)
        with open(os.path.join(out, name + ".fses"), "wb") as f:
            f.write(s.encode())
    return [name for name, _ in feats if name not in best]


# ---------------------------------------------------------------------------------------------
# Command line

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cmd", choices=["run", "replay", "show", "gen", "pick"])
    ap.add_argument("files", nargs="*")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--xroot-port", type=int)
    ap.add_argument("--https-port", type=int)
    ap.add_argument("--pid-file", help="xrootd's pid file (its admin dir's xrootd.pid)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--https-share", type=float, default=None,
                    help="share of HTTPS sessions (default 0.1 with --https-port, else 0)")
    ap.add_argument("--corpus", help="sessions to mutate besides generating new ones")
    ap.add_argument("--out", help="where sessions after which the server died are written")
    ap.add_argument("--avoid-known", action="store_true",
                    help="do not send sessions with a known XRootD 5.5.3 fault (known_xrd553)")
    a = ap.parse_args(argv)
    if a.cmd == "show":
        for p in corpus_files(a.files):
            print("%s\n%s" % (p, load(p).describe()))
        return 0
    if a.cmd == "pick":
        missing = pick(a.seed, a.count, a.out)
        print("no session for: %s" % " ".join(missing) if missing else "every feature found")
        return 0
    if a.cmd == "gen":
        for i in range(a.count):
            save(make_session(a.seed, i, a.https_share or 0.0), a.out, "gen")
        return 0
    ports = {"x": a.xroot_port, "h": a.https_port}
    watch = Watch(a.host, ports, a.pid_file)
    if a.cmd == "replay":
        bad = 0
        for p in corpus_files(a.files):
            s = load(p)
            res = replay(s, a.host, ports)
            why = watch.check()
            print("%-60s %7d bytes %-12s %s" % (os.path.basename(p), len(res.received),
                                                res.error or ("closed" if res.closed else "ok"),
                                                why or "server ok"), flush=True)
            if why:
                bad += 1
                if "died" in why or "restarted" in why:
                    return 1
                watch = Watch(a.host, ports, a.pid_file)
        return 1 if bad else 0
    share = a.https_share if a.https_share is not None else (0.1 if a.https_port else 0.0)
    corpus = [load(p) for p in corpus_files([a.corpus])] if a.corpus else []
    r = Runner(watch, out=a.out, log=lambda m: print(m, flush=True))
    if a.avoid_known:
        r.avoid = known_xrd553
    ok = r.run(a.seed, a.count, a.concurrency, a.seconds, share, corpus)
    print("%d sessions, %d findings" % (r.sessions, len(r.findings)), flush=True)
    return 0 if ok and not r.findings else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
