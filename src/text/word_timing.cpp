#include "asrdec/text/word_timing.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "asrdec/core/error.hpp"

namespace asrdec {
namespace {

const std::string kWordMark = "\xe2\x96\x81";  // U+2581, SentencePiece's word-start mark

}  // namespace

const char* to_string(ConfidenceAggregation aggregation) noexcept {
  switch (aggregation) {
    case ConfidenceAggregation::min:
      return "min";
    case ConfidenceAggregation::max:
      return "max";
    case ConfidenceAggregation::mean:
      return "mean";
    case ConfidenceAggregation::prod:
      return "prod";
  }
  return "?";
}

ConfidenceAggregation parse_confidence_aggregation(const std::string& name) {
  for (const auto a : {ConfidenceAggregation::min, ConfidenceAggregation::max, ConfidenceAggregation::mean,
                       ConfidenceAggregation::prod}) {
    if (name == to_string(a)) return a;
  }
  throw InvalidArgument("unknown confidence aggregation '" + name + "': expected min, max, mean or prod");
}

std::vector<WordTiming> word_timings(const Hypothesis& hypothesis, const Vocabulary& vocabulary,
                                     double frame_shift_seconds, ConfidenceAggregation aggregation) {
  ASRDEC_CHECK_ARG(std::isfinite(frame_shift_seconds) && frame_shift_seconds > 0.0,
                   "frame_shift_seconds must be positive and finite, got ", frame_shift_seconds);
  ASRDEC_CHECK_ARG(hypothesis.timestamps.size() == hypothesis.tokens.size(), "the hypothesis has ",
                   hypothesis.tokens.size(), " tokens but ", hypothesis.timestamps.size(), " timestamps");
  const bool confident = !hypothesis.token_confidences.empty();
  ASRDEC_CHECK_ARG(!confident || hypothesis.token_confidences.size() == hypothesis.tokens.size(), "the hypothesis has ",
                   hypothesis.tokens.size(), " tokens but ", hypothesis.token_confidences.size(), " token confidences");
  const std::vector<std::int32_t> ends = token_end_frames(hypothesis);
  std::vector<WordTiming> words;
  std::vector<std::pair<std::size_t, std::size_t>> pieces;  // per word: its first and last piece
  bool open = false;                                        // the last word may still take characters
  // Appends characters of piece i to the open word, or to a new one.
  const auto add = [&](const std::string& piece, std::size_t from, std::size_t to, std::size_t i) {
    if (from >= to) return;
    if (!open) {
      words.push_back(WordTiming{});
      words.back().start_frame = hypothesis.timestamps[i];
      pieces.emplace_back(i, i);
      open = true;
    }
    words.back().word.append(piece, from, to - from);
    words.back().end_frame = ends[i];
    pieces.back().second = i;
  };
  for (std::size_t i = 0; i < hypothesis.tokens.size(); ++i) {
    const std::string& piece = vocabulary.token(hypothesis.tokens[i]);
    std::size_t start = 0;
    std::size_t mark;
    while ((mark = piece.find(kWordMark, start)) != std::string::npos) {
      add(piece, start, mark, i);
      open = false;  // the mark ends the word; the characters after it begin the next one
      start = mark + kWordMark.size();
    }
    add(piece, start, piece.size(), i);
  }
  // Pieces may carry spaces of their own (vocabularies without marks): split those words as detokenize() would.
  // Confidences, before the split below (the parts of a word keep its pieces).
  for (std::size_t w = 0; confident && w < words.size(); ++w) {
    const auto [first, last] = pieces[w];
    double value = aggregation == ConfidenceAggregation::prod ? 1.0 : 0.0;
    for (std::size_t i = first; i <= last; ++i) {
      const double c = hypothesis.token_confidences[i];
      switch (aggregation) {
        case ConfidenceAggregation::min:
          value = i == first ? c : std::min(value, c);
          break;
        case ConfidenceAggregation::max:
          value = i == first ? c : std::max(value, c);
          break;
        case ConfidenceAggregation::mean:
          value += c / static_cast<double>(last - first + 1);
          break;
        case ConfidenceAggregation::prod:
          value *= c;
          break;
      }
    }
    words[w].confidence = static_cast<float>(value);
  }
  std::vector<WordTiming> out;
  for (WordTiming& w : words) {
    std::size_t from = 0;
    while (from <= w.word.size()) {
      const std::size_t space = std::min(w.word.find(' ', from), w.word.size());
      if (space > from) {
        WordTiming part = w;
        part.word = w.word.substr(from, space - from);
        out.push_back(std::move(part));
      }
      from = space + 1;
    }
  }
  // Seconds: a frame that several words occupy is cut into equal parts, one per word in order, so that words never
  // overlap and each lasts longer than zero. A word occupies the frames from its start to its end, and at least
  // its start frame (a TDT piece of duration 0 ends where it starts).
  const std::size_t n = out.size();
  std::vector<std::int32_t> last(n);  // the last frame word i occupies
  for (std::size_t i = 0; i < n; ++i) last[i] = std::max(out[i].end_frame - 1, out[i].start_frame);
  // Word i's part of frame t, which it occupies: the words on t are a run around i (decoders' timestamps never
  // decrease, so starts and last frames do not either).
  const auto part = [&](std::size_t i, std::int32_t t, bool end) {
    std::size_t first = i, after = i + 1;
    while (first > 0 && last[first - 1] >= t && out[first - 1].start_frame <= t) --first;
    while (after < n && out[after].start_frame <= t && last[after] >= t) ++after;
    const double share = 1.0 / static_cast<double>(after - first);
    return t + static_cast<double>(i - first + (end ? 1 : 0)) * share;
  };
  for (std::size_t i = 0; i < n; ++i) {
    out[i].start_seconds = part(i, out[i].start_frame, false) * frame_shift_seconds;
    out[i].end_seconds = part(i, last[i], true) * frame_shift_seconds;
  }
  return out;
}

std::string join_words(const std::vector<WordTiming>& words) {
  std::string text;
  for (const WordTiming& w : words) {
    if (!text.empty()) text += ' ';
    text += w.word;
  }
  return text;
}

}  // namespace asrdec
