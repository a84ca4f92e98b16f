#include <cmath>

#include "asrdec/core/error.hpp"
#include "asrdec/wfst/wfst_decoder.hpp"

namespace asrdec {

std::vector<WordTiming> word_timings(const WfstResult& result, const SymbolTable& words, double frame_shift_seconds) {
  ASRDEC_CHECK_ARG(std::isfinite(frame_shift_seconds) && frame_shift_seconds > 0.0,
                   "frame_shift_seconds must be positive and finite, got ", frame_shift_seconds);
  ASRDEC_CHECK_ARG(
      result.word_start_frames.size() == result.words.size() && result.word_end_frames.size() == result.words.size(),
      "the WFST result has ", result.words.size(), " words but ", result.word_start_frames.size(), " start and ",
      result.word_end_frames.size(), " end frames");
  std::vector<WordTiming> out(result.words.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    WordTiming& w = out[i];
    w.word = words.symbol(result.words[i]);
    w.start_frame = result.word_start_frames[i];
    w.end_frame = result.word_end_frames[i] + 1;
    w.start_seconds = w.start_frame * frame_shift_seconds;
    w.end_seconds = w.end_frame * frame_shift_seconds;
  }
  return out;
}

}  // namespace asrdec
