#!/usr/bin/env bash
# ferry gen: write rate vs bare codec compression of the same bytes, and bytes per event per
# codec. Each codec writes GEN_BENCH_EVENTS events (default 300000: a file of several clusters,
# the steady state) or fewer when one round would exceed GEN_BENCH_ROUND_SECONDS (default 20;
# LZMA-9 writes a smaller file); GEN_BENCH_ROUNDS alternations of generator and bare codec,
# default 3, best time of each side. For the 1M-event sizes: GEN_BENCH_EVENTS=1000000
# GEN_BENCH_ROUND_SECONDS=100000 GEN_BENCH_ROUNDS=1.
# Rates are per CPU second (steady on a shared machine); the JSON also has wall-clock rates.
# GEN_BENCH_MODE: the generator's model, object (default) or event (the whole-event model).
set -euo pipefail
BUILD=${FERRY_BUILD_DIR:-build/release}
OUT=${FERRY_BENCH_OUT:-out/bench}
mkdir -p "$OUT"
"$BUILD/bin/gen_bench" --events "${GEN_BENCH_EVENTS:-300000}" \
  --round-seconds "${GEN_BENCH_ROUND_SECONDS:-20}" --codecs "${GEN_BENCH_CODECS:-zlib:1,lzma:9,zstd:5,lz4}" \
  --rounds "${GEN_BENCH_ROUNDS:-3}" --mode "${GEN_BENCH_MODE:-object}" --json "$OUT/gen_bench.json"
/usr/bin/python3 - "$OUT/gen_bench.json" "$OUT/gen_bench_rate.dat" "$OUT/gen_bench_size.dat" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    f.write("codec bare-codec ferry-gen\n")
    for c in d["codecs"]:
        f.write("%s %.1f %.1f\n" % (c["codec"], c["bare_cpu_mb_per_s"], c["write_cpu_mb_per_s"]))
with open(sys.argv[3], "w") as f:
    f.write("codec template-events generated\n")
    for c in d["codecs"]:
        f.write("%s %.0f %.0f\n" % (c["codec"], c["template_bytes_per_event"], c["bytes_per_event"]))
for c in d["codecs"]:
    print("%-8s overhead %5.1f%% in CPU time, %5.1f%% in wall time (target < 30%%), %5.0f B/event"
          % (c["codec"], 100 * c["overhead_cpu"], 100 * c["overhead"], c["bytes_per_event"]))
PY
bash bench/plot_bars.sh "ferry gen vs bare codec compression of the same bytes (uncompressed MB per CPU second)" \
  "MB/s" "$OUT/gen_bench_rate.dat" "$OUT/gen_bench_rate.png"
bash bench/plot_bars.sh "bytes per event: generated NanoAOD vs the template's real events (same codec)" \
  "bytes/event" "$OUT/gen_bench_size.dat" "$OUT/gen_bench_size.png"
echo "wrote $OUT/gen_bench.json, $OUT/gen_bench_rate.png and $OUT/gen_bench_size.png"
