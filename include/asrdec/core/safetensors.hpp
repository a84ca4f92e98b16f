#pragma once
/**
 * @file
 * Read-only access to safetensors files (the weights format of Hugging Face and most toolkits): an 8-byte
 * little-endian header length, a JSON header mapping tensor names to dtype, shape and byte range, then the raw
 * data. The file is memory-mapped; tensor() returns host views into the mapping, valid while the
 * SafetensorsFile (or a copy of it) lives. A tensor whose data starts at an offset that is not a multiple of its
 * element size (the format allows any offset, e.g. after a BF16 tensor of odd length) is copied once, when the file
 * is opened, to aligned memory, and viewed there. Element types F32, F16, BF16, I32 and I64 can be viewed; other types
 * are listed but tensor() rejects them with Unsupported. A malformed header, a range outside the file or a size that
 * does not match the shape raises ParseError. Immutable after construction, so safe to share across threads.
 */

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "asrdec/core/export.hpp"
#include "asrdec/core/tensor.hpp"

namespace asrdec {

struct ASRDEC_API SafetensorsEntry {
  std::string name;
  std::string dtype;  ///< as written in the file, e.g. "F32", "BF16"
  std::vector<std::int64_t> shape;
  std::size_t begin = 0;  ///< byte offsets relative to the start of the data section
  std::size_t end = 0;
};

class ASRDEC_API SafetensorsFile {
 public:
  /** Maps and validates the file. Throws ParseError (or Error when it cannot be opened). */
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  /** Copies share the mapping; a moved-from file still holds it. */
  SafetensorsFile(const SafetensorsFile&);
  SafetensorsFile& operator=(const SafetensorsFile&);
  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;

  const std::string& path() const noexcept;
  /** Tensor names in file order of their data. */
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const;
  /** Throws InvalidArgument naming the file and the tensor when it is missing. */
  const SafetensorsEntry& entry(const std::string& name) const;
  /** Host view of a tensor (throws as entry(), and Unsupported for a dtype asrdec cannot view). */
  TensorView tensor(const std::string& name) const;
  /** The optional "__metadata__" string map. */
  const std::map<std::string, std::string>& metadata() const noexcept;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace asrdec
