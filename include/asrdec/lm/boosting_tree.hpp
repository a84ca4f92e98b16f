#pragma once
/**
 * @file
 * BoostingTree: phrase boosting (context biasing) as a weighted token acceptor in the NGPU-LM layout, so the
 * decoders fuse it with the same full-vocabulary queries as an n-gram LM (NeMo's GPU boosting tree semantics).
 *
 * Each phrase list becomes an Aho-Corasick automaton over token ids: a trie whose nodes carry a potential
 * (node score), with fail links as backoff arcs. Node scores grow with depth:
 * - the first token of a phrase scores `context_score`;
 * - token i ≥ 1 (0-based) scores `context_score × depth_scaling + ln(i + 1)` (or `context_score` with
 *   `uniform_weights`).
 * An arc's weight is the difference of the potentials of its ends, so a partial match accumulates the node score
 * of the matched prefix. Leaving a node through its fail link costs `node_score(fail) − node_score(node)`,
 * which takes the bonus of an unfinished match back; a node that ends a phrase keeps its bonus (backoff 0). With
 * `uniform_weights` (Icefall's scheme) an end node deeper than 1 keeps the penalising backoff and its incoming
 * arc carries `+node_score` instead. Tokens that start no phrase loop on the root with `unk_score`.
 *
 * Per-utterance phrase lists: the automata of all lists live in one table set, one root per list; utterance b of
 * a batch uses list b (or list 0 for every utterance when there is only one list).
 *
 * Phrase lists per request (with_slots): a tree of fixed capacity — `slots` lists of at most `states_per_slot` trie
 * states each — whose lists are replaced at run time by set_list(), between decoder calls, without rebuilding a
 * decoder or recapturing its CUDA graphs: each slot keeps its ranges of the tables, whose memory never moves. Utterance
 * b of a batch uses slot b; a streamed utterance the slot its first ChunkRow names (ChunkRow::phrase_list), which
 * must keep its list until the utterance ends (should it not, the stream continues from the new list's root where
 * its state is not one of the new list's). A list that does not fit its slot is refused with OutOfMemory.
 *
 * Final weights are `final_eos_score` on phrase ends and 0 elsewhere (for decoders that score end of sentence;
 * greedy decoding does not).
 *
 * Thread safety: queries may run concurrently from any thread. A tree built from fixed lists is immutable; set_list()
 * changes a slotted tree and must not run while a decoder that uses the tree is inside a call (CUDA: it writes the
 * device tables synchronously, so it must not overlap work queued on the tree either). Copies share the tree (and
 * set_list on one changes all), and a moved-from tree still holds it.
 */

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asrdec/core/device.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/stream.hpp"
#include "asrdec/lm/ngram_lm.hpp"

namespace asrdec {

namespace detail {
struct NgramTables;
}  // namespace detail

struct ASRDEC_API BoostingTreeOptions {
  /** Score of the first token of a phrase (NeMo's context_score). Must be positive. */
  float context_score = 1.0f;
  /** Scale of the later tokens' scores (NeMo's depth_scaling: 2.0 for CTC and transducers). Must be ≥ 1. */
  float depth_scaling = 2.0f;
  /** Score of a token that starts no phrase (on the root). */
  float unk_score = 0.0f;
  /** Final weight of a phrase end (end-of-sentence scoring). */
  float final_eos_score = 1.0f;
  /** Icefall's uniform scheme: every token scores context_score and a phrase end keeps the fail penalty. */
  bool uniform_weights = false;

  /** Throws InvalidArgument for a non-finite value, context_score ≤ 0 or depth_scaling < 1. */
  void validate() const;
};

/** One phrase list: each phrase a non-empty sequence of token ids. */
using PhraseList = std::vector<std::vector<std::int32_t>>;

/** The capacity of a tree whose phrase lists change at run time (BoostingTree::with_slots). A list of P phrases
 *  takes one state per distinct phrase prefix plus its root (at most 1 + the sum of the phrase lengths); memory is
 *  slots × (states_per_slot + 1) states of 16 bytes and slots × (V + states_per_slot) arcs of 12 bytes. */
struct ASRDEC_API BoostingSlots {
  std::int64_t slots = 0;            ///< lists held at once: the largest batch, or the most streams open at once
  std::int64_t states_per_slot = 0;  ///< trie states one list may take, its root included
  std::int32_t max_phrase_tokens = 64;

  /** Throws InvalidArgument for slots outside [1, 2^20], states_per_slot outside [1, 2^24], max_phrase_tokens
   *  outside [1, 4096], or tables of more than 2^31 states or arcs over `vocab_size` tokens. */
  void validate(std::int64_t vocab_size) const;
};

/** Reads phrases to boost, one per line, trimmed; blank lines and lines starting with '#' are skipped (CRLF
 *  accepted). The caller tokenises them (e.g. with the model's SentencePiece model) into a PhraseList. Throws the
 *  errors of TextFileReader. */
ASRDEC_API std::vector<std::string> read_phrase_list(const std::string& path);

class ASRDEC_API BoostingTree {
 public:
  /** Builds the automata of `lists` (at least one; a list may be empty: no boosting for its utterances) over
   *  tokens 0..vocab_size-1, on `device`. Throws InvalidArgument for an empty phrase, a token outside the
   *  vocabulary, no lists or bad options. */
  static BoostingTree build(const std::vector<PhraseList>& lists, std::int64_t vocab_size,
                            const BoostingTreeOptions& options = {}, Device device = Device::cpu());
  /** A tree of `capacity.slots` empty phrase lists (no boosting) over `vocab_size` tokens, filled by set_list().
   *  Throws as build() and BoostingSlots::validate(). */
  static BoostingTree with_slots(std::int64_t vocab_size, const BoostingSlots& capacity,
                                 const BoostingTreeOptions& options = {}, Device device = Device::cpu());
  /** Replaces the phrase list of `slot` (an empty list: no boosting) with `phrases`, scored exactly as build()
   *  would score them. Throws InvalidArgument for a tree not made by with_slots, a slot out of range, an empty phrase,
   *  a token outside the vocabulary or a phrase longer than max_phrase_tokens; OutOfMemory when the list needs more
   *  than states_per_slot states. On a throw the slot keeps its list. */
  void set_list(std::int64_t slot, const PhraseList& phrases);
  /** The capacity of a slotted tree; slots == 0 for a tree built from fixed lists. */
  const BoostingSlots& slots() const noexcept;

  ~BoostingTree();
  BoostingTree(const BoostingTree&);
  BoostingTree& operator=(const BoostingTree&);
  BoostingTree(BoostingTree&&) noexcept;
  BoostingTree& operator=(BoostingTree&&) noexcept;

  Device device() const noexcept;
  std::int64_t vocab_size() const noexcept;   ///< V
  std::int64_t num_lists() const noexcept;    ///< lists, or slots of a slotted tree
  std::int64_t num_phrases() const noexcept;  ///< over all lists
  std::int64_t num_states() const noexcept;
  std::size_t memory_bytes() const noexcept;
  const BoostingTreeOptions& options() const noexcept;

  /** The root of phrase list `list` (where its utterances start). */
  std::int32_t root_state(std::int64_t list) const;
  /** The root for utterance b of a batch of `batch`: list b, or list 0 when there is one list (a slotted tree: slot b,
   *  for batches of at most `slots`). Throws
   *  InvalidArgument when there are several lists and their number is not `batch`. */
  std::int32_t root_for(std::int64_t b, std::int64_t batch) const;
  /** Checks that the tree can serve a batch of `batch` utterances (see root_for). */
  void check_batch(std::int64_t batch) const;

  /** Full-vocabulary query, as NgramLm::advance: scores [B, V] and next states [B, V] on the tree's device. */
  void advance(const std::int32_t* states, std::int64_t batch, float* scores, std::int32_t* next_states,
               StreamHandle stream = nullptr) const;
  /** One token from one state (CPU trees): its score and the next state. */
  std::pair<float, std::int32_t> score(std::int32_t state, std::int32_t token) const;
  /** The final weight of a state (CPU trees). */
  float final_score(std::int32_t state) const;

  /** The tables in the n-gram layout (device pointers for a CUDA tree). */
  NgramLmRef ref() const noexcept;
  /** [num_lists] the root of each list, in the tree's memory (device memory for a CUDA tree). */
  const std::int32_t* list_roots() const noexcept;
  std::string describe() const;

 private:
  struct Impl;
  explicit BoostingTree(std::unique_ptr<Impl> impl);
  static std::unique_ptr<Impl> finish(detail::NgramTables tables, std::vector<std::int32_t> roots, std::int64_t phrases,
                                      const BoostingTreeOptions& options, Device device);
  std::shared_ptr<Impl> impl_;  // shared by copies, kept by a moved-from tree
};

}  // namespace asrdec
