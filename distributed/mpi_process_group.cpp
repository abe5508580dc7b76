// ProcessGroup over MPI, for CPU tensors. MPI's errors are returned rather than fatal
// (MPI_ERRORS_RETURN), and every call's result is checked. Every collective is MPI's
// non-blocking one (MPI_Iallreduce, ...) followed by a wait that polls it against the group's
// timeout, so that no call waits forever for a rank that has stopped.

#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "base/error.h"
#include "core/tensor_internal.h"
#include "distributed/nccl.h"
#include "distributed/process_group.h"

namespace normgrad::distributed {

namespace {

// Throws an Error naming the MPI call, the rank and MPI's own message, unless `code` is
// MPI_SUCCESS.
void check(int code, const char* call, int rank, int size) {
  if (code == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, message, &length) != MPI_SUCCESS) length = 0;
  throw Error(detail::concat(
      "distributed: ", call, " failed on rank ", rank, " of ", size, ": ",
      length > 0 ? std::string(message, length) : "error code " + std::to_string(code)));
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
    case DType::Int64:
      return MPI_INT64_T;
    case DType::BFloat16:  // moved as bits by broadcast and all-gather; all_reduce refuses it
      return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

// What each rank says of its tensor before a collective, so that all can check they agree:
// whether it can be sent at all, its dtype, the root, the number of dims and up to kDims of
// them, and the element count (which covers dims beyond kDims).
constexpr int kDims = 8;
constexpr int kSignature = 6 + kDims;
using Signature = std::array<std::int64_t, kSignature>;

Signature signature_of(const Tensor& tensor, int root) {
  Signature s{};
  s.fill(-1);
  const bool usable =
      tensor.defined() && tensor.is_contiguous() && (tensor.device().is_cpu() || nccl::available());
  s[0] = usable ? 1 : 0;
  if (!tensor.defined()) return s;
  s[1] = static_cast<std::int64_t>(tensor.dtype());
  s[2] = root;
  s[3] = tensor.dim();
  s[4] = tensor.numel();
  s[5] = tensor.device().is_cpu() ? 0 : 1;
  for (std::int64_t d = 0; d < std::min<std::int64_t>(tensor.dim(), kDims); ++d)
    s[static_cast<std::size_t>(6 + d)] = tensor.size(d);
  return s;
}

std::string describe(const Signature& s) {
  if (s[1] < 0) return "an undefined tensor";
  std::ostringstream out;
  out << static_cast<DType>(s[1]) << " [";
  for (std::int64_t d = 0; d < std::min<std::int64_t>(s[3], kDims); ++d)
    out << (d == 0 ? "" : ", ") << s[static_cast<std::size_t>(6 + d)];
  if (s[3] > kDims) out << ", ...";
  out << "]";
  if (s[5] == 1) out << " on cuda";
  if (s[0] == 0)
    out << (s[5] == 1 ? " (a CUDA tensor, and this build has no NCCL)" : " (not contiguous)");
  return out.str();
}

// The first byte of a CPU tensor's elements.
char* bytes_of(const Tensor& tensor) { return static_cast<char*>(detail::ref(tensor).data); }

// Set when a collective timed out: MPI_Finalize would then wait for the rank that stopped, so
// the process ends without it (mpirun then ends the other ranks).
std::atomic<bool> stopped{false};

void finalize_at_exit() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized && !stopped.load()) MPI_Finalize();
}

// Reads NORMGRAD_DISTRIBUTED_TIMEOUT (seconds), or keeps `fallback`.
std::chrono::milliseconds timeout_from_environment(std::chrono::milliseconds fallback) {
  const char* text = std::getenv("NORMGRAD_DISTRIBUTED_TIMEOUT");
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  NG_CHECK(end != text && *end == '\0' && seconds > 0, "distributed",
           "NORMGRAD_DISTRIBUTED_TIMEOUT must be a positive number of seconds, got '", text, "'");
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

// Runs `call(offset, count)` over [0, total) in pieces whose count fits MPI's int.
template <class Call> void in_pieces(std::int64_t total, Call&& call) {
  constexpr std::int64_t kPiece = std::int64_t{1} << 30;
  for (std::int64_t offset = 0; offset < total; offset += kPiece)
    call(offset, static_cast<int>(std::min(kPiece, total - offset)));
}

}  // namespace

// The requests of one collective (one per piece of a large tensor), and what to do once they
// have completed.
struct Work::State {
  std::function<bool()> test;  // whether the collective has finished; never blocks
  std::function<void()> on_completion;
  const char* call = "";
  int rank = 0, size = 1;
  std::chrono::milliseconds timeout{0};
  bool complete = false;
};

Work::Work() = default;
Work::Work(std::unique_ptr<State> state) : state_(std::move(state)) {}
Work::Work(Work&&) noexcept = default;

Work& Work::operator=(Work&& other) noexcept {
  if (this != &other) {
    Work finished_first(std::move(*this));  // waits for this one's collective, if any
    state_ = std::move(other.state_);
  }
  return *this;
}

Work::~Work() {
  if (!state_ || state_->complete) return;
  try {
    wait();
  } catch (const Error&) {
    // A destructor cannot throw; the group has stopped, and its next use says so.
  }
}

bool Work::done() {
  if (!state_ || state_->complete) return true;
  if (!state_->test()) return false;
  state_->complete = true;
  if (state_->on_completion) state_->on_completion();
  return true;
}

void Work::wait() {
  if (!state_) return;
  const auto deadline = std::chrono::steady_clock::now() + state_->timeout;
  while (!done()) {
    if (stopped.load()) {  // another collective timed out: this one will not complete either
      state_->complete = true;
      throw Error(detail::concat("distributed: ", state_->call, " on rank ", state_->rank, " of ",
                                 state_->size,
                                 ": the group stopped when an earlier collective timed out"));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      stopped = true;
      state_->complete = true;  // abandoned: never waited for again
      throw Error(detail::concat(
          "distributed: ", state_->call, " on rank ", state_->rank, " of ", state_->size,
          " did not complete within ", state_->timeout.count() / 1000.0,
          " s: another rank has stopped, or calls other collectives than this one; the group "
          "is stopped (NORMGRAD_DISTRIBUTED_TIMEOUT sets the wait, in seconds)"));
    }
    std::this_thread::yield();
  }
}

bool is_available() { return true; }

bool collectives_on(Device device) { return device.is_cpu() || nccl::available(); }

ProcessGroup::ProcessGroup(int rank, int size)
    : rank_(rank), size_(size), timeout_(timeout_from_environment(std::chrono::minutes(10))) {}

void ProcessGroup::set_timeout(std::chrono::milliseconds timeout) {
  NG_CHECK(timeout.count() > 0, "distributed: set_timeout", "the timeout must be positive, got ",
           timeout.count(), " ms");
  timeout_ = timeout;
}

ProcessGroup& ProcessGroup::world() {
  static ProcessGroup* group = [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      // Open MPI's non-blocking all-reduce picks by default algorithms that took 2.5 to 3.5
      // times the blocking one's time on 16 and 64 MiB; Rabenseifner's (reduce-scatter, then
      // all-gather) matches it from 256 KiB up (bench/RESULTS.md). A value set by the user
      // stays; other MPI libraries ignore the variable.
      setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", 0);
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        throw Error("distributed: MPI_Init_thread failed: start the program with mpirun");
      std::atexit(finalize_at_exit);
    }
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", -1,
          -1);
    int rank = 0, size = 1;
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank", -1, -1);
    check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size", rank, -1);
    return new ProcessGroup(rank, size);
  }();
  return *group;
}

// Builds the Work of a collective just started.
struct WorkMaker {
  // The Work of MPI requests.
  static Work make(const ProcessGroup& group, const char* call, std::vector<MPI_Request> requests,
                   std::function<void()> on_completion = {}) {
    const int rank = group.rank(), size = group.size();
    return make(
        group, call,
        [requests = std::move(requests), call, rank, size]() mutable {
          int flag = 0;
          check(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &flag,
                            MPI_STATUSES_IGNORE),
                call, rank, size);
          return flag != 0;
        },
        std::move(on_completion));
  }

  // The Work of a collective that `test` says has finished or not.
  static Work make(const ProcessGroup& group, const char* call, std::function<bool()> test,
                   std::function<void()> on_completion = {}) {
    auto state = std::make_unique<Work::State>();
    state->test = std::move(test);
    state->on_completion = std::move(on_completion);
    state->call = call;
    state->rank = group.rank();
    state->size = group.size();
    state->timeout = group.timeout();
    return Work(std::move(state));
  }
};

namespace {

// Throws unless the group can still be used.
void check_not_stopped(const char* call, int rank, int size) {
  if (stopped.load())
    throw Error(detail::concat("distributed: ", call, " on rank ", rank, " of ", size,
                               ": the group stopped when an earlier collective timed out"));
}

// Starts one request with `start(&request)`, checked, and waits for it.
template <class Start> void run(const ProcessGroup& group, const char* call, Start&& start) {
  check_not_stopped(call, group.rank(), group.size());
  MPI_Request request = MPI_REQUEST_NULL;
  check(start(&request), call, group.rank(), group.size());
  WorkMaker::make(group, call, {request}).wait();
}

}  // namespace

void ProcessGroup::check_agreement(const char* call, const Tensor& tensor, int root) const {
  const Signature mine = signature_of(tensor, root);
  std::vector<std::int64_t> all(static_cast<std::size_t>(kSignature * size_));
  run(*this, "MPI_Iallgather", [&](MPI_Request* request) {
    return MPI_Iallgather(mine.data(), kSignature, MPI_INT64_T, all.data(), kSignature, MPI_INT64_T,
                          MPI_COMM_WORLD, request);
  });
  bool agree = true;
  std::ostringstream ranks;
  for (int r = 0; r < size_; ++r) {
    Signature theirs;
    std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(r) * kSignature, kSignature,
                theirs.begin());
    if (theirs != mine || theirs[0] != 1) agree = false;
    ranks << (r == 0 ? "" : "; ") << "rank " << r << ": " << describe(theirs);
  }
  if (root < 0 || root >= size_)
    throw Error(detail::concat("distributed: ", call, " on rank ", rank_, " of ", size_, ": root ",
                               root, " is not a rank"));
  if (!agree)
    throw Error(detail::concat("distributed: ", call, " on rank ", rank_, " of ", size_,
                               ": the ranks' tensors must be contiguous, of one dtype, "
                               "shape and kind of device",
                               root != 0 ? " (and name one root)" : "", "; ", ranks.str()));
}

void ProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op) const {
  check_agreement("all_reduce", tensor);
  all_reduce_async(tensor, op).wait();
}

Work ProcessGroup::all_reduce_async(const Tensor& tensor, ReduceOp op) const {
  check_not_stopped("all_reduce", rank_, size_);
  NG_CHECK(tensor.defined() && tensor.is_contiguous(), "distributed: all_reduce",
           "needs a contiguous tensor");
  NG_CHECK(op == ReduceOp::Sum || is_floating(tensor.dtype()), "distributed: all_reduce",
           "the mean of int64 tensors is not an int64; sum them instead");
  NG_CHECK(tensor.dtype() != DType::BFloat16 || !tensor.device().is_cpu(),
           "distributed: all_reduce",
           "MPI has no bfloat16 sum; reduce a float32 copy (.to(DType::Float32)) instead");
  if (!tensor.device().is_cpu())
    return WorkMaker::make(*this, "ncclAllReduce",
                           nccl::all_reduce(*this, tensor, op == ReduceOp::Mean));
  char* data = bytes_of(tensor);
  const auto bytes = static_cast<std::int64_t>(element_size(tensor.dtype()));
  std::vector<MPI_Request> requests;
  in_pieces(tensor.numel(), [&](std::int64_t offset, int count) {
    requests.push_back(MPI_REQUEST_NULL);
    check(MPI_Iallreduce(MPI_IN_PLACE, data + offset * bytes, count, mpi_type(tensor.dtype()),
                         MPI_SUM, MPI_COMM_WORLD, &requests.back()),
          "MPI_Iallreduce", rank_, size_);
  });
  std::function<void()> scale;
  if (op == ReduceOp::Mean && size_ > 1) {
    scale = [tensor, size = size_] {
      const double factor = 1.0 / size;
      if (tensor.dtype() == DType::Float32) {
        float* values = tensor.data_ptr<float>();
        for (std::int64_t i = 0; i < tensor.numel(); ++i)
          values[i] = static_cast<float>(values[i] * factor);
      } else {
        double* values = tensor.data_ptr<double>();
        for (std::int64_t i = 0; i < tensor.numel(); ++i) values[i] *= factor;
      }
    };
  }
  return WorkMaker::make(*this, "MPI_Iallreduce", std::move(requests), std::move(scale));
}

void ProcessGroup::broadcast(const Tensor& tensor, int root) const {
  check_agreement("broadcast", tensor, root);
  if (!tensor.device().is_cpu()) {
    WorkMaker::make(*this, "ncclBroadcast", nccl::broadcast(*this, tensor, root)).wait();
    return;
  }
  char* data = bytes_of(tensor);
  const auto bytes = static_cast<std::int64_t>(element_size(tensor.dtype()));
  in_pieces(tensor.numel(), [&](std::int64_t offset, int count) {
    run(*this, "MPI_Ibcast", [&](MPI_Request* request) {
      return MPI_Ibcast(data + offset * bytes, count, mpi_type(tensor.dtype()), root,
                        MPI_COMM_WORLD, request);
    });
  });
}

Tensor ProcessGroup::all_gather(const Tensor& tensor) const {
  check_agreement("all_gather", tensor);
  NG_CHECK(tensor.numel() * size_ <= INT_MAX, "distributed: all_gather", "at most ", INT_MAX,
           " elements in all, got ", tensor.numel(), " on each of ", size_, " ranks");
  Shape shape{size_};
  for (const std::int64_t d : tensor.shape()) shape.push_back(d);
  Tensor gathered = empty(shape, {.dtype = tensor.dtype(), .device = tensor.device()});
  if (!tensor.device().is_cpu()) {
    WorkMaker::make(*this, "ncclAllGather", nccl::all_gather(*this, tensor, gathered)).wait();
    return gathered;
  }
  const char* data = bytes_of(tensor);
  const auto count = static_cast<int>(tensor.numel());
  run(*this, "MPI_Iallgather", [&](MPI_Request* request) {
    return MPI_Iallgather(data, count, mpi_type(tensor.dtype()), bytes_of(gathered), count,
                          mpi_type(tensor.dtype()), MPI_COMM_WORLD, request);
  });
  return gathered;
}

void ProcessGroup::barrier() const {
  run(*this, "MPI_Ibarrier",
      [&](MPI_Request* request) { return MPI_Ibarrier(MPI_COMM_WORLD, request); });
}

void ProcessGroup::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; if it did, this process still ends
}

}  // namespace normgrad::distributed
