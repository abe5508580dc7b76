#include "report.h"

#include <normgrad/normgrad.h>

#include <optional>
#include <sstream>

#include "common/number_text.h"
#include "common/record_csv.h"

namespace mnist_mlp {

namespace {

using examples::csv_field;
using examples::format_number;

// LayerNorm's ms per step at the same batch size, if LayerNorm ran with the default spec.
std::optional<double> layernorm_ms_per_step(const std::vector<RunResult>& results,
                                            std::int64_t batch_size) {
  for (const RunResult& run : results)
    if (run.norm == "layernorm" && run.batch_size == batch_size) return run.ms_per_step;
  return std::nullopt;
}

}  // namespace

std::string curves_csv(const std::vector<RunResult>& results) {
  std::ostringstream out;
  out << "run,norm,batch_size,step,wall_seconds,train_loss,test_accuracy\n";
  for (std::size_t run = 0; run < results.size(); ++run) {
    const RunResult& result = results[run];
    for (const CurvePoint& point : result.curve) {
      out << run << ',' << csv_field(result.norm) << ',' << result.batch_size << ',' << point.step
          << ',' << format_number("%.4f", point.wall_seconds) << ','
          << format_number("%.6g", point.train_loss) << ','
          << (point.test_accuracy ? format_number("%.4f", *point.test_accuracy) : "") << '\n';
    }
  }
  return out.str();
}

std::string summary_csv(const std::vector<RunResult>& results) {
  std::ostringstream out;
  out << "run,norm,batch_size,steps,parameters,train_seconds,ms_per_step,test_accuracy,"
         "other_processes_cpu\n";
  for (std::size_t run = 0; run < results.size(); ++run) {
    const RunResult& result = results[run];
    out << run << ',' << csv_field(result.norm) << ',' << result.batch_size << ',' << result.steps
        << ',' << result.parameters << ',' << format_number("%.3f", result.train_seconds) << ','
        << format_number("%.3f", result.ms_per_step) << ','
        << format_number("%.4f", result.test_accuracy) << ','
        << (result.other_processes_cpu ? format_number("%.3f", *result.other_processes_cpu) : "")
        << '\n';
  }
  return out.str();
}

std::string results_table(const std::vector<RunResult>& results) {
  std::string table =
      "| normaliser | batch | steps | parameters | test accuracy | ms/step | vs LayerNorm | "
      "others' CPU |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const RunResult& result : results) {
    const auto reference = layernorm_ms_per_step(results, result.batch_size);
    // (T_LN - T) / T_LN: positive when the run is faster than LayerNorm.
    const std::string saving =
        reference ? format_number("%+.1f%%", 100.0 * (*reference - result.ms_per_step) / *reference)
                  : "–";
    table +=
        "| " + result.norm + " | " + std::to_string(result.batch_size) + " | " +
        std::to_string(result.steps) + " | " + std::to_string(result.parameters) + " | " +
        format_number("%.2f%%", 100.0 * result.test_accuracy) + " | " +
        format_number("%.2f", result.ms_per_step) + " | " + saving + " | " +
        (result.other_processes_cpu ? format_number("%.0f%%", 100.0 * *result.other_processes_cpu)
                                    : std::string("–")) +
        " |\n";
  }
  return table;
}

std::string report_markdown(const std::vector<RunResult>& results, const std::string& setup,
                            const std::vector<std::string>& images) {
  std::string text =
      "# The LayerNorm paper's MLP on Fashion-MNIST, with each normaliser\n\n" + setup +
      "\n\nThe permutation-invariant MNIST experiment of the LayerNorm paper (a 784-1000-1000-10 "
      "MLP, the norm on both hidden layers), on Fashion-MNIST: not one of the RMSNorm paper's "
      "tables, but the same comparison of the norms' quality and step time on the smallest "
      "model that shows it. Each run starts from the same seed.\n\n" +
      results_table(results);
  for (const std::string& image : images) text += "\n![training loss](" + image + ")\n";
  return text;
}

}  // namespace mnist_mlp
