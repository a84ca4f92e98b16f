// T: the CTC token transducers (shared/reference/wfst-ctc.md §2.2) and the token labels they share with L.

#include <sstream>

#include "asrdec/core/error.hpp"
#include "asrdec/text/vocabulary.hpp"
#include "wfst/graph_builder/graph_builder_openfst.hpp"

namespace asrdec {

const char* to_string(CtcTopology topology) {
  switch (topology) {
    case CtcTopology::standard:
      return "standard";
    case CtcTopology::compact:
      return "compact";
    case CtcTopology::minimal:
      return "minimal";
  }
  return "unknown";
}

CtcTopology parse_ctc_topology(const std::string& name) {
  for (CtcTopology topology : {CtcTopology::standard, CtcTopology::compact, CtcTopology::minimal}) {
    if (name == to_string(topology)) return topology;
  }
  throw InvalidArgument(detail::concat("unknown CTC topology '", name, "' (expected standard, compact or minimal)"));
}

void CtcGraphOptions::validate() const {
  ASRDEC_CHECK_ARG(blank_id >= -1, "CtcGraphOptions.blank_id must be a column (>= 0) or -1 for the last column, got ",
                   blank_id);
}

std::string CtcGraphOptions::to_string() const {
  std::ostringstream out;
  out << "CtcGraphOptions{topology=" << asrdec::to_string(topology)
      << ", self_loops=" << (self_loops ? "true" : "false") << ", blank_id=" << blank_id
      << ", clamp_positive_probabilities=" << (clamp_positive_probabilities ? "true" : "false") << "}";
  return out.str();
}

namespace detail {

TokenLabels make_token_labels(const std::vector<std::string>& pieces, std::int32_t blank_id,
                              const std::string& source) {
  ASRDEC_CHECK_ARG(!pieces.empty(), source, ": the token table is empty");
  const auto size = static_cast<std::int32_t>(pieces.size());
  TokenLabels tokens;
  if (blank_id < 0 || blank_id == size) {
    // The table lists the non-blank tokens only and the blank is the column after them.
    tokens.blank_id = size;
    tokens.num_columns = size + 1;
  } else {
    ASRDEC_CHECK_ARG(blank_id < size, source, " has ", size, " tokens: blank id ", blank_id,
                     " is neither one of its lines nor the column after them (", size, ")");
    tokens.blank_id = blank_id;
    tokens.num_columns = size;
  }
  for (std::int32_t column = 0; column < size; ++column) {
    if (column == tokens.blank_id) continue;
    const auto [it, inserted] = tokens.label_of_piece.emplace(pieces[column], column + 1);
    if (!inserted) {  // the table's content, not the caller's arguments, is wrong
      throw ParseError(source, 0,
                       detail::concat("token '", pieces[column], "' is listed twice (columns ", it->second - 1, " and ",
                                      column, ")"));
    }
  }
  return tokens;
}

TokenLabels read_token_labels(const std::string& tokens_path, std::int32_t blank_id) {
  const Vocabulary vocabulary = Vocabulary::load(tokens_path);
  std::vector<std::string> pieces;
  pieces.reserve(vocabulary.size());
  for (std::size_t i = 0; i < vocabulary.size(); ++i) pieces.push_back(vocabulary.token(static_cast<std::int32_t>(i)));
  return make_token_labels(pieces, blank_id, tokens_path);
}

fst::StdVectorFst make_ctc_topology(const TokenLabels& tokens, CtcTopology topology, bool self_loops,
                                    std::int32_t max_disambig) {
  using fst::StdArc;
  const StdArc::Weight one = StdArc::Weight::One();
  const std::int32_t blank = tokens.blank_label();
  std::vector<std::int32_t> labels;  // non-blank token labels in column order
  for (std::int32_t column = 0; column < tokens.num_columns; ++column) {
    if (column != tokens.blank_id) labels.push_back(column + 1);
  }

  fst::StdVectorFst t;
  const auto start = t.AddState();
  t.SetStart(start);
  t.SetFinal(start, one);
  t.AddArc(start, StdArc(blank, 0, one, start));
  if (topology == CtcTopology::minimal) {
    for (std::int32_t label : labels) t.AddArc(start, StdArc(label, label, one, start));
  } else {
    // state_of[i]: the state entered by emitting token labels[i].
    std::vector<StdArc::StateId> state_of(labels.size());
    for (std::size_t i = 0; i < labels.size(); ++i) {
      state_of[i] = t.AddState();
      t.AddArc(start, StdArc(labels[i], labels[i], one, state_of[i]));
    }
    for (std::size_t i = 0; i < labels.size(); ++i) {
      const auto state = state_of[i];
      if (self_loops) t.AddArc(state, StdArc(labels[i], 0, one, state));
      if (topology == CtcTopology::standard) {
        t.SetFinal(state, one);
        t.AddArc(state, StdArc(blank, 0, one, start));
        // A different token follows directly; the same token again needs a blank (the self-loop continues it).
        for (std::size_t j = 0; j < labels.size(); ++j) {
          if (j != i) t.AddArc(state, StdArc(labels[j], labels[j], one, state_of[j]));
        }
      } else {
        t.AddArc(state, StdArc(0, 0, one, start));
      }
    }
  }
  // Disambiguation loops on every state, not only on the start state: a back-off (#0) or homophone symbol of LG
  // must be passable whatever the last token was, or G's back-off would be blocked before the first word.
  for (StdArc::StateId state = 0; state < t.NumStates(); ++state) {
    for (std::int32_t n = 0; n <= max_disambig; ++n) {
      t.AddArc(state, StdArc(0, tokens.disambig_label(n), one, state));
    }
  }
  fst::ArcSort(&t, fst::OLabelCompare<StdArc>());
  return t;
}

std::int64_t count_arcs(const fst::StdVectorFst& fst) {
  std::int64_t arcs = 0;
  for (fst::StateIterator<fst::StdVectorFst> it(fst); !it.Done(); it.Next()) arcs += fst.NumArcs(it.Value());
  return arcs;
}

}  // namespace detail
}  // namespace asrdec
