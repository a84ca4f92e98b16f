#include <cstring>
#include <fstream>

#include "asrdec/detail/float16.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

std::string fixture() { return testing::source_path("tests/data/safetensors/small.safetensors"); }

// Writes a safetensors file from a header string and a data section, for the malformed cases.
std::string write_file(const std::string& name, const std::string& header, const std::string& data,
                       std::int64_t declared_header_size = -1) {
  const std::string path = testing::temp_path(name);
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t size =
      declared_header_size < 0 ? header.size() : static_cast<std::uint64_t>(declared_header_size);
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((size >> (8 * i)) & 0xff));
  out << header << data;
  return path;
}

TEST(Safetensors, ReadsTensorsAndMetadataWrittenByTheReferenceLibrary) {
  const SafetensorsFile file(fixture());
  EXPECT_EQ(file.names().size(), 5u);
  EXPECT_TRUE(file.contains("weights.f32"));
  EXPECT_FALSE(file.contains("nope"));
  const TensorView w = file.tensor("weights.f32");
  EXPECT_EQ(w.dtype(), DType::f32);
  EXPECT_EQ(w.shape_string(), "[2, 3]");
  EXPECT_EQ(w.data_as<float>()[4], 4.5f);
  const TensorView h = file.tensor("weights.f16");
  EXPECT_EQ(detail::to_float(h.data_as<half_t>()[2]), 0.25f);
  EXPECT_EQ(file.tensor("ids.i32").data_as<std::int32_t>()[4], 5);
  EXPECT_EQ(file.tensor("ids.i64").data_as<std::int64_t>()[1], 7);
  EXPECT_EQ(file.metadata().at("model_type"), "test");
  EXPECT_EQ(file.metadata().at("vocab_size"), "5");
  EXPECT_EQ(file.entry("other.f64").dtype, "F64");
  ASRDEC_EXPECT_THROW_MSG(file.tensor("other.f64"), Unsupported,
                          "tensor 'other.f64' has dtype F64, which asrdec cannot use");
  ASRDEC_EXPECT_THROW_MSG(file.tensor("missing"), InvalidArgument, "no tensor named 'missing'");
}

TEST(Safetensors, RejectsEachKindOfDamage) {
  const std::string data(16, '\0');
  struct Case {
    const char* name;
    std::string header;
    std::string data;
    std::int64_t declared;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"header_too_long", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data, 4096,
       "truncated: the header length says 4096 bytes"},
      {"bad_json", R"({"a":{"dtype":"F32",)", data, -1, "invalid JSON header"},
      {"not_object", R"([1,2,3])", data, -1, "the JSON header is not an object"},
      {"missing_fields", R"({"a":{"dtype":"F32"}})", data, -1,
       "tensor 'a': expected an object with dtype, shape and data_offsets"},
      {"unknown_dtype", R"({"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", data, -1,
       "tensor 'a': unknown dtype 'F128'"},
      {"negative_shape", R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", data, -1,
       "shape entries must be non-negative integers"},
      {"out_of_range", R"({"a":{"dtype":"F32","shape":[8],"data_offsets":[0,32]}})", data, -1,
       "data_offsets [0, 32) outside the 16-byte data section (truncated file?)"},
      {"size_mismatch", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data, -1,
       "data_offsets span 16 bytes but shape and dtype need 12"},
      {"overlap",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       data, -1, "tensors 'a' and 'b' overlap"},
      {"bad_metadata", R"({"__metadata__":{"k":3}})", data, -1, "__metadata__ value of 'k' is not a string"},
      // Byte counts that wrap 2^64 must not pass the size check.
      {"wrapping_bytes", R"({"a":{"dtype":"I64","shape":[2305843009213693952],"data_offsets":[0,0]}})", data, -1,
       "tensor 'a': byte count: 2305843009213693952 × 8 overflows 64 bits"},
      {"wrapping_elements", R"({"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", data, -1,
       "tensor 'a': element count"},
      {"empty_but_huge", R"({"a":{"dtype":"U8","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}})", data, -1,
       "tensor 'a': shape extent"},
      // The tensors must tile the data section, as the format requires.
      {"trailing", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data, -1,
       "8 unexpected bytes after the 8 bytes of tensor data"},
      {"gap", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", data, -1,
       "bytes [0, 8) of the data section belong to no tensor (before 'a')"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = write_file(std::string(c.name) + ".safetensors", c.header, c.data, c.declared);
    ASRDEC_EXPECT_THROW_MSG(SafetensorsFile{path}, ParseError, c.message);
  }
  // A header is metadata: one of gigabytes is refused before it is parsed.
  const std::string huge_header = write_file("huge_header.safetensors", std::string(100 * 1024 * 1024 + 1, ' '), "");
  ASRDEC_EXPECT_THROW_MSG(SafetensorsFile{huge_header}, ParseError, "larger than the 104857600 bytes");
  // The format allows a tensor at any offset; one not aligned to its elements is viewed through an aligned copy.
  std::string misaligned_header = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  misaligned_header.append((8 - misaligned_header.size() % 8) % 8, ' ');  // data starts 8-aligned, b at +1
  std::string misaligned_data(1, '\x7f');
  const float b_values[2] = {1.5f, -3.25f};
  misaligned_data.append(reinterpret_cast<const char*>(b_values), sizeof b_values);
  const SafetensorsFile file(write_file("misaligned.safetensors", misaligned_header, misaligned_data));
  EXPECT_EQ(file.entry("a").end, 1u);
  const TensorView b = file.tensor("b");
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % alignof(float), 0u);
  EXPECT_EQ(b.data_as<float>()[0], 1.5f);
  EXPECT_EQ(b.data_as<float>()[1], -3.25f);
  EXPECT_EQ(file.tensor("b").data(), b.data()) << "one copy, made when the file is opened";
  const SafetensorsFile copy = file;  // copies share the mapping and the aligned copies
  EXPECT_EQ(copy.tensor("b").data(), b.data());
  const std::string tiny = testing::temp_path("tiny.safetensors");
  std::ofstream(tiny, std::ios::binary) << "abc";
  ASRDEC_EXPECT_THROW_MSG(SafetensorsFile{tiny}, ParseError, "shorter than the 8-byte header length");
  ASRDEC_EXPECT_THROW_MSG(SafetensorsFile{testing::temp_path("absent.safetensors")}, Error, "cannot open for reading");
}

}  // namespace
}  // namespace asrdec
