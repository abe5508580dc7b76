# Time against arithmetic, by op family, in one training step of each model: the bars of
# profile_shares.dat (written from the tables of `--profile`; docs/profiling.md).
#   gnuplot profile_shares.gp     (from docs/figures/; Debian package gnuplot-nox)
set terminal pngcairo size 1000,420 font ",11" noenhanced
set output "profile_shares.png"
set multiplot layout 1,2
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set yrange [0:100]
set ylabel "share of the kernels (%)"
set xtics rotate by -35 nomirror
set grid ytics
set key top right
set title "RNNSearch step (cpu preset, RMSNorm)"
plot "profile_shares.dat" index 0 using 2:xtic(1) title "kernel time" linecolor rgb "#3b6ea8", \
     "" index 0 using 3 title "floating-point operations" linecolor rgb "#e0a030"
set title "ConvPool-CNN-C step (batch 64, RMSNorm)"
plot "profile_shares.dat" index 1 using 2:xtic(1) title "kernel time" linecolor rgb "#3b6ea8", \
     "" index 1 using 3 title "floating-point operations" linecolor rgb "#e0a030"
unset multiplot
