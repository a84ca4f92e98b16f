#pragma once
// `--boost phrases.txt --bpe bpe.model`: the phrase list of the decode subcommands, tokenised with the model's
// SentencePiece model and built into a BoostingTree shared by every utterance.

#include <memory>
#include <string>

#include "asrdec/asrdec.hpp"

namespace asrdec::cli {

struct BoostOptions {
  std::string phrases;        // one phrase per line; blank lines and lines starting with '#' are skipped
  std::string per_utterance;  // JSON lines: line u is the array of utterance u's phrases (strings)
  std::string bpe;            // SentencePiece model that tokenises the phrases
  double weight = 1.0;        // β
  double context_score = 1.0;
  double depth_scaling = 2.0;
};

/** The boosting tree of --boost on `device` for a decoder with `vocab` tokens, or nullptr without --boost.
 *  `text_tokens` (default: `vocab`) is the number of SentencePiece pieces: models with special tokens after the
 *  text tokens (AED) have more. Throws InvalidArgument for --boost without --bpe, a SentencePiece model whose size is
 *  not `text_tokens`, or a file without phrases; Error when a file cannot be read. */
std::shared_ptr<const BoostingTree> load_boosting(const BoostOptions& options, std::int64_t vocab, Device device,
                                                  bool quiet, std::int64_t text_tokens = -1);

/** --boost-per-utterance: each utterance's own phrases, tokenised with --bpe, in the slots of one tree
 *  (BoostingTree::with_slots) that the decoder keeps: before a call, the utterances it decodes get their lists —
 *  utterance first + b in slot b for a whole batch, a free slot from join() for a stream (freed by leave()). */
class UtterancePhrases {
 public:
  UtterancePhrases(std::vector<PhraseList> lists, std::int64_t vocab, std::int64_t slots,
                   const BoostingTreeOptions& options, Device device);
  std::shared_ptr<const BoostingTree> tree() const { return tree_; }
  /** Utterances [first, first + count) into slots 0..count-1. */
  void fill_batch(std::int64_t first, std::int64_t count);
  /** A free slot holding `utterance`'s list. */
  std::int32_t join(std::int64_t utterance);
  void leave(std::int64_t utterance);

 private:
  std::vector<PhraseList> lists_;
  std::shared_ptr<BoostingTree> tree_;
  std::vector<std::int32_t> free_;
  std::vector<std::int32_t> slot_of_;
};

/** What a decode command fuses for boosting: a tree (or none), and the per-utterance phrases that fill it. */
struct Boosting {
  std::shared_ptr<const BoostingTree> tree;
  std::shared_ptr<UtterancePhrases> per_utterance;  // --boost-per-utterance, else null
};

/** --boost or --boost-per-utterance (not both) for a decoder over `vocab` tokens that decodes `utterances`, at most
 *  `slots` per call or open at once. Throws InvalidArgument for both options, --boost-per-utterance without --bpe, a
 *  file whose lines are not arrays of strings or whose line count is not `utterances`. */
Boosting load_boosting(const BoostOptions& options, std::int64_t vocab, Device device, bool quiet,
                       std::int64_t utterances, std::int64_t slots);

}  // namespace asrdec::cli
