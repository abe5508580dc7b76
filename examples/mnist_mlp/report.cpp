#include "report.h"

#include <normgrad/normgrad.h>

#include <cstdio>
#include <fstream>
#include <optional>

namespace mnist_mlp {

namespace {

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

std::ofstream open_for_writing(const std::string& path, const char* who) {
  std::ofstream out(path, std::ios::trunc);
  NG_CHECK(out.good(), who, "cannot open '", path, "' for writing");
  return out;
}

void check_written(std::ofstream& out, const std::string& path, const char* who) {
  out.close();
  NG_CHECK(!out.fail(), who, "writing '", path, "' failed");
}

// LayerNorm's ms per step at the same batch size, if LayerNorm ran with the default spec.
std::optional<double> layernorm_ms_per_step(const std::vector<RunResult>& results,
                                            std::int64_t batch_size) {
  for (const RunResult& run : results)
    if (run.norm == "layernorm" && run.batch_size == batch_size) return run.ms_per_step;
  return std::nullopt;
}

}  // namespace

std::string run_label(const RunResult& result) {
  return result.norm + " b=" + std::to_string(result.batch_size);
}

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';  // a quote inside a quoted field is doubled
    quoted += c;
  }
  return quoted + '"';
}

void write_curves_csv(const std::string& path, const std::vector<RunResult>& results) {
  std::ofstream out = open_for_writing(path, "write_curves_csv");
  out << "run,norm,batch_size,step,wall_seconds,train_loss,test_accuracy\n";
  for (std::size_t run = 0; run < results.size(); ++run) {
    const RunResult& result = results[run];
    for (const CurvePoint& point : result.curve) {
      out << run << ',' << csv_field(result.norm) << ',' << result.batch_size << ',' << point.step
          << ',' << format("%.4f", point.wall_seconds) << ',' << format("%.6g", point.train_loss)
          << ',' << (point.test_accuracy ? format("%.4f", *point.test_accuracy) : "") << '\n';
    }
  }
  check_written(out, path, "write_curves_csv");
}

void write_summary_csv(const std::string& path, const std::vector<RunResult>& results) {
  std::ofstream out = open_for_writing(path, "write_summary_csv");
  out << "run,norm,batch_size,steps,parameters,train_seconds,ms_per_step,test_accuracy,"
         "other_processes_cpu\n";
  for (std::size_t run = 0; run < results.size(); ++run) {
    const RunResult& result = results[run];
    out << run << ',' << csv_field(result.norm) << ',' << result.batch_size << ',' << result.steps
        << ',' << result.parameters << ',' << format("%.3f", result.train_seconds) << ','
        << format("%.3f", result.ms_per_step) << ',' << format("%.4f", result.test_accuracy) << ','
        << (result.other_processes_cpu ? format("%.3f", *result.other_processes_cpu) : "") << '\n';
  }
  check_written(out, path, "write_summary_csv");
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
        reference ? format("%+.1f%%", 100.0 * (*reference - result.ms_per_step) / *reference) : "–";
    table += "| " + result.norm + " | " + std::to_string(result.batch_size) + " | " +
             std::to_string(result.steps) + " | " + std::to_string(result.parameters) + " | " +
             format("%.2f%%", 100.0 * result.test_accuracy) + " | " +
             format("%.2f", result.ms_per_step) + " | " + saving + " | " +
             (result.other_processes_cpu ? format("%.0f%%", 100.0 * *result.other_processes_cpu)
                                         : std::string("–")) +
             " |\n";
  }
  return table;
}

}  // namespace mnist_mlp
