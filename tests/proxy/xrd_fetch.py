"""Client child for test_proxy_auth.py: one identity per process (XrdCl's sss client loads its
keytab once, from XrdSecSSSKT), so each read or stat as some user is a process of its own.

usage: xrd_fetch.py read URL OUT   open URL, read it whole, write what was read to OUT
       xrd_fetch.py passes URL OUT N   open URL once and read it whole N times in 64 KiB reads,
                                   printing "pass K" after each; OUT gets the last pass
       xrd_fetch.py stat URL       stat URL
       xrd_fetch.py locate URL     ask where URL's file is (a redirector answers with servers)
       xrd_fetch.py dirlist URL    list URL's directory
Prints {"ok": bool, "error": "...", "answer": [...]}; exit 0 when ok, 1 when refused or failed.
OUT holds every byte the server sent, so a test can check that a refused client got none;
"answer" holds what locate and dirlist were told.
"""
import json
import sys

from XRootD import client  # noqa: E402
from XRootD.client.flags import OpenFlags  # noqa: E402


def read(url, out):
    got = b""
    f = client.File()
    st, _ = f.open(url, OpenFlags.READ, timeout=30)
    if st.ok:
        st, info = f.stat(timeout=30)
        if st.ok:
            st, got = f.read(0, info.size, timeout=60)
            got = got or b""
        f.close()
    with open(out, "wb") as o:
        o.write(got)
    return st


def passes(url, out, n):
    """Reads url whole n times through one open file, so that a server restart between two
    reads is recovered by XrdCl (a new connection, the file opened again) unseen by the caller."""
    f = client.File()
    st, _ = f.open(url, OpenFlags.READ, timeout=30)
    got = b""
    if st.ok:
        st, info = f.stat(timeout=30)
        for k in range(n if st.ok else 0):
            got = b""
            while st.ok and len(got) < info.size:
                st, chunk = f.read(len(got), min(65536, info.size - len(got)), timeout=60)
                got += chunk or b""
            if not st.ok:
                break
            print("pass %d" % k, flush=True)
        f.close()
    with open(out, "wb") as o:
        o.write(got)
    return st


def query(mode, url):
    """(status, answer) of stat, locate or dirlist of the path in url."""
    fs = client.FileSystem(url)
    path = "/" + url.split("//", 2)[2].lstrip("/")
    if mode == "stat":
        st, _ = fs.stat(path, timeout=30)
        return st, []
    if mode == "locate":
        st, got = fs.locate(path, OpenFlags.NONE, timeout=30)
        return st, [loc.address for loc in got] if st.ok and got else []
    st, got = fs.dirlist(path, timeout=30)
    return st, [entry.name for entry in got] if st.ok and got else []


def main():
    mode = sys.argv[1]
    answer = []
    if mode == "read":
        st = read(sys.argv[2], sys.argv[3])
    elif mode == "passes":
        st = passes(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        st, answer = query(mode, sys.argv[2])
    print(json.dumps({"ok": bool(st.ok), "error": "" if st.ok else st.message,
                      "answer": answer}), flush=True)
    sys.exit(0 if st.ok else 1)


if __name__ == "__main__":
    main()
