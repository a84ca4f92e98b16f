// Reading OpenFst binary files (vector and const FSTs of the standard arc) into the decoder's CSR arrays without
// handing the bytes to OpenFst. OpenFst's readers trust the lengths a file declares: they loop and allocate on
// them, index arcs through unchecked state records, and dlopen a library named by the file's FST type. Here the
// whole file is mapped and every length, count and record is checked against its size and its header before it
// is used, so any file is read in time and memory proportional to its size or refused with a ParseError.
//
// The layouts follow OpenFst 1.7 (fst.h FstHeader, symbol-table.cc, vector-fst.h, const-fst.h); the tests write
// graphs with OpenFst and compare what this reader returns with OpenFst's own reading.

#include "wfst/openfst_file.hpp"

#include <cstring>
#include <limits>

#include "asrdec/core/error.hpp"
#include "core/checked_size.hpp"
#include "core/mapped_file.hpp"

namespace asrdec::detail {
namespace {

constexpr std::int32_t kFstMagic = 2125659606;
constexpr std::int32_t kSymbolTableMagic = 2125658996;
constexpr std::int32_t kHasInputSymbols = 0x1;
constexpr std::int32_t kHasOutputSymbols = 0x2;
constexpr std::int32_t kIsAligned = 0x4;
constexpr std::uint64_t kConstAlignment = 16;  // OpenFst's MappedFile::kArchAlignment
// Type names are short words ("vector", "const", "standard"); a longer one is damage.
constexpr std::int32_t kMaxTypeNameBytes = 64;
constexpr std::uint64_t kArcBytes = 16;          // int32 ilabel, int32 olabel, float weight, int32 nextstate
constexpr std::uint64_t kConstStateBytes = 20;   // float final, uint32 pos, narcs, niepsilons, noepsilons
constexpr std::uint64_t kVectorStateBytes = 12;  // float final, int64 narcs (then the arcs)

// A bounds-checked little-endian cursor over the mapped file.
class Cursor {
 public:
  Cursor(const std::byte* data, const FileSizes& sizes) : data_(data), sizes_(sizes) {}

  template <class T>
  T read(const char* what) {
    T value;
    std::memcpy(&value, bytes(sizeof(T), what), sizeof(T));
    return value;
  }
  std::string string(const char* what, std::int32_t max_bytes) {
    const auto length = read<std::int32_t>(what);
    if (length < 0 || length > max_bytes) {
      sizes_.fail(concat(what, ": a string of ", length, " bytes at byte ", at_ - 4, " (at most ", max_bytes, ")"));
    }
    const std::byte* text = bytes(static_cast<std::uint64_t>(length), what);
    return std::string(reinterpret_cast<const char*>(text), static_cast<std::size_t>(length));
  }
  const std::byte* bytes(std::uint64_t count, const char* what) {
    const std::uint64_t end = sizes_.add(at_, count, what);
    sizes_.within_file(end, what);
    const std::byte* here = data_ + at_;
    at_ = end;
    return here;
  }
  void align(std::uint64_t alignment) { bytes((alignment - at_ % alignment) % alignment, "alignment padding"); }
  std::uint64_t offset() const noexcept { return at_; }
  std::uint64_t remaining() const noexcept { return sizes_.file_bytes() - at_; }

 private:
  const std::byte* data_;
  const FileSizes& sizes_;
  std::uint64_t at_ = 0;
};

// An embedded symbol table is skipped: the decoder works on ids, and words come from the words table.
void skip_symbol_table(Cursor& in, const FileSizes& sizes, const char* which) {
  if (in.read<std::int32_t>(which) != kSymbolTableMagic) sizes.fail(concat(which, ": not a symbol table"));
  in.string(which, std::numeric_limits<std::int32_t>::max());
  in.read<std::int64_t>(which);  // available key
  const auto size = in.read<std::int64_t>(which);
  // Each entry holds at least a string length and a key.
  if (size < 0 || static_cast<std::uint64_t>(size) > in.remaining() / 12) {
    sizes.fail(concat(which, ": ", size, " entries cannot fit in the rest of the file"));
  }
  for (std::int64_t i = 0; i < size; ++i) {
    in.string(which, std::numeric_limits<std::int32_t>::max());
    in.read<std::int64_t>(which);
  }
}

struct Arc {
  std::int32_t ilabel, olabel;
  float weight;
  std::int32_t next_state;
};

class ArraysBuilder {
 public:
  ArraysBuilder(WfstGraphArrays& a, const FileSizes& sizes) : a_(a), sizes_(sizes) {}

  // Per state the decoder wants emitting arcs first, then ε arcs, each group in file order.
  void add_state(float final_weight, const std::byte* arcs, std::uint64_t count) {
    const auto state = static_cast<std::int64_t>(a_.final_weight.size());
    a_.final_weight.push_back(final_weight);
    a_.emitting_begin.push_back(static_cast<std::int64_t>(a_.ilabel.size()));
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) a_.epsilon_begin.push_back(static_cast<std::int64_t>(a_.ilabel.size()));
      for (std::uint64_t i = 0; i < count; ++i) {
        Arc arc;
        std::memcpy(&arc, arcs + i * kArcBytes, kArcBytes);
        if ((arc.ilabel != 0) != (pass == 0)) continue;
        if (arc.ilabel < 0 || arc.olabel < 0) {
          sizes_.fail(concat("state ", state, " has an arc with label ", arc.ilabel < 0 ? arc.ilabel : arc.olabel));
        }
        a_.ilabel.push_back(arc.ilabel);
        a_.olabel.push_back(arc.olabel);
        a_.weight.push_back(arc.weight);
        a_.next_state.push_back(arc.next_state);
      }
    }
  }
  void finish() {
    a_.num_states = static_cast<std::int32_t>(a_.final_weight.size());
    a_.emitting_begin.push_back(static_cast<std::int64_t>(a_.ilabel.size()));
    a_.epsilon_begin.push_back(static_cast<std::int64_t>(a_.ilabel.size()));
  }

 private:
  WfstGraphArrays& a_;
  const FileSizes& sizes_;
};

}  // namespace

WfstGraphArrays read_openfst_file(const std::string& path) {
  const MappedFile file(path);
  const FileSizes sizes(path, file.size());
  Cursor in(file.data(), sizes);
  if (file.size() < 4 || in.read<std::int32_t>("the FST header") != kFstMagic) {
    sizes.fail("not an OpenFst binary file (no FST header)");
  }
  const std::string fst_type = in.string("the FST type", kMaxTypeNameBytes);
  const std::string arc_type = in.string("the arc type", kMaxTypeNameBytes);
  const auto version = in.read<std::int32_t>("the FST header");
  const auto flags = in.read<std::int32_t>("the FST header");
  in.read<std::uint64_t>("the FST header");  // properties: recomputed by the graph's own checks
  const auto start = in.read<std::int64_t>("the FST header");
  const auto num_states = in.read<std::int64_t>("the FST header");
  const auto num_arcs = in.read<std::int64_t>("the FST header");
  if (arc_type != "standard") {
    throw Unsupported(concat(path, ": arc type '", arc_type,
                             "' is not supported; the decoder needs the standard (tropical, float) arc"));
  }
  if (fst_type != "vector" && fst_type != "const") {
    throw Unsupported(concat(path, ": FST type '", fst_type,
                             "' is not supported (vector or const); convert with fstconvert --fst_type=vector"));
  }
  if ((flags & kHasInputSymbols) != 0) skip_symbol_table(in, sizes, "the input symbol table");
  if ((flags & kHasOutputSymbols) != 0) skip_symbol_table(in, sizes, "the output symbol table");
  // States are numbered with int32 in the decoder (and in OpenFst's standard arc).
  constexpr std::int64_t kMaxStates = std::numeric_limits<std::int32_t>::max() - 1;

  WfstGraphArrays a;
  ArraysBuilder builder(a, sizes);
  if (fst_type == "vector") {
    if (version < 2) sizes.fail(concat("vector FST version ", version, " is older than the oldest readable (2)"));
    // -1: the writer could not count the states first; they run to the end of the file.
    if (num_states < -1 || num_states > kMaxStates) sizes.fail(concat("header field numstates = ", num_states));
    if (num_states >= 0) {
      sizes.bytes(static_cast<std::uint64_t>(num_states), kVectorStateBytes, "the states");
      a.final_weight.reserve(static_cast<std::size_t>(num_states));
    }
    for (std::int64_t s = 0; num_states < 0 ? in.remaining() > 0 : s < num_states; ++s) {
      if (s >= kMaxStates) sizes.fail("more states than 32-bit state ids can number");
      const auto final_weight = in.read<float>("a state record");
      const auto count = in.read<std::int64_t>("a state record");
      if (count < 0 || static_cast<std::uint64_t>(count) > in.remaining() / kArcBytes) {
        sizes.fail(concat("state ", s, " declares ", count, " arcs, more than the rest of the file holds"));
      }
      builder.add_state(final_weight, in.bytes(static_cast<std::uint64_t>(count) * kArcBytes, "arcs"),
                        static_cast<std::uint64_t>(count));
    }
  } else {
    if (version < 1) sizes.fail(concat("const FST version ", version, " is older than the oldest readable (1)"));
    const bool aligned = version == 1 || (flags & kIsAligned) != 0;
    if (num_states < 0 || num_states > kMaxStates) sizes.fail(concat("header field numstates = ", num_states));
    if (num_arcs < 0) sizes.fail(concat("header field numarcs = ", num_arcs));
    if (aligned) in.align(kConstAlignment);
    const std::byte* states =
        in.bytes(sizes.bytes(static_cast<std::uint64_t>(num_states), kConstStateBytes, "the states"), "the states");
    if (aligned) in.align(kConstAlignment);
    const auto arc_count = static_cast<std::uint64_t>(num_arcs);
    const std::byte* arcs = in.bytes(sizes.bytes(arc_count, kArcBytes, "the arcs"), "the arcs");
    a.final_weight.reserve(static_cast<std::size_t>(num_states));
    // Every state record is checked: its arcs must be the next ones of the array (as OpenFst writes them).
    std::uint64_t next_arc = 0;
    for (std::int64_t s = 0; s < num_states; ++s) {
      const std::byte* record = states + static_cast<std::uint64_t>(s) * kConstStateBytes;
      float final_weight;
      std::uint32_t position, count;
      std::memcpy(&final_weight, record, 4);
      std::memcpy(&position, record + 4, 4);
      std::memcpy(&count, record + 8, 4);
      if (position != next_arc || count > arc_count - next_arc) {
        sizes.fail(concat("state ", s, " claims arcs [", position, ", ", std::uint64_t{position} + count,
                          ") but its arcs start at ", next_arc, " and there are ", arc_count));
      }
      builder.add_state(final_weight, arcs + next_arc * kArcBytes, count);
      next_arc += count;
    }
    if (next_arc != arc_count) {
      sizes.fail(concat("the states hold ", next_arc, " arcs, the header declares ", arc_count));
    }
  }
  if (in.remaining() != 0) {
    sizes.fail(concat(in.remaining(), " unexpected bytes after the FST (at byte ", in.offset(), ")"));
  }
  builder.finish();
  if (start < 0) sizes.fail("the graph has no start state");
  if (start >= a.num_states) sizes.fail(concat("start state ", start, " is not one of the ", a.num_states, " states"));
  a.start = static_cast<std::int32_t>(start);
  return a;
}

}  // namespace asrdec::detail
