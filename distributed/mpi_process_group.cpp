// ProcessGroup over MPI, for CPU tensors. MPI's errors are returned rather than fatal
// (MPI_ERRORS_RETURN), and every call's result is checked.

#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "core/error.h"
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
  }
  return MPI_BYTE;
}

// What each rank says of its tensor before a collective, so that all can check they agree:
// whether it can be sent at all, its dtype, the root, the number of dims and up to kDims of
// them, and the element count (which covers dims beyond kDims).
constexpr int kDims = 8;
constexpr int kSignature = 5 + kDims;
using Signature = std::array<std::int64_t, kSignature>;

Signature signature_of(const Tensor& tensor, int root) {
  Signature s{};
  s.fill(-1);
  const bool usable = tensor.defined() && tensor.device().is_cpu() && tensor.is_contiguous();
  s[0] = usable ? 1 : 0;
  if (!tensor.defined()) return s;
  s[1] = static_cast<std::int64_t>(tensor.dtype());
  s[2] = root;
  s[3] = tensor.dim();
  s[4] = tensor.numel();
  for (std::int64_t d = 0; d < std::min<std::int64_t>(tensor.dim(), kDims); ++d)
    s[static_cast<std::size_t>(5 + d)] = tensor.size(d);
  return s;
}

std::string describe(const Signature& s) {
  if (s[1] < 0) return "an undefined tensor";
  std::ostringstream out;
  out << static_cast<DType>(s[1]) << " [";
  for (std::int64_t d = 0; d < std::min<std::int64_t>(s[3], kDims); ++d)
    out << (d == 0 ? "" : ", ") << s[static_cast<std::size_t>(5 + d)];
  if (s[3] > kDims) out << ", ...";
  out << "]";
  if (s[0] == 0) out << " (not a contiguous CPU tensor)";
  return out.str();
}

// The first byte of a CPU tensor's elements.
char* bytes_of(const Tensor& tensor) {
  switch (tensor.dtype()) {
    case DType::Float32:
      return reinterpret_cast<char*>(tensor.data_ptr<float>());
    case DType::Float64:
      return reinterpret_cast<char*>(tensor.data_ptr<double>());
    case DType::Int64:
      return reinterpret_cast<char*>(tensor.data_ptr<std::int64_t>());
  }
  return nullptr;
}

void finalize_at_exit() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
}

// Runs `call(offset, count)` over [0, total) in pieces whose count fits MPI's int.
template <class Call> void in_pieces(std::int64_t total, Call&& call) {
  constexpr std::int64_t kPiece = std::int64_t{1} << 30;
  for (std::int64_t offset = 0; offset < total; offset += kPiece)
    call(offset, static_cast<int>(std::min(kPiece, total - offset)));
}

}  // namespace

bool is_available() { return true; }

ProcessGroup& ProcessGroup::world() {
  static ProcessGroup* group = [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
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

void ProcessGroup::check_agreement(const char* call, const Tensor& tensor, int root) const {
  const Signature mine = signature_of(tensor, root);
  std::vector<std::int64_t> all(static_cast<std::size_t>(kSignature * size_));
  check(MPI_Allgather(mine.data(), kSignature, MPI_INT64_T, all.data(), kSignature, MPI_INT64_T,
                      MPI_COMM_WORLD),
        "MPI_Allgather", rank_, size_);
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
                               ": the ranks' tensors must be contiguous CPU tensors of one "
                               "dtype and shape",
                               root != 0 ? " (and name one root)" : "", "; ", ranks.str()));
}

void ProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op) const {
  check_agreement("all_reduce", tensor);
  NG_CHECK(op == ReduceOp::Sum || is_floating(tensor.dtype()), "distributed: all_reduce",
           "the mean of int64 tensors is not an int64; sum them instead");
  char* data = bytes_of(tensor);
  const auto bytes = static_cast<std::int64_t>(element_size(tensor.dtype()));
  in_pieces(tensor.numel(), [&](std::int64_t offset, int count) {
    check(MPI_Allreduce(MPI_IN_PLACE, data + offset * bytes, count, mpi_type(tensor.dtype()),
                        MPI_SUM, MPI_COMM_WORLD),
          "MPI_Allreduce", rank_, size_);
  });
  if (op == ReduceOp::Mean && size_ > 1) {
    const double scale = 1.0 / size_;
    if (tensor.dtype() == DType::Float32) {
      float* values = tensor.data_ptr<float>();
      for (std::int64_t i = 0; i < tensor.numel(); ++i)
        values[i] = static_cast<float>(values[i] * scale);
    } else {
      double* values = tensor.data_ptr<double>();
      for (std::int64_t i = 0; i < tensor.numel(); ++i) values[i] *= scale;
    }
  }
}

void ProcessGroup::broadcast(const Tensor& tensor, int root) const {
  check_agreement("broadcast", tensor, root);
  char* data = bytes_of(tensor);
  const auto bytes = static_cast<std::int64_t>(element_size(tensor.dtype()));
  in_pieces(tensor.numel(), [&](std::int64_t offset, int count) {
    check(MPI_Bcast(data + offset * bytes, count, mpi_type(tensor.dtype()), root, MPI_COMM_WORLD),
          "MPI_Bcast", rank_, size_);
  });
}

Tensor ProcessGroup::all_gather(const Tensor& tensor) const {
  check_agreement("all_gather", tensor);
  NG_CHECK(tensor.numel() * size_ <= INT_MAX, "distributed: all_gather", "at most ", INT_MAX,
           " elements in all, got ", tensor.numel(), " on each of ", size_, " ranks");
  Shape shape{size_};
  for (const std::int64_t d : tensor.shape()) shape.push_back(d);
  Tensor gathered = empty(shape, {.dtype = tensor.dtype()});
  const char* data = bytes_of(tensor);
  const auto count = static_cast<int>(tensor.numel());
  check(MPI_Allgather(data, count, mpi_type(tensor.dtype()), bytes_of(gathered), count,
                      mpi_type(tensor.dtype()), MPI_COMM_WORLD),
        "MPI_Allgather", rank_, size_);
  return gathered;
}

void ProcessGroup::barrier() const {
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier", rank_, size_);
}

void ProcessGroup::abort(int code) const {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; if it did, this process still ends
}

}  // namespace normgrad::distributed
