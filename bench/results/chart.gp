set terminal pngcairo size 1400,700 font 'sans,10'
set output 'bench/results/results.png'
set title 'sluice vs containerd 1.6: throughput (median of runs), log scale'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set logscale y
set ylabel 'MiB/s'
set grid ytics
set xtics rotate by -30 left
set key top right
set bmargin 9
plot 'bench/results/chart.dat' using 2:xtic(1) title 'sluice', '' using 3 title 'containerd', '' using 4 title 'loopback TCP (limit)'
