// The profiler: what it records (every kernel, its pass, its module span), what it counts
// (bytes and floating-point operations worked out by hand), its table and its trace.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "helpers.h"
#include "io/ceilings.h"
#include "scratch_folder.h"

using namespace normgrad;
namespace pr = normgrad::profiler;

namespace {

// The profile's records of kernel `name` (with its variant, "binary.mul"), in time order.
std::vector<pr::OpRecord> kernels(const pr::Profile& profile, const std::string& name) {
  std::vector<pr::OpRecord> found;
  for (const pr::OpRecord& op : profile.ops())
    if (op.kernel() == name) found.push_back(op);
  return found;
}

// The one record of kernel `name`.
pr::OpRecord kernel(const pr::Profile& profile, const std::string& name) {
  const std::vector<pr::OpRecord> found = kernels(profile, name);
  REQUIRE_MESSAGE(found.size() == 1, name << " ran " << found.size() << " times");
  return found.front();
}

}  // namespace

TEST_CASE("nothing is recorded without an open profile, and a profile reads only once closed") {
  CHECK_FALSE(pr::recording());
  const Tensor before = ones({4}) * 2.0;  // runs before the profile: not in it
  pr::Profile profile;
  CHECK(pr::recording());
  CHECK_ERROR(profile.ops(), "profiler", "still open");
  profile.close();
  CHECK_FALSE(pr::recording());
  CHECK(profile.ops().empty());
  CHECK(profile.seconds() >= 0);
  const Tensor after = before + 1.0;  // runs after it
  CHECK(profile.ops().empty());
}

TEST_CASE("each kernel is recorded with its pass, and backward kernels with their node") {
  const Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}).requires_grad_();
  pr::Profile profile;
  const Tensor y = (x * x).sum();
  y.backward();
  profile.close();
  const pr::OpRecord mul = kernels(profile, "binary.mul").front();  // then twice in backward
  CHECK(mul.backward_of == nullptr);
  CHECK(std::string(mul.family) == "elementwise");
  CHECK(mul.shapes == "[2,3] <- [2,3] [2,3]");
  CHECK(mul.dtype == DType::Float32);
  CHECK(mul.device == Device::cpu());
  CHECK(mul.end_ns >= mul.start_ns);
  const pr::OpRecord sum = kernel(profile, "reduce.sum");
  CHECK(sum.backward_of == nullptr);
  // Backward: every kernel names the node that ran it, or the pass itself.
  bool mul_backward = false;
  for (const pr::OpRecord& op : profile.ops()) {
    if (op.start_ns <= sum.start_ns) continue;  // the forward's
    REQUIRE(op.backward_of != nullptr);
    mul_backward = mul_backward || std::string(op.backward_of) == "MulBackward";
  }
  CHECK(mul_backward);
  CHECK(x.grad().defined());
}

TEST_CASE("bytes and operations of each family, against counts by hand") {
  pr::Profile profile;
  // matmul [4,5] x [5,3]: 2 * 4 * 3 * 5 operations; 20 + 15 + 12 floats.
  const Tensor a = ones({4, 5}), b = ones({5, 3});
  const Tensor c = matmul(a, b);
  // A broadcast add [4,3] + [3]: one per output; the bias's 3 floats read once.
  const Tensor bias = ones({3});
  const Tensor d = c + bias;
  // exp: one per element.
  const Tensor e = exp(d);
  // RMSNorm over rows of 8 with a gain: 2 per value for the statistic, then the scale and the
  // gain's multiply: 4 per value over 32 values.
  const Tensor rows = ones({4, 8}), gain = ones({8});
  const Tensor normed = rms_norm(rows, 1, gain, Tensor());
  // LayerNorm over the same rows, gain and bias: 4 + 3 per value.
  const Tensor centred = layer_norm(rows, 1, gain, zeros({8}));
  // conv2d of [1,2,5,5] with [3,2,3,3] and a bias: 27 outputs of 2 * 18 + 1.
  const Tensor image = ones({1, 2, 5, 5}), weight = ones({3, 2, 3, 3});
  const Tensor conv = conv2d(image, weight, ones({3}));
  // max pooling 2x2 of [1,3,3,3] -> [1,3,1,1]... with stride 2: 3 outputs of 4 compares.
  const Tensor pooled = max_pool2d(conv, {2, 2});
  // softmax of [4,3]: 5 per element.
  const Tensor p = softmax(d, 1);
  profile.close();

  const pr::OpRecord mm = kernel(profile, "matmul");
  CHECK(mm.flops == 2 * 4 * 3 * 5);
  CHECK(mm.bytes == 4 * (20 + 15 + 12));
  CHECK(std::string(mm.family) == "matmul");
  const pr::OpRecord add = kernel(profile, "binary.add");
  CHECK(add.flops == 12);
  CHECK(add.bytes == 4 * (12 + 12 + 3));
  CHECK(kernel(profile, "unary.exp").flops == 12);
  const pr::OpRecord rms = kernel(profile, "norm_forward.rms");
  CHECK(rms.flops == 32 * (2 + 1 + 1));
  CHECK(std::string(rms.family) == "norm");
  const pr::OpRecord ln = kernel(profile, "norm_forward.layernorm");
  CHECK(ln.flops == 32 * (4 + 1 + 1 + 1));
  const pr::OpRecord cv = kernel(profile, "conv2d");
  CHECK(cv.flops == 27 * (2 * 18 + 1));
  CHECK(cv.bytes == 4 * (27 + 50 + 54 + 3));
  const pr::OpRecord mp = kernel(profile, "max_pool2d");
  CHECK(mp.flops == 3 * 4);
  CHECK(kernel(profile, "softmax").flops == 5 * 12);
  CHECK(pooled.shape() == Shape{1, 3, 1, 1});
  CHECK(p.shape() == Shape{4, 3});
  CHECK(e.shape() == Shape{4, 3});
  CHECK(normed.shape() == Shape{4, 8});
  CHECK(centred.shape() == Shape{4, 8});
}

TEST_CASE("module forwards are spans that their kernels nest under, in backward too") {
  manual_seed(3);
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(6, 8));
  model->push_back(std::make_shared<nn::RMSNorm>(Shape{8}));
  const Tensor x = ones({2, 6});
  pr::Profile profile(nn::module_names(*model));
  model->forward(x).sum().backward();
  profile.close();

  const std::vector<pr::SpanRecord>& spans = profile.spans();
  REQUIRE(!spans.empty());
  const auto name_of = [&](int span) {
    return span < 0 ? std::string() : spans[static_cast<std::size_t>(span)].name;
  };
  const pr::OpRecord forward = kernel(profile, "norm_forward.rms");
  CHECK(name_of(forward.span) == "1");
  CHECK(name_of(spans[static_cast<std::size_t>(forward.span)].parent) == "Sequential");
  const std::vector<pr::OpRecord> products = kernels(profile, "matmul");
  REQUIRE(products.size() == 2);  // the Linear's forward, and its weight's gradient
  CHECK(name_of(products[0].span) == "0");
  CHECK(name_of(products[1].span) == "0");
  CHECK(std::string(products[1].backward_of) == "AddmmBackward");
  const pr::OpRecord backward = kernel(profile, "norm_backward.rms");
  REQUIRE(backward.span >= 0);
  CHECK(name_of(backward.span) == "1");
  CHECK(spans[static_cast<std::size_t>(backward.span)].backward);
  for (const pr::SpanRecord& span : spans) CHECK(span.end_ns >= span.start_ns);
}

TEST_CASE("kernels on several threads are recorded, each on its own track") {
  pr::Profile profile;
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([] {
      const Tensor x = ones({16});
      for (int i = 0; i < 10; ++i) (void)(x * 2.0);
    });
  for (std::thread& thread : threads) thread.join();
  profile.close();
  const std::vector<pr::OpRecord> muls = kernels(profile, "unary.mul_scalar");
  CHECK(muls.size() == 30);
  std::set<int> tracks;
  for (const pr::OpRecord& op : muls) tracks.insert(op.thread);
  CHECK(tracks.size() == 3);
}

TEST_CASE("a profile opened inside another holds what ran while it was open") {
  const Tensor x = ones({4});
  pr::Profile outer;
  (void)exp(x);
  std::vector<pr::OpRecord> inner_ops;
  {
    pr::Profile inner;
    (void)log(x);
    inner.close();
    inner_ops = inner.ops();
    CHECK(pr::recording());  // the outer is still open
  }
  (void)sqrt(x);
  outer.close();
  REQUIRE(inner_ops.size() == 1);
  CHECK(std::string(inner_ops[0].variant) == "log");
  CHECK(kernels(outer, "unary.exp").size() == 1);
  CHECK(kernels(outer, "unary.log").size() == 1);
  CHECK(kernels(outer, "unary.sqrt").size() == 1);
  CHECK_FALSE(pr::recording());
}

TEST_CASE("the summary's rows add up to the profile, with the time outside the kernels") {
  const Tensor a = ones({64, 64}), b = ones({64, 64});
  pr::Profile profile;
  for (int i = 0; i < 5; ++i) (void)relu(matmul(a, b) + 1.0);
  profile.close();
  const std::vector<pr::SummaryRow> rows = pr::summarize(profile);
  double seconds = 0;
  std::int64_t calls = 0;
  for (const pr::SummaryRow& row : rows) {
    seconds += row.seconds;
    calls += row.calls;
  }
  CHECK(calls == static_cast<std::int64_t>(profile.ops().size()));
  CHECK(seconds <= profile.seconds());
  REQUIRE(rows.size() == 3);  // matmul, add_scalar, relu
  for (std::size_t r = 1; r < rows.size(); ++r) CHECK(rows[r - 1].seconds >= rows[r].seconds);
  const pr::SummaryRow& mm = *std::find_if(rows.begin(), rows.end(),
                                           [](const auto& row) { return row.kernel == "matmul"; });
  CHECK(mm.calls == 5);
  CHECK(mm.flops == 5 * 2.0 * 64 * 64 * 64);
  // Against ceilings: a 64x64 product does 32 operations a byte; relu does a quarter.
  const pr::Ceilings ceilings{.copy_bytes_per_second = 10e9, .gemm_flops_per_second = 100e9};
  CHECK(pr::bound_by(mm, ceilings) == "arithmetic");
  for (const pr::SummaryRow& row : rows)
    if (row.kernel == "unary.relu") CHECK(pr::bound_by(row, ceilings) == "memory");
  CHECK(pr::bound_by(mm, {}).empty());

  const std::string table = pr::summary_table(profile, {.top = 2, .ceilings = ceilings});
  CHECK(table.find("matmul") != std::string::npos);
  CHECK(table.find("(the other kernels)") != std::string::npos);
  CHECK(table.find("(outside the kernels)") != std::string::npos);
  CHECK(table.find("ceilings: copy 10.00 GB/s, float32 GEMM 100.00 GFLOP/s") != std::string::npos);
  const std::string csv = pr::summary_csv(profile);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 4);  // the header and three rows
  CHECK(csv.rfind("kernel,family,pass,shapes,calls,seconds,", 0) == 0);
}

TEST_CASE("the trace is Chrome Trace Event JSON: spans enclose their kernels, counters in time") {
  manual_seed(5);
  nn::Linear linear(4, 4);
  const Tensor input = ones({3, 4}).requires_grad_();
  pr::Profile profile(nn::module_names(linear));
  linear.forward(input).sum().backward();
  profile.close();
  const nlohmann::json trace = nlohmann::json::parse(pr::trace_json(profile));
  REQUIRE(trace.contains("traceEvents"));
  std::vector<nlohmann::json> spans, ops;
  double last_counter = -1;
  for (const nlohmann::json& event : trace["traceEvents"]) {
    for (const char* field : {"name", "ph", "pid"}) CHECK(event.contains(field));
    const std::string phase = event["ph"];
    if (phase == "M") continue;
    CHECK(event.contains("ts"));
    if (phase == "C") {
      CHECK(event["ts"].get<double>() >= last_counter);
      last_counter = event["ts"];
      CHECK(event["args"].contains("live bytes"));
      continue;
    }
    REQUIRE(phase == "X");
    CHECK(event.contains("tid"));
    CHECK(event["dur"].get<double>() >= 0);
    (std::string(event.value("cat", "")).rfind("module", 0) == 0 ? spans : ops).push_back(event);
  }
  CHECK(last_counter >= 0);  // allocations were sampled
  REQUIRE(!spans.empty());
  REQUIRE(!ops.empty());
  CHECK(spans.front()["name"] == "Linear");
  const nlohmann::json& span = spans.front();
  const nlohmann::json& first = ops.front();
  CHECK(first["args"].contains("bytes"));
  CHECK(first["args"].contains("shapes"));
  CHECK(span["ts"].get<double>() <= first["ts"].get<double>());
  // A kernel that starts inside a span on its thread ends inside it.
  for (const nlohmann::json& outer : spans) {
    const double start = outer["ts"], end = start + outer["dur"].get<double>();
    for (const nlohmann::json& op : ops)
      if (op["tid"] == outer["tid"] && op["ts"].get<double>() >= start &&
          op["ts"].get<double>() <= end)
        CHECK(op["ts"].get<double>() + op["dur"].get<double>() <= end + 1e-3);
  }
}

TEST_CASE("the machine's ceilings are measured once and kept in their file") {
  const testing::ScratchFolder folder("ceilings");
  const std::string file = folder / "cache/ceilings.tsv";  // its folder made on first write
  const io::MachineCeilings first = io::machine_ceilings(Device::cpu(), file);
  CHECK(first.measured);
  CHECK(first.key == io::machine_key(Device::cpu()));
  CHECK(first.ceilings.copy_bytes_per_second > 1e8);
  CHECK(first.ceilings.gemm_flops_per_second > 1e8);
  const io::MachineCeilings again = io::machine_ceilings(Device::cpu(), file);
  CHECK_FALSE(again.measured);
  CHECK(again.ceilings.copy_bytes_per_second ==
        doctest::Approx(first.ceilings.copy_bytes_per_second).epsilon(1e-5));
  CHECK(again.ceilings.gemm_flops_per_second ==
        doctest::Approx(first.ceilings.gemm_flops_per_second).epsilon(1e-5));
  // Other machines' lines stay; this machine's, once damaged, is measured again.
  {
    std::ofstream out(file);
    out << "cuda:7 | another machine | 64 threads\t1e12\t1e15\t2026-01-01\n"
        << first.key << "\tnot a number\t5\t2026-01-01\n";
  }
  const io::MachineCeilings remeasured = io::machine_ceilings(Device::cpu(), file);
  CHECK(remeasured.measured);
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("another machine") != std::string::npos);
  CHECK(text.find("not a number") == std::string::npos);
  // A file that cannot be written still gives the figures.
  const io::MachineCeilings unwritable =
      io::machine_ceilings(Device::cpu(), "/proc/normgrad-no-such-dir/ceilings.tsv");
  CHECK(unwritable.measured);
  CHECK(unwritable.ceilings.gemm_flops_per_second > 0);
}

TEST_CASE("memory: each device's peak of live bytes, and the kernel it was allocated for") {
  const Tensor small = ones({16});
  pr::Profile profile;
  {
    const Tensor big = ones({1 << 20}) * 3.0;  // 4 MiB, then 4 MiB more for the product
    (void)big;
  }
  (void)(small + 1.0);  // after the big ones are gone
  profile.close();
  const std::vector<pr::MemoryPeak> peaks = pr::memory_peaks(profile);
  REQUIRE(peaks.size() == 1);
  CHECK(peaks[0].device == Device::cpu());
  CHECK(peaks[0].bytes >= (std::size_t{8} << 20));
  CHECK(peaks[0].kernel == "unary.mul_scalar (forward) [1048576] <- [1048576]");
  const std::string table = pr::summary_table(profile);
  CHECK(table.find("peak memory on cpu: ") != std::string::npos);
  // The samples are in time, and the live bytes fall back once the tensors are freed.
  const std::vector<pr::MemorySample>& samples = profile.memory();
  REQUIRE(samples.size() >= 4);
  for (std::size_t i = 1; i < samples.size(); ++i)
    CHECK(samples[i].time_ns >= samples[i - 1].time_ns);
  CHECK(samples.back().live_bytes < peaks[0].bytes);
}

TEST_CASE("a span that outlives its profile leaves the next profile's spans alone") {
  std::optional<pr::Span> old;
  {
    pr::Profile first;
    old.emplace("outlives its profile");
  }
  pr::Profile second;
  {
    const pr::Span inner("inner");
    old.reset();  // closes nothing of the second profile
    (void)(ones({4}) * 2.0);
  }
  second.close();
  REQUIRE(second.spans().size() == 1);
  CHECK(second.spans()[0].name == "inner");
  CHECK(second.spans()[0].end_ns >= second.spans()[0].start_ns);
  const std::vector<pr::OpRecord> muls = kernels(second, "unary.mul_scalar");
  REQUIRE(muls.size() == 1);
  CHECK(muls[0].span == 0);
}
