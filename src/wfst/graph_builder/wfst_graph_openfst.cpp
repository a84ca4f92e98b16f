// Converting an OpenFst FST (standard arc) into the decoder's CSR arrays: the graph builder's last step, and how the
// tests decode graphs built in memory. Part of asrdec::graph, so the decoders need no OpenFst.

#include "wfst/graph_builder/wfst_graph_openfst.hpp"

#include <limits>

#include "asrdec/core/error.hpp"

namespace asrdec {
namespace detail {

WfstGraphArrays wfst_arrays_from_fst(const fst::StdFst& graph, const std::string& source) {
  ASRDEC_CHECK_ARG(graph.Start() != fst::kNoStateId, source, ": the graph has no start state");
  std::int64_t states = 0;
  for (fst::StateIterator<fst::StdFst> it(graph); !it.Done(); it.Next()) ++states;
  ASRDEC_CHECK_ARG(states < std::numeric_limits<std::int32_t>::max(), source, ": ", states,
                   " states do not fit 32-bit state ids");
  WfstGraphArrays a;
  a.num_states = static_cast<std::int32_t>(states);
  a.start = static_cast<std::int32_t>(graph.Start());
  a.emitting_begin.assign(static_cast<std::size_t>(states) + 1, 0);
  a.epsilon_begin.assign(static_cast<std::size_t>(states) + 1, 0);
  a.final_weight.assign(static_cast<std::size_t>(states), 0.0f);
  for (std::int32_t s = 0; s < a.num_states; ++s) {
    a.final_weight[s] = graph.Final(s).Value();
    a.emitting_begin[s] = static_cast<std::int64_t>(a.ilabel.size());
    // Two passes over the state's arcs: emitting ones, then ε ones, each in file order.
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) a.epsilon_begin[s] = static_cast<std::int64_t>(a.ilabel.size());
      for (fst::ArcIterator<fst::StdFst> it(graph, s); !it.Done(); it.Next()) {
        const fst::StdArc& arc = it.Value();
        if ((arc.ilabel != 0) != (pass == 0)) continue;
        ASRDEC_CHECK_ARG(arc.ilabel >= 0 && arc.olabel >= 0, source, ": state ", s, " has an arc with label ",
                         arc.ilabel < 0 ? arc.ilabel : arc.olabel);
        a.ilabel.push_back(static_cast<std::int32_t>(arc.ilabel));
        a.olabel.push_back(static_cast<std::int32_t>(arc.olabel));
        a.weight.push_back(arc.weight.Value());
        a.next_state.push_back(static_cast<std::int32_t>(arc.nextstate));
      }
    }
  }
  a.emitting_begin[static_cast<std::size_t>(states)] = static_cast<std::int64_t>(a.ilabel.size());
  a.epsilon_begin[static_cast<std::size_t>(states)] = static_cast<std::int64_t>(a.ilabel.size());
  return a;
}

WfstGraph wfst_graph_from_fst(const fst::StdFst& graph, const std::string& source) {
  return WfstGraph::from_arrays(wfst_arrays_from_fst(graph, source), source);
}

}  // namespace detail
}  // namespace asrdec
