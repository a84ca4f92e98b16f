// `asrdec graph build`: a CTC decoding graph TLG from tokens.txt, a lexicon (or a word list spelled with the
// model's SentencePiece model) and a word-level ARPA LM.

#include <sentencepiece_processor.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "asrdec/asrdec.hpp"
#include "asrdec/wfst/graph_builder.hpp"
#include "commands.hpp"
#include "sentencepiece_model.hpp"

namespace asrdec::cli {
namespace {

struct GraphBuildArgs {
  std::string tokens;
  std::string lexicon;
  std::string words;
  std::string bpe;
  std::string arpa;
  std::string topology = "standard";
  bool no_self_loops = false;
  std::int32_t blank_id = -1;
  bool clamp_positive = false;
  std::string output;
  std::string words_out;
  std::string lexicon_out;
};

bool is_words_table_symbol(const std::string& word) {
  return word == "<eps>" || word == "<s>" || word == "</s>" || word == "<unk>" || (word.size() > 1 && word[0] == '#');
}

// The word list is the first field of each line, so an OpenFst symbol table (`word id`) serves as well as a plain
// list. Its symbols (<eps>, <s>, </s>, #n) and <unk> are not words to spell and are skipped.
Lexicon spell_words(const std::string& words_path, const std::string& bpe_path) {
  const std::unique_ptr<sentencepiece::SentencePieceProcessor> model = load_sentencepiece(bpe_path);
  const sentencepiece::SentencePieceProcessor& tokenizer = *model;
  TextFileReader in(words_path, "the word list");
  Lexicon lexicon;
  lexicon.source = words_path;
  std::string line;
  std::int64_t number = 0;
  while (in.next(line)) {
    number = in.line_number();
    const std::vector<std::string> fields = split_fields(line);
    if (fields.empty() || is_words_table_symbol(fields[0])) continue;
    LexiconEntry entry;
    entry.word = fields[0];
    entry.line = number;
    const auto encoded = tokenizer.Encode(entry.word, &entry.pieces);
    if (!encoded.ok()) {
      throw Error(
          detail::concat(words_path, ":", number, ": cannot tokenise '", entry.word, "': ", encoded.ToString()));
    }
    lexicon.entries.push_back(std::move(entry));
  }
  ASRDEC_CHECK_ARG(!lexicon.entries.empty(), words_path, " holds no words");
  return lexicon;
}

void write_lexicon(const Lexicon& lexicon, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw Error(detail::concat(path, ": cannot open for writing: ", std::strerror(errno)));
  for (const LexiconEntry& entry : lexicon.entries) {
    out << entry.word;
    for (const std::string& piece : entry.pieces) out << ' ' << piece;
    out << '\n';
  }
  out.flush();
  if (!out) throw Error(detail::concat(path, ": write error: ", std::strerror(errno)));
}

void build(const GraphBuildArgs& args) {
  ASRDEC_CHECK_ARG(args.lexicon.empty() != args.words.empty(), "give either --lexicon or --words (with --bpe)");
  ASRDEC_CHECK_ARG(args.words.empty() || !args.bpe.empty(),
                   "--words needs --bpe: the SentencePiece model that spells the words");
  CtcGraphOptions options;
  options.topology = parse_ctc_topology(args.topology);
  options.self_loops = !args.no_self_loops;
  options.blank_id = args.blank_id;
  options.clamp_positive_probabilities = args.clamp_positive;
  const Lexicon lexicon = args.lexicon.empty() ? spell_words(args.words, args.bpe) : read_lexicon(args.lexicon);
  if (!args.lexicon_out.empty()) write_lexicon(lexicon, args.lexicon_out);
  const CtcGraphSummary summary =
      build_ctc_graph(args.tokens, lexicon, args.arpa, options, args.output, args.words_out);
  std::printf("%s topology%s: wrote %s and %s\n%s\n", to_string(options.topology),
              options.self_loops ? "" : " without self-loops", args.output.c_str(), args.words_out.c_str(),
              summary.to_string().c_str());
}

}  // namespace

void add_graph_commands(CLI::App& app) {
  CLI::App* graph = app.add_subcommand("graph", "Build WFST decoding graphs");
  graph->require_subcommand(1);
  auto args = std::make_shared<GraphBuildArgs>();
  CLI::App* command = graph->add_subcommand(
      "build", "Build a CTC decoding graph TLG = T ∘ det(L ∘ G) (OpenFst binary) and its words table");
  command->add_option("--tokens", args->tokens, "tokens.txt: one piece per line, line number = model column")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--lexicon", args->lexicon, "Lexicon: 'word piece piece ...' per line")->check(CLI::ExistingFile);
  command->add_option("--words", args->words, "Word list (or symbol table) to spell with --bpe instead of --lexicon")
      ->check(CLI::ExistingFile);
  command->add_option("--bpe", args->bpe, "SentencePiece model that spells --words")->check(CLI::ExistingFile);
  command->add_option("--arpa", args->arpa, "Word-level ARPA LM (.arpa or .arpa.gz)")
      ->required()
      ->check(CLI::ExistingFile);
  command->add_option("--topology", args->topology, "CTC topology: standard, compact or minimal")
      ->check(CLI::IsMember({"standard", "compact", "minimal"}))
      ->capture_default_str();
  command->add_flag("--no-self-loops", args->no_self_loops, "Drop the token self-loops (a token spans one frame)");
  command->add_option("--blank-id", args->blank_id, "Blank column (-1: the last, after the lines of tokens.txt)")
      ->capture_default_str();
  command->add_flag("--clamp-positive", args->clamp_positive,
                    "Read positive log10 probabilities (toolkit rounding artefacts) as 0 instead of failing");
  command->add_option("-o,--output", args->output, "The graph to write (OpenFst binary)")->required();
  command->add_option("--words-out", args->words_out, "The words table to write (OpenFst text symbol table)")
      ->required();
  command->add_option("--lexicon-out", args->lexicon_out, "Also write the lexicon used (e.g. the spelled --words)");
  command->callback([args] { build(*args); });
}

}  // namespace asrdec::cli
