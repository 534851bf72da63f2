#!/usr/bin/env bash
# plot_bars.sh TITLE YLABEL DATA OUT.png
# DATA: whitespace-separated rows "label series1 series2 ..." with a header row naming the
# series. Draws grouped bars with gnuplot (pngcairo).
set -euo pipefail
title=$1; ylabel=$2; data=$3; out=$4
ncol=$(head -1 "$data" | wc -w)
plot=""
for ((c = 2; c <= ncol; c++)); do
  plot+="'$data' using $c:xtic(1) title columnheader($c)"
  [ $c -lt $ncol ] && plot+=", "
done
gnuplot <<GP
set terminal pngcairo size 1000,560 font ",10" noenhanced
set output "$out"
set title "$title"
set ylabel "$ylabel"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top right
set xtics rotate by -25
set yrange [0:*]
plot $plot
GP
