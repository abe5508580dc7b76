// The bytes gzip-compressed by the harness, then read with data::read_idx: mutations then
// reach the chunked stream reader's handling of the IDX content, which they rarely would
// through a gzip stream's checksum (fuzz_idx covers broken streams).

#include <zlib.h>

#include "harness_support.h"
#include "harnesses.h"

namespace normgrad::fuzz {

int fuzz_idx_gzip(const std::uint8_t* data, std::size_t size) {
  const std::string path = write_scratch_file("input-idx-ubyte.gz", nullptr, 0);
  gzFile file = gzopen(path.c_str(), "wb1");
  require(file != nullptr, "cannot create the compressed input");
  // gzwrite takes an unsigned count; libFuzzer's inputs are far below 4 GiB.
  require(size == 0 || gzwrite(file, data, static_cast<unsigned>(size)) > 0, "cannot compress");
  require(gzclose(file) == Z_OK, "cannot finish the compressed input");
  return accept_errors([&] { require_values_fill_shape(data::read_idx(path)); });
}

}  // namespace normgrad::fuzz
