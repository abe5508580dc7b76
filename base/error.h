#pragma once
// normgrad::Error — the one exception type for user mistakes.
//
// Every public function checks its arguments and throws Error with a message of the form
//   "<operation>: <what is wrong, with the offending shapes, dtypes, devices or values>"
// so that a user reading the message knows which call failed and why.

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace normgrad {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {

// Joins any streamable values into one string: concat("got ", 3, " dims") == "got 3 dims".
template <typename... Args>
std::string concat(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

}  // namespace detail
}  // namespace normgrad

// NG_CHECK(condition, "op", message parts...) throws normgrad::Error("op: message") when the
// condition is false. The message parts are only formatted on failure.
#define NG_CHECK(condition, op, ...)                                                   \
  do {                                                                                 \
    if (!(condition)) [[unlikely]]                                                     \
      throw ::normgrad::Error(::normgrad::detail::concat(op, ": ", __VA_ARGS__));      \
  } while (false)
