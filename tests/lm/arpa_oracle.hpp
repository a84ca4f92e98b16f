#pragma once
// Test oracle for n-gram LMs, independent of the library: its own plain ARPA parser and KenLM's FullScore rule
// written directly — the longest listed n-gram ending in the word, plus the backoffs of every longer context
// in the history; a word not among the unigrams is <unk> (-100 when the model has no <unk>).

#include <zlib.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace asrdec::testing {

class ArpaOracle {
 public:
  explicit ArpaOracle(const std::string& path) {
    std::istringstream in(read_all(path));
    std::string line;
    int current = 0;
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.rfind("ngram ", 0) == 0) order_ = std::max(order_, std::stoi(line.substr(6, line.find('=') - 6)));
      if (line.size() > 2 && line[0] == '\\' && line.find("-grams:") != std::string::npos) {
        current = std::stoi(line.substr(1));
        continue;
      }
      if (current == 0 || line.empty() || line[0] == '\\') continue;
      std::istringstream fields(line);
      std::vector<std::string> parts;
      for (std::string part; fields >> part;) parts.push_back(part);
      std::string key;
      for (int i = 1; i <= current; ++i) key += (i > 1 ? " " : "") + parts[static_cast<std::size_t>(i)];
      const double prob = std::stod(parts[0]);
      const double backoff = static_cast<int>(parts.size()) > current + 1 ? std::stod(parts.back()) : 0.0;
      table_[key] = {prob, backoff};
      if (current == 1) unigrams_.push_back(parts[1]);
    }
  }

  int order() const { return order_; }
  bool listed(const std::string& word) const { return table_.count(word) > 0; }
  /** The word as the model sees it: itself if listed, else <unk>. */
  std::string canonical(const std::string& word) const { return listed(word) ? word : "<unk>"; }

  /** log10 p(word | history); history holds canonical words, oldest first. */
  double score_log10(const std::vector<std::string>& history, const std::string& word) const {
    const std::string w = canonical(word);
    const int limit = std::min(static_cast<int>(history.size()), order_ - 1);
    const auto context = [&](int length) {
      std::string key;
      for (int i = static_cast<int>(history.size()) - length; i < static_cast<int>(history.size()); ++i) {
        key += history[static_cast<std::size_t>(i)] + " ";
      }
      return key;
    };
    double total = -100.0;  // <unk> without an <unk> entry
    int matched = 1;
    for (int n = limit + 1; n >= 1; --n) {
      const auto found = table_.find(context(n - 1) + w);
      if (found != table_.end()) {
        total = found->second.first;
        matched = n;
        break;
      }
    }
    for (int length = matched; length <= limit; ++length) {
      std::string key = context(length);
      key.pop_back();
      const auto found = table_.find(key);
      if (found != table_.end()) total += found->second.second;
    }
    return total;
  }

  static double ln(double log10_value) { return log10_value * 2.302585092994045684; }

  // Whole file, gzip or plain (zlib reads plain files through).
  static std::string read_all(const std::string& path) {
    gzFile file = gzopen(path.c_str(), "rb");
    std::string text;
    char buffer[1 << 16];
    for (int n; file != nullptr && (n = gzread(file, buffer, sizeof buffer)) > 0;)
      text.append(buffer, static_cast<std::size_t>(n));
    if (file != nullptr) gzclose(file);
    return text;
  }

 private:
  int order_ = 0;
  std::unordered_map<std::string, std::pair<double, double>> table_;
  std::vector<std::string> unigrams_;
};

}  // namespace asrdec::testing
