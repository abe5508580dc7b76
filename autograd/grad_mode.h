#pragma once
// Grad mode: whether ops record the graph for backward. On by default, per thread.
// NoGradGuard turns it off for a scope — for evaluation, optimizer updates and inside
// backward passes themselves.

namespace normgrad {

class GradMode {
 public:
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class NoGradGuard {
 public:
  NoGradGuard() : previous_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace normgrad
