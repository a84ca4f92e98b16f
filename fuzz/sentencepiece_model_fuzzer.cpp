// SentencePiece models as the CLI loads them (`--bpe` of `decode --boost` and `graph build --words`): the bytes go
// through load_sentencepiece (tools/asrdec/sentencepiece_model.cpp), which refuses the models SentencePiece would
// crash on; an accepted model must encode a phrase into ids of its own vocabulary and decode them again.

#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "fuzz_file.hpp"
#include "sentencepiece_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static asrdec::fuzz::FuzzFile input("spm.model");
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor;
  try {
    processor = asrdec::cli::load_sentencepiece(input.write(data, size));
  } catch (const asrdec::Error&) {
    return 0;  // a typed refusal
  }
  std::vector<int> ids;
  if (!processor->Encode("hello world of the saints", &ids).ok()) return 0;
  for (const int id : ids) ASRDEC_FUZZ_CHECK(id >= 0 && id < processor->GetPieceSize());
  std::string text;
  (void)processor->Decode(ids, &text);
  return 0;
}
