"""Client child for test_proxy_auth.py: one identity per process (XrdCl's sss client loads its
keytab once, from XrdSecSSSKT), so each read or stat as some user is a process of its own.

usage: xrd_fetch.py read URL OUT   open URL, read it whole, write what was read to OUT
       xrd_fetch.py stat URL       stat URL
Prints {"ok": bool, "error": "..."}; exit 0 when ok, 1 when refused or failed. OUT holds every
byte the server sent, so a test can check that a refused client got none.
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


def stat(url):
    fs = client.FileSystem(url)
    path = "/" + url.split("//", 2)[2].lstrip("/")
    st, _ = fs.stat(path, timeout=30)
    return st


def main():
    mode = sys.argv[1]
    st = read(sys.argv[2], sys.argv[3]) if mode == "read" else stat(sys.argv[2])
    print(json.dumps({"ok": bool(st.ok), "error": "" if st.ok else st.message}), flush=True)
    sys.exit(0 if st.ok else 1)


if __name__ == "__main__":
    main()
