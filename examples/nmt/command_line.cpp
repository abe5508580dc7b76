#include "command_line.h"

#include <cstdio>
#include <iostream>

#include "common/device_flag.h"
#include "text/unicode_text.h"

namespace nmt {

namespace ng = normgrad;

ng::Device parse_device(const std::string& name, const std::string& program) {
  return examples::parse_device(name, program);
}

std::vector<std::string> read_stdin_lines() {
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ng::text::decode_utf8(line, "standard input line " + std::to_string(lines.size() + 1));
    lines.push_back(line);
  }
  return lines;
}

void write_translations(std::ostream& out, const std::vector<std::vector<Translation>>& lists,
                        std::int64_t n_best) {
  for (std::size_t i = 0; i < lists.size(); ++i) {
    if (n_best == 1) {
      out << lists[i].front().text << "\n";
      continue;
    }
    for (const auto& translation : lists[i])
      out << i << " ||| " << translation.text << " ||| " << translation.score << "\n";
  }
}

void write_scores(std::ostream& out, const std::vector<PairScore>& scores) {
  char line[64];
  for (const auto& score : scores) {
    std::snprintf(line, sizeof line, "%.6f\t%lld\n", score.log_probability,
                  static_cast<long long>(score.tokens));
    out << line;
  }
}

}  // namespace nmt
