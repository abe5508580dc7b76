#pragma once
// A run's records (one an epoch, or one a validation) as CSV: a header naming the columns, then
// a line per record. Numbers are written with 17 significant digits, so that a double reads
// back to the same bits: the programs keep this text in their training states and resume from
// it, and write it as train.csv.
//
//   const std::vector<examples::CsvColumn<EpochRecord>> columns{
//       {"epoch", &EpochRecord::epoch}, {"train_loss", &EpochRecord::train_loss}};
//   std::string text = examples::records_csv(columns, history);
//   history = examples::parse_records_csv(columns, text, "convpool_cnn_c");

#include <normgrad/normgrad.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace examples {

// A CSV field: `text` as it is, or quoted as RFC 4180 says when it holds a comma, a quote or a
// line end (a spec such as "prmsnorm:0.125,eps=1e-8" does).
inline std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';  // a quote inside a quoted field is doubled
    quoted += c;
  }
  return quoted + '"';
}

template <class Record> struct CsvColumn {
  const char* name;
  std::variant<std::int64_t Record::*, double Record::*> field;
};

template <class Record>
std::string records_csv(const std::vector<CsvColumn<Record>>& columns,
                        const std::vector<Record>& records) {
  std::ostringstream out;
  out.precision(17);
  for (std::size_t c = 0; c < columns.size(); ++c) out << (c > 0 ? "," : "") << columns[c].name;
  out << '\n';
  for (const Record& record : records) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c > 0) out << ',';
      std::visit([&](auto field) { out << record.*field; }, columns[c].field);
    }
    out << '\n';
  }
  return out.str();
}

// The records of records_csv's text. An Error naming `program` when the header is not the
// columns' names, or when a line does not hold one number a column or its first column does
// not grow (a damaged history).
template <class Record>
std::vector<Record> parse_records_csv(const std::vector<CsvColumn<Record>>& columns,
                                      const std::string& text, const std::string& program) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  const std::string header = records_csv(columns, std::vector<Record>{});
  NG_CHECK(line + "\n" == header, program, "the training history does not start with its header");
  std::vector<Record> records;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    Record record{};
    std::istringstream fields(line);
    bool read = true;
    for (std::size_t c = 0; c < columns.size() && read; ++c) {
      char comma = ',';
      if (c > 0) fields >> comma;
      std::visit([&](auto field) { fields >> record.*field; }, columns[c].field);
      read = !fields.fail() && comma == ',';
    }
    const bool grows = records.empty() || std::visit(
                                              [&](auto field) {
                                                return record.*field > records.back().*field;
                                              },
                                              columns[0].field);
    NG_CHECK(read && fields.peek() == std::char_traits<char>::eof() && grows, program, "line ",
             records.size() + 2, " of the training history is damaged: '", line, "'");
    records.push_back(record);
  }
  return records;
}

}  // namespace examples
