#include "wfst/openfst_oracle.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace asrdec::testing {
namespace {

// The linear acceptor of the frames: states 0 … T, arcs t → t+1 for every column.
fst::StdVectorFst frame_acceptor(const std::vector<float>& logp, std::int32_t frames, std::int32_t columns,
                                 float scale) {
  fst::StdVectorFst u;
  for (std::int32_t t = 0; t <= frames; ++t) u.AddState();
  u.SetStart(0);
  u.SetFinal(frames, fst::TropicalWeight::One());
  for (std::int32_t t = 0; t < frames; ++t) {
    for (std::int32_t k = 1; k <= columns; ++k) {
      const float cost = -scale * logp[static_cast<std::size_t>(t) * columns + (k - 1)];
      u.AddArc(t, fst::StdArc(k, k, cost, t + 1));
    }
  }
  return u;
}

struct Path {
  float cost = 0.0f;
  std::vector<std::int32_t> words;
};

// The paths of a ShortestPath result (a tree from the start state), each with its cost and output words.
std::vector<Path> paths_of(const fst::StdVectorFst& tree) {
  std::vector<Path> out;
  if (tree.Start() == fst::kNoStateId) return out;
  for (fst::ArcIterator<fst::StdVectorFst> first(tree, tree.Start()); !first.Done(); first.Next()) {
    Path p;
    fst::StdArc arc = first.Value();
    for (;;) {
      p.cost += arc.weight.Value();
      if (arc.olabel != 0) p.words.push_back(static_cast<std::int32_t>(arc.olabel));
      const auto s = arc.nextstate;
      if (tree.NumArcs(s) == 0) {
        p.cost += tree.Final(s).Value();
        break;
      }
      arc = fst::ArcIterator<fst::StdVectorFst>(tree, s).Value();
    }
    out.push_back(p);
  }
  return out;
}

}  // namespace

OracleBest openfst_best_path(const fst::StdVectorFst& graph, const std::vector<float>& logp, std::int32_t frames,
                             std::int32_t columns, float scale, bool use_final_probs) {
  fst::StdVectorFst u = frame_acceptor(logp, frames, columns, scale);
  fst::StdVectorFst sorted = graph;
  fst::ArcSort(&sorted, fst::StdILabelCompare());
  OracleBest best;
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool finals = use_final_probs && attempt == 0;
    fst::StdVectorFst g = sorted;
    if (!finals) {
      for (fst::StateIterator<fst::StdVectorFst> it(g); !it.Done(); it.Next()) {
        g.SetFinal(it.Value(), fst::TropicalWeight::One());
      }
    }
    fst::StdVectorFst composed;
    fst::Compose(u, g, &composed);
    fst::StdVectorFst shortest;
    fst::ShortestPath(composed, &shortest, 8);
    std::vector<Path> paths = paths_of(shortest);
    if (paths.empty()) continue;
    std::sort(paths.begin(), paths.end(), [](const Path& a, const Path& b) { return a.cost < b.cost; });
    best.has_path = true;
    best.reached_final = finals;
    best.cost = paths[0].cost;
    best.words = paths[0].words;
    const float tolerance = 1e-3f * std::max(1.0f, std::fabs(paths[0].cost));
    for (const Path& other : paths) {
      best.tied = best.tied || (other.words != paths[0].words && other.cost - paths[0].cost <= tolerance);
    }
    break;
  }
  return best;
}

float openfst_best_cost_with_words(const fst::StdVectorFst& graph, const std::vector<float>& logp, std::int32_t frames,
                                   std::int32_t columns, float scale, bool finals,
                                   const std::vector<std::int32_t>& words) {
  fst::StdVectorFst u = frame_acceptor(logp, frames, columns, scale);
  fst::StdVectorFst g = graph;
  if (!finals) {
    for (fst::StateIterator<fst::StdVectorFst> it(g); !it.Done(); it.Next())
      g.SetFinal(it.Value(), fst::TropicalWeight::One());
  }
  fst::ArcSort(&g, fst::StdILabelCompare());
  fst::StdVectorFst composed;
  fst::Compose(u, g, &composed);
  fst::StdVectorFst sentence;  // words:words, one arc per word
  sentence.AddState();
  sentence.SetStart(0);
  for (std::size_t i = 0; i < words.size(); ++i) {
    sentence.AddState();
    sentence.AddArc(static_cast<int>(i),
                    fst::StdArc(words[i], words[i], fst::TropicalWeight::One(), static_cast<int>(i + 1)));
  }
  sentence.SetFinal(static_cast<int>(words.size()), fst::TropicalWeight::One());
  fst::ArcSort(&composed, fst::StdOLabelCompare());
  fst::StdVectorFst constrained;
  fst::Compose(composed, sentence, &constrained);
  fst::StdVectorFst shortest;
  fst::ShortestPath(constrained, &shortest, 1);
  if (shortest.Start() != fst::kNoStateId && shortest.NumArcs(shortest.Start()) == 0) {
    return shortest.Final(shortest.Start()).Value();  // the empty path (no frames): the start state is final
  }
  const std::vector<Path> paths = paths_of(shortest);
  return paths.empty() ? std::numeric_limits<float>::infinity() : paths.front().cost;
}

}  // namespace asrdec::testing
