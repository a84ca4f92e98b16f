// CTC graph building: T's structure and its language (the CTC alignments of each token sequence), a tiny
// lexicon + ARPA whose TLG scores sentences as computed by hand, G against an ARPA oracle, the label conventions,
// and bad inputs.

#include "asrdec/wfst/graph_builder.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lm/arpa_oracle.hpp"
#include "src/lm/arpa_reader.hpp"
#include "src/wfst/graph_builder/graph_builder_openfst.hpp"
#include "support/test_support.hpp"

namespace asrdec {
namespace {

using fst::StdArc;
using fst::StdVectorFst;
using Labels = std::vector<std::int32_t>;

constexpr double kLn10 = 2.302585092994045684;

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// An acceptor of one frame sequence (labels = columns + 1), every arc of weight 0.
StdVectorFst linear_acceptor(const Labels& labels) {
  StdVectorFst a;
  auto state = a.AddState();
  a.SetStart(state);
  for (std::int32_t label : labels) {
    const auto next = a.AddState();
    a.AddArc(state, StdArc(label, label, StdArc::Weight::One(), next));
    state = next;
  }
  a.SetFinal(state, StdArc::Weight::One());
  return a;
}

// Every output string of an acyclic FST (ε dropped).
void collect_outputs(const StdVectorFst& f, StdArc::StateId state, Labels& prefix, std::set<Labels>& out) {
  if (f.Final(state) != StdArc::Weight::Zero()) out.insert(prefix);
  for (fst::ArcIterator<StdVectorFst> it(f, state); !it.Done(); it.Next()) {
    const StdArc& arc = it.Value();
    if (arc.olabel != 0) prefix.push_back(arc.olabel);
    collect_outputs(f, arc.nextstate, prefix, out);
    if (arc.olabel != 0) prefix.pop_back();
  }
}

std::set<Labels> outputs_of(const StdVectorFst& t, const Labels& frames) {
  StdVectorFst composed;
  fst::Compose(linear_acceptor(frames), t, &composed);
  std::set<Labels> out;
  Labels prefix;
  if (composed.Start() != fst::kNoStateId) collect_outputs(composed, composed.Start(), prefix, out);
  return out;
}

// What each topology makes of a frame alignment, from its definition (blank = `blank`).
std::set<Labels> expected_outputs(const Labels& frames, CtcTopology topology, bool self_loops, std::int32_t blank) {
  Labels non_blank;
  for (std::int32_t label : frames) {
    if (label != blank) non_blank.push_back(label);
  }
  if (topology == CtcTopology::minimal || (topology == CtcTopology::compact && !self_loops)) return {non_blank};
  if (topology == CtcTopology::standard) {
    Labels collapsed;
    for (std::size_t t = 0; t < frames.size(); ++t) {
      if (t > 0 && frames[t] == frames[t - 1] && frames[t] != blank) {
        if (!self_loops) return {};  // a token spans one frame, and the same token again needs a blank
        continue;
      }
      if (frames[t] != blank) collapsed.push_back(frames[t]);
    }
    return {collapsed};
  }
  // compact with self-loops: a run of r frames of one token may be emitted 1 to r times.
  std::set<Labels> out{{}};
  std::size_t t = 0;
  while (t < frames.size()) {
    std::size_t end = t;
    while (end < frames.size() && frames[end] == frames[t]) ++end;
    if (frames[t] != blank) {
      std::set<Labels> next;
      for (const Labels& prefix : out) {
        for (std::size_t copies = 1; copies <= end - t; ++copies) {
          Labels extended = prefix;
          extended.insert(extended.end(), copies, frames[t]);
          next.insert(extended);
        }
      }
      out = std::move(next);
    }
    t = end;
  }
  return out;
}

detail::TokenLabels three_tokens() { return detail::make_token_labels({"a", "b", "c"}, -1, "<tokens>"); }

struct TopologyCase {
  CtcTopology topology;
  bool self_loops;
};

const TopologyCase kTopologies[] = {{CtcTopology::standard, true},
                                    {CtcTopology::standard, false},
                                    {CtcTopology::compact, true},
                                    {CtcTopology::compact, false},
                                    {CtcTopology::minimal, true}};

std::string name_of(const TopologyCase& c) {
  return std::string(to_string(c.topology)) + (c.self_loops ? "" : " without self-loops");
}

TEST(WfstGraphBuilder, TopologyNamesRoundTrip) {
  for (CtcTopology topology : {CtcTopology::standard, CtcTopology::compact, CtcTopology::minimal}) {
    EXPECT_EQ(parse_ctc_topology(to_string(topology)), topology);
  }
  ASRDEC_EXPECT_THROW_MSG(parse_ctc_topology("ctc"), InvalidArgument,
                          "unknown CTC topology 'ctc' (expected standard, compact or minimal)");
}

TEST(WfstGraphBuilder, TopologyStateAndArcCounts) {
  const detail::TokenLabels tokens = three_tokens();  // V = 3, blank column 3 (label 4)
  const std::int64_t v = 3;
  const std::int32_t max_disambig = 2;  // #0, #1, #2: three loops per state
  struct Expected {
    TopologyCase c;
    std::int64_t states, arcs, finals;
  };
  const std::int64_t loops = max_disambig + 1;
  const Expected cases[] = {
      {{CtcTopology::standard, true}, v + 1, (v + 1) * (v + 1) + loops * (v + 1), v + 1},
      {{CtcTopology::standard, false}, v + 1, (v + 1) * (v + 1) - v + loops * (v + 1), v + 1},
      {{CtcTopology::compact, true}, v + 1, 3 * v + 1 + loops * (v + 1), 1},
      {{CtcTopology::compact, false}, v + 1, 2 * v + 1 + loops * (v + 1), 1},
      {{CtcTopology::minimal, true}, 1, v + 1 + loops, 1},
      {{CtcTopology::minimal, false}, 1, v + 1 + loops, 1},
  };
  for (const Expected& e : cases) {
    SCOPED_TRACE(name_of(e.c));
    const StdVectorFst t = detail::make_ctc_topology(tokens, e.c.topology, e.c.self_loops, max_disambig);
    EXPECT_EQ(t.NumStates(), e.states);
    EXPECT_EQ(detail::count_arcs(t), e.arcs);
    EXPECT_EQ(t.Start(), 0);
    std::int64_t finals = 0;
    for (StdArc::StateId s = 0; s < t.NumStates(); ++s) {
      finals += t.Final(s) == StdArc::Weight::One() ? 1 : 0;
      // Every state carries every disambiguation loop ε:#n.
      std::set<std::int32_t> disambig;
      for (fst::ArcIterator<StdVectorFst> it(t, s); !it.Done(); it.Next()) {
        const StdArc& arc = it.Value();
        EXPECT_EQ(arc.weight, StdArc::Weight::One());
        EXPECT_LE(arc.ilabel, tokens.num_columns);
        if (arc.olabel > tokens.num_columns) {
          EXPECT_EQ(arc.ilabel, 0);
          EXPECT_EQ(arc.nextstate, s);
          disambig.insert(arc.olabel);
        }
      }
      EXPECT_EQ(disambig, (std::set<std::int32_t>{5, 6, 7})) << "state " << s;
    }
    EXPECT_EQ(finals, e.finals);
  }
}

TEST(WfstGraphBuilder, TopologyAcceptsExactlyTheCtcAlignments) {
  const detail::TokenLabels tokens = three_tokens();
  const std::int32_t blank = tokens.blank_label();
  // Every alignment of up to 5 frames over {a, b, c, blank}.
  std::vector<Labels> alignments{{}};
  for (std::size_t begin = 0, length = 1; length <= 5; ++length) {
    const std::size_t end = alignments.size();
    for (std::size_t i = begin; i < end; ++i) {
      for (std::int32_t label = 1; label <= 4; ++label) {
        Labels longer = alignments[i];
        longer.push_back(label);
        alignments.push_back(longer);
      }
    }
    begin = end;
  }
  // Plus random longer ones.
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int32_t> label(1, 4);
  for (int i = 0; i < 200; ++i) {
    Labels frames(12);
    for (auto& frame : frames) frame = label(rng);
    alignments.push_back(frames);
  }
  for (const TopologyCase& c : kTopologies) {
    SCOPED_TRACE(name_of(c));
    const StdVectorFst t = detail::make_ctc_topology(tokens, c.topology, c.self_loops, -1);
    for (const Labels& frames : alignments) {
      ASSERT_EQ(outputs_of(t, frames), expected_outputs(frames, c.topology, c.self_loops, blank))
          << "alignment of " << frames.size() << " frames, first " << (frames.empty() ? 0 : frames[0]);
    }
  }
}

TEST(WfstGraphBuilder, TokenTablePlacesTheBlank) {
  const detail::TokenLabels last = detail::make_token_labels({"a", "b"}, -1, "t.txt");
  EXPECT_EQ(last.num_columns, 3);
  EXPECT_EQ(last.blank_label(), 3);
  EXPECT_EQ(last.label_of_piece.at("a"), 1);
  EXPECT_EQ(last.disambig_label(0), 4);
  const detail::TokenLabels first = detail::make_token_labels({"<blk>", "a", "b"}, 0, "t.txt");
  EXPECT_EQ(first.num_columns, 3);
  EXPECT_EQ(first.blank_label(), 1);
  EXPECT_EQ(first.label_of_piece.count("<blk>"), 0u);
  EXPECT_EQ(first.label_of_piece.at("b"), 3);
  ASRDEC_EXPECT_THROW_MSG(detail::make_token_labels({"a", "b"}, 5, "t.txt"), InvalidArgument,
                          "t.txt has 2 tokens: blank id 5 is neither one of its lines nor the column after them (2)");
  ASRDEC_EXPECT_THROW_MSG(detail::make_token_labels({"a", "b", "a"}, -1, "t.txt"), ParseError,
                          "t.txt: token 'a' is listed twice (columns 0 and 2)");
}

// The tiny LM: a bigram with back-off. "dog" is not in the lexicon; the lexicon's "kat" is not in the ARPA.
const char* const kTinyArpa = R"(\data\
ngram 1=8
ngram 2=5

\1-grams:
-1.0	</s>
-99	<s>	-0.5
-0.7	the	-0.3
-1.2	cat	-0.2
-1.5	cats	-0.1
-1.1	sat	-0.4
-1.3	dog	-0.2
-2.0	<unk>

\2-grams:
-0.2	<s> the
-0.3	the cat
-0.35	the dog
-0.4	cat sat
-0.25	sat </s>

\end\
)";

// "cat" and "kat" sound alike and "cat" is a prefix of "cats": #1 and #2 are needed. The repeated line adds
// nothing.
const char* const kTinyLexicon =
    "the ▁the\n"
    "cat ▁cat\n"
    "kat ▁cat\n"
    "cats ▁cat s\n"
    "sat ▁sat\n"
    "\n"
    "the ▁the\n";

class WfstGraphBuilderTiny : public ::testing::Test {
 protected:
  void SetUp() override {
    arpa_ = testing::temp_path("tiny.arpa");
    lexicon_path_ = testing::temp_path("tiny_lexicon.txt");
    tokens_path_ = testing::temp_path("tiny_tokens.txt");
    write_file(arpa_, kTinyArpa);
    write_file(lexicon_path_, kTinyLexicon);
    write_file(tokens_path_, "▁the\n▁cat\ns\n▁sat\n");
  }

  // Columns: ▁the 0, ▁cat 1, s 2, ▁sat 3, blank 4 (labels are columns + 1).
  static Labels frames(std::initializer_list<std::int32_t> columns) {
    Labels labels;
    for (std::int32_t c : columns) labels.push_back(c + 1);
    return labels;
  }

  std::string arpa_, lexicon_path_, tokens_path_;
};

struct BestPath {
  std::vector<std::string> words;
  double cost = 0;
  bool found = false;
};

BestPath best_path(const StdVectorFst& tlg, const detail::WordTable& words, const Labels& frames) {
  StdVectorFst composed, path;
  fst::Compose(linear_acceptor(frames), tlg, &composed);
  fst::ShortestPath(composed, &path);
  BestPath best;
  if (path.Start() == fst::kNoStateId) return best;
  best.found = true;
  auto state = path.Start();
  for (;;) {
    fst::ArcIterator<StdVectorFst> it(path, state);
    if (it.Done()) break;
    const StdArc& arc = it.Value();
    best.cost += arc.weight.Value();
    if (arc.olabel != 0) best.words.push_back(words.words.at(arc.olabel));
    state = arc.nextstate;
  }
  best.cost += path.Final(state).Value();
  return best;
}

TEST_F(WfstGraphBuilderTiny, WordsTableAndLexiconDisambiguation) {
  const Lexicon lexicon = read_lexicon(lexicon_path_);
  ASSERT_EQ(lexicon.entries.size(), 6u);
  EXPECT_EQ(lexicon.entries[5].line, 7);
  const detail::WordTable words = detail::make_word_table(lexicon);
  EXPECT_EQ(words.words, (std::vector<std::string>{"<eps>", "cat", "cats", "kat", "sat", "the", "#0", "<s>", "</s>"}));
  EXPECT_EQ(words.disambig0, 6);
  EXPECT_EQ(words.num_lexicon_words(), 5);
  const detail::TokenLabels tokens = detail::read_token_labels(tokens_path_, -1);
  const detail::LexiconFst l = detail::make_lexicon_fst(lexicon, tokens, words);
  EXPECT_EQ(l.max_disambig, 2);
  EXPECT_EQ(l.pronunciations, 5);

  const std::string written = testing::temp_path("tiny_words.txt");
  words.write(written);
  std::ifstream in(written);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "<eps> 0\ncat 1\ncats 2\nkat 3\nsat 4\nthe 5\n#0 6\n<s> 7\n</s> 8\n");
}

// The cost G gives a word sequence (with </s>): the shortest path, back-off symbols allowed anywhere.
double grammar_cost(const StdVectorFst& g, const detail::WordTable& words, const Labels& sentence) {
  StdVectorFst acceptor = linear_acceptor(sentence);
  for (StdArc::StateId s = 0; s < acceptor.NumStates(); ++s) {
    acceptor.AddArc(s, StdArc(words.disambig0, words.disambig0, StdArc::Weight::One(), s));
  }
  fst::ArcSort(&acceptor, fst::OLabelCompare<StdArc>());
  StdVectorFst composed;
  fst::Compose(acceptor, g, &composed);
  return static_cast<double>(fst::ShortestDistance(composed).Value());
}

TEST_F(WfstGraphBuilderTiny, GrammarScoresSentencesWithBackOff) {
  const detail::WordTable words = detail::make_word_table(read_lexicon(lexicon_path_));
  const detail::GrammarFst g = detail::read_grammar_fst(arpa_, words);
  EXPECT_EQ(g.arpa_words_not_in_lexicon, 1);  // dog
  EXPECT_EQ(g.lexicon_words_not_in_arpa, 1);  // kat
  EXPECT_TRUE(g.has_unk);
  // G's input side has the words and #0; shortest paths through the back-off arcs give the ARPA scores.
  const auto sentence_cost = [&](const Labels& sentence) { return grammar_cost(g.fst, words, sentence); };
  const auto id = [&](const char* word) { return words.id_of.at(word); };
  // the|<s> -0.2, cat|the -0.3, sat|cat -0.4, </s>|sat -0.25
  EXPECT_NEAR(sentence_cost({id("the"), id("cat"), id("sat")}), kLn10 * 1.15, 1e-4);
  // the|<s> -0.2, cats: bo(the) -0.3 + -1.5, sat: bo(cats) -0.1 + -1.1, </s>|sat -0.25
  EXPECT_NEAR(sentence_cost({id("the"), id("cats"), id("sat")}), kLn10 * 3.45, 1e-4);
  // kat scores as <unk> after backing off from <s>, then the empty context's </s>: 0.5 + 2.0 + 1.0
  EXPECT_NEAR(sentence_cost({id("kat")}), kLn10 * 3.5, 1e-4);
}

// On a real word 3-gram, G's cost of a sentence is the ARPA's (KenLM's rule, written independently in the
// oracle) wherever the explicit n-gram is cheaper than backing off, and never more: the tropical semiring takes
// the cheaper of the two paths.
TEST(WfstGraphBuilder, GrammarMatchesTheArpaScoresOfAWord3gram) {
  const std::string arpa_path = testing::source_path("tests/data/arpa/kjv_words_3gram.arpa.gz");
  const detail::ArpaModel arpa = detail::read_arpa(arpa_path);
  Lexicon lexicon;
  for (const std::string& symbol : arpa.symbols) {
    if (symbol != "<s>" && symbol != "</s>" && symbol != "<unk>") lexicon.entries.push_back({symbol, {"x"}, 0});
  }
  const detail::WordTable words = detail::make_word_table(lexicon);
  const detail::GrammarFst g = detail::make_grammar_fst(arpa, words);
  EXPECT_EQ(g.arpa_words_not_in_lexicon, 0);
  EXPECT_EQ(g.lexicon_words_not_in_arpa, 0);
  const testing::ArpaOracle oracle(arpa_path);

  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937_64 rng(seed);
  // Sentences glued from listed trigrams hit every order; the joints back off.
  const detail::ArpaOrder& trigrams = arpa.orders[2];
  std::uniform_int_distribution<std::size_t> pick(0, trigrams.prob.size() - 1);
  std::uniform_int_distribution<int> pieces(1, 3);
  int exact = 0;
  const int sentences = 300;
  for (int i = 0; i < sentences; ++i) {
    std::vector<std::string> sentence;
    for (int n = pieces(rng); n > 0; --n) {
      const std::size_t t = pick(rng);
      for (int w = 0; w < 3; ++w) {
        const std::string& word = arpa.symbols[trigrams.words[t * 3 + w]];
        if (word != "<s>" && word != "</s>") sentence.push_back(word);
      }
    }
    Labels labels;
    std::vector<std::string> history{"<s>"};
    double log10_total = 0;
    for (const std::string& word : sentence) {
      labels.push_back(words.id_of.at(word));
      log10_total += oracle.score_log10(history, word);
      history.push_back(word);
    }
    log10_total += oracle.score_log10(history, "</s>");
    const double expected = -testing::ArpaOracle::ln(log10_total);
    const double cost = grammar_cost(g.fst, words, labels);
    EXPECT_LE(cost, expected + 1e-3 * std::max(1.0, expected)) << "sentence " << i;
    exact += std::abs(cost - expected) <= 1e-4 * std::max(1.0, expected) ? 1 : 0;
  }
  // Backing off is rarely cheaper than a listed n-gram in a Kneser-Ney model.
  EXPECT_GE(exact, sentences * 9 / 10) << exact << " of " << sentences << " sentences scored exactly";
}

TEST_F(WfstGraphBuilderTiny, TlgShortestPathGivesWordsAndLmCost) {
  const Lexicon lexicon = read_lexicon(lexicon_path_);
  const detail::TokenLabels tokens = detail::read_token_labels(tokens_path_, -1);
  constexpr std::int32_t kBlank = 4;
  struct Case {
    Labels frames;
    std::vector<std::string> words;
    double log10_lm;
  };
  const Case common[] = {
      {frames({0, kBlank, 1, kBlank, 3, kBlank}), {"the", "cat", "sat"}, -1.15},
      {frames({0, 0, 1, 2, 3, 3}), {"the", "cats", "sat"}, -3.45},
      {frames({kBlank, 0, 1, 2, kBlank, 3}), {"the", "cats", "sat"}, -3.45},
      {frames({kBlank, kBlank}), {}, -1.5},  // the empty sentence: bo(<s>) + </s>
  };
  for (const TopologyCase& c : kTopologies) {
    SCOPED_TRACE(name_of(c));
    CtcGraphOptions options;
    options.topology = c.topology;
    options.self_loops = c.self_loops;
    const detail::CtcGraph graph = detail::make_ctc_graph(tokens, lexicon, arpa_, options);
    for (const Case& test : common) {
      // Repeated frames mean one longer token under standard and compact with self-loops only.
      bool has_repeat = false;
      for (std::size_t t = 1; t < test.frames.size(); ++t) {
        has_repeat = has_repeat || (test.frames[t] == test.frames[t - 1] && test.frames[t] != kBlank + 1);
      }
      const bool repeats_once = c.topology != CtcTopology::minimal && c.self_loops;
      if (has_repeat && !repeats_once) continue;
      const BestPath best = best_path(graph.tlg, graph.words, test.frames);
      ASSERT_TRUE(best.found);
      EXPECT_EQ(best.words, test.words);
      EXPECT_NEAR(best.cost, -kLn10 * test.log10_lm, 1e-4);
    }
    // "▁the ▁the": one "the" where a repeat continues the token, two where every frame emits.
    const BestPath twice = best_path(graph.tlg, graph.words, frames({0, 0}));
    if (c.topology == CtcTopology::standard && !c.self_loops) {
      EXPECT_FALSE(twice.found);
    } else if (c.topology == CtcTopology::minimal || !c.self_loops) {
      ASSERT_TRUE(twice.found);
      // the|<s> -0.2; the|the: bo(the) -0.3 + -0.7; </s>|the: bo(the) -0.3 + -1.0
      EXPECT_EQ(twice.words, (std::vector<std::string>{"the", "the"}));
      EXPECT_NEAR(twice.cost, kLn10 * 2.5, 1e-4);
    } else {
      // compact may also emit twice, but "the" alone is cheaper: -0.2, then bo(the) -0.3 + </s> -1.0
      ASSERT_TRUE(twice.found);
      EXPECT_EQ(twice.words, (std::vector<std::string>{"the"}));
      EXPECT_NEAR(twice.cost, kLn10 * 1.5, 1e-4);
    }
  }
}

TEST_F(WfstGraphBuilderTiny, TlgHasNoDisambiguationSymbols) {
  const Lexicon lexicon = read_lexicon(lexicon_path_);
  const detail::TokenLabels tokens = detail::read_token_labels(tokens_path_, -1);
  for (const TopologyCase& c : kTopologies) {
    SCOPED_TRACE(name_of(c));
    CtcGraphOptions options;
    options.topology = c.topology;
    options.self_loops = c.self_loops;
    const detail::CtcGraph graph = detail::make_ctc_graph(tokens, lexicon, arpa_, options);
    EXPECT_EQ(graph.summary.disambiguation_symbols, 2);
    std::int64_t epsilon_inputs = 0;
    for (fst::StateIterator<StdVectorFst> s(graph.tlg); !s.Done(); s.Next()) {
      for (fst::ArcIterator<StdVectorFst> it(graph.tlg, s.Value()); !it.Done(); it.Next()) {
        const StdArc& arc = it.Value();
        EXPECT_GE(arc.ilabel, 0);
        EXPECT_LE(arc.ilabel, tokens.num_columns);  // tokens 1..V and the blank V+1
        EXPECT_GE(arc.olabel, 0);
        EXPECT_LT(arc.olabel, graph.words.disambig0);  // words only: no #0, <s> or </s>
        epsilon_inputs += arc.ilabel == 0 ? 1 : 0;
      }
    }
    EXPECT_GT(epsilon_inputs, 0);  // back-off survives as ε:ε arcs
  }
}

TEST_F(WfstGraphBuilderTiny, BlankFirstShiftsTheLabels) {
  const std::string tokens_path = testing::temp_path("tiny_tokens_blank_first.txt");
  write_file(tokens_path, "<blank>\n▁the\n▁cat\ns\n▁sat\n");
  const detail::TokenLabels tokens = detail::read_token_labels(tokens_path, 0);
  EXPECT_EQ(tokens.num_columns, 5);
  const detail::CtcGraph graph = detail::make_ctc_graph(tokens, read_lexicon(lexicon_path_), arpa_, {});
  // Columns: blank 0, ▁the 1, ▁cat 2, s 3, ▁sat 4.
  const BestPath best = best_path(graph.tlg, graph.words, {2, 1, 3, 1, 5, 1});
  ASSERT_TRUE(best.found);
  EXPECT_EQ(best.words, (std::vector<std::string>{"the", "cat", "sat"}));
  EXPECT_NEAR(best.cost, kLn10 * 1.15, 1e-4);
}

TEST_F(WfstGraphBuilderTiny, BuildWritesAReadableGraphAndWordsTable) {
  const std::string graph_path = testing::temp_path("tiny_tlg.fst");
  const std::string words_path = testing::temp_path("tiny_tlg_words.txt");
  CtcGraphOptions options;
  options.topology = CtcTopology::compact;
  const CtcGraphSummary summary =
      build_ctc_graph(tokens_path_, read_lexicon(lexicon_path_), arpa_, options, graph_path, words_path);
  EXPECT_EQ(summary.num_columns, 5);
  EXPECT_EQ(summary.blank_id, 4);
  EXPECT_EQ(summary.words, 5);
  EXPECT_EQ(summary.pronunciations, 5);
  EXPECT_EQ(summary.disambiguation_symbols, 2);
  EXPECT_EQ(summary.arpa_words_not_in_lexicon, 1);
  EXPECT_EQ(summary.lexicon_words_not_in_arpa, 1);
  EXPECT_GT(summary.tlg_arcs, 0);
  EXPECT_NE(summary.to_string().find("lexicon words not in the ARPA: 1 (scored as <unk>)"), std::string::npos)
      << summary.to_string();

  std::unique_ptr<fst::StdFst> read(fst::StdFst::Read(graph_path));
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(fst::CountStates(*read), summary.tlg_states);
  std::unique_ptr<fst::SymbolTable> symbols(fst::SymbolTable::ReadText(words_path));
  ASSERT_NE(symbols, nullptr);
  EXPECT_EQ(symbols->Find("cats"), 2);
  EXPECT_EQ(symbols->Find("</s>"), 8);
}

TEST_F(WfstGraphBuilderTiny, BadInputsAreRejectedWithPreciseMessages) {
  const std::string missing = testing::temp_path("does_not_exist.txt");
  const std::string graph_path = testing::temp_path("bad_tlg.fst");
  const std::string words_path = testing::temp_path("bad_words.txt");
  const Lexicon lexicon = read_lexicon(lexicon_path_);
  const auto build = [&](const std::string& tokens, const Lexicon& lex, const std::string& arpa,
                         const CtcGraphOptions& options = {}) {
    build_ctc_graph(tokens, lex, arpa, options, graph_path, words_path);
  };

  ASRDEC_EXPECT_THROW_MSG(read_lexicon(missing), Error, missing + ": cannot open the lexicon for reading");
  ASRDEC_EXPECT_THROW_MSG(build(missing, lexicon, arpa_), Error, missing + ": cannot open for reading");
  ASRDEC_EXPECT_THROW_MSG(build(tokens_path_, lexicon, missing), Error, missing + ": cannot open for reading");

  const std::string bad_piece = testing::temp_path("bad_piece_lexicon.txt");
  write_file(bad_piece, "the ▁the\ncat ▁ca t\n");
  ASRDEC_EXPECT_THROW_MSG(build(tokens_path_, read_lexicon(bad_piece), arpa_), InvalidArgument,
                          bad_piece + ":2: piece '▁ca' of word 'cat' is not a token of the token table");

  const std::string empty = testing::temp_path("empty_lexicon.txt");
  write_file(empty, "\n\n");
  ASRDEC_EXPECT_THROW_MSG(read_lexicon(empty), ParseError, empty + ":2: the lexicon has no pronunciations");
  ASRDEC_EXPECT_THROW_MSG(build(tokens_path_, Lexicon{}, arpa_), InvalidArgument, "<lexicon>: the lexicon is empty");

  const std::string no_pieces = testing::temp_path("no_pieces_lexicon.txt");
  write_file(no_pieces, "the ▁the\ncat\n");
  ASRDEC_EXPECT_THROW_MSG(read_lexicon(no_pieces), ParseError,
                          no_pieces + ":2: word 'cat' has no pieces (expected 'word piece ...')");

  const std::string reserved = testing::temp_path("reserved_lexicon.txt");
  write_file(reserved, "the ▁the\n#1 ▁cat\n");
  ASRDEC_EXPECT_THROW_MSG(read_lexicon(reserved), ParseError,
                          reserved + ":2: '#1' is a reserved symbol of the words table, not a word");

  const std::string bad_arpa = testing::temp_path("bad.arpa");
  std::string text = kTinyArpa;
  text.replace(text.find("-1.2\tcat"), 4, "x1.2");
  write_file(bad_arpa, text);
  ASRDEC_EXPECT_THROW_MSG(build(tokens_path_, lexicon, bad_arpa), ParseError,
                          bad_arpa + ":9: probability 'x1.2' is not a number");

  CtcGraphOptions options;
  options.blank_id = 9;
  ASRDEC_EXPECT_THROW_MSG(build(tokens_path_, lexicon, arpa_, options), InvalidArgument,
                          "blank id 9 is neither one of its lines nor the column after them (4)");
  options.blank_id = -2;
  ASRDEC_EXPECT_THROW_MSG(build(tokens_path_, lexicon, arpa_, options), InvalidArgument,
                          "CtcGraphOptions.blank_id must be a column (>= 0) or -1 for the last column, got -2");

  // No lexicon word in the ARPA, and no <unk> to score them with.
  const std::string no_unk = testing::temp_path("no_unk.arpa");
  write_file(no_unk, "\\data\\\nngram 1=3\n\n\\1-grams:\n-1.0\t</s>\n-99\t<s>\n-1.0\tdog\n\n\\end\\\n");
  ASRDEC_EXPECT_THROW_MSG(build(tokens_path_, lexicon, no_unk), InvalidArgument,
                          "no word of " + lexicon_path_ + " is in " + no_unk + " and the ARPA has no <unk>");
}

}  // namespace
}  // namespace asrdec
