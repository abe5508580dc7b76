// The bytes as an IDX file, exactly as given: data::read_idx reads it plain, or through zlib
// when it starts with gzip's magic bytes.

#include "harness_support.h"
#include "harnesses.h"

namespace normgrad::fuzz {

int fuzz_idx(const std::uint8_t* data, std::size_t size) {
  const std::string path = write_scratch_file("input-idx-ubyte", data, size);
  return accept_errors([&] { require_values_fill_shape(data::read_idx(path)); });
}

}  // namespace normgrad::fuzz
