#pragma once
// The curves drawn with gnuplot, as the RMSNorm paper's Figure 1 draws them: training loss
// against steps and against wall-clock time, and here also test accuracy against steps (the
// LayerNorm paper's MNIST figure). One image per batch size, its three panels side by side.
//
// The gnuplot script is written next to the CSV it reads, so the plots can be redrawn or
// restyled later with `gnuplot curves.gp` in that folder.

#include <string>
#include <vector>

#include "common/gnuplot.h"
#include "training.h"

namespace mnist_mlp {

struct PlotSettings {
  std::string terminal = "pngcairo";           // pngcairo | png | svg
  std::string title = "784-1000-1000-10 MLP";  // above each image, before the batch size
};

// The image files the script draws, one per batch size in order of first appearance:
// "loss_b128.png", "loss_b4.png" (".svg" for the svg terminal).
std::vector<std::string> plot_files(const std::vector<RunResult>& results,
                                    const PlotSettings& settings);

// The gnuplot script (common/gnuplot.h's lines first), drawing curves.csv (curves_csv). Run i of
// `results` is row group `run == i` of the CSV.
std::string plot_script(const std::vector<RunResult>& results, const PlotSettings& settings);

// Writes <folder>/curves.gp for the terminal gnuplot offers and runs it
// (examples::draw_figures): the images drawn, or why there are none.
examples::FiguresOutcome draw_plots(const std::string& folder,
                                    const std::vector<RunResult>& results, std::string title);

}  // namespace mnist_mlp
