#include "sentencepiece_model.hpp"

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string_view>

#include "asrdec/asrdec.hpp"

namespace asrdec::cli {
namespace {

// A model file is a ModelProto; its field 1 holds the pieces (SentencePiece messages whose field 1 is the piece
// text). Models are small (tens of kB to a few MB); a file beyond this is not one.
constexpr std::size_t kMaxModelBytes = std::size_t{256} << 20;

// Protobuf wire format, just enough to reach the piece texts; anything malformed is left to SentencePiece's parser.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return at_ >= bytes_.size(); }
  bool varint(std::uint64_t& value) {
    value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) return false;
      const auto byte = static_cast<unsigned char>(bytes_[at_++]);
      value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  // The next field: its number, and for length-delimited fields their bytes. False at the end or on damage.
  bool field(std::uint64_t& number, std::string_view& payload) {
    std::uint64_t tag = 0, value = 0;
    if (!varint(tag)) return false;
    number = tag >> 3;
    payload = {};
    switch (tag & 7) {
      case 0:
        return varint(value);
      case 1:
        return skip(8);
      case 5:
        return skip(4);
      case 2:
        if (!varint(value) || value > bytes_.size() - at_) return false;
        payload = bytes_.substr(at_, static_cast<std::size_t>(value));
        at_ += static_cast<std::size_t>(value);
        return true;
      default:
        return false;
    }
  }

 private:
  bool skip(std::size_t count) {
    if (count > bytes_.size() - at_) return false;
    at_ += count;
    return true;
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

void check_pieces(const std::string& bytes, const std::string& path) {
  WireReader model(bytes);
  std::uint64_t number = 0;
  std::string_view payload;
  std::int64_t index = 0;
  while (model.field(number, payload)) {
    if (number != 1) continue;
    WireReader piece(payload);
    std::uint64_t inner = 0;
    std::string_view text;
    while (piece.field(inner, text)) {
      if (inner == 1 && text.find('\0') != std::string_view::npos) {
        throw ParseError(path, 0,
                         detail::concat("piece ", index, " holds a NUL byte (not a usable SentencePiece model)"));
      }
    }
    ++index;
  }
}

}  // namespace

std::unique_ptr<sentencepiece::SentencePieceProcessor> load_sentencepiece(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(detail::concat(path, ": cannot open the SentencePiece model for reading"));
  std::string bytes;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    bytes.append(buffer, static_cast<std::size_t>(in.gcount()));
    if (bytes.size() > kMaxModelBytes) {
      throw ParseError(path, 0, detail::concat("larger than ", kMaxModelBytes, " bytes: not a SentencePiece model"));
    }
  }
  check_pieces(bytes, path);
  auto processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  const auto status = processor->LoadFromSerializedProto(bytes);
  if (!status.ok()) throw Error(detail::concat(path, ": cannot load the SentencePiece model: ", status.ToString()));
  return processor;
}

}  // namespace asrdec::cli
