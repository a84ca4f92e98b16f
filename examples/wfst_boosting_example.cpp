// WFST decoding of CTC log-probabilities with word boosting. Builds the decoding graph TLG from the model's token
// table, a lexicon and a word-level ARPA LM (asrdec::graph, done once, offline in production: `asrdec graph build`),
// then decodes every utterance twice: as is, and with per-utterance boosts of the words given on the command line
// (e.g. names a dialogue context makes likely). Prints the transcripts that the boosts changed, with word times.
//
//   wfst_boosting_example tokens.txt lexicon.txt words.arpa.gz logprobs.npy lengths.npy work_dir [cpu|cuda]
//   word:boost...

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"
#include "asrdec/wfst/graph_builder.hpp"
#include "example_support.hpp"

namespace {

std::string timed_words(const asrdec::WfstResult& result, const asrdec::SymbolTable& words) {
  std::string text;
  for (const asrdec::WordTiming& w : asrdec::word_timings(result, words, 0.08)) {  // 80 ms model frames
    char item[160];
    std::snprintf(item, sizeof item, " %s[%.2f-%.2f]", w.word.c_str(), w.start_seconds, w.end_seconds);
    text += item;
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr,
                 "usage: %s tokens.txt lexicon.txt words.arpa.gz logprobs.npy lengths.npy work_dir [cpu|cuda] "
                 "word:boost...\n",
                 argv[0]);
    return 2;
  }
  try {
    const std::string work = argv[6];
    const asrdec::Device device = asrdec::Device::parse(argv[7]);

    // 1. The graph (input labels: model columns + 1; output labels: word ids of words.txt).
    const asrdec::CtcGraphSummary built =
        asrdec::build_ctc_graph(argv[1], asrdec::read_lexicon(argv[2]), argv[3], asrdec::CtcGraphOptions{},
                                work + "/TLG.fst", work + "/words.txt");
    std::printf("graph: %lld states, %lld arcs, built in %.1f s\n", static_cast<long long>(built.tlg_states),
                static_cast<long long>(built.tlg_arcs), built.seconds);
    const asrdec::SymbolTable words = asrdec::SymbolTable::load(work + "/words.txt");

    // 2. Boosts: a word id and a cost bonus (keep it below beam / 2). read_word_boosts() reads
    //    the same from a "word score" file.
    asrdec::WordBoosts boosts;
    for (int i = 8; i < argc; ++i) {
      const std::string item = argv[i];
      const std::size_t colon = item.rfind(':');
      if (colon == std::string::npos) throw asrdec::InvalidArgument("expected word:boost, got '" + item + "'");
      const std::string word = item.substr(0, colon);
      const std::optional<std::int32_t> id = words.find(word);
      if (!id) throw asrdec::InvalidArgument("'" + word + "' is not in " + work + "/words.txt");
      boosts.emplace_back(*id, std::stof(item.substr(colon + 1)));
    }

    // 3. Decode as is and with the boosts (a list per utterance; here the same list for each).
    const asrdec::NpyArray logprobs = asrdec::read_npy(argv[4]);  // [B, T, V+1]
    const asrdec::NpyArray lengths = asrdec::read_npy(argv[5]);   // [B]
    asrdec::Stream stream(device);
    const example::OnDevice input = example::place(logprobs, device, stream.handle());
    // Word times: a word starts on its first word-starting piece (SentencePiece marks them with U+2581 "▁"), not
    // where determinisation put its output label.
    asrdec::WfstDecoderConfig config;
    config.word_start_columns = asrdec::Vocabulary::load(argv[1]).word_start_ids();
    asrdec::WfstDecoder decoder(asrdec::WfstGraph::load(work + "/TLG.fst"), config, device);
    const std::vector<asrdec::WfstResult> plain = decoder.decode(input.view, lengths.view(), {}, stream.handle());
    const std::vector<asrdec::WordBoosts> per_utterance(plain.size(), boosts);
    const std::vector<asrdec::WfstResult> boosted =
        decoder.decode(input.view, lengths.view(), per_utterance, stream.handle());

    std::size_t changed = 0;
    for (std::size_t i = 0; i < plain.size(); ++i) {
      if (plain[i].words == boosted[i].words) continue;
      ++changed;
      std::printf("%zu: without boosts:%s\n%zu: with boosts:   %s  (score %.2f)\n", i,
                  timed_words(plain[i], words).c_str(), i, timed_words(boosted[i], words).c_str(), boosted[i].score());
    }
    std::printf("%zu words boosted; %zu of %zu transcripts changed\n", boosts.size(), changed, plain.size());
  } catch (const asrdec::Error& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  return 0;
}
