#include "train_log.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/text_file.h"
#include "text/text_file.h"

namespace nmt {

namespace ng = normgrad;
namespace fs = std::filesystem;

namespace {

const char* const csv_header =
    "step,wall_seconds,train_loss,train_token_loss,dev_token_loss,dev_bleu,tokens_per_second,"
    "step_seconds,learning_rate";

// Splits one CSV line (train.csv holds no quoted fields).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

std::string optional_number(double value, const char* format) {
  if (value < 0) return "";
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

ng::io::Metadata LoopState::to_metadata(const std::string& tokenizer_fingerprint) const {
  return {{"position", std::to_string(position.epoch) + " " + std::to_string(position.batch)},
          {"best_bleu", std::to_string(best_bleu)},
          {"evaluations_without_best", std::to_string(evaluations_without_best)},
          {"wall_seconds", std::to_string(wall_seconds)},
          {ng::text::tokenizer_metadata_key, tokenizer_fingerprint}};
}

LoopState LoopState::from_metadata(const ng::io::Metadata& metadata, const std::string& path,
                                   const std::string& program) {
  LoopState state;
  try {
    std::istringstream position(metadata.at("position"));
    position >> state.position.epoch >> state.position.batch;
    state.best_bleu = std::stod(metadata.at("best_bleu"));
    state.evaluations_without_best = std::stoll(metadata.at("evaluations_without_best"));
    state.wall_seconds = std::stod(metadata.at("wall_seconds"));
  } catch (const std::exception&) {
    throw ng::Error(program + ": " + path + " is not a " + program +
                    " training state (its loop state is missing or broken)");
  }
  return state;
}

TrainLog::TrainLog(std::string path, std::string program)
    : path_(std::move(path)), program_(std::move(program)) {}

TrainLog::~TrainLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void TrainLog::start(std::int64_t resumed_step) {
  std::string kept = std::string(csv_header) + "\n";
  std::error_code ec;
  if (resumed_step > 0 && fs::exists(path_, ec)) {
    // A resumed run writes the rows after its training state's step again. Rows of a log
    // written before the learning_rate column get it empty.
    const auto columns = csv_fields(csv_header).size();
    const auto lines = ng::text::read_text_lines(path_);
    for (std::size_t i = 1; i < lines.size(); ++i) {
      if (lines[i].empty()) continue;
      if (std::stoll(lines[i].substr(0, lines[i].find(','))) > resumed_step) continue;
      kept += lines[i] + (csv_fields(lines[i]).size() + 1 == columns ? ",\n" : "\n");
    }
  }
  examples::write_text_file(path_, kept, program_);
  file_ = std::fopen(path_.c_str(), "a");
  NG_CHECK(file_ != nullptr, program_, "cannot append to ", path_);
}

void TrainLog::append(const LogRow& row) {
  NG_CHECK(file_ != nullptr, program_, "the training log ", path_, " was not started");
  std::fprintf(file_, "%lld,%.3f,%.6f,%.6f,%s,%s,%.1f,%.6f,%s\n", static_cast<long long>(row.step),
               row.wall_seconds, row.train_loss, row.train_token_loss,
               optional_number(row.dev_token_loss, "%.6f").c_str(),
               optional_number(row.dev_bleu, "%.2f").c_str(), row.tokens_per_second,
               row.step_seconds, optional_number(row.learning_rate, "%.6g").c_str());
  std::fflush(file_);
}

std::vector<LogRow> read_train_log(const std::string& path, const std::string& program) {
  const auto lines = ng::text::read_text_lines(path);
  NG_CHECK(!lines.empty() && lines[0].rfind("step,wall_seconds,", 0) == 0, program, path,
           " is not a ", program, " training log (its header is missing)");
  const auto header = csv_fields(lines[0]);
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const char* name :
       {"step", "wall_seconds", "train_token_loss", "dev_token_loss", "dev_bleu", "step_seconds"}) {
    NG_CHECK(column.count(name) == 1, program, path, " has no column ", name);
  }
  std::vector<LogRow> rows;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    const auto fields = csv_fields(lines[i]);
    NG_CHECK(fields.size() == header.size(), program, path, " line ", i + 1, " has ", fields.size(),
             " fields, the header ", header.size());
    const auto number = [&](const char* name, double missing) {
      const auto found = column.find(name);
      if (found == column.end() || fields[found->second].empty()) return missing;
      const std::string& field = fields[found->second];
      try {
        return std::stod(field);
      } catch (const std::exception&) {
        throw ng::Error(program + ": " + path + " line " + std::to_string(i + 1) + ": '" + field +
                        "' is not a number");
      }
    };
    LogRow row;
    row.step = static_cast<std::int64_t>(number("step", 0));
    row.wall_seconds = number("wall_seconds", 0);
    row.train_loss = number("train_loss", 0);
    row.train_token_loss = number("train_token_loss", 0);
    row.dev_token_loss = number("dev_token_loss", -1);
    row.dev_bleu = number("dev_bleu", -1);
    row.tokens_per_second = number("tokens_per_second", 0);
    row.step_seconds = number("step_seconds", 0);
    row.learning_rate = number("learning_rate", -1);
    rows.push_back(row);
  }
  return rows;
}

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double position = q * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(position);
  const std::size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (position - static_cast<double>(below)) * (values[above] - values[below]);
}

}  // namespace nmt
