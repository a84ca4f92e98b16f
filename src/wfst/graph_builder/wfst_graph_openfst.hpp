#pragma once
// Internal: converting an OpenFst FST (standard arc) into the decoder's CSR arrays. Tests and the graph builder use
// it to decode graphs built in memory.

#include <fst/fstlib.h>

#include <string>

#include "asrdec/wfst/wfst_graph.hpp"

namespace asrdec::detail {

/** The CSR arrays of `fst` (states renumbered as OpenFst numbers them; emitting arcs first per state). Throws
 *  InvalidArgument naming `source` for a graph without a start state or with more states or arcs than fit. */
WfstGraphArrays wfst_arrays_from_fst(const fst::StdFst& fst, const std::string& source);

/** wfst_arrays_from_fst, then WfstGraph::from_arrays (validated). */
WfstGraph wfst_graph_from_fst(const fst::StdFst& fst, const std::string& source);

}  // namespace asrdec::detail
