#pragma once
// Internal: reading an OpenFst binary file (vector or const FST, standard arc) into CSR arrays, bounded by the
// file's size and without OpenFst (openfst_file.cpp says why).

#include <string>

#include "asrdec/wfst/wfst_graph.hpp"

namespace asrdec::detail {

/** The arrays of the FST in `path` (states as numbered in the file; emitting arcs first per state, then ε arcs,
 *  each group in file order). Throws Error when the file cannot be read, ParseError naming it for anything
 *  malformed, Unsupported for other FST or arc types. The arrays still go through WfstGraph::from_arrays. */
WfstGraphArrays read_openfst_file(const std::string& path);

}  // namespace asrdec::detail
