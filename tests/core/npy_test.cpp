#include <fstream>

#include "asrdec/detail/float16.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

std::string fixture(const std::string& name) { return testing::source_path("tests/data/npy/" + name); }

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST(Npy, ReadsNumpyFilesOfEverySupportedType) {
  const NpyArray f32 = read_npy(fixture("f32_2x3.npy"));
  EXPECT_EQ(f32.dtype(), DType::f32);
  EXPECT_EQ(f32.shape(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(f32.data_as<float>()[1], -2.25f);
  EXPECT_EQ(f32.data_as<float>()[5], 1e-3f);

  const NpyArray f16 = read_npy(fixture("f16_4.npy"));
  EXPECT_EQ(f16.dtype(), DType::f16);
  EXPECT_EQ(detail::to_float(f16.data_as<half_t>()[2]), 65504.0f);
  EXPECT_EQ(detail::to_float(f16.data_as<half_t>()[1]), -0.5f);

  const NpyArray i32 = read_npy(fixture("i32_3.npy"));
  EXPECT_EQ(i32.data_as<std::int32_t>()[2], 2147483647);
  const NpyArray i64 = read_npy(fixture("i64_2x2.npy"));
  EXPECT_EQ(i64.data_as<std::int64_t>()[2], 9007199254740993LL);

  const NpyArray scalar = read_npy(fixture("f32_scalar.npy"));
  EXPECT_TRUE(scalar.shape().empty());
  EXPECT_EQ(scalar.data_as<float>()[0], 4.5f);
  const NpyArray empty = read_npy(fixture("f32_empty_0x5.npy"));
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_EQ(empty.view().shape_string(), "[0, 5]");
  const NpyArray v2 = read_npy(fixture("f32_v2.npy"));
  EXPECT_EQ(v2.data_as<float>()[1], 2.0f);
}

TEST(Npy, RejectsUnsupportedTypesWithAHint) {
  ASRDEC_EXPECT_THROW_MSG(read_npy(fixture("f64_2.npy")), Unsupported,
                          "float64 arrays are not supported; save with arr.astype(np.float32)");
  ASRDEC_EXPECT_THROW_MSG(read_npy(fixture("f32_big_endian.npy")), Unsupported,
                          "big-endian arrays ('>f4') are not supported");
  ASRDEC_EXPECT_THROW_MSG(read_npy(fixture("f32_fortran_2x3.npy")), Unsupported,
                          "Fortran-order arrays are not supported");
  ASRDEC_EXPECT_THROW_MSG(read_npy(fixture("u8_3.npy")), Unsupported, "element type '|u1' is not supported");
}

TEST(Npy, RejectsMalformedAndTruncatedFiles) {
  const std::string good = read_bytes(fixture("f32_2x3.npy"));
  const std::string truncated = testing::temp_path("truncated.npy");
  write_bytes(truncated, good.substr(0, good.size() - 5));
  ASRDEC_EXPECT_THROW_MSG(read_npy(truncated), ParseError,
                          "truncated: the header declares 24 bytes of float32 data, the file holds 19");

  const std::string cut_header = testing::temp_path("cut_header.npy");
  write_bytes(cut_header, good.substr(0, 40));
  ASRDEC_EXPECT_THROW_MSG(read_npy(cut_header), ParseError, "truncated: header of");

  const std::string no_magic = testing::temp_path("no_magic.npy");
  write_bytes(no_magic, "PK\x03\x04 this is a zip file");
  ASRDEC_EXPECT_THROW_MSG(read_npy(no_magic), ParseError, "not a .npy file");

  const std::string trailing = testing::temp_path("trailing.npy");
  write_bytes(trailing, good + "xyz");
  ASRDEC_EXPECT_THROW_MSG(read_npy(trailing), ParseError, "3 unexpected bytes after the 24 bytes of array data");

  std::string bad_header = good;
  bad_header.replace(bad_header.find("shape"), 5, "shapx");
  const std::string bad = testing::temp_path("bad_header.npy");
  write_bytes(bad, bad_header);
  ASRDEC_EXPECT_THROW_MSG(read_npy(bad), ParseError, "malformed .npy header");

  ASRDEC_EXPECT_THROW_MSG(read_npy(testing::temp_path("missing.npy")), Error, "cannot open for reading");
}

// A version 1.0 .npy file with `header` (padded as NumPy pads it) followed by `data`.
std::string npy_bytes(const std::string& header, const std::string& data) {
  std::string text = header;
  text.append((64 - (10 + text.size() + 1) % 64) % 64, ' ');
  text += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(text.size() & 0xff);
  out += static_cast<char>(text.size() >> 8);
  return out + text + data;
}

TEST(Npy, SizesDerivedFromTheHeaderCannotWrap) {
  // 2^61 float32 elements are 2^63 bytes and 2^62 int64 are 2^65: before the byte count was checked, the second
  // wrapped to 0 and a tiny allocation was written past by the CLI.
  const std::string wraps = testing::temp_path("wraps.npy");
  write_bytes(wraps, npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (4611686018427387904,), }", ""));
  ASRDEC_EXPECT_THROW_MSG(read_npy(wraps), ParseError, "the array's byte count: 4611686018427387904 × 8 overflows");
  const std::string elements = testing::temp_path("elements.npy");
  write_bytes(elements, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967297), }", ""));
  ASRDEC_EXPECT_THROW_MSG(read_npy(elements), ParseError, "the shape's element count");
  // An empty array whose other dimensions multiply past int64 would overflow every stride computed from them.
  const std::string extent = testing::temp_path("extent.npy");
  write_bytes(extent,
              npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }", ""));
  ASRDEC_EXPECT_THROW_MSG(read_npy(extent), ParseError, "the shape's extent");
  // Large but honest: the header asks for more data than the file holds.
  const std::string big = testing::temp_path("big.npy");
  write_bytes(big, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000), }", "abcd"));
  ASRDEC_EXPECT_THROW_MSG(read_npy(big), ParseError, "truncated: the header declares 4000000000 bytes");
  // An empty array is still fine.
  const std::string empty = testing::temp_path("empty.npy");
  write_bytes(empty, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 7), }", ""));
  EXPECT_EQ(read_npy(empty).view().shape_string(), "[0, 7]");
  ASRDEC_EXPECT_THROW_MSG((NpyArray(DType::f32, {std::int64_t{1} << 40, std::int64_t{1} << 40})), InvalidArgument,
                          "overflows int64");
}

TEST(Npy, WriteThenReadRoundTripsRandomArrays) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  for (DType dtype : {DType::f32, DType::f16, DType::i32, DType::i64}) {
    const std::vector<std::int64_t> shape = {1 + static_cast<std::int64_t>(rng() % 5),
                                             static_cast<std::int64_t>(rng() % 7), 3};
    NpyArray array(dtype, shape);
    auto* bytes = static_cast<unsigned char*>(array.data());
    for (std::size_t i = 0; i < array.bytes(); ++i) bytes[i] = static_cast<unsigned char>(rng());
    if (dtype == DType::f16) {  // keep NaN payloads out of the byte comparison
      for (std::int64_t i = 0; i < array.numel(); ++i) {
        array.mutable_data_as<half_t>()[i].bits &= 0xbbff;
      }
    }
    const std::string path = testing::temp_path("roundtrip.npy");
    write_npy(path, array.view());
    const NpyArray back = read_npy(path);
    EXPECT_EQ(back.dtype(), dtype);
    EXPECT_EQ(back.shape(), shape);
    ASSERT_EQ(back.bytes(), array.bytes());
    if (array.bytes() > 0) {  // an empty array has no data pointer
      EXPECT_EQ(std::memcmp(back.data(), array.data(), array.bytes()), 0) << dtype_name(dtype);
    }
    EXPECT_EQ(read_bytes(path).size() % 64, array.bytes() % 64) << "data must start on a 64-byte boundary";
  }
}

TEST(Npy, WriteRejectsWhatNumpyCannotHold) {
  std::uint16_t bits[2] = {};
  ASRDEC_EXPECT_THROW_MSG(write_npy(testing::temp_path("bf16.npy"), TensorView(bits, DType::bf16, {2})), Unsupported,
                          "bfloat16 arrays cannot be stored in .npy");
  float data[4] = {};
  ASRDEC_EXPECT_THROW_MSG(write_npy(testing::temp_path("strided.npy"), TensorView(data, DType::f32, {2}, {2})),
                          InvalidArgument, "expected a contiguous array");
}

}  // namespace
}  // namespace asrdec
