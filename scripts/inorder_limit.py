"""The in-order limit L of a cold pass (issue 27), shared by scripts/agc_summary.py and
bench/readahead_wan_report.py.

A client that decodes its files one after another (ROOT's TChain, uproot's iterate, `ferry
analyze agc --threads 1 --reads 0 --opens 1`) cannot overlap the decoding of its last files with
transfers that already ended, so max(bytes / link, local pass) is out of its reach. What it can
reach is

  L = max over k of (link time of the bytes of files 1..k + local CPU time of files k..n)
      + one round trip per file it opens one after another
      + one login at the origin (TCP connect, handshake with kXR_protocol, kXR_login: 3 round
        trips) + one TCP slow start from the initial congestion window (10 segments) up to
        the link's bandwidth-delay product, counted as the time it takes beyond sending the
        same bytes at the link's rate,

(a client that keeps `opens_at_once` files opening at a time, `--opens N`, overlaps all but one
open round trip in N). The login and the slow start are what any client pays once per origin
(issue 38): a cache that opens a new connection per file pays them per file and is measured
against this L.

the files in the order it reads them, each file's CPU from a local in-order pass and its bytes
the ones it reads (`ferry analyze agc --json`: files[].cpu_s, files[].planned_bytes).
"""


LOGIN_RTTS = 3
INITIAL_WINDOW_BYTES = 10 * 1448  # Linux's initial congestion window, 10 segments of MSS 1448


def slow_start_s(link_bytes_per_s, rtt_s, initial_window=INITIAL_WINDOW_BYTES):
    """Time one TCP slow start costs beyond the link's rate: the window doubles each round trip
    from `initial_window` until it covers the bandwidth-delay product."""
    bdp = link_bytes_per_s * rtt_s
    window, rounds, sent = initial_window, 0, 0.0
    while window < bdp:
        sent += window
        window *= 2
        rounds += 1
    return max(0.0, rounds * rtt_s - sent / link_bytes_per_s)


def inorder_limit(files, link_bytes_per_s, rtt_s, opens_at_once=1):
    """L and its parts for `files` (dicts with cpu_s and planned_bytes, in read order), or None
    without files or a link rate."""
    if not files or not link_bytes_per_s:
        return None
    cpu = [f.get("cpu_s", 0.0) for f in files]
    xfer = [f.get("planned_bytes", 0) / link_bytes_per_s for f in files]
    best, at = 0.0, 0
    for k in range(len(files)):
        t = sum(xfer[:k + 1]) + sum(cpu[k:])
        if t > best:
            best, at = t, k
    serial_opens = -(-len(files) // max(1, opens_at_once))
    opens = serial_opens * rtt_s
    login = LOGIN_RTTS * rtt_s
    ramp = slow_start_s(link_bytes_per_s, rtt_s)
    return {"limit_s": best + opens + login + ramp, "link_s": sum(xfer[:at + 1]),
            "cpu_s": sum(cpu[at:]), "opens_s": opens, "login_s": login, "slow_start_s": ramp,
            "serial_opens": serial_opens, "split_file": at + 1,
            "files": len(files),
            "link_bytes_per_s": link_bytes_per_s, "rtt_s": rtt_s}


def describe(limit):
    """One line naming L's parts."""
    return ("L = %.2f s: link %.2f s for files 1..%d + CPU %.2f s for files %d..%d + %d opens "
            "one after another x RTT = %.2f s + one login (%d RTT) %.2f s + one TCP slow start "
            "%.2f s"
            % (limit["limit_s"], limit["link_s"], limit["split_file"], limit["cpu_s"],
               limit["split_file"], limit["files"],
               limit.get("serial_opens", limit["files"]), limit["opens_s"], LOGIN_RTTS,
               limit.get("login_s", 0.0), limit.get("slow_start_s", 0.0)))
