#!/usr/bin/env bash
# make demo: reads the real NanoAOD files with ferry's own ROOT reader and prints what it read.
set -euo pipefail
FERRY=${1:-build/release/bin/ferry}
DATA=${FERRY_ROOT_DATA_DIR:-../shared/data/root}
if [ ! -d "$DATA" ]; then
  echo "demo: $DATA not found (the real ROOT files live in ../shared/data/root)" >&2
  exit 1
fi
for f in nanoAOD_2015_CMS_Open_Data_ttbar.root nano_dy.root; do
  echo "== ferry root ls $DATA/$f (first branches)"
  "$FERRY" root ls "$DATA/$f" | head -12
  echo
done
echo "== ferry root dump: first 5 events of the 2015 CMS Open Data ttbar NanoAOD"
"$FERRY" root dump "$DATA/nanoAOD_2015_CMS_Open_Data_ttbar.root" --tree Events \
  --branch run --branch luminosityBlock --branch event --branch nJet --branch Jet_pt --entries 0:5
