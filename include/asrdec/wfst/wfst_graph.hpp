#pragma once
/**
 * @file
 * A decoding graph for WFST beam search over CTC outputs (typically TLG = T ∘ det(L ∘ G), built by `asrdec graph
 * build`), in the compressed-sparse-row form the decoders search.
 *
 * Label convention: an input label i ≥ 1 consumes one frame and scores model column i − 1 (blank is an ordinary
 * emitting label); input label 0 is ε and consumes nothing. Output labels are word ids (0: none). Weights are
 * tropical costs (−log), as OpenFst's StdArc.
 *
 * Per state the arcs are split: emitting arcs first, then ε arcs, each group in the order of the source file.
 * Arc ids (0 … num_arcs − 1) index that order; ties between equal-cost paths are broken by them (docs/wfst.md).
 *
 * Files are read by asrdec itself, not by OpenFst: every length, count and state record is checked against the
 * file's size before it is used (docs/robustness.md). load() throws, naming the file: FileError when it cannot
 * be read; ParseError for a file that is not a well-formed OpenFst binary FST (bad header, a count the file cannot
 * hold, a state record pointing outside the arcs, trailing bytes) or whose graph is unusable (no start state, an
 * arc to a missing state, NaN or −∞ weights, ε-cycles whose total cost is ≤ 0: the ε-closure of a frame could
 * improve forever, or trace back in a circle); Unsupported for FST types other than vector and const or arc types
 * other than the standard (tropical, float) one. from_arrays() throws InvalidArgument for the same graph errors.
 */

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "asrdec/core/export.hpp"

namespace asrdec {

/** The arrays of a graph in host memory (read-only). */
struct ASRDEC_API WfstGraphArrays {
  std::int32_t num_states = 0;
  std::int32_t start = 0;
  std::vector<std::int64_t> emitting_begin;  ///< [num_states + 1]: arcs of state s are emitting_begin[s] …
  std::vector<std::int64_t> epsilon_begin;   ///< [num_states + 1]: … epsilon_begin[s] − 1 are emitting, then
                                             ///< epsilon_begin[s] … emitting_begin[s + 1] − 1 are ε
  std::vector<std::int32_t> ilabel;          ///< [num_arcs]
  std::vector<std::int32_t> olabel;          ///< [num_arcs]
  std::vector<float> weight;                 ///< [num_arcs]
  std::vector<std::int32_t> next_state;      ///< [num_arcs]
  std::vector<float> final_weight;           ///< [num_states]; +∞: not final
};

class ASRDEC_API WfstGraph {
 public:
  /** Reads an OpenFst binary file (vector or const FST, standard arc). Throws as described above. */
  static WfstGraph load(const std::string& path);

  std::int32_t num_states() const noexcept;
  std::int64_t num_arcs() const noexcept;
  std::int64_t num_emitting_arcs() const noexcept;
  std::int32_t start_state() const noexcept;
  /** The largest input label (0 when there are no emitting arcs): the logits need at least this many columns. */
  std::int32_t max_input_label() const noexcept;
  /** The largest output label (word id). */
  std::int32_t max_output_label() const noexcept;
  /** Where the graph came from (a path, or a description for graphs built in memory). */
  const std::string& source() const noexcept;

  const WfstGraphArrays& arrays() const noexcept;

  /** Throws InvalidArgument when subtracting boost_by_word[w] from every arc that outputs word w would make a cycle
   *  of ε-arcs cost ≤ 0 (only words on ε-arcs inside ε-cycles are concerned; most graphs have none). */
  void check_word_boosts(const std::vector<float>& boost_by_word) const;

  /** Builds from arrays already in CSR form (validated as for load). */
  static WfstGraph from_arrays(WfstGraphArrays arrays, std::string source);

  // Copies share the immutable arrays. A move copies too, so that a moved-from graph is still the same graph.
  WfstGraph(const WfstGraph&) = default;
  WfstGraph& operator=(const WfstGraph&) = default;

 private:
  struct Impl;
  explicit WfstGraph(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
};

}  // namespace asrdec
