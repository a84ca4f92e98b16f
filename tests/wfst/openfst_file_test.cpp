// asrdec's own reader of OpenFst binary files: equal to OpenFst's reading on every graph OpenFst writes (vector,
// const, aligned const, with symbol tables), and bounded on every hostile file (the cases of docs/robustness.md).

#include "src/wfst/openfst_file.hpp"

#include <chrono>
#include <cstring>

#include "wfst/random_wfst.hpp"

namespace asrdec {
namespace {

using wfst_testing::random_graph;

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void expect_same_arrays(const WfstGraphArrays& got, const WfstGraphArrays& want) {
  EXPECT_EQ(got.num_states, want.num_states);
  EXPECT_EQ(got.start, want.start);
  EXPECT_EQ(got.emitting_begin, want.emitting_begin);
  EXPECT_EQ(got.epsilon_begin, want.epsilon_begin);
  EXPECT_EQ(got.ilabel, want.ilabel);
  EXPECT_EQ(got.olabel, want.olabel);
  EXPECT_EQ(got.weight, want.weight);
  EXPECT_EQ(got.next_state, want.next_state);
  EXPECT_EQ(got.final_weight, want.final_weight);
}

// What OpenFst itself reads from `path`, in the decoder's arrays.
WfstGraphArrays openfst_arrays(const std::string& path) {
  const std::unique_ptr<fst::StdFst> graph(fst::StdFst::Read(path));
  EXPECT_NE(graph, nullptr);
  return detail::wfst_arrays_from_fst(*graph, path);
}

TEST(OpenFstFile, ReadsEveryLayoutOpenFstWritesAsOpenFstDoes) {
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  fst::SymbolTable symbols("words");
  symbols.AddSymbol("<eps>", 0);
  symbols.AddSymbol("hello", 1);
  for (int i = 0; i < 60; ++i) {
    wfst_testing::RandomGraph r = random_graph(rng);
    if (i % 3 == 0) r.fst.SetInputSymbols(&symbols);
    if (i % 4 == 0) r.fst.SetOutputSymbols(&symbols);
    const std::string vector_path = testing::temp_path("random.fst");
    ASSERT_TRUE(r.fst.Write(vector_path));
    expect_same_arrays(detail::read_openfst_file(vector_path), openfst_arrays(vector_path));
    const std::string const_path = testing::temp_path("random_const.fst");
    ASSERT_TRUE(fst::StdConstFst(r.fst).Write(const_path));
    expect_same_arrays(detail::read_openfst_file(const_path), openfst_arrays(const_path));
    // The aligned const layout pads the header and the state records to 16 bytes.
    const std::string aligned_path = testing::temp_path("random_aligned.fst");
    {
      std::ofstream out(aligned_path, std::ios::binary);
      fst::FstWriteOptions options(aligned_path);
      options.align = true;
      ASSERT_TRUE(fst::StdConstFst(r.fst).Write(out, options));
    }
    expect_same_arrays(detail::read_openfst_file(aligned_path), openfst_arrays(aligned_path));
  }
  // A real TLG, both layouts.
  const detail::CtcGraph sample = wfst_testing::sample_ctc_graph(CtcGraphOptions{});
  const std::string tlg = testing::temp_path("TLG.fst");
  ASSERT_TRUE(sample.tlg.Write(tlg));
  expect_same_arrays(detail::read_openfst_file(tlg), openfst_arrays(tlg));
  const std::string tlg_const = testing::temp_path("TLG_const.fst");
  ASSERT_TRUE(fst::StdConstFst(sample.tlg).Write(tlg_const));
  expect_same_arrays(detail::read_openfst_file(tlg_const), openfst_arrays(tlg_const));
}

// Byte offsets of a header written by OpenFst for type `type` and arc "standard", without symbol tables.
struct HeaderOffsets {
  std::size_t version, flags, start, num_states, num_arcs, body;
};
HeaderOffsets offsets_for(const std::string& type) {
  const std::size_t version = 4 + 4 + type.size() + 4 + 8;
  return HeaderOffsets{version, version + 4, version + 16, version + 24, version + 32, version + 40};
}

template <class T>
void put(std::string& bytes, std::size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

fst::StdVectorFst small_graph() {
  fst::StdVectorFst f;
  f.AddState();
  f.AddState();
  f.AddState();
  f.SetStart(0);
  f.AddArc(0, fst::StdArc(1, 1, 0.5f, 1));
  f.AddArc(0, fst::StdArc(2, 0, 0.25f, 2));
  f.AddArc(1, fst::StdArc(0, 0, 0.5f, 2));
  f.AddArc(2, fst::StdArc(1, 0, 1.0f, 2));
  f.SetFinal(2, 0.0f);
  return f;
}

TEST(OpenFstFile, HostileFilesAreRefusedQuicklyWithTheReason) {
  const auto started = std::chrono::steady_clock::now();
  const std::string vector_path = testing::temp_path("small.fst");
  ASSERT_TRUE(small_graph().Write(vector_path));
  const std::string vector_bytes = read_bytes(vector_path);
  const std::string const_path = testing::temp_path("small_const.fst");
  ASSERT_TRUE(fst::StdConstFst(small_graph()).Write(const_path));
  const std::string const_bytes = read_bytes(const_path);
  const HeaderOffsets v = offsets_for("vector");
  const HeaderOffsets c = offsets_for("const");
  const auto load = [](const std::string& name, const std::string& bytes) {
    return WfstGraph::load(testing::write_temp_file(name, bytes));
  };
  EXPECT_EQ(load("vector.fst", vector_bytes).num_arcs(), 4);
  EXPECT_EQ(load("const.fst", const_bytes).num_arcs(), 4);

  // OpenFst took 90 s and 4 GB to refuse this 8-byte file.
  ASRDEC_EXPECT_THROW_MSG(load("eight.fst", vector_bytes.substr(0, 8)), ParseError,
                          "truncated: the FST type ends at byte 14 but the file has 8 bytes");
  ASRDEC_EXPECT_THROW_MSG(load("empty.fst", ""), ParseError, "not an OpenFst binary file");
  std::string long_type = vector_bytes;
  put<std::int32_t>(long_type, 4, 0x7fffffff);
  ASRDEC_EXPECT_THROW_MSG(load("long_type.fst", long_type), ParseError,
                          "the FST type: a string of 2147483647 bytes at byte 4 (at most 64)");
  // A type name in the file made OpenFst dlopen a library of that name.
  std::string foreign = vector_bytes;
  std::memcpy(foreign.data() + 8, "libxyz", 6);
  ASRDEC_EXPECT_THROW_MSG(load("foreign.fst", foreign), Unsupported, "FST type 'libxyz' is not supported");

  // Declared counts: OpenFst allocated for 10^9 or 2^40 states before reading one.
  std::string billion = vector_bytes;
  put<std::int64_t>(billion, v.num_states, 1000000000);
  ASRDEC_EXPECT_THROW_MSG(load("billion.fst", billion), ParseError,
                          "the states: 1000000000 × 12 bytes is more than the whole");
  std::string huge_states = vector_bytes;
  put<std::int64_t>(huge_states, v.num_states, std::int64_t{1} << 40);
  ASRDEC_EXPECT_THROW_MSG(load("huge_states.fst", huge_states), ParseError, "header field numstates = 1099511627776");
  std::string huge_arcs = vector_bytes;
  put<std::int64_t>(huge_arcs, v.body + 4, std::int64_t{1} << 40);  // state 0's arc count
  ASRDEC_EXPECT_THROW_MSG(load("huge_arcs.fst", huge_arcs), ParseError,
                          "state 0 declares 1099511627776 arcs, more than the rest of the file holds");
  ASRDEC_EXPECT_THROW_MSG(load("cut.fst", vector_bytes.substr(0, vector_bytes.size() - 3)), ParseError,
                          "state 2 declares 1 arcs, more than the rest of the file holds");
  ASRDEC_EXPECT_THROW_MSG(load("trailing.fst", vector_bytes + "junk"), ParseError, "4 unexpected bytes after the FST");
  std::string flagged = vector_bytes;
  put<std::int32_t>(flagged, v.flags, 1);  // claims an input symbol table that is not there
  ASRDEC_EXPECT_THROW_MSG(load("flagged.fst", flagged), ParseError, "the input symbol table: not a symbol table");
  std::string no_start = vector_bytes;
  put<std::int64_t>(no_start, v.start, -1);
  ASRDEC_EXPECT_THROW_MSG(load("no_start.fst", no_start), ParseError, "the graph has no start state");
  std::string far_start = vector_bytes;
  put<std::int64_t>(far_start, v.start, 7);
  ASRDEC_EXPECT_THROW_MSG(load("far_start.fst", far_start), ParseError, "start state 7 is not one of the 3 states");

  // Const FSTs: OpenFst indexed arcs through any state record as it found it.
  const std::size_t state1 = c.body + 20;  // the second state record: final, pos, narcs, niepsilons, noepsilons
  std::string bad_pos = const_bytes;
  put<std::uint32_t>(bad_pos, state1 + 4, 0xfffffff0u);
  ASRDEC_EXPECT_THROW_MSG(load("bad_pos.fst", bad_pos), ParseError, "state 1 claims arcs [4294967280, ");
  std::string bad_count = const_bytes;
  put<std::uint32_t>(bad_count, state1 + 8, 1000);
  ASRDEC_EXPECT_THROW_MSG(load("bad_count.fst", bad_count), ParseError, "state 1 claims arcs [2, 1002)");
  std::string const_arcs = const_bytes;
  put<std::int64_t>(const_arcs, c.num_arcs, std::int64_t{1} << 60);
  ASRDEC_EXPECT_THROW_MSG(load("const_arcs.fst", const_arcs), ParseError, "the arcs: 1152921504606846976 × 16");
  std::string const_states = const_bytes;
  put<std::int64_t>(const_states, c.num_states, 1000000000);
  ASRDEC_EXPECT_THROW_MSG(load("const_states.fst", const_states), ParseError, "the states: 1000000000 × 20 bytes");
  std::string next_state = const_bytes;
  put<std::int32_t>(next_state, c.body + 3 * 20 + 12, 99);  // arc 0's next state
  ASRDEC_EXPECT_THROW_MSG(load("next_state.fst", next_state), ParseError,
                          "arc 0 of state 0 goes to state 99, not one of the 3 states");
  std::string nan_weight = const_bytes;
  put<float>(nan_weight, c.body + 3 * 20 + 8, std::nanf(""));
  ASRDEC_EXPECT_THROW_MSG(load("nan_weight.fst", nan_weight), ParseError, "has weight nan");
  std::string symbols = vector_bytes;
  put<std::int32_t>(symbols, v.flags, 2);
  std::string table;
  const auto append = [&](const void* data, std::size_t bytes) { table.append(static_cast<const char*>(data), bytes); };
  const std::int32_t magic = 2125658996, name_length = 0;
  const std::int64_t available = 0, entries = std::int64_t{1} << 50;
  append(&magic, 4);
  append(&name_length, 4);
  append(&available, 8);
  append(&entries, 8);
  symbols.insert(v.body, table);
  ASRDEC_EXPECT_THROW_MSG(load("symbols.fst", symbols), ParseError,
                          "the output symbol table: 1125899906842624 entries cannot fit in the rest of the file");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 5.0);
}

}  // namespace
}  // namespace asrdec
