#pragma once
// CUDA devices as the user sees them. Tensors and modules move with .to(Device::cuda(i)); ops
// run on the device their tensors are on, and mixing devices in one op is an error.
//
//   if (normgrad::cuda::is_available()) model.to(Device::cuda());
//
// A build without the CUDA backend (or a machine without a GPU) reports no device, and asking
// for a CUDA tensor there throws normgrad::Error saying so.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace normgrad::backend {
struct CudaGraph;
}  // namespace normgrad::backend

namespace normgrad::cuda {

namespace detail {
struct GraphDraws;
}  // namespace detail

bool is_available();
int device_count();
// Waits until the device has finished all work queued so far (for timing; copies to the host
// wait by themselves).
void synchronize(int device = 0);
// How many times the host has waited for the device to copy data back since the process
// started: a tensor read on the host (item(), to_vector(), .to(Device::cpu())), or a check
// that must see a kernel's verdict (cross_entropy's of its targets). Copies to the device never
// wait. A training step that reads nothing back leaves the count where it was, so the GPU
// runs ahead of the host; tests and benchmarks use it to hold steps to that.
std::int64_t host_waits(int device = 0);
// Whether float32 matrix products may use TF32 tensor cores: faster, with 10-bit mantissas
// in the products. Off by default, so results match the CPU's to float32 rounding. With it,
// each operand is rounded to 10 mantissa bits, so a sum of products a b is off by up to about
// 2^-10 sum |a b| (float32 alone: n 2^-24 sum |a b| for n terms, at most). Convolutions through
// columns (ConvAlgorithm::Columns below) use it too; the tests hold both to that bound.
void set_allow_tf32(bool allow);
bool allow_tf32();

// How CUDA convolutions form their products: conv2d's forward pass, its weight gradient, and
// the input gradient of a stride-1 convolution, which is a convolution too.
// - Columns (the default): im2col writes a chunk of samples' columns to memory, cuBLAS
//   multiplies them by the weight (with TF32 when allowed), and a copy puts the product in the
//   output's layout, adding the bias.
// - ImplicitGemm: kernels gather the columns tile by tile into shared memory, never writing
//   them out. The forward kernel writes the output in place with its bias, no copy; the weight
//   gradient splits the outputs into shares, each summed by its own blocks, the shares then
//   added in order. float32 and float64 multiply-adds (TF32 does not apply); results repeat
//   bit for bit and differ from the column path's within float rounding (another summation
//   order).
// Set for every device.
enum class ConvAlgorithm { Columns, ImplicitGemm };
void set_conv_algorithm(ConvAlgorithm algorithm);
ConvAlgorithm conv_algorithm();

// Whether a Graph is capturing the device's work at this moment.
bool is_capturing(int device = 0);

// A CUDA graph: the GPU work that a piece of host code queues, recorded once and replayed as
// one launch. A training step launches hundreds of small kernels (a recurrent network's a few
// per time step), each costing the host microseconds; a replay costs one launch.
//
//   cuda::Graph graph;                                  // device 0
//   Tensor x = zeros({B, T}, {.device = Device::cuda()});  // the step's inputs: made before
//   step(x);                                            // one eager step first (checks, caches)
//   graph.capture([&] { loss = step(x); });              // records; runs nothing
//   for (const Batch& batch : batches) {
//     x.copy_(batch.tokens);                            // new values into the same tensors
//     graph.replay();                                   // the recorded kernels, on them
//     optimizer.step();                                 // eager, or captured (capturable Adam)
//   }
//
// What a capture records is fixed: the kernels, their shapes, their scalar arguments, and the
// memory they use. So:
// - inputs are tensors made before the capture and kept alive while the Graph lives (a tensor
//   dropped inside the captured work gives its memory to the graph), refilled in place
//   (copy_) before each replay;
//   tensors made during the capture (outputs, gradients, activations) belong to the graph's
//   memory, which each replay overwrites, and stay valid while the Graph lives;
// - nothing is read back during the capture (item(), to_vector(), .to(Device::cpu()) throw),
//   and nothing is copied from the host; index and target range checks, which read a
//   kernel's verdict, are left out of captured work: check the data before copying it in;
// - scalars fixed at capture stay fixed: an optimizer that passes its step count or learning
//   rate to its kernels as scalars would not advance; Adam with `capturable` keeps them on the
//   device and may be captured, other optimizer steps run eagerly after replay();
// - random draws (rand, randn, randint, so dropout) are the exception: a captured draw reads
//   its generator's seed and position from device memory, which replay() sets before it
//   launches. Each replay takes from each generator the counters its draws need, as the eager
//   work would, so it draws the numbers the eager work would have drawn at that point, and
//   the next replay draws new ones. The generators must outlive the Graph;
// - gradients accumulate as captured: drop them (zero_grad) inside the captured work, before
//   backward, so that each replay computes them afresh.
// A failed capture (the work threw, or did something a graph cannot record) ends cleanly
// with an Error that says what happened, and the Graph can capture again. A build without
// CUDA, or a machine without a GPU, refuses to make a Graph.
class Graph {
 public:
  explicit Graph(int device = 0);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Runs `work` on the host with the device's stream recording instead of running.
  void capture(const std::function<void()>& work);
  void replay();
  bool captured() const;
  // The operations recorded (kernels, memsets, copies).
  std::size_t size() const;

 private:
  int device_;
  backend::CudaGraph* graph_;  // the backend's recording (backends/cuda/graph.cpp)
  std::unique_ptr<detail::GraphDraws> draws_;  // the generators its draws read (cuda.cpp)
};

}  // namespace normgrad::cuda
