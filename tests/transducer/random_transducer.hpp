#pragma once
// Random transducer models and inputs for the tests: LSTM or stateless predictors, RNN-T or TDT, any blank id,
// activations, weight dtypes, and "quantised" models whose values are small multiples of 1/16 so that every
// logit is exact in fp32 — exact ties then happen often and must be broken the same way everywhere.
// Biases can make one token, the blank, or the zero duration dominate, to reach max_symbols and TDT edge cases.

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "asrdec/detail/float16.hpp"
#include "support/test_support.hpp"

namespace asrdec::testing {

struct RandomTransducerSpec {
  bool tdt = false;
  bool stateless = false;
  bool quantised = false;
  std::int64_t vocab = 8;   // V
  std::int64_t joint = 8;   // J
  std::int64_t hidden = 8;  // P (LSTM) or embedding width (stateless)
  std::int64_t layers = 1;
  std::int64_t context = 2;
  bool layer_norm = false;
  std::int32_t blank = -1;  // -1: V
  std::vector<std::int32_t> durations = {0, 1, 2, 3, 4};
  JointActivation activation = JointActivation::relu;
  DType dtype = DType::f32;
  std::string bias_mode = "none";  // none | token | blank | zero_duration | token_stays (token, then duration 0)
  std::string describe() const;
};

/** Host tensors of a model (kept alive for the TensorViews). */
struct RandomTransducer {
  RandomTransducerSpec spec;
  std::vector<std::vector<float>> storage;
  TensorView out_weight, out_bias;
  LstmPredictorWeights lstm;
  StatelessPredictorWeights stateless;

  /** The model on `device`. */
  TransducerModel build(Device device) const;
  /** The model on the CPU with every weight multiplied by 1 + relative·N(0, 1), drawn from `noise`: what rounding in
   *  another order (a GPU's GEMM) amounts to, for telling a near tie from a wrong result. */
  TransducerModel build_perturbed(double relative, std::mt19937_64& noise) const;
};

RandomTransducerSpec random_spec(std::mt19937_64& rng);
RandomTransducer make_random_transducer(const RandomTransducerSpec& spec, std::mt19937_64& rng);

/** Moves the blank of a model made with the blank last (spec.blank = V) to column `blank`, in place: the joint's
 *  output rows and biases and the predictor's embedding rows of columns blank..V rotate by one, so that the old
 *  blank row lands at `blank` and every token keeps its weights, one column later when it follows the blank. The
 *  model then computes the same function of relabelled columns. */
void move_blank(RandomTransducer& m, std::int32_t blank);

/** enc_proj [B, T, J] float32 with per-utterance lengths (0, 1 and T included); quantised when the model is. */
struct RandomEncoded {
  std::int64_t batch = 0, frames = 0, hidden = 0;
  std::vector<float> values;
  std::vector<std::int32_t> lengths;
  TensorView enc() const { return TensorView(values.data(), DType::f32, {batch, frames, hidden}); }
  TensorView lens() const { return TensorView(lengths.data(), DType::i32, {batch}); }
};

RandomEncoded random_encoded(std::mt19937_64& rng, const RandomTransducerSpec& spec, std::int64_t max_batch,
                             std::int64_t max_frames);

/** How closely one executor's hypotheses must agree with another's (or the oracle's). */
struct Agreement {
  double relative = 1e-4;           ///< scores within this (relative, at least absolute 1e-5)
  bool near_ties_may_swap = false;  ///< hypotheses whose scores tie within `relative` may come out in either order
  double token_absolute = 1e-5;     ///< per-token log-probabilities within this, at least (absolute)
};

/** What a CUDA executor must meet against the CPU oracle on a model of `dtype`. Float32 models: scores within
 *  1e-4 (the GPU sums in another order). fp16 and bf16 models round intermediates (the predictor state, the
 *  joint hidden) to their dtype, and a summation order that moves such a value across a rounding boundary
 *  changes it by one unit in its last place: scores then agree within four units of the dtype's rounding (2^-11
 *  for fp16, 2^-8 for bf16). A token's log-probability is a logit less the log-sum-exp of its row, so it moves by the
 *  logits' error, absolute, whatever its own size (seen on an H200: -0.3629 against -0.3644 on an fp16 model): on
 *  these models, whose logits are of order one, per-token scores agree within that tolerance absolute. In every dtype,
 * two hypotheses whose scores tie within that tolerance are a tie, and may come out in either order (seen on an H100: a
 * float32 WIND beam N-best swapped two such entries). */
Agreement cuda_agreement(DType dtype);

/** The oracle's hypotheses (one per utterance) for a case's input on its model with every weight perturbed at
 *  float32 rounding level, a fresh draw for each trial (perturbed_greedy_oracle). */
using PerturbedGreedyOracle = std::function<std::vector<Hypothesis>(int trial)>;

/** The relative size of perturbed_greedy_oracle's draws: about the error of a float32 sum of a few dozen terms in
 *  another order, which is what a GPU's GEMM changes. */
constexpr double kRoundingPerturbation = 1e-6;

/** perturbed_greedy_oracle for a random model: `oracle` (the case's oracle call) on random.build_perturbed(
 *  kRoundingPerturbation, trial's noise). `random` must outlive the result. */
PerturbedGreedyOracle perturbed_greedy_oracle(const RandomTransducer& random,
                                              std::function<std::vector<Hypothesis>(const TransducerModel&)> oracle);

/** Fails with a readable diff unless the two hypothesis lists have identical tokens, timestamps and durations,
 *  and scores within `agreement.relative` (relative, at least absolute 1e-5). Where near ties may swap, a pair of
 *  different hypotheses passes when their scores tie within that tolerance; each such pair is printed. In an
 *  N-best list (`nbest`), the entries after such a tie are not compared: which of the tied hypotheses survived
 *  pruning decides them.
 *
 *  With `perturbed` (one hypothesis per utterance): a model whose recurrent state is rounded to fp16 or bf16 can
 *  amplify a one-unit rounding difference over the following steps beyond the fixed tolerance (seen on an H200: a
 *  token score 7 units of 2^-11 off, on a two-layer fp16 LSTM whose oracle moves as far when its weights move by
 *  1e-7). An utterance outside the tolerance is then compared with the oracle on models perturbed at rounding level
 *  instead: a result that one of 16 such draws agrees with (paths equal, scores within the tolerance) is said so and
 *  accepted; a wrong one agrees with none. */
void expect_same_hypotheses(const std::vector<Hypothesis>& got, const std::vector<Hypothesis>& want,
                            const Agreement& agreement, const std::string& what, bool nbest = false,
                            const PerturbedGreedyOracle& perturbed = {});
inline void expect_same_hypotheses(const std::vector<Hypothesis>& got, const std::vector<Hypothesis>& want,
                                   double tolerance, const std::string& what) {
  expect_same_hypotheses(got, want, Agreement{tolerance, false}, what);
}

}  // namespace asrdec::testing
