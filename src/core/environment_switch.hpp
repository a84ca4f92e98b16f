#pragma once
// Internal: the decoders' diagnostic switches, environment variables read on the host when a decoder is built
// (ASRDEC_FUSED_KERNELS, ASRDEC_PERSISTENT_GREEDY, ASRDEC_PERSISTENT_BEAM, ASRDEC_PHASE_TIMES, ASRDEC_CUT_STRAGGLERS,
// ASRDEC_BEAM_SLOT_CACHE, ASRDEC_QUERIES_BESIDE; docs/cuda-contract.md, docs/transducer-greedy.md, docs/beam-search.md,
// docs/ngram-lm.md).

#include <cstdlib>
#include <cstring>

namespace asrdec::detail {

/** The switch `name`: "1" turns it on, "0" off; unset or any other value leaves `fallback`, the default. */
inline bool environment_switch(const char* name, bool fallback) {
  const char* value = std::getenv(name);
  if (value != nullptr && std::strcmp(value, "1") == 0) return true;
  if (value != nullptr && std::strcmp(value, "0") == 0) return false;
  return fallback;
}

}  // namespace asrdec::detail
