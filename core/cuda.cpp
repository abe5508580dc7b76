#include "core/cuda.h"

#include <algorithm>
#include <bit>
#include <iterator>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backends/dispatch.h"
#include "base/error.h"
#include "core/graph_draws.h"
#include "core/tensor.h"

namespace normgrad::cuda {

bool is_available() { return backend::cuda_is_available(); }

int device_count() { return backend::cuda_device_count(); }

void synchronize(int device) { backend::cuda_synchronize(device); }

std::int64_t host_waits(int device) { return backend::cuda_host_waits(device); }

void set_allow_tf32(bool allow) { backend::cuda_set_allow_tf32(allow); }

bool allow_tf32() { return backend::cuda_allow_tf32(); }

void set_conv_algorithm(ConvAlgorithm algorithm) {
  backend::cuda_set_implicit_gemm_convolutions(algorithm == ConvAlgorithm::ImplicitGemm);
}

ConvAlgorithm conv_algorithm() {
  return backend::cuda_implicit_gemm_convolutions() ? ConvAlgorithm::ImplicitGemm
                                                    : ConvAlgorithm::Columns;
}

bool is_capturing(int device) { return backend::cuda_is_capturing(device); }

namespace detail {

// The generators a Graph's captured draws read. Each has a counters cell on the device and the
// number of counters one replay takes from it (the sum of its captured draws).
struct GraphDraws {
  struct Source {
    Generator* generator;
    Tensor counters;
    std::uint64_t count = 0;
  };
  std::vector<Source> sources;
};

namespace {

// The draws of the Graph capturing each device, while it captures.
std::mutex capturing_mutex;
std::unordered_map<int, GraphDraws*> capturing;

// Marks `draws` as the capture of `device` for its lifetime.
class CaptureScope {
 public:
  CaptureScope(int device, GraphDraws* draws) : device_(device) {
    const std::lock_guard lock(capturing_mutex);
    NG_CHECK(!capturing.contains(device), "cuda::Graph::capture", "cuda:", device,
             " is being captured by another Graph already");
    capturing[device] = draws;
  }
  ~CaptureScope() {
    const std::lock_guard lock(capturing_mutex);
    capturing.erase(device_);
  }
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;

 private:
  int device_;
};

}  // namespace

std::optional<CapturedDraw> captured_draw(int device, Generator& generator, std::uint64_t count) {
  const std::lock_guard lock(capturing_mutex);
  const auto found = capturing.find(device);
  if (found == capturing.end()) return std::nullopt;
  std::vector<GraphDraws::Source>& sources = found->second->sources;
  auto source = std::find_if(sources.begin(), sources.end(),
                             [&](const auto& s) { return s.generator == &generator; });
  if (source == sources.end()) {
    // empty(), not zeros(): a fill would be recorded and rerun after replay() set the cell.
    sources.push_back(
        {&generator, empty({2}, {.dtype = DType::Int64, .device = Device::cuda(device)})});
    source = std::prev(sources.end());
  }
  const std::uint64_t offset = source->count;
  source->count += count;
  return CapturedDraw{source->counters, offset};
}

}  // namespace detail

Graph::Graph(int device)
    : device_(device),
      graph_(backend::cuda_graph_create(device)),
      draws_(std::make_unique<detail::GraphDraws>()) {}

// The cells go before the graph's memory is handed back to the cache.
Graph::~Graph() {
  draws_.reset();
  backend::cuda_graph_destroy(graph_);
}

void Graph::capture(const std::function<void()>& work) {
  NG_CHECK(static_cast<bool>(work), "cuda::Graph::capture", "needs work to capture");
  NG_CHECK(!captured(), "cuda::Graph::capture",
           "this graph holds a capture already; make another Graph for other work");
  try {
    const detail::CaptureScope scope(device_, draws_.get());
    backend::cuda_graph_capture(graph_, work);
  } catch (...) {
    draws_->sources.clear();
    throw;
  }
}

// Each generator's seed and position for this replay into its cell, then the launch, in the
// stream's order; the generator moves past the counters the replay takes.
void Graph::replay() {
  for (detail::GraphDraws::Source& source : draws_->sources) {
    const std::uint64_t base = source.generator->reserve(source.count);
    const std::vector<std::int64_t> cell = {std::bit_cast<std::int64_t>(source.generator->seed()),
                                            std::bit_cast<std::int64_t>(base)};
    source.counters.copy_(from_vector(cell, {2}));
  }
  backend::cuda_graph_replay(graph_);
}

bool Graph::captured() const { return backend::cuda_graph_captured(graph_); }

std::size_t Graph::size() const { return backend::cuda_graph_nodes(graph_); }

}  // namespace normgrad::cuda
