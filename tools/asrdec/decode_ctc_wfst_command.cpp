// `asrdec decode ctc-wfst`: WFST beam search over CTC log-probabilities from .npy files through a decoding graph
// (TLG), whole utterances or as a streaming server (--chunk, --lanes), with optional word boosting.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "batch_input.hpp"
#include "commands.hpp"
#include "decode_output.hpp"
#include "progress_bar.hpp"
#include "server_loop.hpp"
#include "validators.hpp"

namespace asrdec::cli {
namespace {

struct CtcWfstOptions {
  std::string graph;
  std::string words;
  std::string logprobs;
  std::string lengths;
  std::string refs;
  std::string boost;
  std::string tokens;
  std::string device = "auto";
  std::string graph_mode = "auto";
  std::string progress = "auto";
  double beam = 17.0;
  std::int64_t max_active = 10000;
  std::int64_t min_active = 0;
  std::int64_t nbest = 0;
  double acoustic_scale = 1.0;
  std::int32_t blank_id = -1;
  std::int64_t chunk = 0;
  std::int64_t lanes = 0;
  std::int32_t threads = 0;
  std::int64_t batch_size = 32;
  std::int64_t show = -1;
  double frame_shift_ms = 80.0;
  bool no_final_probs = false;
  bool json = false;
};

void run(const CtcWfstOptions& options) {
  ASRDEC_CHECK_ARG(options.chunk >= 0, "--chunk must not be negative, got ", options.chunk);
  ASRDEC_CHECK_ARG(options.lanes >= 0, "--lanes must not be negative, got ", options.lanes);
  ASRDEC_CHECK_ARG(options.batch_size >= 1, "--batch-size must be at least 1, got ", options.batch_size);
  const std::int64_t lanes = options.lanes > 0 ? options.lanes : options.batch_size;
  const Device device = choose_device(options.device);
  const auto load_start = std::chrono::steady_clock::now();
  WfstGraph graph = WfstGraph::load(options.graph);
  const double load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count();
  const SymbolTable words = SymbolTable::load(options.words);
  ASRDEC_CHECK_ARG(static_cast<std::int64_t>(words.size()) > graph.max_output_label(), options.words,
                   ": the graph outputs word id ", graph.max_output_label(), ", beyond the word table");
  BatchInput input(options.logprobs, "log-probabilities [N, T, V+1]", device, std::max(options.batch_size, lanes));
  const std::int64_t utterances = input.utterances();
  const NpyArray lengths = load_lengths(options.lengths, utterances, input.frames());
  const std::vector<std::string> refs =
      options.refs.empty() ? std::vector<std::string>{} : read_references(options.refs, utterances, options.logprobs);
  const WordBoosts boost_list = options.boost.empty() ? WordBoosts{} : read_word_boosts(options.boost, words);

  WfstDecoderConfig config;
  config.beam = static_cast<float>(options.beam);
  config.max_active = options.max_active;
  config.min_active = options.min_active;
  config.acoustic_scale = static_cast<float>(options.acoustic_scale);
  config.blank_id = options.blank_id;
  config.use_final_probs = !options.no_final_probs;
  config.graph_mode = parse_graph_mode(options.graph_mode);
  config.threads = options.threads;
  config.max_open_utterances = lanes;
  if (!options.tokens.empty()) {
    const Vocabulary vocabulary = Vocabulary::load(options.tokens);
    vocabulary.check_matches(input.columns() - 1, options.logprobs);
    config.word_start_columns = vocabulary.word_start_ids();
  }
  WfstDecoder decoder(std::move(graph), config, device);

  const std::int64_t batch_size = std::min<std::int64_t>(options.batch_size, std::max<std::int64_t>(utterances, 1));
  Stream stream(device);
  ProgressBar progress(options.progress, options.json, utterances, "utterances");
  WerStats wer;
  double seconds = 0.0;
  std::int64_t frames = 0, shown = 0;
  std::vector<WfstResult> results(static_cast<std::size_t>(utterances));
  std::vector<std::vector<WfstResult>> lists(options.nbest > 0 ? static_cast<std::size_t>(utterances) : 0);
  ASRDEC_CHECK_ARG(options.nbest == 0 || options.chunk == 0, "--nbest needs whole utterances (no --chunk)");
  if (options.chunk > 0) {
    // As a streaming server: utterances join and leave the calls (server_loop.hpp).
    results = decode_as_server<WfstResult>(
        input, lengths, options.chunk, lanes, stream, progress,
        [&](const std::vector<ChunkRow>& rows, const TensorView& batch, const TensorView& row_lengths) {
          const std::vector<WordBoosts> boosts(boost_list.empty() ? 0 : rows.size(), boost_list);
          return decoder.decode_chunks(rows, batch, row_lengths, boosts, stream.handle());
        },
        [&](std::chrono::steady_clock::duration spent, std::int64_t chunk_frames) {
          seconds += std::chrono::duration<double>(spent).count();
          frames += chunk_frames;
        });
  } else {
    if (utterances > 0) {  // untimed, as in every decode command: graph capture and first launches
      const std::int64_t count = std::min(batch_size, utterances);
      const std::vector<WordBoosts> boosts(boost_list.empty() ? 0 : static_cast<std::size_t>(count), boost_list);
      (void)decoder.decode(input.batch(0, count, stream.handle()), lengths_slice(lengths, 0, count), boosts,
                           stream.handle());
    }
    for (std::int64_t first = 0; first < utterances; first += batch_size) {
      const std::int64_t count = std::min(batch_size, utterances - first);
      const std::vector<WordBoosts> boosts(boost_list.empty() ? 0 : static_cast<std::size_t>(count), boost_list);
      const TensorView batch = input.batch(first, count, stream.handle());
      stream.synchronize();  // the host-to-device copy is not decoder time
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::vector<WfstResult>> out =
          decoder.decode_nbest(batch, lengths_slice(lengths, first, count), std::max<std::int64_t>(options.nbest, 1),
                               boosts, stream.handle());
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      frames += total_frames(lengths, first, count);
      for (std::int64_t i = 0; i < count; ++i) {
        auto& list = out[static_cast<std::size_t>(i)];
        results[static_cast<std::size_t>(first + i)] = list.front();  // decode_nbest lists at least one
        if (options.nbest > 0) lists[static_cast<std::size_t>(first + i)] = std::move(list);
      }
      progress.update(first + count);
    }
  }
  for (std::int64_t u = 0; u < utterances; ++u) {
    const WfstResult& r = results[static_cast<std::size_t>(u)];
    std::string text;
    for (const std::int32_t w : r.words) text += (text.empty() ? "" : " ") + words.symbol(w);
    if (!refs.empty()) wer += word_errors(refs[static_cast<std::size_t>(u)], text);
    if (options.json) {
      nlohmann::json j;
      j["utterance"] = u;
      j["text"] = text;
      j["words"] = words_json(word_timings(r, words, options.frame_shift_ms / 1000.0));
      j["word_ids"] = r.words;
      j["score"] = r.score();
      j["cost"] = r.cost;
      j["graph_cost"] = r.graph_cost;
      j["acoustic_cost"] = r.acoustic_cost;
      j["reached_final"] = r.reached_final;
      j["overflow"] = r.overflow;
      if (options.nbest > 0) {
        j["nbest"] = nlohmann::json::array();
        for (const WfstResult& h : lists[static_cast<std::size_t>(u)]) {
          std::string line;
          for (const std::int32_t w : h.words) line += (line.empty() ? "" : " ") + words.symbol(w);
          j["nbest"].push_back({{"text", line},
                                {"word_ids", h.words},
                                {"score", h.score()},
                                {"cost", h.cost},
                                {"graph_cost", h.graph_cost},
                                {"acoustic_cost", h.acoustic_cost}});
        }
      }
      std::cout << j.dump() << "\n";
    } else if (options.show < 0 || shown < options.show) {
      std::cout << u << ": " << text << "\n";
      if (!refs.empty()) std::cout << "   ref: " << refs[static_cast<std::size_t>(u)] << "\n";
      ++shown;
    }
  }
  progress.finish();
  std::cout.flush();
  const double audio_seconds = static_cast<double>(frames) * options.frame_shift_ms / 1000.0;
  std::fprintf(stderr,
               "ctc-wfst (beam %g, max_active %lld%s) on %s: %lld utterances, %.1f s of audio, decoded in %.3f ms, "
               "RTFx %.0f (graph: %d states, %lld arcs, loaded in %.0f ms)\n",
               options.beam, static_cast<long long>(options.max_active),
               options.chunk > 0 ? (", chunks of " + std::to_string(options.chunk)).c_str() : "",
               device.to_string().c_str(), static_cast<long long>(utterances), audio_seconds, seconds * 1000.0,
               seconds > 0 ? audio_seconds / seconds : 0.0, decoder.graph().num_states(),
               static_cast<long long>(decoder.graph().num_arcs()), load_seconds * 1000.0);
  if (!refs.empty()) print_wer(wer);
}

}  // namespace

void add_decode_ctc_wfst_command(CLI::App& decode) {
  auto options = std::make_shared<CtcWfstOptions>();
  CLI::App* command =
      decode.add_subcommand("ctc-wfst", "WFST beam search over CTC log-probabilities through a decoding graph");
  command->add_option("--graph", options->graph, "Decoding graph (OpenFst binary, e.g. TLG.fst)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--words", options->words, "Word symbol table of the graph's output labels (words.txt)")
      ->required()
      ->check(CLI::ExistingFile);
  add_logprobs_option(*command, options->logprobs);
  command->add_option("--lengths", options->lengths, "Frames per utterance [N] (.npy, int32 or int64); default: T")
      ->check(CLI::ExistingFile);
  command->add_option("--beam", options->beam, "Search beam (cost units)")->capture_default_str();
  command
      ->add_option("--nbest", options->nbest,
                   "With --json: add the N best word sequences as \"nbest\" (the final frame's surviving paths)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command
      ->add_option("--min-active", options->min_active,
                   "Floor of tokens kept per frame when the beam keeps fewer (Kaldi's min_active; 0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--max-active", options->max_active, "Soft cap of tokens expanded per frame")
      ->capture_default_str();
  command->add_option("--acoustic-scale", options->acoustic_scale, "Weight of the log-probabilities against the graph")
      ->capture_default_str();
  command->add_option("--blank-id", options->blank_id, "Blank column, for word frames (-1: the last)")
      ->capture_default_str();
  command->add_flag("--no-final-probs", options->no_final_probs, "Ignore final weights (end anywhere)");
  command
      ->add_option("--tokens", options->tokens,
                   "tokens.txt of the model: pieces starting with \u2581 begin words (exact word frames)")
      ->check(CLI::ExistingFile);
  command->add_option("--boost", options->boost, "Word boosting list: \"word score\" per line, for every utterance")
      ->check(CLI::ExistingFile);
  command
      ->add_option("--chunk", options->chunk,
                   "Decode as a streaming server: N frames of each utterance in flight per call (0: whole utterances)")
      ->capture_default_str();
  command->add_option("--lanes", options->lanes, "With --chunk: at most L utterances in flight (0: --batch-size)")
      ->capture_default_str();
  command->add_option("--threads", options->threads, "CPU threads the utterances are spread over (0: every core)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  command->add_option("--refs", options->refs, "Reference transcripts, one per line: print the WER")
      ->check(CLI::ExistingFile);
  command->add_option("--device", options->device, "cpu, cuda, cuda:N or auto (cuda:0 when available)")
      ->capture_default_str();
  command->add_option("--graph-mode", options->graph_mode, "CUDA graph mode: auto, conditional, per_step or eager")
      ->capture_default_str();
  command->add_option("--batch-size", options->batch_size, "Utterances per decoder call")->capture_default_str();
  command->add_option("--show", options->show, "Without --json: print at most N transcripts (-1: all)")
      ->capture_default_str();
  command
      ->add_option("--frame-shift-ms", options->frame_shift_ms,
                   "Duration of one model output frame: word times in seconds in the JSON, and the RTFx")
      ->check(finite_positive())
      ->capture_default_str();
  command->add_option("--progress", options->progress, "Progress bar: auto, always or never")->capture_default_str();
  command->add_flag("--json", options->json,
                    "One JSON object per utterance: words, word_ids, word_start_frames, word_end_frames, cost, "
                    "graph_cost, acoustic_cost, reached_final, overflow");
  command->callback([options] {
    require_logprobs(options->logprobs);
    run(*options);
  });
}

}  // namespace asrdec::cli
