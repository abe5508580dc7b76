#include "decoding/length_penalty.h"

#include <cmath>

namespace normgrad::decoding {

std::string to_string(LengthPenalty penalty) {
  switch (penalty) {
    case LengthPenalty::None:
      return "none";
    case LengthPenalty::Average:
      return "average";
    case LengthPenalty::Gnmt:
      return "gnmt";
  }
  return "unknown";
}

double penalised_score(double log_prob, std::int64_t length, LengthPenalty penalty, double alpha) {
  const double y = static_cast<double>(length);
  switch (penalty) {
    case LengthPenalty::None:
      return log_prob;
    case LengthPenalty::Average:
      return log_prob / y;
    case LengthPenalty::Gnmt:
      return log_prob / std::pow((5.0 + y) / 6.0, alpha);
  }
  return log_prob;
}

}  // namespace normgrad::decoding
