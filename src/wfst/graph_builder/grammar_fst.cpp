// G: a word-level ARPA model as a WFST over the words table (back-off arcs through #0, </s> as final weights).

#include <unordered_map>

#include "asrdec/core/error.hpp"
#include "lm/arpa_reader.hpp"
#include "wfst/graph_builder/graph_builder_openfst.hpp"

namespace asrdec::detail {
namespace {

constexpr double kLn10 = 2.302585092994045684;

// A context (history) as ARPA symbol indices, oldest first.
using Context = std::vector<std::int32_t>;

struct ContextHash {
  std::size_t operator()(const Context& context) const noexcept {
    std::size_t hash = 0x9e3779b97f4a7c15ull;
    for (std::int32_t symbol : context) hash = (hash ^ static_cast<std::size_t>(symbol)) * 0x100000001b3ull;
    return hash;
  }
};

float cost_of(float log10_probability) { return static_cast<float>(-kLn10 * static_cast<double>(log10_probability)); }

}  // namespace

GrammarFst make_grammar_fst(const ArpaModel& arpa, const WordTable& words) {
  using fst::StdArc;
  GrammarFst result;
  const std::int32_t bos = arpa.index.at("<s>");
  const std::int32_t eos = arpa.index.at("</s>");
  const auto unk_it = arpa.index.find("<unk>");
  const std::int32_t unk = unk_it == arpa.index.end() ? -1 : unk_it->second;

  // ARPA symbol → word id; −1 for a word the lexicon cannot spell (its n-grams are left out).
  std::vector<std::int32_t> word_of(arpa.symbols.size(), -1);
  std::vector<bool> lexicon_word_in_arpa(words.words.size(), false);
  for (std::size_t s = 0; s < arpa.symbols.size(); ++s) {
    const auto symbol = static_cast<std::int32_t>(s);
    if (symbol == bos || symbol == eos) continue;
    const auto it = words.id_of.find(arpa.symbols[s]);
    if (it != words.id_of.end() && it->second > 0 && it->second < words.disambig0) {
      word_of[s] = it->second;
      lexicon_word_in_arpa[it->second] = true;
    } else if (symbol != unk) {
      ++result.arpa_words_not_in_lexicon;
    }
  }
  for (std::int32_t id = 1; id < words.disambig0; ++id) {
    if (!lexicon_word_in_arpa[id]) ++result.lexicon_words_not_in_arpa;
  }

  const int order = arpa.order();
  // <s> may only open an n-gram and </s> only close it; anything else cannot occur in a sentence.
  const auto usable = [&](const std::int32_t* ngram, int n) {
    for (int i = 0; i < n; ++i) {
      const std::int32_t symbol = ngram[i];
      if (symbol == bos) {
        if (i != 0) return false;
      } else if (symbol == eos) {
        if (i != n - 1) return false;
      } else if (word_of[symbol] < 0) {
        return false;
      }
    }
    return true;
  };

  // The contexts that need a state: the empty one, <s>, every prefix of a usable n-gram, and every usable
  // n-gram with a back-off weight (a context without either behaves exactly like its longest suffix).
  std::unordered_map<Context, float, ContextHash> backoff_of;  // context → log10 back-off weight
  backoff_of.emplace(Context{}, 0.0f);
  backoff_of.emplace(Context{bos}, 0.0f);
  for (int n = 1; n <= order; ++n) {
    const ArpaOrder& entries = arpa.orders[n - 1];
    for (std::size_t i = 0; i < entries.prob.size(); ++i) {
      const std::int32_t* ngram = entries.words.data() + i * n;
      if (!usable(ngram, n)) continue;
      if (n > 1) backoff_of.emplace(Context(ngram, ngram + n - 1), 0.0f);
      if (n < order && ngram[n - 1] != eos && entries.backoff[i] != 0.0f) {
        backoff_of[Context(ngram, ngram + n)] = entries.backoff[i];
      }
    }
  }
  // Back-off weights of contexts that became states as prefixes only.
  for (int n = 1; n < order; ++n) {
    const ArpaOrder& entries = arpa.orders[n - 1];
    for (std::size_t i = 0; i < entries.prob.size(); ++i) {
      const std::int32_t* ngram = entries.words.data() + i * n;
      const auto it = backoff_of.find(Context(ngram, ngram + n));
      if (it != backoff_of.end()) it->second = entries.backoff[i];
    }
  }

  fst::StdVectorFst& g = result.fst;
  std::unordered_map<Context, StdArc::StateId, ContextHash> state_of;
  state_of.reserve(backoff_of.size());
  for (const auto& [context, backoff] : backoff_of) state_of.emplace(context, g.AddState());
  // The state of the longest suffix of `context` (itself included) that has one.
  const auto state_for = [&](Context context) {
    for (;;) {
      const auto it = state_of.find(context);
      if (it != state_of.end()) return it->second;
      context.erase(context.begin());
    }
  };

  g.SetStart(state_of.at(Context{bos}));
  for (const auto& [context, backoff] : backoff_of) {
    if (context.empty()) continue;
    const Context suffix(context.begin() + 1, context.end());
    g.AddArc(state_of.at(context), StdArc(words.disambig0, 0, cost_of(backoff), state_for(suffix)));
  }
  for (int n = 1; n <= order; ++n) {
    const ArpaOrder& entries = arpa.orders[n - 1];
    for (std::size_t i = 0; i < entries.prob.size(); ++i) {
      const std::int32_t* ngram = entries.words.data() + i * n;
      const std::int32_t last = ngram[n - 1];
      if (last == bos || !usable(ngram, n)) continue;
      const auto from = state_of.at(Context(ngram, ngram + n - 1));
      if (last == eos) {
        g.SetFinal(from, cost_of(entries.prob[i]));
        continue;
      }
      const std::int32_t word = word_of[last];
      g.AddArc(from, StdArc(word, word, cost_of(entries.prob[i]), state_for(Context(ngram, ngram + n))));
    }
  }
  // Lexicon words the ARPA lacks are scored as <unk> in the empty context, after which the context is lost, as
  // an unknown word's is in an n-gram query.
  result.has_unk = unk >= 0;
  if (result.has_unk && result.lexicon_words_not_in_arpa > 0) {
    const ArpaOrder& unigrams = arpa.orders[0];
    const float unk_cost = cost_of(unigrams.prob[static_cast<std::size_t>(unk)]);
    const auto empty = state_of.at(Context{});
    for (std::int32_t id = 1; id < words.disambig0; ++id) {
      if (!lexicon_word_in_arpa[id]) g.AddArc(empty, StdArc(id, id, unk_cost, empty));
    }
  }
  fst::ArcSort(&g, fst::ILabelCompare<StdArc>());
  return result;
}

GrammarFst read_grammar_fst(const std::string& arpa_path, const WordTable& words, bool clamp_positive_probabilities) {
  return make_grammar_fst(read_arpa(arpa_path, clamp_positive_probabilities), words);
}

}  // namespace asrdec::detail
