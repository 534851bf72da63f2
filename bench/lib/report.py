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


def write_json(out_dir, name, doc):
    """Writes doc to OUT_DIR/NAME (made if need be); returns its path."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, name)
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1)
    return path


def plot(script):
    """Runs the gnuplot script; returns None, or why there is no plot (no gnuplot, an error).
    A missing plot never fails a report: the table and the JSON are its results."""
    try:
        subprocess.run(["gnuplot"], input=script, text=True, check=True, capture_output=True,
                       timeout=60)
        return None
    except Exception as e:  # pylint: disable=broad-except
        return e
