// The names the documentation's code blocks take from their surrounding text, declared (never defined: the
// snippets are compiled, not run) with the types the text gives them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "asrdec/asrdec.hpp"

namespace doc {
extern void* d_logprobs;  // device memory the engine owns
extern void* d_enc_proj;
extern std::int32_t* h_lengths;  // host memory
extern std::int64_t B, T, V, J;  // batch, frames, tokens (blank excluded), joint hidden size
extern asrdec::StreamHandle stream, my_cuda_stream;
extern asrdec::TensorView logprobs, enc_proj, lengths;
extern asrdec::TransducerModel model;
extern asrdec::NgramLmOptions lm_options;
template <class... Values>
void use(const Values&...) {}
}  // namespace doc
using namespace doc;  // NOLINT: the snippets use the bare names
