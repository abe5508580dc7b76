// The bytes as a .npy file: data::read_npy. What it returns must be a float32 tensor whose
// values fill its shape, and must write back to a file that reads the same.

#include <cstring>

#include "harness_support.h"
#include "harnesses.h"

namespace normgrad::fuzz {

int fuzz_npy(const std::uint8_t* data, std::size_t size) {
  const std::string path = write_scratch_file("input.npy", data, size);
  return accept_errors([&] {
    const Tensor values = data::read_npy(path);
    require(values.dtype() == DType::Float32, "read_npy returned another dtype than float32");
    std::uint64_t count = 1;
    for (const std::int64_t dim : values.shape()) {
      require(dim >= 0, "a .npy dim is negative");
      count *= static_cast<std::uint64_t>(dim);  // no wrap: read_npy checked the product
    }
    require(count == static_cast<std::uint64_t>(values.numel()),
            "a .npy tensor's values do not fill its shape");
    require(count * 4 < size, "read_npy returned more values than the file has bytes");
    const std::string copy = scratch_folder() + "/copy.npy";
    data::write_npy(copy, values);
    const Tensor back = data::read_npy(copy);
    require(back.shape() == values.shape(), "a .npy file written back has another shape");
    require(
        count == 0 || std::memcmp(back.data_ptr<float>(), values.data_ptr<float>(), count * 4) == 0,
        "a .npy file written back has other values");
  });
}

}  // namespace normgrad::fuzz
