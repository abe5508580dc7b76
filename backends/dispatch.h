#pragma once
// The one dispatch point: the backend that owns a device's memory and kernels.

#include <cstddef>
#include <cstdint>
#include <functional>

#include "backends/backend.h"

namespace normgrad::backend {

// The CPU backend always exists. Asking for a CUDA device in a build without the CUDA
// backend, or on a machine without a GPU, throws normgrad::Error.
Backend& backend_for(Device device);

Backend& cpu_backend();

// Implemented by backends/cuda/cuda_backend.cpp, or by its CPU-only stand-in no_cuda.cpp,
// which always says no.
bool cuda_is_available();
int cuda_device_count();
Backend& cuda_backend(int index);
void cuda_synchronize(int index);
std::int64_t cuda_host_waits(int index);
void cuda_set_allow_tf32(bool allow);
bool cuda_allow_tf32();
void cuda_set_implicit_gemm_convolutions(bool use);
bool cuda_implicit_gemm_convolutions();
bool cuda_is_capturing(int index);

// CUDA graphs (core/cuda.h's Graph), opaque to the library above the backend.
struct CudaGraph;
CudaGraph* cuda_graph_create(int index);
void cuda_graph_capture(CudaGraph* graph, const std::function<void()>& work);
void cuda_graph_replay(CudaGraph* graph);
bool cuda_graph_captured(const CudaGraph* graph);
std::size_t cuda_graph_nodes(const CudaGraph* graph);
void cuda_graph_destroy(CudaGraph* graph) noexcept;

}  // namespace normgrad::backend
