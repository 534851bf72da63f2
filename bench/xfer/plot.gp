# bench/xfer plot: Gbit/s per tool, one bar per path (loopback, LFN 2 and 10 Gbit/s).
# usage: gnuplot -e "datafile='xfer.dat'; outfile='xfer.png'" plot.gp
set terminal pngcairo size 1100,560 font ",10"
set output outfile
set termoption noenhanced
set title "One file disk to disk (source cache dropped, destination fsynced, checksum verified)"
set ylabel "Gbit/s"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top right
set grid ytics
set xtics rotate by -25 scale 0
set yrange [0:*]
plot for [i=2:*] datafile using i:xtic(1) title columnheader(i)
