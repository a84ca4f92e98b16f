// Word boosting lists for WFST decoding: "word score" lines read into word ids of the graph's words table.

#include <charconv>
#include <cmath>

#include "asrdec/text/text_file.hpp"
#include "asrdec/wfst/wfst_decoder.hpp"

namespace asrdec {

WordBoosts read_word_boosts(const std::string& path, const SymbolTable& words) {
  TextFileReader in(path, "the word boosting list");
  WordBoosts boosts;
  std::string line;
  while (in.next(line)) {
    const std::vector<std::string> fields = split_fields(line);
    if (fields.empty()) continue;
    double score = 0.0;
    const std::string text = fields.size() == 2 ? fields[1] : std::string();
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), score);
    if (fields.size() != 2 || error != std::errc() || end != text.data() + text.size() || !std::isfinite(score) ||
        !std::isfinite(static_cast<float>(score))) {
      throw in.error(detail::concat("expected \"word score\" with a finite score, got '", line, "'"));
    }
    const std::optional<std::int32_t> id = words.find(fields[0]);
    if (!id || *id == 0) throw in.error(detail::concat("word '", fields[0], "' is not in the word table"));
    boosts.emplace_back(*id, static_cast<float>(score));
  }
  return boosts;
}

}  // namespace asrdec
