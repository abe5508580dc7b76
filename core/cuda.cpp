#include "core/cuda.h"

#include "backends/dispatch.h"
#include "core/error.h"

namespace normgrad::cuda {

bool is_available() { return backend::cuda_is_available(); }

int device_count() { return backend::cuda_device_count(); }

void synchronize(int device) { backend::cuda_synchronize(device); }

std::int64_t host_waits(int device) { return backend::cuda_host_waits(device); }

void set_allow_tf32(bool allow) { backend::cuda_set_allow_tf32(allow); }

bool allow_tf32() { return backend::cuda_allow_tf32(); }

bool is_capturing(int device) { return backend::cuda_is_capturing(device); }

Graph::Graph(int device) : graph_(backend::cuda_graph_create(device)) {}

Graph::~Graph() { backend::cuda_graph_destroy(graph_); }

void Graph::capture(const std::function<void()>& work) {
  NG_CHECK(static_cast<bool>(work), "cuda::Graph::capture", "needs work to capture");
  backend::cuda_graph_capture(graph_, work);
  captured_ = true;
}

void Graph::replay() { backend::cuda_graph_replay(graph_); }

bool Graph::captured() const { return captured_; }

std::size_t Graph::size() const { return backend::cuda_graph_nodes(graph_); }

}  // namespace normgrad::cuda
