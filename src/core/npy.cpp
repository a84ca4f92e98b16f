#include "asrdec/core/npy.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>

#include "asrdec/core/error.hpp"
#include "core/checked_size.hpp"

namespace asrdec {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;
constexpr std::uint64_t kMaxHeaderBytes = 1u << 20;

// A cursor over the header, a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : text_(text), path_(path) {}

  void expect(char c) {
    skip_space();
    if (pos_ >= text_.size() || text_[pos_] != c) {
      fail(detail::concat("expected '", c, "' at header position ", pos_));
    }
    ++pos_;
  }
  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) {
      fail(detail::concat("expected a string at header position ", pos_));
    }
    const char quote = text_[pos_++];
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string::npos) {
      fail("unterminated string in header");
    }
    std::string value = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return value;
  }
  bool boolean() {
    skip_space();
    if (text_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (text_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail(detail::concat("expected True or False at header position ", pos_));
  }
  std::vector<std::int64_t> shape_tuple() {
    expect('(');
    std::vector<std::int64_t> shape;
    while (!accept(')')) {
      skip_space();
      std::int64_t value = 0;
      bool any = false;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        const int digit = text_[pos_++] - '0';
        if (value > (std::numeric_limits<std::int64_t>::max() - digit) / 10) {
          fail("shape entry overflows int64");
        }
        value = value * 10 + digit;
        any = true;
      }
      if (!any) {
        fail(detail::concat("expected a non-negative integer in shape at header position ", pos_));
      }
      shape.push_back(value);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return shape;
  }
  void skip_value() {
    // Unknown keys are not part of the format; reject rather than guess.
    fail("unexpected key in header");
  }
  [[noreturn]] void fail(const std::string& message) const {
    throw ParseError(path_, 0, detail::concat("malformed .npy header: ", message, " in ", text_));
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) {
      ++pos_;
    }
  }
  const std::string& text_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

DType dtype_from_descr(const std::string& descr, const std::string& path) {
  const bool little = !descr.empty() && (descr[0] == '<' || descr[0] == '|' || descr[0] == '=');
  const std::string type = descr.empty() ? descr : descr.substr(1);
  if (!descr.empty() && descr[0] == '>' && type != "f1" && type != "i1" && type != "u1") {
    throw Unsupported(detail::concat(path, ": big-endian arrays ('", descr,
                                     "') are not supported; save with arr.astype(arr.dtype.newbyteorder('<'))"));
  }
  if (little) {
    if (type == "f4") return DType::f32;
    if (type == "f2") return DType::f16;
    if (type == "i4") return DType::i32;
    if (type == "i8") return DType::i64;
  }
  const char* hint = "float32, float16, int32 or int64";
  if (type == "f8") {
    throw Unsupported(detail::concat(path, ": float64 arrays are not supported; save with arr.astype(np.float32)"));
  }
  throw Unsupported(detail::concat(path, ": element type '", descr, "' is not supported (expected ", hint, ")"));
}

std::string descr_of(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "<f4";
    case DType::f16:
      return "<f2";
    case DType::i32:
      return "<i4";
    case DType::i64:
      return "<i8";
    case DType::bf16:
      break;
  }
  throw Unsupported("bfloat16 arrays cannot be stored in .npy (NumPy has no bfloat16 type); convert to float32");
}

}  // namespace

NpyArray::NpyArray(DType dtype, std::vector<std::int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  std::uint64_t elements = 1;
  for (std::int64_t d : shape_) {
    ASRDEC_CHECK_ARG(d >= 0, "NpyArray: dimension of negative size ", d);
    const std::optional<std::uint64_t> product = detail::checked_mul(elements, static_cast<std::uint64_t>(d));
    ASRDEC_CHECK_ARG(
        product.has_value() && *product <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
        "NpyArray: the shape's element count overflows int64");
    elements = *product;
  }
  data_ = HostBuffer<std::byte>(detail::checked_bytes(elements, dtype_size(dtype), "NpyArray"));
}

std::int64_t NpyArray::numel() const noexcept {
  std::int64_t n = 1;
  for (std::int64_t d : shape_) {
    n *= d;
  }
  return n;
}

TensorView NpyArray::view() const {
  ASRDEC_CHECK_ARG(shape_.size() <= TensorView::kMaxDims, "array of ", shape_.size(),
                   " dimensions cannot be viewed (at most ", TensorView::kMaxDims, ")");
  std::int64_t strides[TensorView::kMaxDims] = {};
  std::int64_t stride = 1;
  for (int d = static_cast<int>(shape_.size()) - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape_[static_cast<std::size_t>(d)];
  }
  return TensorView(data_.data(), dtype_, static_cast<int>(shape_.size()), shape_.data(), strides, Device::cpu());
}

NpyArray read_npy(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw FileError(path, detail::concat(path, ": cannot open for reading: ", std::strerror(errno)));
  }
  file.seekg(0, std::ios::end);
  const std::streamoff end = file.tellg();
  if (end < 0) {
    // A pipe has no size to check the header against (and /dev/zero-like devices report 0, refused below).
    throw FileError(
        path, detail::concat(path, ": cannot determine the file's size (a pipe? .npy files must be regular files)"));
  }
  const auto file_size = static_cast<std::uint64_t>(end);
  file.seekg(0, std::ios::beg);

  unsigned char prefix[kMagicSize + 2];
  if (!file.read(reinterpret_cast<char*>(prefix), sizeof prefix) || std::memcmp(prefix, kMagic, kMagicSize) != 0) {
    throw ParseError(path, 0, "not a .npy file (missing the \\x93NUMPY magic)");
  }
  const int major = prefix[kMagicSize];
  std::uint64_t header_size = 0;
  std::size_t length_bytes = 0;
  if (major == 1) {
    length_bytes = 2;
  } else if (major == 2 || major == 3) {
    length_bytes = 4;
  } else {
    throw ParseError(path, 0,
                     detail::concat("unsupported .npy format version ", major, ".", int{prefix[kMagicSize + 1]}));
  }
  unsigned char length[4] = {};
  if (!file.read(reinterpret_cast<char*>(length), static_cast<std::streamsize>(length_bytes))) {
    throw ParseError(path, 0, "truncated: the file ends inside the header length");
  }
  for (std::size_t i = 0; i < length_bytes; ++i) {
    header_size |= static_cast<std::uint64_t>(length[i]) << (8 * i);
  }
  // NumPy itself refuses headers above 10 000 bytes unless told otherwise; a header is a short dict literal.
  if (header_size > kMaxHeaderBytes) {
    throw ParseError(path, 0,
                     detail::concat("header of ", header_size, " bytes is larger than the ", kMaxHeaderBytes,
                                    " bytes a .npy header may have here"));
  }
  const std::uint64_t data_offset = sizeof prefix + length_bytes + header_size;
  if (data_offset > file_size) {
    throw ParseError(
        path, 0,
        detail::concat("truncated: header of ", header_size, " bytes but the file holds ", file_size, " bytes"));
  }
  std::string header(header_size, '\0');
  file.read(header.data(), static_cast<std::streamsize>(header_size));

  HeaderParser parser(header, path);
  std::string descr;
  bool have_descr = false, have_order = false, have_shape = false, fortran_order = false;
  std::vector<std::int64_t> shape;
  parser.expect('{');
  while (!parser.accept('}')) {
    const std::string key = parser.string_literal();
    parser.expect(':');
    if (key == "descr") {
      descr = parser.string_literal();
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran_order = parser.boolean();
      have_order = true;
    } else if (key == "shape") {
      shape = parser.shape_tuple();
      have_shape = true;
    } else {
      parser.skip_value();
    }
    if (!parser.accept(',')) {
      parser.expect('}');
      break;
    }
  }
  if (!have_descr || !have_order || !have_shape) {
    parser.fail("the header must define descr, fortran_order and shape");
  }
  const DType dtype = dtype_from_descr(descr, path);
  if (shape.size() > static_cast<std::size_t>(TensorView::kMaxDims)) {
    throw Unsupported(detail::concat(path, ": arrays of ", shape.size(), " dimensions are not supported (at most ",
                                     TensorView::kMaxDims, ")"));
  }
  if (fortran_order && shape.size() > 1) {
    throw Unsupported(detail::concat(path, ": Fortran-order arrays are not supported; save with np.ascontiguousarray"));
  }
  // Every size derived from the header is checked: a shape whose byte count wraps 2^64 would otherwise pass the
  // size check below with a tiny allocation.
  const detail::FileSizes sizes(path, file_size);
  std::uint64_t elements = 1;
  std::uint64_t nonzero_extent = 1;  // strides and offsets are products of dimensions, even of an empty array
  for (std::int64_t d : shape) {
    elements = sizes.mul(elements, static_cast<std::uint64_t>(d), "the shape's element count");
    nonzero_extent = sizes.mul(nonzero_extent, static_cast<std::uint64_t>(d == 0 ? 1 : d), "the shape's extent");
  }
  if (nonzero_extent > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    sizes.fail(detail::concat("the shape's extent (", nonzero_extent, " elements) overflows int64"));
  }
  const std::uint64_t data_bytes = sizes.mul(elements, dtype_size(dtype), "the array's byte count");
  const std::uint64_t available = file_size - data_offset;
  if (available < data_bytes) {
    throw ParseError(path, 0,
                     detail::concat("truncated: the header declares ", data_bytes, " bytes of ", dtype_name(dtype),
                                    " data, the file holds ", available));
  }
  if (available > data_bytes) {
    throw ParseError(
        path, 0,
        detail::concat(available - data_bytes, " unexpected bytes after the ", data_bytes, " bytes of array data"));
  }
  NpyArray array(dtype, shape);
  if (data_bytes > 0 && !file.read(static_cast<char*>(array.data()), static_cast<std::streamsize>(data_bytes))) {
    throw ParseError(path, 0, "read error in the array data");
  }
  return array;
}

void write_npy(const std::string& path, const TensorView& array) {
  ASRDEC_CHECK_ARG(array.device().is_cpu(), "write_npy: expected a host array, got one on ",
                   array.device().to_string());
  ASRDEC_CHECK_ARG(array.is_contiguous(), "write_npy: expected a contiguous array");
  const std::string descr = descr_of(array.dtype());
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (int d = 0; d < array.ndim(); ++d) {
    header += std::to_string(array.size(d));
    header += (array.ndim() == 1 || d + 1 < array.ndim()) ? "," : "";
    header += d + 1 < array.ndim() ? " " : "";
  }
  header += "), }";
  // Pad with spaces and a final newline so that the data starts on a 64-byte boundary, as NumPy does.
  const std::size_t unpadded = kMagicSize + 2 + 2 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  const bool version2 = header.size() > 0xffff;
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) {
    throw FileError(path, detail::concat(path, ": cannot open for writing: ", std::strerror(errno)));
  }
  file.write(kMagic, kMagicSize);
  const char version[2] = {static_cast<char>(version2 ? 2 : 1), 0};
  file.write(version, 2);
  const auto size = static_cast<std::uint32_t>(header.size());
  const char size_bytes[4] = {static_cast<char>(size & 0xff), static_cast<char>((size >> 8) & 0xff),
                              static_cast<char>((size >> 16) & 0xff), static_cast<char>((size >> 24) & 0xff)};
  file.write(size_bytes, version2 ? 4 : 2);
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  file.write(static_cast<const char*>(array.data()),
             static_cast<std::streamsize>(static_cast<std::size_t>(array.numel()) * dtype_size(array.dtype())));
  if (!file) {
    throw FileError(path, detail::concat(path, ": write failed"));
  }
}

}  // namespace asrdec
