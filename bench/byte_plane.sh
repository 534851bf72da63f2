#!/usr/bin/env bash
# Byte-plane transposes (base/byte_plane.h): scalar vs SSE2 vs AVX2, split and unsplit.
set -euo pipefail
BUILD=${FERRY_BUILD_DIR:-build/release}
OUT=${FERRY_BENCH_OUT:-out/bench}
mkdir -p "$OUT"
"$BUILD/bin/byte_plane_bench" --json "$OUT/byte_plane.json"
/usr/bin/python3 - "$OUT/byte_plane.json" "$OUT/byte_plane.dat" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    f.write("case scalar sse2 avx2\n")
    for r in d["rows"]:
        f.write("%s-w%d %.2f %.2f %.2f\n" % (r["op"], r["width"], r["scalar_gbps"],
                                             r["sse2_gbps"], r["avx2_gbps"]))
PY
bash bench/plot_bars.sh "byte-plane transposes (GB/s, higher is better)" "GB/s" \
  "$OUT/byte_plane.dat" "$OUT/byte_plane.png"
echo "wrote $OUT/byte_plane.json and $OUT/byte_plane.png"
