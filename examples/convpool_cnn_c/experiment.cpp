#include "experiment.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "common/budget.h"
#include "common/gnuplot.h"
#include "common/norm_sweep.h"
#include "common/norm_timing.h"
#include "common/number_text.h"
#include "run.h"

namespace convpool_cnn_c {

namespace ng = normgrad;

using examples::format_number;

namespace {

// The paper's Table 10 (CIFAR-10, full width, 200 epochs, a GeForce RTX 2080 Ti).
struct PaperRow {
  const char* model;
  const char* test_error;
  const char* seconds;
};
const std::map<std::string, PaperRow> paper_rows{
    {"none", {"Baseline", "8.96%", "21"}},
    {"batchnorm", {"BatchNorm", "8.25%", "38"}},
    {"weightnorm", {"WeightNorm", "8.28%", "23"}},
    {"layernorm", {"LayerNorm", "10.49%", "39"}},
    {"rmsnorm", {"RMSNorm", "8.83%", "31 (20.5%)"}},
    {"prmsnorm:0.125", {"pRMSNorm (p = 12.5%)", "10.37%", "30 (23.1%)"}}};

std::string percent(double fraction) { return format_number("%.2f%%", 100 * fraction); }

// The seconds of each epoch of the run.
std::vector<double> epoch_seconds(const ExperimentRun& run) {
  std::vector<double> seconds;
  for (const EpochRecord& r : run.history) seconds.push_back(r.seconds);
  return seconds;
}

std::string curves_csv(const std::vector<ExperimentRun>& runs) {
  std::ostringstream out;
  out.precision(10);
  out << "norm,epoch,seconds,train_loss,train_error,test_error\n";
  for (const ExperimentRun& run : runs) {
    double seconds = 0;
    for (const EpochRecord& r : run.history) {
      seconds += r.seconds;
      out << run.norm << ',' << r.epoch << ',' << seconds << ',' << r.train_loss << ','
          << r.train_error << ',' << r.test_error << '\n';
    }
  }
  return out.str();
}

std::string table_csv(const std::vector<ExperimentRun>& runs, std::int64_t test_images) {
  std::ostringstream out;
  out.precision(10);
  out << "norm,epochs,test_error,test_images,train_error,seconds_per_epoch,seconds_spread,"
         "speedup_over_layernorm\n";
  for (const ExperimentRun& run : runs) {
    const EpochRecord& last = run.history.back();
    const auto speedup = speedup_over_layernorm(runs, run);
    out << run.norm << ',' << last.epoch << ',' << last.test_error << ',' << test_images << ','
        << last.train_error << ',' << median_epoch_seconds(run) << ','
        << examples::relative_range(epoch_seconds(run)) << ','
        << (speedup ? format_number("%.2f", *speedup) : "") << '\n';
  }
  return out.str();
}

// training_error.png: training error against epochs and against seconds, every norm.
std::optional<std::string> draw_figure(const std::string& folder,
                                       const std::vector<ExperimentRun>& runs) {
  std::vector<std::string> norms;
  for (const ExperimentRun& run : runs) norms.push_back(run.norm);
  std::string body =
      "set multiplot layout 1,2 title " +
      examples::gnuplot_quoted("ConvPool-CNN-C: training error (noise and dropout on)") +
      "\nset ylabel 'training error'\nset key top right\nset grid\n";
  for (const auto& [column, label] : {std::pair{"2", "epoch"}, std::pair{"3", "training seconds"}})
    body += std::string("set xlabel '") + label + "'\n" +
            examples::plot_per_norm(norms, column, "5", "linespoints lw 1.5");
  return examples::draw_curves(folder, "convpool_cnn_c", "training_error", 1200, 450,
                               body + "unset multiplot\n");
}

}  // namespace

const std::vector<Budget>& budgets() {
  static const std::vector<Budget> all{
      // seconds: checks the whole pipeline, learns next to nothing
      {.name = "tiny", .width = 0.05, .epochs = 1, .train_size = 600, .test_size = 200},
      {.name = "demo", .width = 0.25, .epochs = 3, .train_size = 6000, .test_size = 2000},
      {.name = "long", .width = 0.5, .epochs = 4, .train_size = 20000, .test_size = 5000},
      // the paper's width on the whole dataset (train_size 0: every image)
      {.name = "gpu", .width = 1.0, .epochs = 10, .train_size = 0, .test_size = 0},
      // the paper's whole schedule: 100 epochs, then 100 of decay
      {.name = "paper", .width = 1.0, .epochs = 200, .train_size = 0, .test_size = 0}};
  return all;
}

Budget budget_named(const std::string& name) {
  return examples::budget_named(budgets(), name, "convpool_cnn_c");
}

std::vector<std::string> paper_norms() {
  return {"none", "batchnorm", "weightnorm", "layernorm", "rmsnorm", "prmsnorm:0.125"};
}

double median_epoch_seconds(const ExperimentRun& run) {
  return examples::median(epoch_seconds(run));
}

std::optional<double> speedup_over_layernorm(const std::vector<ExperimentRun>& runs,
                                             const ExperimentRun& run) {
  for (const ExperimentRun& other : runs)
    if (examples::is_layernorm(other.norm)) {
      const double layernorm = median_epoch_seconds(other);
      return 100 * (layernorm - median_epoch_seconds(run)) / layernorm;
    }
  return std::nullopt;
}

std::string table_markdown(const std::vector<ExperimentRun>& runs) {
  std::ostringstream out;
  out << "| model | test error | training error | s / epoch | speed-up over LayerNorm | paper: "
         "test error | paper: s / epoch |\n|---|---|---|---|---|---|---|\n";
  for (const ExperimentRun& run : runs) {
    const EpochRecord& last = run.history.back();
    const auto speedup = speedup_over_layernorm(runs, run);
    const auto paper = paper_rows.find(run.norm);
    out << "| " << run.norm << " | " << percent(last.test_error) << " | "
        << percent(last.train_error) << " | " << format_number("%.1f", median_epoch_seconds(run))
        << " | " << (speedup ? format_number("%.1f%%", *speedup) : "") << " | "
        << (paper != paper_rows.end() ? paper->second.test_error : "") << " | "
        << (paper != paper_rows.end() ? paper->second.seconds : "") << " |\n";
  }
  return out.str();
}

std::vector<ExperimentRun> run_experiment(const ExperimentSettings& settings, ng::Device device,
                                          bool progress_bar) {
  const auto check = [&](const examples::SweepRun& run) {
    parse_model_norm(run.norm);
    examples::check_sweep_run<ModelFolder>(run, examples::with_norm(settings.base, run.norm));
  };
  const examples::NormSweep sweep{.program = "convpool_cnn_c",
                                  .out = settings.out,
                                  .norms = settings.norms,
                                  .variant = "",
                                  .check = check};
  const std::vector<ExperimentRun> runs =
      examples::run_norm_sweep(sweep, [&](const examples::SweepRun& run) {
        return ExperimentRun{run.norm, train_in_folder(ModelFolder(run.folder),
                                                       examples::with_norm(settings.base, run.norm),
                                                       device, progress_bar, stdout)};
      });

  // The experiment's folder holds files as a model folder does: each written atomically.
  const ModelFolder out(settings.out);
  const RunConfig& base = settings.base;
  const std::int64_t test_images =
      base.data.test_size > 0 ? std::min(base.data.test_size, kTestImages) : kTestImages;
  out.write_text("table10.csv", table_csv(runs, test_images));
  out.write_text("curves.csv", curves_csv(runs));
  const auto figure = draw_figure(settings.out, runs);
  const std::string table = table_markdown(runs);
  std::ostringstream report;
  report << "# ConvPool-CNN-C: the RMSNorm paper's Table 10 in shape\n\n"
         << "Written by `convpool_cnn_c experiment` on " << examples::today_utc() << ", budget "
         << settings.budget << ": " << dataset_name(base.data.kind) << ", "
         << (base.data.train_size > 0 ? std::to_string(base.data.train_size) : "all")
         << " training and "
         << (base.data.test_size > 0 ? std::to_string(base.data.test_size) : "all")
         << " test images, width " << base.model.width << ", " << base.training.epochs
         << " epochs of batches of " << base.training.batch_size << ", seed " << base.model.seed
         << ", on " << device.str() << ".\n\n"
         << table << "\n"
         << "Errors after the last epoch; the training error is over that epoch's batches with "
            "noise and dropout on, as the paper's code reports it. Seconds per epoch: the median "
            "over the epochs, training alone. The paper's columns are CIFAR-10 at full width "
            "after 200 epochs on a GeForce RTX 2080 Ti: the shape of the comparison is what "
            "carries over, not the values.\n";
  if (figure) report << "\n![training error](" << *figure << ")\n";
  out.write_text("report.md", report.str());
  std::printf("\n%s\nreport: %s/report.md\n", table.c_str(), settings.out.c_str());
  return runs;
}

}  // namespace convpool_cnn_c
