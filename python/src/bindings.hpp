#pragma once
// The parts of the module asrdec._asrdec, one function per family (module.cpp calls them in order: core types first,
// since the decoders' signatures name them).

#include <nanobind/nanobind.h>

#include <vector>

#include "asrdec/core/streaming.hpp"

namespace asrdec::python {

namespace nb = nanobind;

void bind_decoders(nb::module_& m);  // decoders.cpp: CTC greedy and beam, transducer model, greedy and beam
void bind_wfst(nb::module_& m);      // wfst.cpp: graphs, the WFST decoder, build_ctc_graph
void bind_aed(nb::module_& m);       // aed.cpp: AED decoding, the reference Transformer step, Python steps

/** decode_chunks' rows: ChunkRow objects or (utterance, first, last[, phrase_list]) tuples. */
std::vector<ChunkRow> chunk_rows_of(const nb::handle& rows);

}  // namespace asrdec::python
