#!/usr/bin/env bash
# Reader decode rate vs bare codec decompression on the real files of every codec.
set -euo pipefail
BUILD=${FERRY_BUILD_DIR:-build/release}
OUT=${FERRY_BENCH_OUT:-out/bench}
DATA=${FERRY_ROOT_DATA_DIR:-data/root}
mkdir -p "$OUT"
files=("$DATA"/uproot-HZZ-zlib.root "$DATA"/uproot-HZZ-lzma.root "$DATA"/uproot-HZZ-lz4.root
       "$DATA"/uproot-HZZ-zstd.root "$DATA"/nano_dy.root "$DATA"/uproot-Zmumu.root)
# Generated NanoAOD-like files (ferry gen), one per codec; ROOTIO_BENCH_EVENTS sets the size
# (default 200000 events, ~250 MB for zlib-1; 2000000 for a multi-GB run). Reused when present.
EVENTS=${ROOTIO_BENCH_EVENTS:-200000}
if [ "$EVENTS" -gt 0 ] && [ -x "$BUILD/bin/ferry" ]; then
  for codec in zlib:1 lzma:9 zstd:5 lz4; do
    dir="$OUT/data/rootio-${codec/:/}-$EVENTS"
    if [ ! -f "$dir/nanoaod_0000.root" ]; then
      "$BUILD/bin/ferry" gen nanoaod --events "$EVENTS" --files 1 --codec "$codec" --out "$dir" --seed 7 >/dev/null
    fi
    files+=("$dir/nanoaod_0000.root")
  done
fi
# Any other files (ROOTIO_BENCH_FILES="a.root b.root").
for f in ${ROOTIO_BENCH_FILES:-}; do files+=("$f"); done
"$BUILD/bin/rootio_read_bench" --json "$OUT/rootio_read.json" --repeat "${REPEAT:-5}" "${files[@]}"
/usr/bin/python3 - "$OUT/rootio_read.json" "$OUT/rootio_read.dat" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    f.write("file bare_decompress reader\n")
    for r in d["files"]:
        label = r["file"].replace(".root", "")
        if label == "nanoaod_0000":
            label = "gen-" + r["codecs"].replace("none+", "")
        f.write("%s %.1f %.1f\n" % (label, r["bare_mb_per_s"], r["reader_mb_per_s"]))
PY
bash bench/plot_bars.sh "ferry reader vs bare decompression (uncompressed MB/s, higher is better)" \
  "MB/s" "$OUT/rootio_read.dat" "$OUT/rootio_read.png"
echo "wrote $OUT/rootio_read.json and $OUT/rootio_read.png"
