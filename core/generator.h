#pragma once
// Generator: a seeded source of random numbers for rand, randn, randint, dropout and
// initialisers.
//
// It is counter-based (Philox 4x32-10): a draw of n numbers reserves n counters, and number
// i of the draw depends only on (seed, offset + i). So the same seed gives the same tensors
// run after run, on any thread count and on any device, and a Generator's whole state is
// the pair (seed, offset), which a checkpoint can save and restore.

#include <atomic>
#include <cstdint>

namespace normgrad {

class Generator {
 public:
  explicit Generator(std::uint64_t seed = 0) : seed_(seed) {}
  Generator(const Generator& other) : seed_(other.seed_), offset_(other.offset_.load()) {}
  Generator& operator=(const Generator& other) {
    seed_ = other.seed_;
    offset_ = other.offset_.load();
    return *this;
  }

  std::uint64_t seed() const { return seed_; }
  std::uint64_t offset() const { return offset_.load(); }
  // Restarts the stream: the next draws are those of a fresh Generator(seed).
  void manual_seed(std::uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  void set_offset(std::uint64_t offset) { offset_ = offset; }
  // Reserves `count` counters and returns the first. Safe to call from several threads.
  std::uint64_t reserve(std::uint64_t count) { return offset_.fetch_add(count); }

 private:
  std::uint64_t seed_;
  std::atomic<std::uint64_t> offset_{0};
};

// The generator used when none is passed. Its seed is 0 until manual_seed() is called.
Generator& default_generator();
void manual_seed(std::uint64_t seed);

}  // namespace normgrad
