#pragma once
// Random token-level ARPA models for the fusion tests: any V, order 1 to 4, some tokens missing from the
// unigrams (they score as <unk>), with or without <unk>, backoffs on every context. Each n-gram's context and
// suffix are listed, as a well-formed ARPA requires.

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace asrdec::testing {

/** Token t in NeMo's convention: the character U+(t+100), UTF-8. */
inline std::string token_symbol(int t) {
  const unsigned code = static_cast<unsigned>(t) + 100u;
  std::string out;
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xc0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else {
    out += static_cast<char>(0xe0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  }
  return out;
}

/** Writes a random token-level ARPA over V tokens to `path`. */
inline void write_random_token_arpa(const std::string& path, int V, int order, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> prob(-3.0, -0.05), backoff(-1.0, 0.3), coin(0.0, 1.0);
  const bool with_unk = coin(rng) < 0.7;
  std::vector<std::vector<int>> listed(1);  // order 1: the words, as ids; -1 = <s>, -2 = </s>, -3 = <unk>
  std::vector<std::set<std::vector<int>>> grams(static_cast<std::size_t>(order) + 1);
  for (int t = 0; t < V; ++t) {
    if (coin(rng) < 0.85 || t == 0) grams[1].insert({t});
  }
  grams[1].insert({-1});
  grams[1].insert({-2});
  if (with_unk) grams[1].insert({-3});
  std::vector<int> words;
  for (const auto& g : grams[1]) {
    if (g[0] != -2 && g[0] != -3) words.push_back(g[0]);  // words that may start or continue a context
  }
  std::vector<int> successors;
  for (const auto& g : grams[1]) {
    if (g[0] != -1) successors.push_back(g[0]);
  }
  for (int n = 2; n <= order; ++n) {
    const int wanted = 3 * V + 4;
    for (int i = 0; i < wanted; ++i) {
      std::vector<int> gram;
      if (n == 2) {
        gram = {words[rng() % words.size()], successors[rng() % successors.size()]};
      } else {
        // Extend a listed (n-1)-gram whose last word is not </s> or <unk> by a word such that the suffix is listed.
        auto it = grams[static_cast<std::size_t>(n) - 1].begin();
        std::advance(it, static_cast<long>(rng() % grams[static_cast<std::size_t>(n) - 1].size()));
        gram = *it;
        if (gram.back() == -2 || gram.back() == -3) continue;
        const int next = successors[rng() % successors.size()];
        std::vector<int> suffix(gram.begin() + 1, gram.end());
        suffix.push_back(next);
        if (!grams[static_cast<std::size_t>(n) - 1].count(suffix)) continue;
        gram.push_back(next);
      }
      if (gram[0] != -1 && std::find(gram.begin(), gram.end(), -1) != gram.end()) continue;  // <s> only first
      if (n == 2 && gram[1] == -1) continue;
      grams[static_cast<std::size_t>(n)].insert(gram);
    }
    if (grams[static_cast<std::size_t>(n)].empty()) {  // nothing could be extended: the model ends at n - 1
      order = n - 1;
      break;
    }
  }
  const auto symbol = [](int w) {
    return w == -1   ? std::string("<s>")
           : w == -2 ? std::string("</s>")
           : w == -3 ? std::string("<unk>")
                     : token_symbol(w);
  };
  std::ofstream out(path, std::ios::binary);
  out << "\\data\\\n";
  for (int n = 1; n <= order; ++n) out << "ngram " << n << "=" << grams[static_cast<std::size_t>(n)].size() << "\n";
  for (int n = 1; n <= order; ++n) {
    out << "\n\\" << n << "-grams:\n";
    for (const auto& g : grams[static_cast<std::size_t>(n)]) {
      char number[32];
      std::snprintf(number, sizeof number, "%.4f", g == std::vector<int>{-1} ? -99.0 : prob(rng));
      out << number << "\t";
      for (std::size_t i = 0; i < g.size(); ++i) out << (i ? " " : "") << symbol(g[i]);
      if (n < order && g.back() != -2) {
        std::snprintf(number, sizeof number, "%.4f", backoff(rng));
        out << "\t" << number;
      }
      out << "\n";
    }
  }
  out << "\n\\end\\\n";
}

}  // namespace asrdec::testing
