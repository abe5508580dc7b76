// data::read_npy and write_npy against files NumPy wrote (fixtures/generate_npy.py): the values,
// byte-identical output, and a clear Error for every kind of file the reader does not take.

#include <filesystem>
#include <fstream>
#include <iterator>

#include "helpers.h"
#include "scratch_folder.h"

using namespace normgrad;

namespace {

std::string fixture(const std::string& name) {
  return std::string(NORMGRAD_FIXTURES_DIR) + "/npy/" + name;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A version 1.0 file of the given header dict and bytes of values, padded as NumPy pads.
std::string npy_file(std::string dict, const std::string& values) {
  dict.append(63 - (10 + dict.size()) % 64, ' ');
  dict += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(dict.size() & 0xff);
  bytes += static_cast<char>(dict.size() >> 8);
  return bytes + dict + values;
}

}  // namespace

TEST_CASE("read_npy reads what NumPy wrote") {
  const Tensor features = data::read_npy(fixture("features.npy"));
  CHECK(features.shape() == Shape{2, 3});
  CHECK(features.dtype() == DType::Float32);
  CHECK(features.to_vector<double>() == std::vector<double>{0.5, -1.0, 2.0, 3.5, 0.0, -4.5});
  CHECK(data::read_npy(fixture("version2.npy")).to_vector<double>() ==
        features.to_vector<double>());
  const Tensor vector = data::read_npy(fixture("vector.npy"));
  CHECK(vector.shape() == Shape{4});
  CHECK(vector.to_vector<double>() == std::vector<double>{1.5, -2.0, 3.0, 4.0});
  const Tensor scalar = data::read_npy(fixture("scalar.npy"));
  CHECK(scalar.dim() == 0);
  CHECK(scalar.item() == 7.5);
  CHECK(data::read_npy(fixture("empty.npy")).shape() == Shape{0, 4});
}

TEST_CASE("write_npy writes exactly what NumPy writes, and reads back") {
  testing::ScratchFolder folder("npy_write");
  std::filesystem::create_directories(folder.path);
  for (const char* name : {"features.npy", "vector.npy", "scalar.npy", "empty.npy"}) {
    CAPTURE(name);
    const Tensor values = data::read_npy(fixture(name));
    data::write_npy(folder / name, values);
    CHECK(file_bytes(folder / name) == file_bytes(fixture(name)));
  }
  // Any layout and dtype-matching view: a transposed float32 tensor is written in C order.
  const Tensor transposed = data::read_npy(fixture("features.npy")).t();
  data::write_npy(folder / "transposed.npy", transposed);
  const Tensor back = data::read_npy(folder / "transposed.npy");
  CHECK(back.shape() == Shape{3, 2});
  CHECK(back.to_vector<double>() == transposed.contiguous().to_vector<double>());
  CHECK_THROWS_WITH_AS(data::write_npy(folder / "f64.npy", zeros({2}, {.dtype = DType::Float64})),
                       doctest::Contains("writes float32 tensors, got float64"), Error);
  CHECK_FALSE(std::filesystem::exists(folder / "f64.npy"));
}

TEST_CASE("read_npy refuses other dtypes and orders, naming what the file holds") {
  CHECK_THROWS_WITH_AS(data::read_npy(fixture("float64.npy")),
                       doctest::Contains("dtype '<f8'; only little-endian float32"), Error);
  CHECK_THROWS_WITH_AS(data::read_npy(fixture("big_endian.npy")), doctest::Contains("'>f4'"),
                       Error);
  CHECK_THROWS_WITH_AS(data::read_npy(fixture("int64.npy")), doctest::Contains("'<i8'"), Error);
  CHECK_THROWS_WITH_AS(data::read_npy(fixture("fortran.npy")), doctest::Contains("Fortran order"),
                       Error);
}

TEST_CASE("read_npy refuses damaged files before allocating") {
  testing::ScratchFolder folder("npy_damaged");
  std::filesystem::create_directories(folder.path);
  const std::string good = file_bytes(fixture("features.npy"));
  const std::string values(24, '\0');
  struct Case {
    const char* name;
    std::string bytes;
    const char* message;
  };
  const std::vector<Case> cases{
      {"empty", "", "truncated: it ends inside its magic number"},
      {"not npy", "PK\x03\x04 a zip file, not an array", "does not start with \\x93NUMPY"},
      {"version", "\x93NUMPY\x04" + std::string(1, '\0') + good.substr(8), "version 4.0"},
      {"truncated header", good.substr(0, 40), "ends inside its header"},
      {"truncated values", good.substr(0, good.size() - 1),
       "calls for 24 bytes of values, but 23 follow"},
      {"trailing bytes", good + "x", "calls for 24 bytes of values, but 25 follow"},
      {"huge claim",
       npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, "
                "4294967296, 4), }",
                values),
       "calls for 2^63 or more bytes"},
      {"long header", "\x93NUMPY\x02" + std::string(1, '\0') + std::string("\xff\xff\xff\x7f"),
       "more than the 10000"},
      {"no dict", npy_file("['descr', '<f4']", values), "no '{'"},
      {"unknown key",
       npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1, }", values),
       "an unknown key 'x'"},
      {"key twice", npy_file("{'descr': '<f4', 'descr': '<f4', 'shape': (6,), }", values),
       "'descr' twice"},
      {"missing key", npy_file("{'descr': '<f4', 'shape': (2, 3), }", values),
       "lacks one of 'descr', 'fortran_order' and 'shape'"},
      {"negative dim",
       npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", values),
       "a dim that is not a non-negative integer"},
      {"after dict",
       npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } junk", values),
       "more after its dict"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    write_bytes(folder / "file.npy", c.bytes);
    CHECK_THROWS_WITH_AS(data::read_npy(folder / "file.npy"), doctest::Contains(c.message), Error);
  }
  // Double quotes, other spacing and the keys in another order are NumPy's format too.
  write_bytes(folder / "file.npy",
              npy_file("{\"shape\":(2,3),\"fortran_order\":False,\"descr\":\"<f4\"}", values));
  CHECK(data::read_npy(folder / "file.npy").shape() == Shape{2, 3});
  CHECK_THROWS_WITH_AS(data::read_npy(folder / "missing.npy"), doctest::Contains("cannot open"),
                       Error);
  CHECK_THROWS_WITH_AS(data::read_npy(folder.path.string()), doctest::Contains("is a directory"),
                       Error);
}
