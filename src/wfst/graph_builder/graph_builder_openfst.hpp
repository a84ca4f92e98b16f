#pragma once
// Internal: the pieces of a CTC decoding graph as OpenFst machines (T, L, G, LG, TLG), so that tests and the
// decoder's tests can build small graphs in memory. The label conventions are those of
// include/asrdec/wfst/graph_builder.hpp.

#include <fst/fstlib.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "asrdec/wfst/graph_builder.hpp"

namespace asrdec::detail {

struct ArpaModel;  // lm/arpa_reader.hpp

/** Token labels of T's output and L's input: a non-blank column c is label c + 1 (as on TLG's input), and the
 *  disambiguation symbol #n is label num_columns + 1 + n, past every emitting label. */
struct TokenLabels {
  std::int32_t num_columns = 0;  ///< V + 1, blank included
  std::int32_t blank_id = 0;
  std::unordered_map<std::string, std::int32_t> label_of_piece;  ///< non-blank pieces only

  std::int32_t blank_label() const { return blank_id + 1; }
  std::int32_t disambig_label(std::int32_t n) const { return num_columns + 1 + n; }
};

/** Reads tokens.txt and places the blank (CtcGraphOptions::blank_id semantics). */
TokenLabels read_token_labels(const std::string& tokens_path, std::int32_t blank_id);
/** The same from pieces in memory (index = column unless the blank is inserted at blank_id == size). */
TokenLabels make_token_labels(const std::vector<std::string>& pieces, std::int32_t blank_id, const std::string& source);

/** T: the CTC topology over columns [0, num_columns) with the blank at blank_id, and ε:#n loops (n = 0 ..
 *  max_disambig; none when it is −1) on every state. Input labels are columns + 1; output labels are
 *  TokenLabels labels. Sorted on output labels. */
fst::StdVectorFst make_ctc_topology(const TokenLabels& tokens, CtcTopology topology, bool self_loops,
                                    std::int32_t max_disambig);

/** The words table: `<eps>` 0, words in byte order, then #0, <s>, </s>. */
struct WordTable {
  std::vector<std::string> words;  ///< by id
  std::unordered_map<std::string, std::int32_t> id_of;
  std::int32_t disambig0 = 0;  ///< id of #0
  std::int32_t bos = 0;
  std::int32_t eos = 0;

  std::int32_t num_lexicon_words() const { return disambig0 - 1; }
  /** Writes `word id` lines (OpenFst text symbol-table format). */
  void write(const std::string& path) const;
};

WordTable make_word_table(const Lexicon& lexicon);

/** L with disambiguation symbols: the word on the first token arc, #1..#K appended to pronunciations that are
 *  homophones or prefixes of others, and a #0:#0 self-loop on the loop state. Sorted on output labels. */
struct LexiconFst {
  fst::StdVectorFst fst;
  std::int32_t max_disambig = 0;  ///< K
  std::int64_t pronunciations = 0;
};

/** Throws InvalidArgument naming the lexicon and line for an empty lexicon or a piece not in `tokens`. */
LexiconFst make_lexicon_fst(const Lexicon& lexicon, const TokenLabels& tokens, const WordTable& words);

/** G from an ARPA model over `words`: one state per LM context, back-off arcs #0:ε, </s> as final weights,
 *  the <s> context as the start state. Sorted on input labels. */
struct GrammarFst {
  fst::StdVectorFst fst;
  std::int64_t arpa_words_not_in_lexicon = 0;
  std::int64_t lexicon_words_not_in_arpa = 0;
  bool has_unk = false;
};

GrammarFst make_grammar_fst(const ArpaModel& arpa, const WordTable& words);
/** The same from an ARPA file (plain or gzip); throws ParseError for a malformed file. */
GrammarFst read_grammar_fst(const std::string& arpa_path, const WordTable& words,
                            bool clamp_positive_probabilities = false);

/** LG = minimise_encoded(determinise(L ∘ G)), sorted on input labels. Disambiguation symbols remain. */
fst::StdVectorFst make_lg(const fst::StdVectorFst& lexicon, const fst::StdVectorFst& grammar);

/** TLG = T ∘ LG, sorted on input labels. Throws Error when an input label outside [0, num_columns] remains. */
fst::StdVectorFst make_tlg(const fst::StdVectorFst& topology, const fst::StdVectorFst& lg, std::int32_t num_columns);

/** A whole build in memory: what build_ctc_graph() writes, for tests that need a real TLG. */
struct CtcGraph {
  fst::StdVectorFst tlg;
  WordTable words;
  CtcGraphSummary summary;
};

CtcGraph make_ctc_graph(const TokenLabels& tokens, const Lexicon& lexicon, const std::string& arpa_path,
                        const CtcGraphOptions& options);

std::int64_t count_arcs(const fst::StdVectorFst& fst);

}  // namespace asrdec::detail
