// Building NGPU-LM's suffix tree from an ARPA model (see include/asrdec/lm/ngram_lm.hpp and docs/ngram-lm.md):
// - state 0 is START (empty context) and holds an arc for every label 0..V (V = <unk>); state 1 is BOS (<s>);
//   every n-gram of order 1..N-1 that can be a context (no </s>, <s> only first) is a state;
// - an n-gram's arc goes from its context's state to its own state, or, at the highest order, to the longest
//   listed suffix (pruned models may lack the immediate one);
// - a state backs off to its longest listed proper suffix with the n-gram's backoff weight: a context missing
//   from the model has backoff 0 and no arcs (any n-gram extending it would have to list it), so skipping it
//   gives KenLM's score;
// - p(</s> | state) is resolved through backoff once, here.

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "asrdec/core/error.hpp"
#include "asrdec/text/symbol_table.hpp"
#include "lm/ngram_tables.hpp"

namespace asrdec::detail {
namespace {

constexpr std::int32_t kBos = -1;
constexpr std::int32_t kEos = -2;
constexpr std::int32_t kDropped = -3;  // a symbol outside the vocabulary: its n-grams are unreachable
constexpr double kLn10 = 2.302585092994045684017991454684364208;
constexpr float kUnknownMissingLog10 = -100.0f;  // KenLM's unknown_missing_logprob

float to_ln(float log10_value) { return static_cast<float>(static_cast<double>(log10_value) * kLn10); }

std::string key_of(const std::int32_t* ids, std::int64_t n) {
  return std::string(reinterpret_cast<const char*>(ids), static_cast<std::size_t>(n) * sizeof(std::int32_t));
}

std::string describe_ngram(const ArpaModel& arpa, const std::int32_t* symbols, std::int64_t n) {
  std::string text;
  for (std::int64_t i = 0; i < n; ++i) text += (i ? " " : "") + arpa.symbols[static_cast<std::size_t>(symbols[i])];
  return text;
}

struct Arc {
  std::int32_t from, label, target;
  float weight;
  std::int64_t line;
};

}  // namespace

// The code point of a string holding exactly one UTF-8 encoded character, else -1.
std::int64_t single_code_point(const std::string& s) {
  if (s.empty()) return -1;
  const auto c = static_cast<unsigned char>(s[0]);
  std::size_t length;
  std::int64_t value;
  if (c < 0x80) {
    length = 1, value = c;
  } else if ((c & 0xe0) == 0xc0) {
    length = 2, value = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    length = 3, value = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    length = 4, value = c & 0x07;
  } else {
    return -1;
  }
  if (s.size() != length) return -1;
  for (std::size_t i = 1; i < length; ++i) {
    const auto next = static_cast<unsigned char>(s[i]);
    if ((next & 0xc0) != 0x80) return -1;
    value = (value << 6) | (next & 0x3f);
  }
  return value;
}

NgramTables build_ngram_tables(const ArpaModel& arpa, const NgramLmOptions& options) {
  NgramTables t;
  t.vocabulary = options.vocabulary;
  const int N = arpa.order();
  t.order = N;

  // 1. ARPA symbols -> ids (0..V-1 tokens, V = <unk>) or markers.
  std::vector<std::int32_t> id(arpa.symbols.size(), kDropped);
  std::int64_t V = 0;
  std::unordered_map<std::string, std::int32_t> table;
  if (options.vocabulary == LmVocabularyKind::token_level) {
    ASRDEC_CHECK_ARG(options.vocab_size >= 1,
                     "a token-level LM needs the vocabulary size V (the ASR model's blank "
                     "id), got ",
                     options.vocab_size);
    V = options.vocab_size;
  } else if (options.vocabulary == LmVocabularyKind::symbol_table) {
    t.words = SymbolTable::load(options.symbol_table).symbols();
    V = static_cast<std::int64_t>(t.words.size());
    for (std::size_t i = 0; i < t.words.size(); ++i) {
      if (!t.words[i].empty()) table.emplace(t.words[i], static_cast<std::int32_t>(i));
    }
  }
  const std::int64_t first_line = arpa.orders[0].first_line;
  for (std::size_t i = 0; i < arpa.symbols.size(); ++i) {
    const std::string& symbol = arpa.symbols[i];
    if (symbol == "<s>") {
      id[i] = kBos;
    } else if (symbol == "</s>") {
      id[i] = kEos;
    } else if (symbol == "<unk>") {
      id[i] = std::numeric_limits<std::int32_t>::max();  // fixed below, once V is known
    } else if (options.vocabulary == LmVocabularyKind::token_level) {
      const std::int64_t code = single_code_point(symbol);
      if (code < 0) {
        throw ParseError(arpa.path, first_line + static_cast<std::int64_t>(i),
                         concat("'", symbol,
                                "' is not a single character: a token-level LM writes token t as the "
                                "character U+(t+100) (load word-level LMs with a word vocabulary)"));
      }
      if (code - 100 < 0 || code - 100 >= V) {
        throw ParseError(arpa.path, first_line + static_cast<std::int64_t>(i),
                         concat("symbol U+", std::hex, code, std::dec, " is token ", code - 100,
                                ", outside the vocabulary of V = ", V, " tokens"));
      }
      id[i] = static_cast<std::int32_t>(code - 100);
    } else if (options.vocabulary == LmVocabularyKind::arpa_words) {
      id[i] = static_cast<std::int32_t>(t.words.size());
      t.words.push_back(symbol);
    } else {
      const auto found = table.find(symbol);
      if (found != table.end()) id[i] = found->second;
    }
  }
  if (options.vocabulary == LmVocabularyKind::arpa_words) V = static_cast<std::int64_t>(t.words.size());
  if (V < 1 || V > kMaxLmVocabulary) {
    // arpa_words takes V from the file; the other vocabularies were checked as arguments before reading.
    throw ParseError(arpa.path, 0, concat("LM vocabulary size ", V, " is outside [1, ", kMaxLmVocabulary, "]"));
  }
  for (auto& value : id) {
    if (value == std::numeric_limits<std::int32_t>::max()) value = static_cast<std::int32_t>(V);
  }
  t.vocab_size = static_cast<std::int32_t>(V);
  const auto U = static_cast<std::int32_t>(V);

  // 2. States: START = 0, BOS = 1, then every n-gram of order < N that can be a context.
  std::unordered_map<std::string, std::int32_t> state_of;
  std::vector<float> backoff_log10 = {0.0f, 0.0f};
  std::vector<std::string> key_of_state = {std::string(), key_of(&kBos, 1)};
  state_of.emplace(key_of_state[1], 1);
  std::vector<std::int32_t> ids(static_cast<std::size_t>(N));
  const auto map_ids = [&](const ArpaOrder& order, std::int64_t entry, std::int64_t n) {
    bool usable = true;
    for (std::int64_t w = 0; w < n; ++w) {
      const std::int32_t value = id[static_cast<std::size_t>(order.words[static_cast<std::size_t>(entry * n + w)])];
      ids[static_cast<std::size_t>(w)] = value;
      if (value == kDropped || (value == kBos && w > 0) || (value == kEos && w + 1 < n)) usable = false;
    }
    return usable;
  };
  for (std::int64_t n = 1; n < N; ++n) {
    const ArpaOrder& order = arpa.orders[static_cast<std::size_t>(n - 1)];
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(order.prob.size()); ++e) {
      if (!map_ids(order, e, n) || ids[static_cast<std::size_t>(n - 1)] == kEos) continue;
      const std::string key = key_of(ids.data(), n);
      if (n == 1 && ids[0] == kBos) {
        backoff_log10[1] = order.backoff[static_cast<std::size_t>(e)];
        continue;
      }
      const auto [it, inserted] = state_of.emplace(key, static_cast<std::int32_t>(key_of_state.size()));
      if (!inserted) {
        throw ParseError(
            arpa.path, order.first_line + e,
            concat("duplicate n-gram '", describe_ngram(arpa, &order.words[static_cast<std::size_t>(e * n)], n), "'"));
      }
      key_of_state.push_back(key);
      backoff_log10.push_back(order.backoff[static_cast<std::size_t>(e)]);
    }
  }
  const auto S = static_cast<std::int32_t>(key_of_state.size());
  // Longest listed suffix of ids[first..n): the state to continue from.
  const auto longest_suffix = [&](const std::int32_t* begin, std::int64_t n) -> std::int32_t {
    for (std::int64_t k = 0; k < n; ++k) {
      const auto found = state_of.find(key_of(begin + k, n - k));
      if (found != state_of.end()) return found->second;
    }
    return 0;
  };

  // 3. Arcs and raw end-of-sentence weights.
  std::vector<Arc> arcs;
  std::vector<float> final_raw(static_cast<std::size_t>(S), std::numeric_limits<float>::quiet_NaN());
  std::vector<std::int64_t> final_line(static_cast<std::size_t>(S), 0);
  std::vector<std::uint8_t> present(static_cast<std::size_t>(V) + 1, 0);
  for (std::int64_t n = 1; n <= N; ++n) {
    const ArpaOrder& order = arpa.orders[static_cast<std::size_t>(n - 1)];
    for (std::int64_t e = 0; e < static_cast<std::int64_t>(order.prob.size()); ++e) {
      if (!map_ids(order, e, n)) continue;
      const std::int32_t last = ids[static_cast<std::size_t>(n - 1)];
      if (last == kBos) continue;  // <s> is never predicted
      const std::int64_t line = order.first_line + e;
      std::int32_t from = 0;
      if (n > 1) {
        const auto found = state_of.find(key_of(ids.data(), n - 1));
        if (found == state_of.end()) {
          const std::int32_t* words = &order.words[static_cast<std::size_t>(e * n)];
          throw ParseError(arpa.path, line,
                           concat("n-gram '", describe_ngram(arpa, words, n), "' has no context '",
                                  describe_ngram(arpa, words, n - 1), "' (every context must be listed)"));
        }
        from = found->second;
      }
      const float prob = order.prob[static_cast<std::size_t>(e)];
      if (last == kEos) {
        if (!std::isnan(final_raw[static_cast<std::size_t>(from)])) {
          throw ParseError(arpa.path, line,
                           concat("duplicate n-gram '",
                                  describe_ngram(arpa, &order.words[static_cast<std::size_t>(e * n)], n), "'"));
        }
        final_raw[static_cast<std::size_t>(from)] = prob;
        final_line[static_cast<std::size_t>(from)] = line;
        continue;
      }
      const std::int32_t target = n < N ? state_of.at(key_of(ids.data(), n)) : longest_suffix(ids.data() + 1, n - 1);
      if (n == 1) present[static_cast<std::size_t>(last)] = 1;
      arcs.push_back(Arc{from, last, target, to_ln(prob), line});
    }
  }
  const float unk = present[static_cast<std::size_t>(U)] ? 0.0f : to_ln(kUnknownMissingLog10);
  for (std::int32_t label = 0; label <= U; ++label) {
    if (!present[static_cast<std::size_t>(label)]) {
      // Tokens the model does not list: START self-loops; their scores come from <unk> (expansion).
      arcs.push_back(Arc{0, label, 0, unk, 0});
    }
  }
  std::sort(arcs.begin(), arcs.end(),
            [](const Arc& a, const Arc& b) { return a.from != b.from ? a.from < b.from : a.label < b.label; });
  for (std::size_t i = 1; i < arcs.size(); ++i) {
    if (arcs[i].from == arcs[i - 1].from && arcs[i].label == arcs[i - 1].label) {
      throw ParseError(arpa.path, std::max(arcs[i].line, arcs[i - 1].line), "duplicate n-gram");
    }
  }

  // 4. CSR arrays.
  t.arc_begin.assign(static_cast<std::size_t>(S) + 1, 0);
  for (const Arc& arc : arcs) ++t.arc_begin[static_cast<std::size_t>(arc.from) + 1];
  for (std::int32_t s = 0; s < S; ++s)
    t.arc_begin[static_cast<std::size_t>(s) + 1] += t.arc_begin[static_cast<std::size_t>(s)];
  t.arc_label.reserve(arcs.size());
  t.arc_target.reserve(arcs.size());
  t.arc_weight.reserve(arcs.size());
  for (const Arc& arc : arcs) {
    t.arc_label.push_back(arc.label);
    t.arc_target.push_back(arc.target);
    t.arc_weight.push_back(arc.weight);
  }

  // 5. Backoff links and weights.
  t.backoff_to.assign(static_cast<std::size_t>(S), 0);
  t.backoff_to[0] = -1;  // START is the root of every backoff chain
  t.backoff_weight.assign(static_cast<std::size_t>(S), 0.0f);
  for (std::int32_t s = 1; s < S; ++s) {
    const std::string& key = key_of_state[static_cast<std::size_t>(s)];
    const auto* words = reinterpret_cast<const std::int32_t*>(key.data());
    const auto n = static_cast<std::int64_t>(key.size() / sizeof(std::int32_t));
    std::int32_t to = 0;
    for (std::int64_t k = 1; k < n; ++k) {
      const auto found = state_of.find(key_of(words + k, n - k));
      if (found != state_of.end()) {
        to = found->second;
        break;
      }
    }
    t.backoff_to[static_cast<std::size_t>(s)] = to;
    t.backoff_weight[static_cast<std::size_t>(s)] = to_ln(backoff_log10[static_cast<std::size_t>(s)]);
  }

  // 6. p(</s> | state) through backoff; START's is the </s> unigram, which the reader guarantees.
  t.final_weight.assign(static_cast<std::size_t>(S), 0.0f);
  for (std::int32_t s = 0; s < S; ++s) {
    float backoff = 0.0f;
    std::int32_t at = s;
    while (std::isnan(final_raw[static_cast<std::size_t>(at)]) && at != 0) {
      backoff += t.backoff_weight[static_cast<std::size_t>(at)];
      at = t.backoff_to[static_cast<std::size_t>(at)];
    }
    t.final_weight[static_cast<std::size_t>(s)] = to_ln(final_raw[static_cast<std::size_t>(at)]) + backoff;
  }

  t.missing.assign(static_cast<std::size_t>(V), 0);
  std::int64_t missing = 0;
  for (std::int64_t token = 0; token < V; ++token) {
    t.missing[static_cast<std::size_t>(token)] = present[static_cast<std::size_t>(token)] ? 0 : 1;
    missing += present[static_cast<std::size_t>(token)] ? 0 : 1;
  }
  t.missing_offset =
      options.normalize_unk && missing > 1 ? -static_cast<float>(std::log(static_cast<double>(missing))) : 0.0f;
  return t;
}

}  // namespace asrdec::detail
