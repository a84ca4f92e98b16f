// The C API (include/asrdec/c_api.h): handles over the C++ objects, versioned configs copied into the C++ ones,
// results kept alive until the caller frees them.

#include "asrdec/c_api.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "c_api/c_status.hpp"
#include "c_api/dlpack_tensor.hpp"

struct asrdec_results {
  std::vector<std::vector<asrdec::Hypothesis>> utterances;
};
struct asrdec_wfst_results {
  std::vector<asrdec::WfstResult> utterances;
};
struct asrdec_ngram_lm {
  std::shared_ptr<const asrdec::NgramLm> lm;
};
struct asrdec_boosting_tree {
  std::shared_ptr<const asrdec::BoostingTree> tree;
};
struct asrdec_ctc_greedy_decoder {
  asrdec::CtcGreedyDecoder decoder;
};
struct asrdec_ctc_beam_decoder {
  asrdec::CtcBeamDecoder decoder;
};
struct asrdec_transducer_model {
  // Decoders hold a reference to their model: the handle shares it so that freeing it first stays safe.
  std::shared_ptr<const asrdec::TransducerModel> model;
};
struct asrdec_transducer_greedy_decoder {
  std::shared_ptr<const asrdec::TransducerModel> model;
  asrdec::TransducerGreedyDecoder decoder;
};
struct asrdec_transducer_beam_decoder {
  std::shared_ptr<const asrdec::TransducerModel> model;
  asrdec::TransducerBeamDecoder decoder;
};
struct asrdec_wfst_graph {
  asrdec::WfstGraph graph;
};
struct asrdec_wfst_decoder {
  asrdec::WfstDecoder decoder;
};

namespace asrdec::c_api {
namespace {

/** The caller's config of `struct_size` bytes over the library's defaults: fields past the caller's size keep their
 *  defaults; a size below the first field or above the library's struct is refused. */
template <class Config>
Config read_config(const Config* given, void (*init)(Config*), const char* name) {
  Config config;
  init(&config);
  if (given == nullptr) {
    return config;
  }
  ASRDEC_CHECK_ARG(given->struct_size >= sizeof(std::uint32_t), name, ".struct_size = ", given->struct_size,
                   ": call the config's _init function first");
  ASRDEC_CHECK_ARG(given->struct_size <= sizeof(Config), name, ".struct_size = ", given->struct_size,
                   " is larger than this library's ", sizeof(Config),
                   " bytes: the program was built against a newer asrdec");
  std::memcpy(static_cast<void*>(&config), given, given->struct_size);
  return config;
}

template <class T>
void check_out(T** out) {
  ASRDEC_CHECK_ARG(out != nullptr, "out: NULL result pointer");
  *out = nullptr;
}

template <class T>
T& handle(T* h, const char* name) {
  ASRDEC_CHECK_ARG(h != nullptr, name, ": NULL handle");
  return *h;
}

Device device_of(const char* device) { return device == nullptr ? Device::parse("auto") : Device::parse(device); }

GraphMode graph_mode_of(const char* name) { return name == nullptr ? GraphMode::automatic : parse_graph_mode(name); }

std::shared_ptr<const NgramLm> lm_of(const asrdec_ngram_lm* lm) { return lm == nullptr ? nullptr : lm->lm; }

std::shared_ptr<const BoostingTree> tree_of(const asrdec_boosting_tree* tree) {
  return tree == nullptr ? nullptr : tree->tree;
}

bool flag(std::int32_t value, const char* name) {
  ASRDEC_CHECK_ARG(value == 0 || value == 1, name, " = ", value, ": expected 0 or 1");
  return value == 1;
}

asrdec_results* one_per_utterance(std::vector<Hypothesis> hypotheses) {
  auto results = std::make_unique<asrdec_results>();
  results->utterances.reserve(hypotheses.size());
  for (Hypothesis& h : hypotheses) {
    results->utterances.emplace_back();
    results->utterances.back().push_back(std::move(h));
  }
  return results.release();
}

asrdec_results* nbest(std::vector<std::vector<Hypothesis>> lists) {
  auto results = std::make_unique<asrdec_results>();
  results->utterances = std::move(lists);
  return results.release();
}

/** A decoder's decode(): one hypothesis per utterance. `input` is logprobs (CTC) or enc_proj (transducers). */
template <class Handle>
asrdec_status decode_best(Handle* decoder, const DLTensor* input, const char* input_name, const DLTensor* lengths,
                          void* stream, asrdec_results** out) {
  return guarded([&] {
    check_out(out);
    *out = one_per_utterance(handle(decoder, "decoder")
                                 .decoder.decode(tensor_view(input, input_name), tensor_view(lengths, "lengths"),
                                                 static_cast<StreamHandle>(stream)));
  });
}

/** A beam decoder's decode_nbest(): each utterance's list, best first. */
template <class Handle>
asrdec_status decode_lists(Handle* decoder, const DLTensor* input, const char* input_name, const DLTensor* lengths,
                           void* stream, asrdec_results** out) {
  return guarded([&] {
    check_out(out);
    *out = nbest(handle(decoder, "decoder")
                     .decoder.decode_nbest(tensor_view(input, input_name), tensor_view(lengths, "lengths"),
                                           static_cast<StreamHandle>(stream)));
  });
}

/** Hypothesis k of `utterance` in `results`; InvalidArgument naming the index that is out of range. */
const Hypothesis& hypothesis_at(const asrdec_results* results, std::int64_t utterance, std::int64_t k) {
  const asrdec_results& r = handle(results, "results");
  const auto u = static_cast<std::size_t>(utterance);
  ASRDEC_CHECK_ARG(utterance >= 0 && u < r.utterances.size(), "utterance = ", utterance, " is outside [0, ",
                   r.utterances.size(), ")");
  const auto& list = r.utterances[u];
  ASRDEC_CHECK_ARG(k >= 0 && static_cast<std::size_t>(k) < list.size(), "k = ", k, " is outside [0, ", list.size(),
                   ") for utterance ", utterance);
  return list[static_cast<std::size_t>(k)];
}

/** The caller's chunk rows as the C++ ChunkRow list; flags must be 0 or 1. */
std::vector<ChunkRow> chunk_rows(const asrdec_chunk_row* rows, std::int64_t num_rows) {
  ASRDEC_CHECK_ARG(num_rows >= 0 && num_rows <= BatchLimits::kMaxBatch, "num_rows = ", num_rows, " is outside [0, ",
                   BatchLimits::kMaxBatch, "]");
  ASRDEC_CHECK_ARG(num_rows == 0 || rows != nullptr, "rows: NULL with num_rows = ", num_rows);
  std::vector<ChunkRow> out(static_cast<std::size_t>(num_rows));
  for (std::int64_t b = 0; b < num_rows; ++b) {
    const asrdec_chunk_row& row = rows[b];
    ChunkRow& r = out[static_cast<std::size_t>(b)];
    r.utterance = row.utterance;
    r.first = flag(row.first, detail::concat("rows[", b, "].first").c_str());
    r.last = flag(row.last, detail::concat("rows[", b, "].last").c_str());
    r.phrase_list = row.phrase_list;
  }
  return out;
}

/** A decoder's decode_chunks(): each row's hypothesis so far. */
template <class Handle>
asrdec_status decode_chunk_rows(Handle* decoder, const asrdec_chunk_row* rows, std::int64_t num_rows,
                                const DLTensor* input, const char* input_name, const DLTensor* lengths, void* stream,
                                asrdec_results** out) {
  return guarded([&] {
    check_out(out);
    auto& d = handle(decoder, "decoder");
    *out =
        one_per_utterance(d.decoder.decode_chunks(chunk_rows(rows, num_rows), tensor_view(input, input_name),
                                                  tensor_view(lengths, "lengths"), static_cast<StreamHandle>(stream)));
  });
}

template <class Handle>
asrdec_status cancel_utterance(Handle* decoder, std::int64_t utterance, std::int32_t* was_open) {
  return guarded([&] {
    const bool open = handle(decoder, "decoder").decoder.cancel(utterance);
    if (was_open != nullptr) *was_open = open ? 1 : 0;
  });
}

template <class Handle>
std::int64_t open_utterances_of(const Handle* decoder) {
  return decoder == nullptr ? 0 : decoder->decoder.open_utterances();
}

/** BatchLimits from the limit fields of the caller's config. */
template <class Config>
BatchLimits limits_of(const Config* given, void (*init)(Config*), const char* name) {
  const Config c = read_config(given, init, name);
  BatchLimits limits;
  limits.max_batch = c.max_batch;
  limits.max_frames = c.max_frames;
  limits.max_open_utterances = c.max_open_utterances;
  return limits;
}

template <class Config>
void init_limits(Config* config) {
  const BatchLimits defaults;
  config->max_batch = defaults.max_batch;
  config->max_frames = defaults.max_frames;
  config->max_open_utterances = defaults.max_open_utterances;
}

CtcGreedyConfig ctc_greedy_config(const asrdec_ctc_greedy_config* given) {
  const asrdec_ctc_greedy_config c = read_config(given, asrdec_ctc_greedy_config_init, "asrdec_ctc_greedy_config");
  CtcGreedyConfig config;
  config.blank_id = c.blank_id;
  config.graph_mode = graph_mode_of(c.graph_mode);
  config.max_device_bytes = c.max_device_bytes;
  config.check_values = flag(c.check_values, "asrdec_ctc_greedy_config.check_values");
  config.lm = lm_of(c.lm);
  config.lm_weight = c.lm_weight;
  config.boost = tree_of(c.boost);
  config.boost_weight = c.boost_weight;
  config.threads = c.threads;
  return config;
}

CtcBeamConfig ctc_beam_config(const asrdec_ctc_beam_config* given) {
  const asrdec_ctc_beam_config c = read_config(given, asrdec_ctc_beam_config_init, "asrdec_ctc_beam_config");
  CtcBeamConfig config;
  config.blank_id = c.blank_id;
  config.beam = c.beam;
  config.beam_beta = c.beam_beta;
  config.beam_threshold = c.beam_threshold;
  config.lm = lm_of(c.lm);
  config.lm_weight = c.lm_weight;
  config.boost = tree_of(c.boost);
  config.boost_weight = c.boost_weight;
  config.check_values = flag(c.check_values, "asrdec_ctc_beam_config.check_values");
  config.graph_mode = graph_mode_of(c.graph_mode);
  config.max_device_bytes = c.max_device_bytes;
  config.threads = c.threads;
  return config;
}

TransducerGreedyConfig transducer_greedy_config(const asrdec_transducer_greedy_config* given) {
  const asrdec_transducer_greedy_config c =
      read_config(given, asrdec_transducer_greedy_config_init, "asrdec_transducer_greedy_config");
  TransducerGreedyConfig config;
  if (c.algorithm != nullptr) config.algorithm = parse_greedy_algorithm(c.algorithm);
  config.window = c.window;
  config.max_symbols_per_frame = c.max_symbols_per_frame;
  config.graph_mode = graph_mode_of(c.graph_mode);
  config.max_device_bytes = c.max_device_bytes;
  config.check_values = flag(c.check_values, "asrdec_transducer_greedy_config.check_values");
  config.lm = lm_of(c.lm);
  config.lm_weight = c.lm_weight;
  config.boost = tree_of(c.boost);
  config.boost_weight = c.boost_weight;
  config.threads = c.threads;
  return config;
}

TransducerBeamConfig transducer_beam_config(const asrdec_transducer_beam_config* given) {
  const asrdec_transducer_beam_config c =
      read_config(given, asrdec_transducer_beam_config_init, "asrdec_transducer_beam_config");
  TransducerBeamConfig config;
  if (c.algorithm != nullptr) config.algorithm = parse_beam_algorithm(c.algorithm);
  config.beam = c.beam;
  config.max_symbols_per_frame = c.max_symbols_per_frame;
  config.aes_num_steps = c.aes_num_steps;
  config.aes_expansion_beta = c.aes_expansion_beta;
  config.aes_expansion_gamma = c.aes_expansion_gamma;
  config.wind_window = c.wind_window;
  config.length_normalized = flag(c.length_normalized, "asrdec_transducer_beam_config.length_normalized");
  config.lm = lm_of(c.lm);
  config.lm_weight = c.lm_weight;
  config.boost = tree_of(c.boost);
  config.boost_weight = c.boost_weight;
  if (c.pruning != nullptr) config.pruning = parse_fusion_pruning(c.pruning);
  if (c.blank_scoring != nullptr) config.blank_scoring = parse_blank_lm_scoring(c.blank_scoring);
  config.graph_mode = graph_mode_of(c.graph_mode);
  config.max_device_bytes = c.max_device_bytes;
  config.check_values = flag(c.check_values, "asrdec_transducer_beam_config.check_values");
  config.threads = c.threads;
  return config;
}

WfstDecoderConfig wfst_config(const asrdec_wfst_decoder_config* given) {
  const asrdec_wfst_decoder_config c =
      read_config(given, asrdec_wfst_decoder_config_init, "asrdec_wfst_decoder_config");
  WfstDecoderConfig config;
  config.beam = c.beam;
  config.max_active = c.max_active;
  config.max_tokens_per_frame = c.max_tokens_per_frame;
  config.acoustic_scale = c.acoustic_scale;
  config.use_final_probs = flag(c.use_final_probs, "asrdec_wfst_decoder_config.use_final_probs");
  config.blank_id = c.blank_id;
  config.check_values = flag(c.check_values, "asrdec_wfst_decoder_config.check_values");
  config.graph_mode = graph_mode_of(c.graph_mode);
  config.max_device_bytes = c.max_device_bytes;
  config.threads = c.threads;
  config.max_open_utterances = c.max_open_utterances;
  return config;
}

LmVocabularyKind lm_vocabulary_of(const char* name) {
  if (name == nullptr || std::strcmp(name, "token_level") == 0) return LmVocabularyKind::token_level;
  if (std::strcmp(name, "arpa_words") == 0) return LmVocabularyKind::arpa_words;
  if (std::strcmp(name, "symbol_table") == 0) return LmVocabularyKind::symbol_table;
  throw InvalidArgument(detail::concat("asrdec_ngram_lm_options.vocabulary = '", name,
                                       "': expected token_level, arpa_words or symbol_table"));
}

}  // namespace
}  // namespace asrdec::c_api

using asrdec::c_api::guarded;
using asrdec::c_api::handle;

extern "C" {

/* CPU threads */

asrdec_status asrdec_set_cpu_threads(int32_t threads) {
  return guarded([&] { asrdec::set_cpu_threads(threads); });
}

int32_t asrdec_cpu_threads(void) {
  try {
    return asrdec::cpu_threads();
  } catch (...) {
    return 1;  // the pool could not start (no threads): calls run on their own thread
  }
}

/* results */

int64_t asrdec_results_utterances(const asrdec_results* results) {
  return results == nullptr ? 0 : static_cast<int64_t>(results->utterances.size());
}

int64_t asrdec_results_hypotheses(const asrdec_results* results, int64_t utterance) {
  if (results == nullptr || utterance < 0 || utterance >= static_cast<int64_t>(results->utterances.size())) {
    return 0;
  }
  return static_cast<int64_t>(results->utterances[static_cast<std::size_t>(utterance)].size());
}

asrdec_status asrdec_results_get(const asrdec_results* results, int64_t utterance, int64_t k, asrdec_hypothesis* out) {
  return guarded([&] {
    ASRDEC_CHECK_ARG(out != nullptr, "out: NULL hypothesis pointer");
    const asrdec::Hypothesis& h = asrdec::c_api::hypothesis_at(results, utterance, k);
    out->num_tokens = static_cast<int64_t>(h.tokens.size());
    out->tokens = h.tokens.data();
    out->timestamps = h.timestamps.data();
    out->durations = h.durations.empty() ? nullptr : h.durations.data();
    out->token_scores = h.token_scores.empty() ? nullptr : h.token_scores.data();
    out->score = h.score;
    out->am_score = h.am_score;
    out->lm_score = h.lm_score;
    out->boost_score = h.boost_score;
    out->is_final = h.is_final ? 1 : 0;
    out->ranking_score = h.ranking_score;
  });
}

asrdec_status asrdec_results_token_confidences(const asrdec_results* results, int64_t utterance, int64_t k,
                                               const float** out) {
  return guarded([&] {
    ASRDEC_CHECK_ARG(out != nullptr, "out: NULL pointer");
    *out = nullptr;
    const auto& confidences = asrdec::c_api::hypothesis_at(results, utterance, k).token_confidences;
    *out = confidences.empty() ? nullptr : confidences.data();
  });
}

void asrdec_results_free(asrdec_results* results) { delete results; }

/* n-gram LM */

void asrdec_ngram_lm_options_init(asrdec_ngram_lm_options* options) {
  if (options == nullptr) return;
  const asrdec::NgramLmOptions defaults;
  *options = asrdec_ngram_lm_options{};
  options->struct_size = sizeof(asrdec_ngram_lm_options);
  options->vocabulary = nullptr;
  options->vocab_size = defaults.vocab_size;
  options->symbol_table = nullptr;
  options->normalize_unk = defaults.normalize_unk ? 1 : 0;
  options->clamp_positive_probabilities = defaults.clamp_positive_probabilities ? 1 : 0;
}

asrdec_status asrdec_ngram_lm_load(const char* path, const asrdec_ngram_lm_options* options, const char* device,
                                   asrdec_ngram_lm** out) {
  return guarded([&] {
    asrdec::c_api::check_out(out);
    ASRDEC_CHECK_ARG(path != nullptr, "path: NULL");
    const asrdec_ngram_lm_options o =
        asrdec::c_api::read_config(options, asrdec_ngram_lm_options_init, "asrdec_ngram_lm_options");
    asrdec::NgramLmOptions lm_options;
    lm_options.vocabulary = asrdec::c_api::lm_vocabulary_of(o.vocabulary);
    lm_options.vocab_size = o.vocab_size;
    lm_options.symbol_table = o.symbol_table == nullptr ? "" : o.symbol_table;
    lm_options.normalize_unk = asrdec::c_api::flag(o.normalize_unk, "asrdec_ngram_lm_options.normalize_unk");
    lm_options.clamp_positive_probabilities =
        asrdec::c_api::flag(o.clamp_positive_probabilities, "asrdec_ngram_lm_options.clamp_positive_probabilities");
    auto lm = std::make_shared<const asrdec::NgramLm>(
        asrdec::NgramLm::load(path, lm_options, asrdec::c_api::device_of(device)));
    *out = new asrdec_ngram_lm{std::move(lm)};
  });
}

void asrdec_ngram_lm_free(asrdec_ngram_lm* lm) { delete lm; }

/* boosting */

void asrdec_boosting_tree_options_init(asrdec_boosting_tree_options* options) {
  if (options == nullptr) return;
  const asrdec::BoostingTreeOptions defaults;
  *options = asrdec_boosting_tree_options{};
  options->struct_size = sizeof(asrdec_boosting_tree_options);
  options->context_score = defaults.context_score;
  options->depth_scaling = defaults.depth_scaling;
  options->unk_score = defaults.unk_score;
  options->final_eos_score = defaults.final_eos_score;
  options->uniform_weights = defaults.uniform_weights ? 1 : 0;
}

asrdec_status asrdec_boosting_tree_build(const int32_t* tokens, const int64_t* phrase_lengths, int64_t num_phrases,
                                         int64_t vocab_size, const asrdec_boosting_tree_options* options,
                                         const char* device, asrdec_boosting_tree** out) {
  return guarded([&] {
    asrdec::c_api::check_out(out);
    ASRDEC_CHECK_ARG(num_phrases >= 0, "num_phrases = ", num_phrases, " is negative");
    ASRDEC_CHECK_ARG(num_phrases == 0 || phrase_lengths != nullptr, "phrase_lengths: NULL");
    asrdec::PhraseList phrases;
    std::int64_t offset = 0;
    for (std::int64_t i = 0; i < num_phrases; ++i) {
      const std::int64_t length = phrase_lengths[i];
      ASRDEC_CHECK_ARG(length >= 0 && length <= (std::int64_t{1} << 20), "phrase_lengths[", i, "] = ", length,
                       " is outside [0, 2^20]");
      ASRDEC_CHECK_ARG(length == 0 || tokens != nullptr, "tokens: NULL");
      phrases.emplace_back(tokens + offset, tokens + offset + length);
      offset += length;
    }
    const asrdec_boosting_tree_options o =
        asrdec::c_api::read_config(options, asrdec_boosting_tree_options_init, "asrdec_boosting_tree_options");
    asrdec::BoostingTreeOptions tree_options;
    tree_options.context_score = o.context_score;
    tree_options.depth_scaling = o.depth_scaling;
    tree_options.unk_score = o.unk_score;
    tree_options.final_eos_score = o.final_eos_score;
    tree_options.uniform_weights =
        asrdec::c_api::flag(o.uniform_weights, "asrdec_boosting_tree_options.uniform_weights");
    auto tree = std::make_shared<const asrdec::BoostingTree>(
        asrdec::BoostingTree::build({phrases}, vocab_size, tree_options, asrdec::c_api::device_of(device)));
    *out = new asrdec_boosting_tree{std::move(tree)};
  });
}

void asrdec_boosting_tree_free(asrdec_boosting_tree* tree) { delete tree; }

/* CTC greedy */

void asrdec_ctc_greedy_config_init(asrdec_ctc_greedy_config* config) {
  if (config == nullptr) return;
  const asrdec::CtcGreedyConfig defaults;
  *config = asrdec_ctc_greedy_config{};
  config->struct_size = sizeof(asrdec_ctc_greedy_config);
  config->blank_id = defaults.blank_id;
  config->graph_mode = nullptr;
  config->max_device_bytes = defaults.max_device_bytes;
  config->check_values = defaults.check_values ? 1 : 0;
  config->lm_weight = defaults.lm_weight;
  config->boost_weight = defaults.boost_weight;
  config->threads = defaults.threads;
  asrdec::c_api::init_limits(config);
}

asrdec_status asrdec_ctc_greedy_create(const char* device, const asrdec_ctc_greedy_config* config,
                                       asrdec_ctc_greedy_decoder** out) {
  return guarded([&] {
    asrdec::c_api::check_out(out);
    *out = new asrdec_ctc_greedy_decoder{asrdec::CtcGreedyDecoder(
        asrdec::c_api::device_of(device), asrdec::c_api::ctc_greedy_config(config),
        asrdec::c_api::limits_of(config, asrdec_ctc_greedy_config_init, "asrdec_ctc_greedy_config"))};
  });
}

asrdec_status asrdec_ctc_greedy_decode(asrdec_ctc_greedy_decoder* decoder, const DLTensor* logprobs,
                                       const DLTensor* lengths, void* stream, asrdec_results** out) {
  return asrdec::c_api::decode_best(decoder, logprobs, "logprobs", lengths, stream, out);
}

asrdec_status asrdec_ctc_greedy_decode_chunks(asrdec_ctc_greedy_decoder* decoder, const asrdec_chunk_row* rows,
                                              int64_t num_rows, const DLTensor* logprobs, const DLTensor* lengths,
                                              void* stream, asrdec_results** out) {
  return asrdec::c_api::decode_chunk_rows(decoder, rows, num_rows, logprobs, "logprobs", lengths, stream, out);
}

asrdec_status asrdec_ctc_greedy_cancel(asrdec_ctc_greedy_decoder* decoder, int64_t utterance, int32_t* was_open) {
  return asrdec::c_api::cancel_utterance(decoder, utterance, was_open);
}

int64_t asrdec_ctc_greedy_open_utterances(const asrdec_ctc_greedy_decoder* decoder) {
  return asrdec::c_api::open_utterances_of(decoder);
}

void asrdec_ctc_greedy_free(asrdec_ctc_greedy_decoder* decoder) { delete decoder; }

/* CTC beam */

void asrdec_ctc_beam_config_init(asrdec_ctc_beam_config* config) {
  if (config == nullptr) return;
  const asrdec::CtcBeamConfig defaults;
  *config = asrdec_ctc_beam_config{};
  config->struct_size = sizeof(asrdec_ctc_beam_config);
  config->blank_id = defaults.blank_id;
  config->beam = defaults.beam;
  config->beam_beta = defaults.beam_beta;
  config->beam_threshold = defaults.beam_threshold;
  config->lm_weight = defaults.lm_weight;
  config->boost_weight = defaults.boost_weight;
  config->check_values = defaults.check_values ? 1 : 0;
  config->graph_mode = nullptr;
  config->max_device_bytes = defaults.max_device_bytes;
  config->threads = defaults.threads;
  asrdec::c_api::init_limits(config);
}

asrdec_status asrdec_ctc_beam_create(const char* device, const asrdec_ctc_beam_config* config,
                                     asrdec_ctc_beam_decoder** out) {
  return guarded([&] {
    asrdec::c_api::check_out(out);
    *out = new asrdec_ctc_beam_decoder{asrdec::CtcBeamDecoder(
        asrdec::c_api::device_of(device), asrdec::c_api::ctc_beam_config(config),
        asrdec::c_api::limits_of(config, asrdec_ctc_beam_config_init, "asrdec_ctc_beam_config"))};
  });
}

asrdec_status asrdec_ctc_beam_decode(asrdec_ctc_beam_decoder* decoder, const DLTensor* logprobs,
                                     const DLTensor* lengths, void* stream, asrdec_results** out) {
  return asrdec::c_api::decode_best(decoder, logprobs, "logprobs", lengths, stream, out);
}

asrdec_status asrdec_ctc_beam_decode_nbest(asrdec_ctc_beam_decoder* decoder, const DLTensor* logprobs,
                                           const DLTensor* lengths, void* stream, asrdec_results** out) {
  return asrdec::c_api::decode_lists(decoder, logprobs, "logprobs", lengths, stream, out);
}

asrdec_status asrdec_ctc_beam_decode_chunks(asrdec_ctc_beam_decoder* decoder, const asrdec_chunk_row* rows,
                                            int64_t num_rows, const DLTensor* logprobs, const DLTensor* lengths,
                                            void* stream, asrdec_results** out) {
  return asrdec::c_api::decode_chunk_rows(decoder, rows, num_rows, logprobs, "logprobs", lengths, stream, out);
}

asrdec_status asrdec_ctc_beam_cancel(asrdec_ctc_beam_decoder* decoder, int64_t utterance, int32_t* was_open) {
  return asrdec::c_api::cancel_utterance(decoder, utterance, was_open);
}

int64_t asrdec_ctc_beam_open_utterances(const asrdec_ctc_beam_decoder* decoder) {
  return asrdec::c_api::open_utterances_of(decoder);
}

void asrdec_ctc_beam_free(asrdec_ctc_beam_decoder* decoder) { delete decoder; }

/* transducers */

asrdec_status asrdec_transducer_model_load(const char* path, const char* device, asrdec_transducer_model** out) {
  return guarded([&] {
    asrdec::c_api::check_out(out);
    ASRDEC_CHECK_ARG(path != nullptr, "path: NULL");
    auto model = std::make_shared<const asrdec::TransducerModel>(
        asrdec::TransducerModel::load(path, asrdec::c_api::device_of(device)));
    *out = new asrdec_transducer_model{std::move(model)};
  });
}

int64_t asrdec_transducer_model_vocab_size(const asrdec_transducer_model* model) {
  return model == nullptr ? 0 : model->model->vocab_size();
}

int64_t asrdec_transducer_model_joint_hidden(const asrdec_transducer_model* model) {
  return model == nullptr ? 0 : model->model->joint_hidden();
}

void asrdec_transducer_model_free(asrdec_transducer_model* model) { delete model; }

void asrdec_transducer_greedy_config_init(asrdec_transducer_greedy_config* config) {
  if (config == nullptr) return;
  const asrdec::TransducerGreedyConfig defaults;
  *config = asrdec_transducer_greedy_config{};
  config->struct_size = sizeof(asrdec_transducer_greedy_config);
  config->algorithm = nullptr;
  config->window = defaults.window;
  config->max_symbols_per_frame = defaults.max_symbols_per_frame;
  config->graph_mode = nullptr;
  config->max_device_bytes = defaults.max_device_bytes;
  config->check_values = defaults.check_values ? 1 : 0;
  config->lm_weight = defaults.lm_weight;
  config->boost_weight = defaults.boost_weight;
  config->threads = defaults.threads;
  asrdec::c_api::init_limits(config);
}

asrdec_status asrdec_transducer_greedy_create(const asrdec_transducer_model* model,
                                              const asrdec_transducer_greedy_config* config,
                                              asrdec_transducer_greedy_decoder** out) {
  return guarded([&] {
    asrdec::c_api::check_out(out);
    const auto& m = handle(model, "model");
    *out = new asrdec_transducer_greedy_decoder{
        m.model, asrdec::TransducerGreedyDecoder(*m.model, asrdec::c_api::transducer_greedy_config(config),
                                                 asrdec::c_api::limits_of(config, asrdec_transducer_greedy_config_init,
                                                                          "asrdec_transducer_greedy_config"))};
  });
}

asrdec_status asrdec_transducer_greedy_decode(asrdec_transducer_greedy_decoder* decoder, const DLTensor* enc_proj,
                                              const DLTensor* lengths, void* stream, asrdec_results** out) {
  return asrdec::c_api::decode_best(decoder, enc_proj, "enc_proj", lengths, stream, out);
}

asrdec_status asrdec_transducer_greedy_decode_chunks(asrdec_transducer_greedy_decoder* decoder,
                                                     const asrdec_chunk_row* rows, int64_t num_rows,
                                                     const DLTensor* enc_proj, const DLTensor* lengths, void* stream,
                                                     asrdec_results** out) {
  return asrdec::c_api::decode_chunk_rows(decoder, rows, num_rows, enc_proj, "enc_proj", lengths, stream, out);
}

asrdec_status asrdec_transducer_greedy_cancel(asrdec_transducer_greedy_decoder* decoder, int64_t utterance,
                                              int32_t* was_open) {
  return asrdec::c_api::cancel_utterance(decoder, utterance, was_open);
}

int64_t asrdec_transducer_greedy_open_utterances(const asrdec_transducer_greedy_decoder* decoder) {
  return asrdec::c_api::open_utterances_of(decoder);
}

void asrdec_transducer_greedy_free(asrdec_transducer_greedy_decoder* decoder) { delete decoder; }

void asrdec_transducer_beam_config_init(asrdec_transducer_beam_config* config) {
  if (config == nullptr) return;
  const asrdec::TransducerBeamConfig defaults;
  *config = asrdec_transducer_beam_config{};
  config->struct_size = sizeof(asrdec_transducer_beam_config);
  config->algorithm = nullptr;
  config->beam = defaults.beam;
  config->max_symbols_per_frame = defaults.max_symbols_per_frame;
  config->aes_num_steps = defaults.aes_num_steps;
  config->aes_expansion_beta = defaults.aes_expansion_beta;
  config->aes_expansion_gamma = defaults.aes_expansion_gamma;
  config->wind_window = defaults.wind_window;
  config->length_normalized = defaults.length_normalized ? 1 : 0;
  config->lm_weight = defaults.lm_weight;
  config->boost_weight = defaults.boost_weight;
  config->pruning = nullptr;
  config->blank_scoring = nullptr;
  config->graph_mode = nullptr;
  config->max_device_bytes = defaults.max_device_bytes;
  config->check_values = defaults.check_values ? 1 : 0;
  config->threads = defaults.threads;
  asrdec::c_api::init_limits(config);
}

asrdec_status asrdec_transducer_beam_create(const asrdec_transducer_model* model,
                                            const asrdec_transducer_beam_config* config,
                                            asrdec_transducer_beam_decoder** out) {
  return guarded([&] {
    asrdec::c_api::check_out(out);
    const auto& m = handle(model, "model");
    *out = new asrdec_transducer_beam_decoder{
        m.model, asrdec::TransducerBeamDecoder(*m.model, asrdec::c_api::transducer_beam_config(config),
                                               asrdec::c_api::limits_of(config, asrdec_transducer_beam_config_init,
                                                                        "asrdec_transducer_beam_config"))};
  });
}

asrdec_status asrdec_transducer_beam_decode(asrdec_transducer_beam_decoder* decoder, const DLTensor* enc_proj,
                                            const DLTensor* lengths, void* stream, asrdec_results** out) {
  return asrdec::c_api::decode_best(decoder, enc_proj, "enc_proj", lengths, stream, out);
}

asrdec_status asrdec_transducer_beam_decode_nbest(asrdec_transducer_beam_decoder* decoder, const DLTensor* enc_proj,
                                                  const DLTensor* lengths, void* stream, asrdec_results** out) {
  return asrdec::c_api::decode_lists(decoder, enc_proj, "enc_proj", lengths, stream, out);
}

asrdec_status asrdec_transducer_beam_decode_chunks(asrdec_transducer_beam_decoder* decoder,
                                                   const asrdec_chunk_row* rows, int64_t num_rows,
                                                   const DLTensor* enc_proj, const DLTensor* lengths, void* stream,
                                                   asrdec_results** out) {
  return asrdec::c_api::decode_chunk_rows(decoder, rows, num_rows, enc_proj, "enc_proj", lengths, stream, out);
}

asrdec_status asrdec_transducer_beam_cancel(asrdec_transducer_beam_decoder* decoder, int64_t utterance,
                                            int32_t* was_open) {
  return asrdec::c_api::cancel_utterance(decoder, utterance, was_open);
}

int64_t asrdec_transducer_beam_open_utterances(const asrdec_transducer_beam_decoder* decoder) {
  return asrdec::c_api::open_utterances_of(decoder);
}

void asrdec_transducer_beam_free(asrdec_transducer_beam_decoder* decoder) { delete decoder; }

/* WFST */

asrdec_status asrdec_wfst_graph_load(const char* path, asrdec_wfst_graph** out) {
  return guarded([&] {
    asrdec::c_api::check_out(out);
    ASRDEC_CHECK_ARG(path != nullptr, "path: NULL");
    *out = new asrdec_wfst_graph{asrdec::WfstGraph::load(path)};
  });
}

void asrdec_wfst_graph_free(asrdec_wfst_graph* graph) { delete graph; }

void asrdec_wfst_decoder_config_init(asrdec_wfst_decoder_config* config) {
  if (config == nullptr) return;
  const asrdec::WfstDecoderConfig defaults;
  *config = asrdec_wfst_decoder_config{};
  config->struct_size = sizeof(asrdec_wfst_decoder_config);
  config->beam = defaults.beam;
  config->max_active = defaults.max_active;
  config->max_tokens_per_frame = defaults.max_tokens_per_frame;
  config->acoustic_scale = defaults.acoustic_scale;
  config->use_final_probs = defaults.use_final_probs ? 1 : 0;
  config->blank_id = defaults.blank_id;
  config->check_values = defaults.check_values ? 1 : 0;
  config->graph_mode = nullptr;
  config->max_device_bytes = defaults.max_device_bytes;
  config->threads = defaults.threads;
  config->max_open_utterances = defaults.max_open_utterances;
}

asrdec_status asrdec_wfst_decoder_create(const asrdec_wfst_graph* graph, const asrdec_wfst_decoder_config* config,
                                         const char* device, asrdec_wfst_decoder** out) {
  return guarded([&] {
    asrdec::c_api::check_out(out);
    const auto& g = handle(graph, "graph");
    *out = new asrdec_wfst_decoder{
        asrdec::WfstDecoder(g.graph, asrdec::c_api::wfst_config(config), asrdec::c_api::device_of(device))};
  });
}

asrdec_status asrdec_wfst_decode(asrdec_wfst_decoder* decoder, const DLTensor* logprobs, const DLTensor* lengths,
                                 void* stream, asrdec_wfst_results** out) {
  return guarded([&] {
    asrdec::c_api::check_out(out);
    auto& d = handle(decoder, "decoder");
    auto results = std::make_unique<asrdec_wfst_results>();
    results->utterances =
        d.decoder.decode(asrdec::c_api::tensor_view(logprobs, "logprobs"),
                         asrdec::c_api::tensor_view(lengths, "lengths"), {}, static_cast<asrdec::StreamHandle>(stream));
    *out = results.release();
  });
}

int64_t asrdec_wfst_results_utterances(const asrdec_wfst_results* results) {
  return results == nullptr ? 0 : static_cast<int64_t>(results->utterances.size());
}

asrdec_status asrdec_wfst_results_get(const asrdec_wfst_results* results, int64_t utterance, asrdec_wfst_result* out) {
  return guarded([&] {
    const asrdec_wfst_results& r = handle(results, "results");
    ASRDEC_CHECK_ARG(out != nullptr, "out: NULL result pointer");
    ASRDEC_CHECK_ARG(utterance >= 0 && static_cast<std::size_t>(utterance) < r.utterances.size(),
                     "utterance = ", utterance, " is outside [0, ", r.utterances.size(), ")");
    const asrdec::WfstResult& w = r.utterances[static_cast<std::size_t>(utterance)];
    out->num_words = static_cast<int64_t>(w.words.size());
    out->words = w.words.data();
    out->word_start_frames = w.word_start_frames.data();
    out->word_end_frames = w.word_end_frames.data();
    out->cost = w.cost;
    out->graph_cost = w.graph_cost;
    out->acoustic_cost = w.acoustic_cost;
    out->reached_final = w.reached_final ? 1 : 0;
    out->overflow = w.overflow ? 1 : 0;
    out->frames = w.frames;
  });
}

void asrdec_wfst_results_free(asrdec_wfst_results* results) { delete results; }

asrdec_status asrdec_wfst_decode_chunks(asrdec_wfst_decoder* decoder, const asrdec_chunk_row* rows, int64_t num_rows,
                                        const DLTensor* logprobs, const DLTensor* lengths, void* stream,
                                        asrdec_wfst_results** out) {
  return guarded([&] {
    asrdec::c_api::check_out(out);
    auto& d = handle(decoder, "decoder");
    auto results = std::make_unique<asrdec_wfst_results>();
    results->utterances = d.decoder.decode_chunks(
        asrdec::c_api::chunk_rows(rows, num_rows), asrdec::c_api::tensor_view(logprobs, "logprobs"),
        asrdec::c_api::tensor_view(lengths, "lengths"), {}, static_cast<asrdec::StreamHandle>(stream));
    *out = results.release();
  });
}

asrdec_status asrdec_wfst_cancel(asrdec_wfst_decoder* decoder, int64_t utterance, int32_t* was_open) {
  return asrdec::c_api::cancel_utterance(decoder, utterance, was_open);
}

int64_t asrdec_wfst_open_utterances(const asrdec_wfst_decoder* decoder) {
  return asrdec::c_api::open_utterances_of(decoder);
}

void asrdec_wfst_decoder_free(asrdec_wfst_decoder* decoder) { delete decoder; }

}  // extern "C"
