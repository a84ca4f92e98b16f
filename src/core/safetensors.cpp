#include "asrdec/core/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "asrdec/core/error.hpp"
#include "core/checked_size.hpp"
#include "core/mapped_file.hpp"

namespace asrdec {
namespace {

// The reference implementation refuses larger headers too: a header is metadata, never bulk data.
constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;

// Element sizes of every dtype the safetensors format defines, so that byte ranges can be validated even for
// tensors asrdec will not view.
std::size_t element_size(const std::string& dtype) {
  static const std::pair<const char*, std::size_t> sizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
  for (const auto& [name, size] : sizes) {
    if (dtype == name) {
      return size;
    }
  }
  return 0;
}

bool viewable(const std::string& dtype, DType& out) {
  if (dtype == "F32")
    out = DType::f32;
  else if (dtype == "F16")
    out = DType::f16;
  else if (dtype == "BF16")
    out = DType::bf16;
  else if (dtype == "I32")
    out = DType::i32;
  else if (dtype == "I64")
    out = DType::i64;
  else
    return false;
  return true;
}

}  // namespace

struct SafetensorsFile::Impl {
  std::string path;
  std::unique_ptr<detail::MappedFile> file;
  const std::byte* data = nullptr;  // start of the data section
  std::size_t data_size = 0;
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::size_t> index;
  std::map<std::string, std::string> metadata;
  // Where each entry's view reads: the mapping, or an aligned copy for a tensor whose data starts at an offset that
  // is not a multiple of its element size. The format allows any offset (a BF16 tensor of odd length moves every
  // tensor after it), and views are read with typed loads.
  std::vector<const std::byte*> addresses;
  std::vector<std::unique_ptr<std::byte[]>> aligned_copies;

  [[noreturn]] void fail(const std::string& message) const { throw ParseError(path, 0, message); }

  void open() {
    file = std::make_unique<detail::MappedFile>(path);
    if (file->size() < 8) {
      fail(detail::concat("truncated: ", file->size(), " bytes, shorter than the 8-byte header length"));
    }
  }

  void parse() {
    const auto* bytes = reinterpret_cast<const unsigned char*>(file->data());
    const std::size_t mapped_size = file->size();
    std::uint64_t header_size = 0;
    for (int i = 0; i < 8; ++i) {
      header_size |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
    }
    if (header_size > mapped_size - 8) {
      fail(detail::concat("truncated: the header length says ", header_size, " bytes but only ", mapped_size - 8,
                          " follow"));
    }
    if (header_size > kMaxHeaderBytes) {
      fail(detail::concat("the JSON header of ", header_size, " bytes is larger than the ", kMaxHeaderBytes,
                          " bytes a safetensors header may have"));
    }
    data = file->data() + 8 + header_size;
    data_size = mapped_size - 8 - static_cast<std::size_t>(header_size);

    nlohmann::json header;
    try {
      header = nlohmann::json::parse(reinterpret_cast<const char*>(bytes) + 8,
                                     reinterpret_cast<const char*>(bytes) + 8 + header_size);
    } catch (const nlohmann::json::exception& error) {
      fail(detail::concat("invalid JSON header: ", error.what()));
    }
    if (!header.is_object()) {
      fail("the JSON header is not an object");
    }
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") {
        if (!value.is_object()) {
          fail("__metadata__ is not an object");
        }
        for (const auto& [key, text] : value.items()) {
          if (!text.is_string()) {
            fail(detail::concat("__metadata__ value of '", key, "' is not a string"));
          }
          metadata[key] = text.get<std::string>();
        }
        continue;
      }
      entries.push_back(parse_entry(name, value));
    }
    std::sort(entries.begin(), entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
      return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
    });
    // As the format requires, the tensors tile the data section: no overlap, no gap, nothing after the last one.
    std::size_t covered = 0;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (entries[i].begin < covered) {
        fail(detail::concat("tensors '", entries[i - 1].name, "' and '", entries[i].name, "' overlap"));
      }
      if (entries[i].begin > covered) {
        fail(detail::concat("bytes [", covered, ", ", entries[i].begin, ") of the data section belong to no tensor (",
                            "before '", entries[i].name, "')"));
      }
      covered = entries[i].end;
      index[entries[i].name] = i;
    }
    if (covered != data_size) {
      fail(detail::concat(data_size - covered, " unexpected bytes after the ", covered,
                          " bytes of tensor data (the data section must end with the last tensor)"));
    }
    // Copied once here, so that tensor() stays a const, allocation-free, thread-safe view.
    for (const SafetensorsEntry& entry : entries) {
      const std::byte* address = data + entry.begin;
      const std::size_t size = entry.end - entry.begin;
      if (size > 0 && reinterpret_cast<std::uintptr_t>(address) % element_size(entry.dtype) != 0) {
        // operator new[] aligns to __STDCPP_DEFAULT_NEW_ALIGNMENT__, at least every element size of the format.
        aligned_copies.emplace_back(new std::byte[size]);
        std::memcpy(aligned_copies.back().get(), address, size);
        address = aligned_copies.back().get();
      }
      addresses.push_back(address);
    }
  }

  SafetensorsEntry parse_entry(const std::string& name, const nlohmann::json& value) const {
    const auto where = [&](const std::string& what) { return detail::concat("tensor '", name, "': ", what); };
    if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") || !value.contains("data_offsets")) {
      fail(where("expected an object with dtype, shape and data_offsets"));
    }
    SafetensorsEntry entry;
    entry.name = name;
    if (!value["dtype"].is_string()) {
      fail(where("dtype is not a string"));
    }
    entry.dtype = value["dtype"].get<std::string>();
    const std::size_t size = element_size(entry.dtype);
    if (size == 0) {
      fail(where(detail::concat("unknown dtype '", entry.dtype, "'")));
    }
    const auto& shape = value["shape"];
    if (!shape.is_array()) {
      fail(where("shape is not an array"));
    }
    const detail::FileSizes sizes(path, file->size());
    std::uint64_t elements = 1;
    std::uint64_t extent = 1;  // strides are products of dimensions, even for an empty tensor
    for (const auto& d : shape) {
      if (!d.is_number_unsigned()) {
        fail(where("shape entries must be non-negative integers"));
      }
      const auto dim = d.get<std::uint64_t>();
      elements = sizes.mul(elements, dim, where("element count"));
      extent = sizes.mul(extent, dim == 0 ? 1 : dim, where("shape extent"));
      if (extent > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        fail(where("shape overflows int64"));
      }
      entry.shape.push_back(static_cast<std::int64_t>(dim));
    }
    const std::uint64_t bytes = sizes.mul(elements, size, where("byte count"));
    const auto& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      fail(where("data_offsets must be two non-negative integers"));
    }
    const auto begin = offsets[0].get<std::uint64_t>();
    const auto end = offsets[1].get<std::uint64_t>();
    if (begin > end || end > data_size) {
      fail(where(detail::concat("data_offsets [", begin, ", ", end, ") outside the ", data_size,
                                "-byte data section (truncated file?)")));
    }
    if (end - begin != bytes) {
      fail(where(detail::concat("data_offsets span ", end - begin, " bytes but shape and dtype need ", bytes)));
    }
    entry.begin = static_cast<std::size_t>(begin);
    entry.end = static_cast<std::size_t>(end);
    return entry;
  }
};

SafetensorsFile::SafetensorsFile(const std::string& path) {
  auto impl = std::make_shared<Impl>();
  impl->path = path;
  impl->open();
  impl->parse();
  impl_ = std::move(impl);
}

SafetensorsFile::~SafetensorsFile() = default;
SafetensorsFile::SafetensorsFile(const SafetensorsFile&) = default;
SafetensorsFile& SafetensorsFile::operator=(const SafetensorsFile&) = default;
// The file is immutable once parsed: a move shares it rather than leaving a null one behind.
SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept : impl_(other.impl_) {}
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  impl_ = other.impl_;
  return *this;
}

const std::string& SafetensorsFile::path() const noexcept { return impl_->path; }

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> names;
  names.reserve(impl_->entries.size());
  for (const auto& entry : impl_->entries) {
    names.push_back(entry.name);
  }
  return names;
}

bool SafetensorsFile::contains(const std::string& name) const { return impl_->index.count(name) > 0; }

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  const auto found = impl_->index.find(name);
  ASRDEC_CHECK_ARG(found != impl_->index.end(), impl_->path, ": no tensor named '", name, "'");
  return impl_->entries[found->second];
}

TensorView SafetensorsFile::tensor(const std::string& name) const {
  const SafetensorsEntry& e = entry(name);
  DType dtype = DType::f32;
  ASRDEC_EXPECTS(viewable(e.dtype, dtype), Unsupported, impl_->path, ": tensor '", name, "' has dtype ", e.dtype,
                 ", which asrdec cannot use (F32, F16, BF16, I32 or I64)");
  ASRDEC_EXPECTS(e.shape.size() <= static_cast<std::size_t>(TensorView::kMaxDims), Unsupported, impl_->path,
                 ": tensor '", name, "' has ", e.shape.size(), " dimensions (at most ", TensorView::kMaxDims, ")");
  std::int64_t strides[TensorView::kMaxDims] = {};
  std::int64_t stride = 1;
  for (int d = static_cast<int>(e.shape.size()) - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= e.shape[static_cast<std::size_t>(d)];
  }
  const std::byte* address = impl_->addresses[static_cast<std::size_t>(&e - impl_->entries.data())];
  return TensorView(address, dtype, static_cast<int>(e.shape.size()), e.shape.data(), strides, Device::cpu());
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const noexcept { return impl_->metadata; }

}  // namespace asrdec
