#pragma once
/**
 * @file
 * NgramLm: an n-gram language model (ARPA, optionally gzip-compressed, or asrdec's binary image) laid out for
 * full-vocabulary queries as in NGPU-LM: a suffix tree whose states are contexts, with arcs sorted by label,
 * backoff links and end-of-sentence weights resolved at load. One query gives, for a batch of states, the score
 * of every vocabulary token and the state each token leads to — on the CPU or a CUDA device, with the same
 * results bit for bit.
 *
 * Scores are natural logarithms (ARPA log10 × ln 10, rounded once to fp32) and follow KenLM's rules exactly:
 * the longest matching n-gram plus the backoffs of the longer contexts; a token the model does not list scores
 * as `<unk>` in its context (the `<unk>` probability plus backoffs, or the `<unk>` n-grams if the model has
 * them), and -100 × ln 10 when the ARPA has no `<unk>` (KenLM's unknown_missing_logprob). NeMo's normalize_unk
 * (spread `<unk>` over the missing tokens) is an option.
 *
 * Vocabularies:
 * - token-level (NeMo's convention): token id t is written in the ARPA as the single character U+(t+100), so a
 *   BPE model's ids index the LM directly; V is the ASR vocabulary size (its blank id);
 * - word-level with the ARPA's own symbols (ids in unigram order, specials excluded);
 * - word-level with a symbol table (`word id` or one word per line), e.g. an ASR model's or a WFST's words.
 * Words are separated by ASCII space and tab only, as KenLM does.
 *
 * Orders 1 and up are supported (KenLM refuses order 1; a unigram model here is a single START state).
 * Thread safety: immutable after loading; queries may run concurrently from any thread. Copies share the tables, and
 * a moved-from LM still holds them (moving never leaves an LM that crashes when used).
 */

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "asrdec/core/device.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/stream.hpp"
#include "asrdec/core/tensor.hpp"

namespace asrdec {

enum class LmVocabularyKind { token_level, arpa_words, symbol_table };

struct ASRDEC_API NgramLmOptions {
  LmVocabularyKind vocabulary = LmVocabularyKind::token_level;
  /** token_level: V, the number of tokens (the ASR model's blank id). Required for ARPA files; 0 takes an LM
   *  image's own V. */
  std::int64_t vocab_size = 0;
  /** symbol_table: the table's path. */
  std::string symbol_table;
  /** NeMo's normalize_unk: a missing token scores <unk> − ln(#missing tokens) (when more than one is missing). */
  bool normalize_unk = false;
  /** A positive log10 probability is an error (KenLM's default); with this set it becomes 0 with one warning
   *  (KenLM's build_binary -i), for toolkits that write rounding artefacts such as 3.8e-07. */
  bool clamp_positive_probabilities = false;

  /** Throws InvalidArgument for a token-level V outside [0, 2^24] (0: an LM image's own V; an ARPA file needs
   *  V ≥ 1), a symbol-table LM without a table, or an unknown vocabulary kind. */
  void validate() const;
};

/** The device view of an LM (trivially copyable), used by the shared query functions and kernels. */
struct ASRDEC_API NgramLmRef {
  const std::int32_t* arc_begin;   ///< [states + 1]
  const std::int32_t* arc_label;   ///< [arcs] sorted within each state; labels 0..V-1 tokens, V = <unk>
  const std::int32_t* arc_target;  ///< [arcs]
  const float* arc_weight;         ///< [arcs] ln probability
  const std::int32_t* backoff_to;  ///< [states]
  const float* backoff_weight;     ///< [states] ln backoff
  const float* final_weight;       ///< [states] ln p(</s> | state), resolved through backoff
  const std::uint8_t* missing;     ///< [V] 1 for tokens the model does not list (they score as <unk>)
  std::int32_t vocab_size;         ///< V
  std::int32_t order;
  std::int32_t states;
  float missing_offset;  ///< added to a missing token's <unk> score (normalize_unk), else 0
};

class ASRDEC_API NgramLm {
 public:
  /** Loads an ARPA file (plain or .gz) or a binary image written by save_binary() (recognised by content) onto
   *  `device`. Throws ParseError (with file and line) for a malformed file, InvalidArgument for options that do
   *  not fit the file (e.g. a token id outside V), Error when it cannot be read. */
  static NgramLm load(const std::string& path, const NgramLmOptions& options, Device device = Device::cpu());

  ~NgramLm();
  NgramLm(const NgramLm&);
  NgramLm& operator=(const NgramLm&);
  NgramLm(NgramLm&&) noexcept;
  NgramLm& operator=(NgramLm&&) noexcept;

  Device device() const noexcept;
  std::int64_t vocab_size() const noexcept;  ///< V
  int order() const noexcept;
  std::int64_t num_states() const noexcept;
  std::int64_t num_arcs() const noexcept;
  /** Bytes of the query tables (on the device for a CUDA LM). */
  std::size_t memory_bytes() const noexcept;

  /** The empty context (START). */
  static constexpr std::int32_t start_state() noexcept { return 0; }
  /** The `<s>` context (BOS): where sentences start. */
  static constexpr std::int32_t bos_state() noexcept { return 1; }
  std::int32_t initial_state(bool with_bos) const noexcept { return with_bos ? bos_state() : start_state(); }

  /** Full-vocabulary query: for each of the `states` ([B] int32 on the LM's device), scores [B, V] (fp32, natural
   *  log) and next_states [B, V] (int32), both on the LM's device. Enqueued on `stream` (nullptr: the legacy default
   *  stream) for CUDA, graph-capturable; synchronous on the CPU. Throws InvalidArgument for a state out of range (CPU;
   * CUDA clamps and flags nothing, so pass states the LM produced). */
  void advance(const std::int32_t* states, std::int64_t batch, float* scores, std::int32_t* next_states,
               StreamHandle stream = nullptr) const;

  /** One token from one state (CPU LMs): its ln score and the next state. */
  std::pair<float, std::int32_t> score(std::int32_t state, std::int32_t token) const;
  /** A word outside the vocabulary (scored as <unk>, as KenLM does) from one state (CPU LMs). */
  std::pair<float, std::int32_t> score_unknown(std::int32_t state) const;
  /** ln p(</s> | state) (CPU LMs). */
  float final_score(std::int32_t state) const;
  /** final_score for a batch of states on the LM's device. */
  void final_scores(const std::int32_t* states, std::int64_t batch, float* out, StreamHandle stream = nullptr) const;

  /** The id of a symbol (word-level vocabularies: the word; token level: the U+(t+100) character), or
   *  std::nullopt for a symbol outside the vocabulary (it scores as <unk>). */
  std::optional<std::int32_t> id_of(const std::string& symbol) const;
  /** The symbol of id (for printing). */
  std::string symbol_of(std::int32_t id) const;

  /** Writes the versioned, checksummed binary image (loads by memory mapping). CPU LMs only. */
  void save_binary(const std::string& path) const;

  NgramLmRef ref() const noexcept;
  std::string describe() const;

  struct Impl;

 private:
  friend class BoostingTree;  // builds its automata into the same tables
  explicit NgramLm(std::unique_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;  // shared by copies, kept by a moved-from LM
};

}  // namespace asrdec
