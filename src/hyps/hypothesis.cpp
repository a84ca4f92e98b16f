#include "asrdec/hyps/hypothesis.hpp"

#include <set>

namespace asrdec {

void drop_repeated_transcripts(std::vector<Hypothesis>& nbest) {
  std::set<std::vector<std::int32_t>> seen;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < nbest.size(); ++i) {
    if (!seen.insert(nbest[i].tokens).second) continue;
    if (kept != i) nbest[kept] = std::move(nbest[i]);
    ++kept;
  }
  nbest.resize(kept);
}

std::vector<std::int32_t> token_end_frames(const Hypothesis& hypothesis) {
  std::vector<std::int32_t> out(hypothesis.timestamps.size());
  const bool tdt = hypothesis.durations.size() == hypothesis.timestamps.size() && !hypothesis.durations.empty();
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = hypothesis.timestamps[i] + (tdt ? hypothesis.durations[i] : 1);
  }
  return out;
}

}  // namespace asrdec
