// Phrase lists for boosting: one phrase per line, as text; the caller tokenises them.

#include "asrdec/lm/boosting_tree.hpp"
#include "asrdec/text/text_file.hpp"

namespace asrdec {

std::vector<std::string> read_phrase_list(const std::string& path) {
  TextFileReader in(path, "the phrase list");
  std::vector<std::string> phrases;
  std::string line;
  while (in.next(line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto last = line.find_last_not_of(" \t");
    phrases.push_back(line.substr(first, last - first + 1));
  }
  return phrases;
}

}  // namespace asrdec
