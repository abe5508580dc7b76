// Data-parallel training's communication, on the ranks mpirun starts (a plain program, not
// Google Benchmark: every rank must time the same calls in the same order). Prints one JSON
// line from rank 0.
//
//   mpirun -np 2 bench_data_parallel allreduce
//     The sum over the ranks of float32 buffers from 4 KiB to 64 MiB, three ways, in turns:
//     ProcessGroup::all_reduce (with its check that the ranks agree), all_reduce_async + wait
//     (what DataParallel's buckets use), and bare MPI_Allreduce on the same buffer (the
//     baseline). Median seconds of each, and the bus bandwidth 2 (n - 1) / n x bytes / time.
//
//   mpirun -np 2 bench_data_parallel overlap --preset cpu
//     A gru_nmt training step (gru_nmt::train_step on a batch of random sentences per rank)
//     four ways, in turns: without communication (each rank alone: the compute), with
//     DataParallel's buckets of --bucket-mb (communication overlapping backward), with one
//     bucket as large as the model (sent when backward has finished: nothing overlaps), and
//     the backward pass alone; and the all-reduce of the whole gradient alone. The
//     communication a step exposes is its time over the compute; more directly, DataParallel
//     says how long backward waited at its end for the buckets (last_pass()), and the share
//     hidden is 1 - that wait / the all-reduce alone.

#include <mpi.h>
#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "text/translation_batches.h"
#include "distributed/data_parallel.h"
#include "gru_nmt/model.h"
#include "gru_nmt/settings.h"
#include "gru_nmt/training.h"

namespace ng = normgrad;
namespace dist = normgrad::distributed;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Seconds of one call of `run`, started together on every rank (a barrier first), as rank 0
// sees the slowest rank's: the times are the ranks' maximum.
double timed(const dist::ProcessGroup& group, const std::function<void()>& run) {
  group.barrier();
  const auto start = Clock::now();
  run();
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

// Each way's medians over `rounds`, the ways taking turns within a round (so that a slow
// moment of a shared machine falls on all of them alike).
std::vector<double> rounds_of(const dist::ProcessGroup& group,
                              const std::vector<std::function<void()>>& ways, int rounds,
                              int warmup) {
  std::vector<std::vector<double>> seconds(ways.size());
  for (int round = 0; round < warmup + rounds; ++round)
    for (std::size_t w = 0; w < ways.size(); ++w) {
      const double s = timed(group, ways[w]);
      if (round >= warmup) seconds[w].push_back(s);
    }
  std::vector<double> medians;
  for (const auto& s : seconds) medians.push_back(median(s));
  return medians;
}

nlohmann::json allreduce(const dist::ProcessGroup& group, int rounds) {
  nlohmann::json rows = nlohmann::json::array();
  for (std::int64_t bytes = 4 << 10; bytes <= (std::int64_t{64} << 20); bytes *= 4) {
    const std::int64_t n = bytes / 4;
    ng::Tensor buffer = ng::ones({n});
    float* data = buffer.data_ptr<float>();
    const int count = static_cast<int>(n);
    const std::vector<double> medians = rounds_of(
        group,
        {[&] { group.all_reduce(buffer); }, [&] { group.all_reduce_async(buffer).wait(); },
         [&] { MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
         [&] {
           MPI_Request request = MPI_REQUEST_NULL;
           MPI_Iallreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
           MPI_Wait(&request, MPI_STATUS_IGNORE);
         }},
        rounds, 2);
    const double bus = 2.0 * (group.size() - 1) / group.size() * static_cast<double>(bytes);
    rows.push_back({{"bytes", bytes},
                    {"checked_seconds", medians[0]},
                    {"async_seconds", medians[1]},
                    {"mpi_seconds", medians[2]},
                    {"mpi_nonblocking_seconds", medians[3]},
                    {"checked_bus_gb_per_s", bus / medians[0] / 1e9},
                    {"async_bus_gb_per_s", bus / medians[1] / 1e9},
                    {"mpi_bus_gb_per_s", bus / medians[2] / 1e9},
                    {"checked_over_mpi", medians[0] / medians[2]},
                    {"async_over_mpi", medians[1] / medians[2]}});
  }
  return rows;
}

// A batch of `rows` random sentence pairs of 10 to 30 subwords, as TranslationBatches makes
// them (ids + eos, bos + ids, padding masks).
ng::text::TranslationBatch random_batch(std::int64_t rows, std::int64_t vocabulary, int rank) {
  // The same lengths on every rank, so that their steps take as long (what the bench
  // measures is communication, not the ranks' imbalance); other words.
  ng::Generator same(1000), own(2000 + static_cast<std::uint64_t>(rank));
  const std::vector<std::int64_t> lengths =
      ng::randint(10, 31, {2 * rows}, same).to_vector<std::int64_t>();
  const std::int64_t width = 31;
  const ng::Tensor words = ng::randint(4, vocabulary, {2, rows, width}, own);
  std::vector<std::int64_t> w = words.to_vector<std::int64_t>();
  std::vector<std::int64_t> source(rows * width, ng::text::pad_id), source_padding(rows * width, 1);
  std::vector<std::int64_t> input(rows * width, ng::text::pad_id),
      output(rows * width, ng::text::pad_id), target_padding(rows * width, 1);
  std::vector<std::int64_t> source_lengths(rows), target_lengths(rows);
  ng::text::TranslationBatch batch;
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t s = lengths[r], t = lengths[rows + r];
    for (std::int64_t i = 0; i < s; ++i) source[r * width + i] = w[r * width + i];
    source[r * width + s] = ng::text::eos_id;
    input[r * width] = ng::text::bos_id;
    for (std::int64_t i = 0; i < t; ++i) {
      input[r * width + i + 1] = w[(rows + r) * width + i];
      output[r * width + i] = w[(rows + r) * width + i];
    }
    output[r * width + t] = ng::text::eos_id;
    std::fill_n(source_padding.begin() + r * width, s + 1, 0);
    std::fill_n(target_padding.begin() + r * width, t + 1, 0);
    source_lengths[r] = s + 1;
    target_lengths[r] = t + 1;
    batch.pairs.push_back(static_cast<std::size_t>(r));
    batch.source_tokens += s + 1;
    batch.target_tokens += t + 1;
  }
  const auto matrix = [&](const std::vector<std::int64_t>& v) {
    return ng::from_vector(v, {rows, width});
  };
  batch.source = matrix(source);
  batch.source_padding = matrix(source_padding);
  batch.target_input = matrix(input);
  batch.target_output = matrix(output);
  batch.target_padding = matrix(target_padding);
  batch.source_lengths = ng::from_vector(source_lengths, {rows});
  batch.target_lengths = ng::from_vector(target_lengths, {rows});
  batch.padded_tokens = 2 * rows * width;
  return batch;
}

nlohmann::json overlap(const dist::ProcessGroup& group, const std::string& preset,
                       std::int64_t rows, double bucket_mb, int rounds) {
  const gru_nmt::Settings settings = gru_nmt::preset(preset);
  ng::Generator generator(1);
  gru_nmt::RnnSearch alone(settings.model, generator);    // no DataParallel
  gru_nmt::RnnSearch buckets(settings.model, generator);  // buckets of bucket_mb
  gru_nmt::RnnSearch one_bucket(settings.model, generator);
  dist::DataParallel overlapping(
      buckets, {.bucket_bytes = static_cast<std::int64_t>(bucket_mb * (1 << 20))});
  dist::DataParallel at_the_end(one_bucket, {.bucket_bytes = std::int64_t{1} << 40});
  std::int64_t parameters = 0;
  for (const ng::Tensor& p : alone.parameters()) parameters += p.numel();
  ng::optim::Adam adam_alone(alone.parameters(), {.lr = 1e-4});
  ng::optim::Adam adam_buckets(buckets.parameters(), {.lr = 1e-4});
  ng::optim::Adam adam_one(one_bucket.parameters(), {.lr = 1e-4});
  const ng::text::TranslationBatch batch =
      random_batch(rows, settings.model.vocabulary_size, group.rank());
  const ng::text::TranslationBatch sorted = gru_nmt::sort_by_target_length(batch);
  const auto step = [&batch](gru_nmt::RnnSearch& model, ng::optim::Adam& adam) {
    return std::function<void()>(
        [&model, &adam, &batch] { gru_nmt::train_step(model, adam, batch); });
  };
  // The three steps in turns, then the backward pass alone: a forward pass untimed, its
  // backward timed, on the model without DataParallel.
  ng::Tensor flat_gradient = ng::zeros({parameters});  // the same bytes in one all-reduce
  std::vector<double> backward_seconds, allreduce_seconds, waited_buckets, waited_one;
  std::vector<std::vector<double>> step_seconds(3);
  const std::vector<std::function<void()>> steps{
      step(alone, adam_alone), step(buckets, adam_buckets), step(one_bucket, adam_one)};
  for (int round = 0; round < 2 + rounds; ++round) {
    for (std::size_t w = 0; w < steps.size(); ++w) {
      const double s = timed(group, steps[w]);
      if (round >= 2) step_seconds[w].push_back(s);
    }
    const double a = timed(group, [&] { group.all_reduce_async(flat_gradient).wait(); });
    if (round >= 2) {
      allreduce_seconds.push_back(a);
      waited_buckets.push_back(overlapping.last_pass().seconds_waited);
      waited_one.push_back(at_the_end.last_pass().seconds_waited);
    }
    alone.zero_grad();
    const ng::Tensor loss = gru_nmt::batch_loss(alone, sorted, 0.1);
    const double s = timed(group, [&] { loss.backward(); });
    if (round >= 2) backward_seconds.push_back(s);
  }
  const double compute = median(step_seconds[0]), with_buckets = median(step_seconds[1]),
               with_one = median(step_seconds[2]);
  const double exposed_buckets = with_buckets - compute, exposed_one = with_one - compute;
  return {{"preset", preset},
          {"rows_per_rank", rows},
          {"parameters", parameters},
          {"gradient_mb", static_cast<double>(parameters) * 4 / (1 << 20)},
          {"bucket_mb", bucket_mb},
          {"buckets", overlapping.bucket_names().size()},
          {"step_alone_seconds", compute},
          {"step_buckets_seconds", with_buckets},
          {"step_one_bucket_seconds", with_one},
          {"backward_seconds", median(backward_seconds)},
          {"exposed_buckets_seconds", exposed_buckets},
          {"exposed_one_bucket_seconds", exposed_one},
          {"hidden_share", exposed_one > 0 ? 1.0 - exposed_buckets / exposed_one : 0.0},
          {"allreduce_gradient_seconds", median(allreduce_seconds)},
          {"waited_buckets_seconds", median(waited_buckets)},
          {"waited_one_bucket_seconds", median(waited_one)},
          {"hidden_share_of_allreduce", 1.0 - median(waited_buckets) / median(allreduce_seconds)},
          {"rounds", rounds}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Data-parallel communication: all-reduce bandwidth, and overlap with backward"};
  app.require_subcommand(1);
  app.fallthrough();  // --rounds after the subcommand too
  int rounds = 9;
  app.add_option("--rounds", rounds, "timed rounds (medians over them)")
      ->check(CLI::PositiveNumber);
  CLI::App* allreduce_command = app.add_subcommand("allreduce", "all-reduce against MPI's");
  CLI::App* overlap_command = app.add_subcommand("overlap", "a gru_nmt step's communication");
  std::string preset = "cpu";
  std::int64_t rows = 40;
  double bucket_mb = 25;
  overlap_command->add_option("--preset", preset, "gru_nmt's preset (cpu: E128 H256 V8000)")
      ->check(CLI::IsMember({"tiny", "cpu", "small", "paper"}));
  overlap_command->add_option("--rows", rows, "sentences per rank and step")
      ->check(CLI::PositiveNumber);
  overlap_command->add_option("--bucket-mb", bucket_mb, "DataParallel's bucket size, MiB")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    const auto& group = dist::ProcessGroup::world();
    nlohmann::json report{{"ranks", group.size()}, {"threads_per_rank", ng::get_num_threads()}};
    if (*allreduce_command) report["allreduce"] = allreduce(group, rounds);
    if (*overlap_command) report["overlap"] = overlap(group, preset, rows, bucket_mb, rounds);
    if (group.rank() == 0) std::cout << report.dump() << "\n";
  } catch (const ng::Error& error) {
    std::cerr << "bench_data_parallel: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
