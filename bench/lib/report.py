"""What the reports of the WAN benchmarks (bench/*_wan_report.py) share: they read the JSON
lines their benchmark wrote, take medians over its rounds (the machine is shared and load
drifts, so one slow run must not move a result), write one JSON document and draw the bars
with gnuplot. Each report keeps its own table, targets and plot script.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
    import report
    runs, out_dir, config = report.load(sys.argv)
"""
import json
import os
import statistics
import subprocess

# gnuplot: clustered bars, the style of every benchmark plot.
HISTOGRAM_STYLE = """set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics"""


def load(argv):
    """usage: REPORT RUNS.jsonl OUT_DIR CONFIG_JSON -> (runs, out_dir, config): the runs one
    dict a line, the folder for the JSON and the plot, the benchmark's settings."""
    runs_path, out_dir, config = argv[1], argv[2], json.loads(argv[3])
    with open(runs_path) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    return runs, out_dir, config


def median(xs):
    """The median of the values that were measured (None: not measured), None if none was."""
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def transfer_rate(samples, link_bytes_per_s, bin_s=0.1, busy=0.25):
    """The link's rate during a pass's transfer phases, from link_sampler.py's samples
    ([seconds, bytes] pairs): the pass cut into `bin_s` bins, a bin busy when it carried at least
    `busy` x the link's rate; returns {"bytes_per_s": bytes of the busy bins / their time,
    "busy_s": that time, "total_s": the sampled time}, or None without samples. The other bins
    are the pass's opens and decoding, which read-ahead cannot fill."""
    if len(samples) < 2 or not link_bytes_per_s:
        return None
    bins, edge, last = [], samples[0][0] + bin_s, samples[0][1]
    for t, b in samples:
        while t >= edge:
            bins.append(b - last)
            last, edge = b, edge + bin_s
    busy_bins = [b for b in bins if b >= busy * link_bytes_per_s * bin_s]
    if not busy_bins:
        return None
    busy_s = len(busy_bins) * bin_s
    return {"bytes_per_s": sum(busy_bins) / busy_s, "busy_s": busy_s,
            "total_s": samples[-1][0] - samples[0][0]}


def write_json(out_dir, name, doc):
    """Writes doc to OUT_DIR/NAME (made if need be); returns its path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1)
    return path


def wall_and_bytes(png, size, title, settings, wall_plot, bytes_title, bytes_plot):
    """The gnuplot script of the two-panel figure of cache_wan and proxy_wan, so the two read
    alike: wall time per pass on the left (log scale: warm passes are 10-100x faster), bytes
    per byte requested on the right (from the origin on the wire, and on disk). `settings`:
    the figure's own gnuplot lines (key, xtics); `wall_plot` and `bytes_plot`: its plot
    commands. A panel whose plot command is None (no column to draw: gnuplot fails on a bare
    "plot") is left out."""
    panels = []
    if wall_plot:
        panels.append("""set logscale y
set ylabel "wall time [s] (log)"
set title "wall time per pass"
%s
unset logscale y""" % wall_plot)
    if bytes_plot:
        panels.append("""set yrange [0:*]
set ylabel "bytes / bytes requested"
set title "%s"
%s""" % (bytes_title, bytes_plot))
    return """
set terminal pngcairo size %s font ",10" noenhanced
set output "%s"
set multiplot layout 1,%d title "%s"
%s
%s
%s
unset multiplot
""" % (size, png, max(len(panels), 1), title, HISTOGRAM_STYLE, settings, "\n".join(panels))


def plot(script):
    """Runs the gnuplot script; returns None, or why there is no plot (no gnuplot, an error).
    A missing plot never fails a report: the table and the JSON are its results."""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True,
                       timeout=60)
        return None
    except subprocess.CalledProcessError as e:  # gnuplot's own words say what went wrong
        return "gnuplot exit %d: %s" % (e.returncode, (e.stderr or "").strip()[-300:])
    except Exception as e:  # pylint: disable=broad-except
        return e


def plot_and_tell(script, json_path, png):
    """plot(), then the report's last line: what it wrote, and why there is no plot if so."""
    no_plot = plot(script)
    if no_plot is None:
        print("\nwrote %s and %s" % (json_path, png))
    else:
        print("\nwrote %s (no plot: %s)" % (json_path, no_plot))
