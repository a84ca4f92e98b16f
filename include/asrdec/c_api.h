/*
 * asrdec's C API: every decoder family, the n-gram LM and phrase boosting behind opaque handles, for engines
 * written in C, Rust, Go, C#, Java or anything else with a C foreign-function interface (docs/c-api.md).
 *
 * Conventions
 * - Every function that can fail returns an asrdec_status; ASRDEC_OK is 0. On failure, asrdec_last_error() returns
 *   the message of the C++ exception (naming the argument or file), valid on the calling thread until its next
 *   asrdec call. No function aborts, exits or lets an exception escape.
 * - Handles are created by *_create / *_load / *_build and released by *_free (NULL is a no-op). A handle may be
 *   freed while objects made from it live: decoders keep what they use (model, LM, tree, graph) alive.
 * - One decoder handle is used by one thread at a time (like the C++ objects); different handles are independent.
 * - Tensors are DLPack DLTensor (CPU or CUDA memory; the layout the C++ TensorView accepts: float32/float16/bfloat16
 *   inputs, int32/int64 lengths, any non-negative strides; strides NULL means row-major). Devices are strings:
 *   "cpu", "cuda", "cuda:1" or "auto". CUDA streams are passed as void* (a cudaStream_t; NULL is the legacy default
 *   stream).
 * - Configs are versioned structs: call the *_config_init function first (it sets struct_size and the defaults of
 *   the C++ config), then change fields. A library reads only the fields the caller's struct_size covers, so a
 *   program built against an older header keeps working; a struct larger than the library knows is refused.
 *   String fields (enum names as in the C++ API and the CLI) may be NULL for the default.
 * - Results belong to the library until asrdec_results_free / asrdec_wfst_results_free; the pointers a getter
 *   hands out stay valid until then.
 * - Streaming (asrdec/core/streaming.hpp, docs/streaming.md): each decoder's *_decode_chunks takes rows of frames,
 *   each continuing one of the caller's utterances (asrdec_chunk_row); *_cancel forgets an utterance without a last
 *   chunk. Chunks of an utterance give exactly the whole-utterance result on the same device.
 */
#ifndef ASRDEC_C_API_H
#define ASRDEC_C_API_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#include "asrdec/core/export.hpp"

#ifdef __cplusplus
extern "C" {
#endif

/** The version of this C interface: 2. It changes when a function or struct changes incompatibly. Version 2 added
 *  streaming, BatchLimits and threads to the decoder configs (new fields at their ends) and confidences. A version-2
 *  library reads a version-1 config by its struct_size, but a program built against version-1 headers must be
 *  rebuilt all the same: version 2's *_config_init functions write the whole, larger struct. */
#define ASRDEC_C_API_VERSION 2

typedef enum asrdec_status {
  ASRDEC_OK = 0,
  ASRDEC_INVALID_ARGUMENT = 1, /**< asrdec::InvalidArgument: shape, dtype, range, NaN input, misuse */
  ASRDEC_PARSE_ERROR = 2,      /**< asrdec::ParseError: a file's content is malformed */
  ASRDEC_UNSUPPORTED = 3,      /**< asrdec::Unsupported: e.g. CUDA asked for where there is none */
  ASRDEC_OUT_OF_MEMORY = 4,    /**< asrdec::OutOfMemory: host, pinned or device memory, or a configured cap */
  ASRDEC_CUDA_ERROR = 5,       /**< asrdec::CudaError */
  ASRDEC_INTERNAL_ERROR = 6,   /**< anything else (a bug: please report the message) */
  ASRDEC_FILE_ERROR = 7        /**< asrdec::FileError: a file could not be opened, read or written */
} asrdec_status;

/** The library's version, e.g. "0.1.0". */
ASRDEC_API const char* asrdec_version(void);
/** ASRDEC_C_API_VERSION of the library. */
ASRDEC_API int asrdec_c_api_version(void);
/** "ASRDEC_OK", "ASRDEC_INVALID_ARGUMENT", ...; "unknown asrdec_status" for any other value (an int, so that any
 *  value a caller holds is valid to pass). */
ASRDEC_API const char* asrdec_status_name(int status);
/** The message of the last failed call on this thread; "" when the last call succeeded. */
ASRDEC_API const char* asrdec_last_error(void);
/** Sizes the CPU thread pool every CPU decoder shares (asrdec/core/cpu_threads.hpp): threads in [0, 1024], 0 for
 *  every core; before the first CPU decoder is made. */
ASRDEC_API asrdec_status asrdec_set_cpu_threads(int32_t threads);
/** The size of the shared CPU thread pool (starting it). */
ASRDEC_API int32_t asrdec_cpu_threads(void);

/* ---------------------------------------------------------------------------------------------- results */

/** One hypothesis; the arrays have num_tokens entries. */
typedef struct asrdec_hypothesis {
  int64_t num_tokens;
  const int32_t* tokens;      /**< token ids, blank never included */
  const int32_t* timestamps;  /**< frame of each token */
  const int32_t* durations;   /**< TDT: duration of each token; NULL otherwise */
  const float* token_scores;  /**< per-token log-probabilities; NULL when the decoder gives none */
  float score;                /**< the total log-probability: am_score + lm_score + boost_score (docs/results.md) */
  float am_score;             /**< its acoustic part */
  float lm_score;             /**< its (weighted) language-model part */
  float boost_score;          /**< its (weighted) boosting part */
  int32_t is_final;           /**< 0 for a partial streaming result */
  float ranking_score;        /**< what N-best lists are sorted by: score, or score / (tokens + 1) */
} asrdec_hypothesis;

/** The hypotheses of a batch: per utterance, 1 (decode) or up to beam (decode_nbest, best first). */
typedef struct asrdec_results asrdec_results;
ASRDEC_API int64_t asrdec_results_utterances(const asrdec_results* results);
ASRDEC_API int64_t asrdec_results_hypotheses(const asrdec_results* results, int64_t utterance);
ASRDEC_API asrdec_status asrdec_results_get(const asrdec_results* results, int64_t utterance, int64_t k,
                                            asrdec_hypothesis* out);
/** The per-token confidences of hypothesis k of `utterance` (num_tokens values in [0, 1], Hypothesis::
 *  token_confidences; every token decoder gives them), or NULL in *out when the decoder gives none. */
ASRDEC_API asrdec_status asrdec_results_token_confidences(const asrdec_results* results, int64_t utterance, int64_t k,
                                                          const float** out);
ASRDEC_API void asrdec_results_free(asrdec_results* results);

/* --------------------------------------------------------------------------------------------- streaming */

/** One row of a *_decode_chunks call: row b of the input (lengths[b] frames, possibly 0) continues utterance
 *  rows[b].utterance (asrdec::ChunkRow). */
typedef struct asrdec_chunk_row {
  int64_t utterance;   /**< the caller's id for the utterance, any value; at most once per call */
  int32_t first;       /**< 1: the utterance starts here (an open utterance with the same id is discarded first) */
  int32_t last;        /**< 1: the utterance ends here: its result is final and its state is freed */
  int32_t phrase_list; /**< boosting: the tree's phrase list the utterance uses, read on its first chunk */
} asrdec_chunk_row;

/* ------------------------------------------------------------------------------- n-gram LM and boosting */

typedef struct asrdec_ngram_lm asrdec_ngram_lm;
typedef struct asrdec_ngram_lm_options {
  uint32_t struct_size;
  const char* vocabulary;       /**< "token_level" (default), "arpa_words" or "symbol_table" */
  int64_t vocab_size;           /**< token_level: V, the tokens the decoder scores (0: from the file) */
  const char* symbol_table;     /**< symbol_table: the words.txt path */
  int32_t normalize_unk;        /**< 0 or 1 */
  int32_t clamp_positive_probabilities; /**< 0 or 1 */
} asrdec_ngram_lm_options;
ASRDEC_API void asrdec_ngram_lm_options_init(asrdec_ngram_lm_options* options);
/** Loads an ARPA file (.arpa or .arpa.gz) or an LM image onto `device`. */
ASRDEC_API asrdec_status asrdec_ngram_lm_load(const char* path, const asrdec_ngram_lm_options* options,
                                              const char* device, asrdec_ngram_lm** out);
ASRDEC_API void asrdec_ngram_lm_free(asrdec_ngram_lm* lm);

typedef struct asrdec_boosting_tree asrdec_boosting_tree;
typedef struct asrdec_boosting_tree_options {
  uint32_t struct_size;
  float context_score;
  float depth_scaling;
  float unk_score;
  float final_eos_score;
  int32_t uniform_weights; /**< 0 or 1 */
} asrdec_boosting_tree_options;
ASRDEC_API void asrdec_boosting_tree_options_init(asrdec_boosting_tree_options* options);
/** Builds a tree over `vocab_size` tokens from one list of tokenised phrases: phrase i is the phrase_lengths[i]
 *  ids that follow phrase i − 1 in `tokens`. */
ASRDEC_API asrdec_status asrdec_boosting_tree_build(const int32_t* tokens, const int64_t* phrase_lengths,
                                                    int64_t num_phrases, int64_t vocab_size,
                                                    const asrdec_boosting_tree_options* options, const char* device,
                                                    asrdec_boosting_tree** out);
ASRDEC_API void asrdec_boosting_tree_free(asrdec_boosting_tree* tree);

/* -------------------------------------------------------------------------------------------------- CTC */

typedef struct asrdec_ctc_greedy_decoder asrdec_ctc_greedy_decoder;
typedef struct asrdec_ctc_greedy_config {
  uint32_t struct_size;
  int32_t blank_id;           /**< -1: the last column */
  const char* graph_mode;     /**< "auto", "conditional", "per_step", "eager" */
  int64_t max_device_bytes;   /**< 0: no cap */
  int32_t check_values;       /**< reject NaN and +inf inputs */
  const asrdec_ngram_lm* lm;  /**< or NULL */
  float lm_weight;
  const asrdec_boosting_tree* boost; /**< or NULL */
  float boost_weight;
  /* Added in C API version 2. The 64-bit fields come first, so that none lies in the tail padding of the version-1
   * struct (whose struct_size covers that padding). */
  int64_t max_batch;           /**< BatchLimits: utterances (or streamed rows) per call the decoder is sized for */
  int64_t max_frames;          /**< BatchLimits: frames per utterance it is sized for (calls beyond grow it) */
  int64_t max_open_utterances; /**< BatchLimits: streaming, the most utterances open at once */
  int32_t threads;             /**< CPU: threads a call's utterances are spread over, the caller's included; 0: all */
} asrdec_ctc_greedy_config;
ASRDEC_API void asrdec_ctc_greedy_config_init(asrdec_ctc_greedy_config* config);
ASRDEC_API asrdec_status asrdec_ctc_greedy_create(const char* device, const asrdec_ctc_greedy_config* config,
                                                  asrdec_ctc_greedy_decoder** out);
/** logprobs [B, T, V+1]; lengths [B] (host or the decoder's device). */
ASRDEC_API asrdec_status asrdec_ctc_greedy_decode(asrdec_ctc_greedy_decoder* decoder, const DLTensor* logprobs,
                                                  const DLTensor* lengths, void* stream, asrdec_results** out);
/** Streaming: `num_rows` rows; logprobs [num_rows, T, V+1], lengths [num_rows] on the host. Every row's hypothesis
 *  so far, is_final = its row's `last`. */
ASRDEC_API asrdec_status asrdec_ctc_greedy_decode_chunks(asrdec_ctc_greedy_decoder* decoder,
                                                         const asrdec_chunk_row* rows, int64_t num_rows,
                                                         const DLTensor* logprobs, const DLTensor* lengths,
                                                         void* stream, asrdec_results** out);
/** Forgets open utterance `utterance`; *was_open (may be NULL) says whether it was open. */
ASRDEC_API asrdec_status asrdec_ctc_greedy_cancel(asrdec_ctc_greedy_decoder* decoder, int64_t utterance,
                                                  int32_t* was_open);
/** Utterances started and not yet ended or cancelled (0 for NULL). */
ASRDEC_API int64_t asrdec_ctc_greedy_open_utterances(const asrdec_ctc_greedy_decoder* decoder);
ASRDEC_API void asrdec_ctc_greedy_free(asrdec_ctc_greedy_decoder* decoder);

typedef struct asrdec_ctc_beam_decoder asrdec_ctc_beam_decoder;
typedef struct asrdec_ctc_beam_config {
  uint32_t struct_size;
  int32_t blank_id;
  int32_t beam;
  float beam_beta;
  float beam_threshold;
  const asrdec_ngram_lm* lm;
  float lm_weight;
  const asrdec_boosting_tree* boost;
  float boost_weight;
  int32_t check_values;
  const char* graph_mode;
  int64_t max_device_bytes;
  /* Added in C API version 2 (the 64-bit fields first: see asrdec_ctc_greedy_config). */
  int64_t max_batch;
  int64_t max_frames;
  int64_t max_open_utterances;
  int32_t threads;             /**< as asrdec_ctc_greedy_config's */
} asrdec_ctc_beam_config;
ASRDEC_API void asrdec_ctc_beam_config_init(asrdec_ctc_beam_config* config);
ASRDEC_API asrdec_status asrdec_ctc_beam_create(const char* device, const asrdec_ctc_beam_config* config,
                                                asrdec_ctc_beam_decoder** out);
ASRDEC_API asrdec_status asrdec_ctc_beam_decode(asrdec_ctc_beam_decoder* decoder, const DLTensor* logprobs,
                                                const DLTensor* lengths, void* stream, asrdec_results** out);
ASRDEC_API asrdec_status asrdec_ctc_beam_decode_nbest(asrdec_ctc_beam_decoder* decoder, const DLTensor* logprobs,
                                                      const DLTensor* lengths, void* stream, asrdec_results** out);
ASRDEC_API asrdec_status asrdec_ctc_beam_decode_chunks(asrdec_ctc_beam_decoder* decoder, const asrdec_chunk_row* rows,
                                                       int64_t num_rows, const DLTensor* logprobs,
                                                       const DLTensor* lengths, void* stream, asrdec_results** out);
ASRDEC_API asrdec_status asrdec_ctc_beam_cancel(asrdec_ctc_beam_decoder* decoder, int64_t utterance,
                                                int32_t* was_open);
ASRDEC_API int64_t asrdec_ctc_beam_open_utterances(const asrdec_ctc_beam_decoder* decoder);
ASRDEC_API void asrdec_ctc_beam_free(asrdec_ctc_beam_decoder* decoder);

/* ------------------------------------------------------------------------------------------ transducers */

typedef struct asrdec_transducer_model asrdec_transducer_model;
/** Loads a transducer model (asrdec's safetensors format, docs/model-format.md) onto `device`. */
ASRDEC_API asrdec_status asrdec_transducer_model_load(const char* path, const char* device,
                                                      asrdec_transducer_model** out);
/** V, the tokens (blank excluded). */
ASRDEC_API int64_t asrdec_transducer_model_vocab_size(const asrdec_transducer_model* model);
/** J, the joint hidden size: the last dimension of enc_proj. */
ASRDEC_API int64_t asrdec_transducer_model_joint_hidden(const asrdec_transducer_model* model);
ASRDEC_API void asrdec_transducer_model_free(asrdec_transducer_model* model);

typedef struct asrdec_transducer_greedy_decoder asrdec_transducer_greedy_decoder;
typedef struct asrdec_transducer_greedy_config {
  uint32_t struct_size;
  const char* algorithm;      /**< "label_looping" (default), "frame_looping", "wind" */
  int32_t window;             /**< WIND */
  int32_t max_symbols_per_frame;
  const char* graph_mode;
  int64_t max_device_bytes;
  int32_t check_values;
  const asrdec_ngram_lm* lm;
  float lm_weight;
  const asrdec_boosting_tree* boost;
  float boost_weight;
  /* Added in C API version 2 (the 64-bit fields first: see asrdec_ctc_greedy_config). */
  int64_t max_batch;
  int64_t max_frames;
  int64_t max_open_utterances;
  int32_t threads;             /**< as asrdec_ctc_greedy_config's */
} asrdec_transducer_greedy_config;
ASRDEC_API void asrdec_transducer_greedy_config_init(asrdec_transducer_greedy_config* config);
ASRDEC_API asrdec_status asrdec_transducer_greedy_create(const asrdec_transducer_model* model,
                                                         const asrdec_transducer_greedy_config* config,
                                                         asrdec_transducer_greedy_decoder** out);
/** enc_proj [B, T, J]; lengths [B]. */
ASRDEC_API asrdec_status asrdec_transducer_greedy_decode(asrdec_transducer_greedy_decoder* decoder,
                                                         const DLTensor* enc_proj, const DLTensor* lengths,
                                                         void* stream, asrdec_results** out);
/** Streaming: enc_proj [num_rows, T, J], lengths [num_rows] on the host. */
ASRDEC_API asrdec_status asrdec_transducer_greedy_decode_chunks(asrdec_transducer_greedy_decoder* decoder,
                                                                const asrdec_chunk_row* rows, int64_t num_rows,
                                                                const DLTensor* enc_proj, const DLTensor* lengths,
                                                                void* stream, asrdec_results** out);
ASRDEC_API asrdec_status asrdec_transducer_greedy_cancel(asrdec_transducer_greedy_decoder* decoder, int64_t utterance,
                                                         int32_t* was_open);
ASRDEC_API int64_t asrdec_transducer_greedy_open_utterances(const asrdec_transducer_greedy_decoder* decoder);
ASRDEC_API void asrdec_transducer_greedy_free(asrdec_transducer_greedy_decoder* decoder);

typedef struct asrdec_transducer_beam_decoder asrdec_transducer_beam_decoder;
typedef struct asrdec_transducer_beam_config {
  uint32_t struct_size;
  const char* algorithm;      /**< "alsd++" (default), "aes++", "wind-beam" */
  int32_t beam;
  int32_t max_symbols_per_frame;
  int32_t aes_num_steps;
  int32_t aes_expansion_beta;
  float aes_expansion_gamma;
  int32_t wind_window;
  int32_t length_normalized;
  const asrdec_ngram_lm* lm;
  float lm_weight;
  const asrdec_boosting_tree* boost;
  float boost_weight;
  const char* pruning;        /**< "late" (default) or "early" */
  const char* blank_scoring;  /**< as the CLI's --blank-scoring */
  const char* graph_mode;
  int64_t max_device_bytes;
  int32_t check_values;
  /* Added in C API version 2 (the 64-bit fields first: see asrdec_ctc_greedy_config). */
  int64_t max_batch;
  int64_t max_frames;
  int64_t max_open_utterances;
  int32_t threads;             /**< as asrdec_ctc_greedy_config's */
} asrdec_transducer_beam_config;
ASRDEC_API void asrdec_transducer_beam_config_init(asrdec_transducer_beam_config* config);
ASRDEC_API asrdec_status asrdec_transducer_beam_create(const asrdec_transducer_model* model,
                                                       const asrdec_transducer_beam_config* config,
                                                       asrdec_transducer_beam_decoder** out);
ASRDEC_API asrdec_status asrdec_transducer_beam_decode(asrdec_transducer_beam_decoder* decoder,
                                                       const DLTensor* enc_proj, const DLTensor* lengths, void* stream,
                                                       asrdec_results** out);
ASRDEC_API asrdec_status asrdec_transducer_beam_decode_nbest(asrdec_transducer_beam_decoder* decoder,
                                                             const DLTensor* enc_proj, const DLTensor* lengths,
                                                             void* stream, asrdec_results** out);
ASRDEC_API asrdec_status asrdec_transducer_beam_decode_chunks(asrdec_transducer_beam_decoder* decoder,
                                                              const asrdec_chunk_row* rows, int64_t num_rows,
                                                              const DLTensor* enc_proj, const DLTensor* lengths,
                                                              void* stream, asrdec_results** out);
ASRDEC_API asrdec_status asrdec_transducer_beam_cancel(asrdec_transducer_beam_decoder* decoder, int64_t utterance,
                                                       int32_t* was_open);
ASRDEC_API int64_t asrdec_transducer_beam_open_utterances(const asrdec_transducer_beam_decoder* decoder);
ASRDEC_API void asrdec_transducer_beam_free(asrdec_transducer_beam_decoder* decoder);

/* ------------------------------------------------------------------------------------------------- WFST */

typedef struct asrdec_wfst_graph asrdec_wfst_graph;
/** Loads a decoding graph (an OpenFst vector or const FST file, e.g. from `asrdec graph build`). */
ASRDEC_API asrdec_status asrdec_wfst_graph_load(const char* path, asrdec_wfst_graph** out);
ASRDEC_API void asrdec_wfst_graph_free(asrdec_wfst_graph* graph);

typedef struct asrdec_wfst_decoder asrdec_wfst_decoder;
typedef struct asrdec_wfst_decoder_config {
  uint32_t struct_size;
  float beam;
  int64_t max_active;
  int64_t max_tokens_per_frame;
  float acoustic_scale;
  int32_t use_final_probs;
  int32_t blank_id;
  int32_t check_values;
  const char* graph_mode;
  int64_t max_device_bytes;
  /* Added in C API version 2. */
  int32_t threads;             /**< CPU: threads a call's rows are spread over, the caller's included; 0: all */
  int64_t max_open_utterances; /**< streaming: the most utterances open at once */
} asrdec_wfst_decoder_config;
ASRDEC_API void asrdec_wfst_decoder_config_init(asrdec_wfst_decoder_config* config);
ASRDEC_API asrdec_status asrdec_wfst_decoder_create(const asrdec_wfst_graph* graph,
                                                    const asrdec_wfst_decoder_config* config, const char* device,
                                                    asrdec_wfst_decoder** out);

/** One utterance's best path: word ids (output labels of the graph) with their frames, and its costs. */
typedef struct asrdec_wfst_result {
  int64_t num_words;
  const int32_t* words;
  const int32_t* word_start_frames;
  const int32_t* word_end_frames;
  float cost;          /**< graph_cost + acoustic_cost */
  float graph_cost;
  float acoustic_cost;
  int32_t reached_final;
  int32_t overflow;
  int32_t frames;
} asrdec_wfst_result;
typedef struct asrdec_wfst_results asrdec_wfst_results;
/** logprobs [B, T, C]; lengths [B] on the host. */
ASRDEC_API asrdec_status asrdec_wfst_decode(asrdec_wfst_decoder* decoder, const DLTensor* logprobs,
                                            const DLTensor* lengths, void* stream, asrdec_wfst_results** out);
ASRDEC_API int64_t asrdec_wfst_results_utterances(const asrdec_wfst_results* results);
ASRDEC_API asrdec_status asrdec_wfst_results_get(const asrdec_wfst_results* results, int64_t utterance,
                                                 asrdec_wfst_result* out);
ASRDEC_API void asrdec_wfst_results_free(asrdec_wfst_results* results);
/** Streaming (phrase_list unused: WFST word boosts are not in the C API): each row's best path so far. */
ASRDEC_API asrdec_status asrdec_wfst_decode_chunks(asrdec_wfst_decoder* decoder, const asrdec_chunk_row* rows,
                                                   int64_t num_rows, const DLTensor* logprobs, const DLTensor* lengths,
                                                   void* stream, asrdec_wfst_results** out);
ASRDEC_API asrdec_status asrdec_wfst_cancel(asrdec_wfst_decoder* decoder, int64_t utterance, int32_t* was_open);
ASRDEC_API int64_t asrdec_wfst_open_utterances(const asrdec_wfst_decoder* decoder);
ASRDEC_API void asrdec_wfst_decoder_free(asrdec_wfst_decoder* decoder);

#ifdef __cplusplus
}
#endif

#endif /* ASRDEC_C_API_H */
