#include "common/sample_tlg.hpp"

#include <cstdio>
#include <filesystem>

#include "asrdec/wfst/graph_builder.hpp"

namespace asrdec::bench {

const SampleTlg& sample_tlg() {
  static const std::unique_ptr<SampleTlg> loaded = [] {
    const std::string data = std::string(ASRDEC_SOURCE_DIR) + "/examples/data";
    const auto dir = std::filesystem::temp_directory_path() / "asrdec_wfst_bench";
    std::filesystem::create_directories(dir);
    const std::string graph = (dir / "TLG.fst").string();
    CtcGraphOptions options;
    options.topology = CtcTopology::standard;
    const CtcGraphSummary summary =
        build_ctc_graph(data + "/tokens.txt", read_lexicon(data + "/wfst/lexicon.txt"),
                        data + "/wfst/words_3gram.arpa.gz", options, graph, (dir / "words.txt").string());
    std::fprintf(stderr, "TLG: %s\n", summary.to_string().c_str());
    auto s = std::make_unique<SampleTlg>();
    s->graph = std::make_unique<WfstGraph>(WfstGraph::load(graph));
    s->logprobs = read_npy(data + "/ctc/logprobs.npy");
    s->lengths = read_npy(data + "/ctc/lengths.npy");
    return s;
  }();
  return *loaded;
}

}  // namespace asrdec::bench
