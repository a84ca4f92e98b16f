#pragma once
/**
 * @file
 * Building CTC decoding graphs TLG = T ∘ det(L ∘ G) from a token table, a lexicon and a word-level ARPA LM,
 * with OpenFst (docs/wfst.md, "Building graphs").
 *
 * Label conventions (the WFST decoder relies on them):
 * - TLG input label = model output column + 1; 0 is ε. The blank is an ordinary emitting label (its column + 1);
 *   every other input label is a non-blank token. No disambiguation symbol survives in TLG.
 * - TLG output label = word id in the words table written beside the graph (OpenFst text symbol-table format):
 *   `<eps>` 0, the lexicon's words in byte order from 1, then `#0`, `<s>` and `</s>`.
 * - Weights are tropical costs in natural-log units: −ln(10) × the ARPA's log10 probabilities. `</s>` is a
 *   final weight; back-off arcs are ε-input, ε-output arcs in TLG.
 *
 * Words: the vocabulary is the lexicon's. An ARPA word missing from the lexicon cannot be spoken, so every
 * n-gram that contains it is left out of G. A lexicon word missing from the ARPA takes the `<unk>` unigram
 * probability when the ARPA lists `<unk>` (reached through back-off, like any unigram); otherwise it cannot be
 * recognised. Both counts are reported in CtcGraphSummary.
 *
 * This header does not depend on OpenFst; the graph is written as an OpenFst binary file (StdVectorFst) that
 * fst::StdFst::Read() loads. Thread safety: the functions share no state and may run concurrently.
 */

#include <cstdint>
#include <string>
#include <vector>

#include "asrdec/core/export.hpp"

namespace asrdec {

/** The CTC token topologies of the reference notes (shared/reference/wfst-ctc.md §2.2). */
enum class CtcTopology {
  /** "Correct" CTC: state 0 (after blank) plus one state per non-blank token; a repeated token needs a blank
   *  between its two emissions. All states are final. */
  standard,
  /** State 0 plus one state per token, which returns to 0 through ε; only state 0 is final. A token may be
   *  emitted twice in a row without a blank between. */
  compact,
  /** One state: blank and every token loop on it; a token is emitted on every frame it spans. For models
   *  trained with this topology only. */
  minimal,
};

/** "standard", "compact" or "minimal". */
ASRDEC_API const char* to_string(CtcTopology topology);
/** Inverse of to_string(CtcTopology); throws InvalidArgument naming the accepted values. */
ASRDEC_API CtcTopology parse_ctc_topology(const std::string& name);

/** How T is shaped and where the blank is. */
struct ASRDEC_API CtcGraphOptions {
  CtcTopology topology = CtcTopology::standard;
  /** false drops the token self-loops (standard, compact): each non-blank token then spans exactly one frame. */
  bool self_loops = true;
  /** The model column of the blank; −1 means the last column. When tokens.txt has one line per column the
   *  blank's line is skipped; when it lacks the blank, the blank must be the last column (the default). */
  std::int32_t blank_id = -1;
  /** Read positive ARPA log10 probabilities (toolkit rounding artefacts) as 0 instead of failing. */
  bool clamp_positive_probabilities = false;

  /** Throws InvalidArgument for a blank_id below −1. */
  void validate() const;
  std::string to_string() const;
};

/** One pronunciation: a word and the token pieces (strings of tokens.txt) that spell it. */
struct ASRDEC_API LexiconEntry {
  std::string word;
  std::vector<std::string> pieces;
  /** 1-based line of the lexicon file it came from, for error messages; 0 when built in memory. */
  std::int64_t line = 0;
};

/** Pronunciations in file order; a word may have several. `source` names the file in error messages. */
struct ASRDEC_API Lexicon {
  std::vector<LexiconEntry> entries;
  std::string source = "<lexicon>";
};

/** Reads a lexicon: one pronunciation per line, `word piece piece ...`, fields separated by spaces or tabs.
 *  Blank lines are skipped. Throws Error when the file cannot be opened and ParseError (with the line) for a
 *  line without pieces, a word that is a reserved symbol (`<eps>`, `<s>`, `</s>`, `#0`, `#1`, ...) or an empty
 *  file. */
ASRDEC_API Lexicon read_lexicon(const std::string& path);

/** What a build produced. */
struct ASRDEC_API CtcGraphSummary {
  std::int64_t tlg_states = 0;
  std::int64_t tlg_arcs = 0;
  std::int64_t lg_states = 0;
  std::int64_t lg_arcs = 0;
  std::int64_t g_states = 0;
  std::int64_t g_arcs = 0;
  std::int32_t num_columns = 0;                ///< model output columns including the blank (V + 1)
  std::int32_t blank_id = 0;                   ///< the blank's column
  std::int64_t words = 0;                      ///< lexicon words (the words table adds <eps>, #0, <s>, </s>)
  std::int64_t pronunciations = 0;             ///< distinct (word, pieces) pairs
  std::int32_t disambiguation_symbols = 0;     ///< K: #1..#K were needed (plus #0 for back-off)
  std::int64_t arpa_words_not_in_lexicon = 0;  ///< their n-grams were left out of G
  std::int64_t lexicon_words_not_in_arpa = 0;  ///< scored as <unk> when the ARPA has it, else unreachable
  bool arpa_has_unk = false;
  double seconds = 0;  ///< wall time of the build, files included

  std::string to_string() const;
};

/**
 * Builds TLG for a CTC model and writes it (OpenFst binary, StdVectorFst) to `graph_path`, and the words table
 * to `words_path`.
 *
 * `tokens_path` is tokens.txt (asrdec::Vocabulary's format: one piece per line, line number = model column).
 * Lexicon pieces must be pieces of that table (the blank's excluded). `arpa_path` is a word-level ARPA file,
 * plain or gzip-compressed.
 *
 * Throws InvalidArgument for bad options, an empty lexicon, a piece that is not in tokens.txt (naming the
 * lexicon file and line) or a blank id that does not fit the token table; ParseError for malformed files;
 * Error when a file cannot be read or written.
 */
ASRDEC_API CtcGraphSummary build_ctc_graph(const std::string& tokens_path, const Lexicon& lexicon,
                                           const std::string& arpa_path, const CtcGraphOptions& options,
                                           const std::string& graph_path, const std::string& words_path);

}  // namespace asrdec
