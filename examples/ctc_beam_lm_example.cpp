// CTC beam search with an n-gram LM fused in (NGPU-LM): the N best transcripts of each utterance, with word times.
//
//   ctc_beam_lm_example logprobs.npy lengths.npy tokens.txt lm.arpa.gz [cpu|cuda]
//
// The LM is token-level (NeMo's convention: token t is the character U+(t+100)); .arpa, .arpa.gz and asrdec's
// binary image all load with NgramLm::load.

#include <cstdio>
#include <memory>
#include <string>

#include "example_support.hpp"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s logprobs.npy lengths.npy tokens.txt lm.arpa.gz [cpu|cuda]\n", argv[0]);
    return 2;
  }
  try {
    const asrdec::NpyArray logprobs = asrdec::read_npy(argv[1]);  // [B, T, V+1], blank last
    const asrdec::NpyArray lengths = asrdec::read_npy(argv[2]);   // [B]
    const asrdec::Vocabulary vocabulary = asrdec::Vocabulary::load(argv[3]);
    const asrdec::Device device = asrdec::Device::parse(argc > 5 ? argv[5] : "cpu");
    const std::int64_t vocab_size = logprobs.shape()[2] - 1;
    vocabulary.check_matches(vocab_size, argv[1]);

    // The LM lives on the decoder's device; one LM may serve many decoders and threads.
    asrdec::NgramLmOptions lm_options;
    lm_options.vocabulary = asrdec::LmVocabularyKind::token_level;
    lm_options.vocab_size = vocab_size;
    auto lm = std::make_shared<const asrdec::NgramLm>(asrdec::NgramLm::load(argv[4], lm_options, device));

    asrdec::CtcBeamConfig config;
    config.beam = 8;
    config.lm = lm;
    config.lm_weight = 0.5f;
    config.beam_beta = 1.0f;  // an insertion bonus that offsets the LM's per-token cost
    asrdec::CtcBeamDecoder decoder(device, config);

    asrdec::Stream stream(device);
    const example::OnDevice input = example::place(logprobs, device, stream.handle());
    const auto nbest = decoder.decode_nbest(input.view, lengths.view(), stream.handle());
    for (std::size_t i = 0; i < nbest.size(); ++i) {
      if (nbest[i].empty()) continue;
      example::print_result(i, nbest[i].front(), vocabulary);
      for (std::size_t k = 1; k < nbest[i].size() && k < 3; ++k) {
        std::printf("   #%zu: %s  (score %.2f)\n", k + 1, vocabulary.detokenize(nbest[i][k].tokens).c_str(),
                    nbest[i][k].score);
      }
    }
  } catch (const asrdec::Error& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  return 0;
}
