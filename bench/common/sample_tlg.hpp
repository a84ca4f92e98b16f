#pragma once
// The WFST benchmarks' inputs: a realistic TLG built from the shipped sample (its lexicon of about 12.8k words, its
// word 3-gram and the 256-piece BPE, standard CTC topology) with the library's graph builder, and the CTC sample's
// log-probabilities.

#include <memory>

#include "asrdec/asrdec.hpp"

namespace asrdec::bench {

struct SampleTlg {
  std::unique_ptr<WfstGraph> graph;
  NpyArray logprobs;  ///< [40, T, 257] f16
  NpyArray lengths;   ///< [40] i32
};

/** Built on first use (a few seconds) into the temporary directory, then kept for the process. */
const SampleTlg& sample_tlg();

}  // namespace asrdec::bench
