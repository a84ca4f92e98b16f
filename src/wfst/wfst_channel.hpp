#pragma once
// Internal: one stream of WFST beam search on the CPU — the tokens it keeps between frames (and between chunks),
// and the frame step of wfst_decoder.hpp. The searcher's scratch (a slot per graph state) is shared by the
// channels of one decoder, which run one at a time.

#include <cstdint>
#include <vector>

#include "asrdec/wfst/wfst_decoder.hpp"
#include "wfst/wfst_step.hpp"

namespace asrdec::detail {

/** History tokens below which a channel never collects its history (WfstSearcher::collect_history). */
constexpr std::int64_t kCollectHistoryAbove = 1 << 12;

/** A token kept for traceback: the best way into `state` after `frame` frames. */
struct WfstToken {
  std::int32_t state;
  std::int32_t frame;  ///< frames consumed (0: before the first frame)
  std::int64_t prev;   ///< index of the predecessor in the channel's history; -1 for the start
  std::int64_t arc;    ///< the arc taken from the predecessor; -1 for the start
  float cost;
};

struct WfstChannel {
  std::vector<WfstToken> history;     ///< frames' tokens in order; collected down to the live paths now and then
  std::int64_t last_frame_begin = 0;  ///< where the last frame's tokens start in history
  std::vector<std::int64_t> active;   ///< history indices of the tokens the next frame expands
  std::vector<float> boost_by_word;   ///< [max word id + 1], empty without boosting
  std::int32_t frames = 0;
  bool overflow = false;
  std::int64_t collect_at = kCollectHistoryAbove;  ///< history size that triggers the next collection
  std::int64_t collections = 0;                    ///< collections so far
};

class WfstSearcher {
 public:
  WfstSearcher(const WfstGraph& graph, const WfstDecoderConfig& config);

  /** `boosts` as a row of boosts by word id (summed per word; empty when there are none), validated: words of the
   *  graph, finite scores, and no ε-cycle made to cost ≤ 0 (InvalidArgument). */
  std::vector<float> boost_row(const WordBoosts& boosts) const;
  /** A new channel: the start state's ε-closure (before any frame), with `boosts` (validated). */
  void start(WfstChannel& channel, const WordBoosts& boosts);
  /** The same with boosts already made a row by boost_row (empty: none). */
  void start_with(WfstChannel& channel, std::vector<float> boost_by_word);
  /** One frame: `logp` holds the frame's log-probabilities (at least max_input_label columns). */
  void advance(WfstChannel& channel, const float* logp);
  /** The best path so far: final (use_final_probs applies) or partial (the best active token). `blank_label`: the
   *  blank's input label, for word frames. */
  WfstResult result(const WfstChannel& channel, bool final, std::int32_t blank_label) const;
  /** The n best distinct word sequences among the paths of the final frame's tokens (see WfstDecoder::decode_nbest),
   *  best first; empty when no path survived. */
  std::vector<WfstResult> nbest(const WfstChannel& channel, std::int32_t blank_label, std::int64_t n) const;
  /** The words, word frames and cost split of a path found elsewhere (the CUDA executor): `steps` in order, ending in
   *  `last_state`, with the boosts `boost_by_word` (empty: none), after `frames` frames; r.cost and r.reached_final
   *  must be set. */
  void trace_path(const std::vector<WfstPathStep>& steps, std::int32_t last_state,
                  const std::vector<float>& boost_by_word, std::int32_t frames, std::int32_t blank_label,
                  WfstResult& r) const;

 private:
  struct FrameToken {
    std::int32_t state;
    float cost;
    std::int32_t depth;  ///< ε-arcs since the frame's emitting arc
    std::int64_t prev;   ///< history index (emitting), or index in the frame list (ε, when local)
    std::int64_t arc;
    bool local;
  };

  // Frame step with a given beam; false when the frame outgrew max_tokens_per_frame (the list is then kept as is).
  bool expand(const WfstChannel& channel, const float* logp, float beam);
  /** Offers `way` into `state`; true when it became the state's way in (a new token, or a better way). */
  bool relax(std::int32_t state, const FrameToken& way);
  void closure(float cutoff);
  void commit(WfstChannel& channel, float beam, bool overflow);
  /** min_active (Kaldi's GetCutoff): `bound` widened to the cost of the (min_active+1)-th cheapest token of the
   *  frame list when it holds more than min_active, else to `all` (a bound above every token). */
  float widen_to_min_active(float bound, float all);
  std::int64_t count_below(float bound) const;
  static float boost(const std::vector<float>& boost_by_word, std::int32_t word) {
    return boost_by_word.empty() ? 0.0f : boost_by_word[static_cast<std::size_t>(word)];
  }
  float boost(const WfstChannel& channel, std::int32_t word) const { return boost(channel.boost_by_word, word); }
  void clear_frame();
  void collect_history(WfstChannel& channel) const;
  /** The result of the path ending in history entry `best` with total cost `best_total` (r.reached_final set). */
  void trace(const WfstChannel& channel, std::int64_t best, float best_total, std::int32_t blank_label,
             WfstResult& r) const;
  void token_word_frames(const std::vector<WfstPathStep>& steps, std::int32_t blank_label, WfstResult& r) const;

  const WfstGraph* graph_;
  const WfstGraphArrays* g_;
  WfstDecoderConfig config_;
  std::vector<std::int32_t> word_start_labels_;  // sorted input labels of word_start_columns
  std::vector<std::int32_t> slot_;               // [states] index in list_, or -1
  std::vector<FrameToken> list_;                 // the frame being built
  std::vector<std::int32_t> frontier_;           // ε-closure: the list tokens whose way in changed in the last round
  std::vector<std::int32_t> next_frontier_;      // … and in this round
  std::vector<FrameToken> snapshot_;             // … the last round's values, which this round relaxes from
  std::vector<std::int32_t> changed_in_;         // [list index] the round that last changed the token (-1: none)
  float cutoff_ = 0.0f;                          // the frame's cutoff (step 2)
  bool closure_cut_ = false;                     // the closure hit its relaxation cap (float rounding on an ε-cycle)
  std::vector<std::int32_t> order_;              // commit: the active tokens, by index in list_
  std::vector<float> costs_;                     // min_active: the frame's costs, partly ordered
  const WfstChannel* boosts_of_ = nullptr;       // whose boosts relax() applies
};

}  // namespace asrdec::detail
