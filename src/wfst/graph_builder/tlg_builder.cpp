// LG and TLG (shared/reference/wfst-ctc.md §2.3) and the file-to-file build behind `asrdec graph build`.

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <sstream>

#include "asrdec/core/error.hpp"
#include "wfst/graph_builder/graph_builder_openfst.hpp"

namespace asrdec {
namespace detail {
namespace {

constexpr float kDeterminizeDelta = 1e-6f;

// OpenFst reports failures by marking the result with kError rather than by throwing.
void check_fst(const fst::StdVectorFst& fst, const char* step) {
  if (fst.Properties(fst::kError, false) != 0) throw Error(concat("OpenFst failed while ", step));
}

// OpenFst's FSTERROR ends the process (LOG(FATAL), exit 1) while FLAGS_fst_error_fatal is set, its default. While
// asrdec builds graphs the flag is cleared, so a failure marks the machine with kError, which check_fst turns into
// an exception; the engine's own setting is restored when the last build ends.
class OpenFstErrorsNotFatal {
 public:
  OpenFstErrorsNotFatal() {
    const std::lock_guard<std::mutex> lock(mutex());
    if (depth()++ == 0) {
      saved() = FLAGS_fst_error_fatal;
      FLAGS_fst_error_fatal = false;
    }
  }
  ~OpenFstErrorsNotFatal() {
    const std::lock_guard<std::mutex> lock(mutex());
    if (--depth() == 0) FLAGS_fst_error_fatal = saved();
  }
  OpenFstErrorsNotFatal(const OpenFstErrorsNotFatal&) = delete;
  OpenFstErrorsNotFatal& operator=(const OpenFstErrorsNotFatal&) = delete;

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static int& depth() {
    static int d = 0;
    return d;
  }
  static bool& saved() {
    static bool s = true;
    return s;
  }
};

}  // namespace

fst::StdVectorFst make_lg(const fst::StdVectorFst& lexicon, const fst::StdVectorFst& grammar) {
  using fst::StdArc;
  const OpenFstErrorsNotFatal not_fatal;
  fst::StdVectorFst composed;
  fst::Compose(lexicon, grammar, &composed);
  check_fst(composed, "composing L and G");
  // L∘G is functional thanks to the disambiguation symbols and has no input ε, so it determinises as it is.
  // OpenFst's default delta (1/1024) merges subsets whose residual costs differ by less than it, which moves LM
  // costs by up to that much; a tighter delta keeps them within float rounding.
  fst::DeterminizeOptions<StdArc> options;
  options.delta = kDeterminizeDelta;
  fst::StdVectorFst lg;
  fst::Determinize(composed, &lg, options);
  check_fst(lg, "determinising L∘G");
  // Minimising the (input, output, weight) triples as one acceptor label merges equivalent states without
  // pushing weights or labels, which keeps LM costs on the arcs where G put them.
  fst::EncodeMapper<StdArc> encoder(fst::kEncodeLabels | fst::kEncodeWeights, fst::ENCODE);
  fst::Encode(&lg, &encoder);
  fst::Minimize(&lg);
  fst::Decode(&lg, encoder);
  check_fst(lg, "minimising LG");
  fst::ArcSort(&lg, fst::ILabelCompare<StdArc>());
  return lg;
}

fst::StdVectorFst make_tlg(const fst::StdVectorFst& topology, const fst::StdVectorFst& lg, std::int32_t num_columns) {
  using fst::StdArc;
  const OpenFstErrorsNotFatal not_fatal;
  fst::StdVectorFst tlg;
  fst::Compose(topology, lg, &tlg);
  check_fst(tlg, "composing T and LG");
  fst::ArcSort(&tlg, fst::ILabelCompare<StdArc>());
  // T turns every disambiguation symbol into ε, so only ε and emitting labels may remain.
  for (fst::StateIterator<fst::StdVectorFst> state(tlg); !state.Done(); state.Next()) {
    for (fst::ArcIterator<fst::StdVectorFst> arc(tlg, state.Value()); !arc.Done(); arc.Next()) {
      const auto label = arc.Value().ilabel;
      if (label < 0 || label > num_columns) {
        throw Error(concat("internal error: TLG has input label ", label, " outside [0, ", num_columns, "]"));
      }
    }
  }
  return tlg;
}

CtcGraph make_ctc_graph(const TokenLabels& tokens, const Lexicon& lexicon, const std::string& arpa_path,
                        const CtcGraphOptions& options) {
  options.validate();
  ASRDEC_CHECK_ARG(!lexicon.entries.empty(), lexicon.source, ": the lexicon is empty");
  CtcGraph graph;
  graph.words = make_word_table(lexicon);
  const LexiconFst lexicon_fst = make_lexicon_fst(lexicon, tokens, graph.words);
  const GrammarFst grammar = read_grammar_fst(arpa_path, graph.words, options.clamp_positive_probabilities);
  ASRDEC_CHECK_ARG(grammar.has_unk || grammar.lexicon_words_not_in_arpa < graph.words.num_lexicon_words(),
                   "no word of ", lexicon.source, " is in ", arpa_path,
                   " and the ARPA has no <unk>: the graph could recognise no word");
  const fst::StdVectorFst lg = make_lg(lexicon_fst.fst, grammar.fst);
  if (lg.Start() == fst::kNoStateId) {
    throw InvalidArgument(concat("the graph accepts no sentence: ", arpa_path, " gives no path from <s> to </s>"));
  }
  const fst::StdVectorFst topology =
      make_ctc_topology(tokens, options.topology, options.self_loops, lexicon_fst.max_disambig);
  graph.tlg = make_tlg(topology, lg, tokens.num_columns);

  CtcGraphSummary& summary = graph.summary;
  summary.tlg_states = graph.tlg.NumStates();
  summary.tlg_arcs = count_arcs(graph.tlg);
  summary.lg_states = lg.NumStates();
  summary.lg_arcs = count_arcs(lg);
  summary.g_states = grammar.fst.NumStates();
  summary.g_arcs = count_arcs(grammar.fst);
  summary.num_columns = tokens.num_columns;
  summary.blank_id = tokens.blank_id;
  summary.words = graph.words.num_lexicon_words();
  summary.pronunciations = lexicon_fst.pronunciations;
  summary.disambiguation_symbols = lexicon_fst.max_disambig;
  summary.arpa_words_not_in_lexicon = grammar.arpa_words_not_in_lexicon;
  summary.lexicon_words_not_in_arpa = grammar.lexicon_words_not_in_arpa;
  summary.arpa_has_unk = grammar.has_unk;
  return graph;
}

}  // namespace detail

std::string CtcGraphSummary::to_string() const {
  std::ostringstream out;
  out << "TLG: " << tlg_states << " states, " << tlg_arcs << " arcs (LG: " << lg_states << " states, " << lg_arcs
      << " arcs; G: " << g_states << " states, " << g_arcs << " arcs)\n"
      << "tokens: " << num_columns << " columns, blank " << blank_id << " (input label " << blank_id + 1 << ")\n"
      << "lexicon: " << words << " words, " << pronunciations << " pronunciations, disambiguation symbols #0..#"
      << disambiguation_symbols << "\n"
      << "ARPA words not in the lexicon (left out): " << arpa_words_not_in_lexicon
      << "; lexicon words not in the ARPA: " << lexicon_words_not_in_arpa
      << (lexicon_words_not_in_arpa == 0 ? ""
          : arpa_has_unk                 ? " (scored as <unk>)"
                                         : " (unreachable: the ARPA has no <unk>)")
      << "\n"
      << "built in " << seconds << " s";
  return out.str();
}

CtcGraphSummary build_ctc_graph(const std::string& tokens_path, const Lexicon& lexicon, const std::string& arpa_path,
                                const CtcGraphOptions& options, const std::string& graph_path,
                                const std::string& words_path) {
  const detail::OpenFstErrorsNotFatal not_fatal;  // Write() reports through FSTERROR too
  const auto started = std::chrono::steady_clock::now();
  options.validate();
  const detail::CtcGraph graph =
      detail::make_ctc_graph(detail::read_token_labels(tokens_path, options.blank_id), lexicon, arpa_path, options);
  if (!graph.tlg.Write(graph_path)) throw FileError(graph_path, detail::concat(graph_path, ": cannot write the graph"));
  graph.words.write(words_path);
  CtcGraphSummary summary = graph.summary;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return summary;
}

}  // namespace asrdec
