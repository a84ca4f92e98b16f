#pragma once
// Keyword arguments with the C++ names: each decoder's constructor lists the fields of its config (and of
// BatchLimits) that Python may set; an unknown name or a value of the wrong type raises TypeError naming it.

#include <nanobind/nanobind.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <functional>
#include <string>
#include <vector>

#include "asrdec/core/batch_limits.hpp"
#include "asrdec/core/graph.hpp"
#include "asrdec/lm/boosting_tree.hpp"
#include "asrdec/lm/ngram_lm.hpp"

namespace asrdec::python {

namespace nb = nanobind;

struct Keyword {
  const char* name;
  std::function<void(nb::handle)> set;  // throws nb::cast_error for a value of another type
};

/** A field the value is cast to. */
template <class T>
Keyword field(const char* name, T& target) {
  return Keyword{name, [&target](nb::handle value) { target = nb::cast<T>(value); }};
}

/** An enum field given by its name (the C++ parse function's spellings). */
template <class E, class Parse>
Keyword choice(const char* name, E& target, Parse parse) {
  return Keyword{name, [&target, parse](nb::handle value) { target = parse(nb::cast<std::string>(value)); }};
}

/** graph_mode: "automatic", "conditional", "per_step" or "eager". */
inline Keyword graph_mode_field(GraphMode& target) {
  return choice("graph_mode", target, [](const std::string& name) { return parse_graph_mode(name); });
}

/** An LM or a boosting tree to fuse, or None. */
template <class Model>
Keyword model_field(const char* name, std::shared_ptr<const Model>& target) {
  return Keyword{name, [&target](nb::handle value) {
                   target = value.is_none() ? nullptr
                                            : std::shared_ptr<const Model>(nb::cast<std::shared_ptr<Model>>(value));
                 }};
}

/** BatchLimits' fields: max_batch, max_frames, max_open_utterances. */
inline void add_limits(std::vector<Keyword>& keywords, BatchLimits& limits) {
  keywords.push_back(field("max_batch", limits.max_batch));
  keywords.push_back(field("max_frames", limits.max_frames));
  keywords.push_back(field("max_open_utterances", limits.max_open_utterances));
}

/** The fields every decoder config shares: LM and boosting fusion (lm, lm_weight, boost, boost_weight). */
template <class Config>
void add_fusion(std::vector<Keyword>& keywords, Config& config) {
  keywords.push_back(model_field("lm", config.lm));
  keywords.push_back(field("lm_weight", config.lm_weight));
  keywords.push_back(model_field("boost", config.boost));
  keywords.push_back(field("boost_weight", config.boost_weight));
}

/** ... and how it runs: graph_mode, max_device_bytes, check_values, threads. */
template <class Config>
void add_execution(std::vector<Keyword>& keywords, Config& config) {
  keywords.push_back(graph_mode_field(config.graph_mode));
  keywords.push_back(field("max_device_bytes", config.max_device_bytes));
  keywords.push_back(field("check_values", config.check_values));
  keywords.push_back(field("threads", config.threads));
}

/** Sets the keywords `kwargs` names; `owner` (e.g. "CtcBeamDecoder") names the call in errors. */
void apply_keywords(const nb::kwargs& kwargs, const std::vector<Keyword>& keywords, const char* owner);

}  // namespace asrdec::python
