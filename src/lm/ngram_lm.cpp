#include "asrdec/lm/ngram_lm.hpp"

#include "asrdec/core/error.hpp"
#include "asrdec/text/symbol_table.hpp"
#include "lm/ngram_lm_impl.hpp"
#include "lm/ngram_step.hpp"

namespace asrdec {
namespace detail {

NgramLmRef NgramTables::ref() const {
  if (mapping) return mapped;
  NgramLmRef r{};
  r.arc_begin = arc_begin.data();
  r.arc_label = arc_label.data();
  r.arc_target = arc_target.data();
  r.arc_weight = arc_weight.data();
  r.backoff_to = backoff_to.data();
  r.backoff_weight = backoff_weight.data();
  r.final_weight = final_weight.data();
  r.missing = missing.data();
  r.vocab_size = vocab_size;
  r.order = order;
  r.states = static_cast<std::int32_t>(backoff_to.size());
  r.missing_offset = missing_offset;
  return r;
}

std::int64_t NgramTables::arcs() const {
  const NgramLmRef r = ref();
  return r.arc_begin[r.states];
}

std::size_t NgramTables::bytes() const {
  const auto states = static_cast<std::size_t>(ref().states);
  const auto arc_count = static_cast<std::size_t>(arcs());
  return (states + 1) * 4 + arc_count * 12 + states * 12 + static_cast<std::size_t>(vocab_size);
}

void advance_row(const NgramLmRef& lm, std::int32_t state, float* scores, std::int32_t* next_states) {
  const std::int32_t V = lm.vocab_size;
  std::fill(next_states, next_states + V, -1);
  float backoff = 0.0f;
  for (std::int32_t s = state;;) {
    for (std::int32_t a = lm.arc_begin[s]; a < lm.arc_begin[s + 1]; ++a) {
      const std::int32_t label = lm.arc_label[a];
      if (label < V && next_states[label] < 0) {
        scores[label] = lm.arc_weight[a] + backoff;
        next_states[label] = lm.arc_target[a];
      }
    }
    if (lm.backoff_to[s] < 0) break;  // a root: every label is set
    backoff += lm.backoff_weight[s];
    s = lm.backoff_to[s];
  }
  // Tokens the model does not list score as <unk> in this context.
  NgramStep unk{0.0f, 0};
  bool have_unk = false;
  for (std::int32_t token = 0; token < V; ++token) {
    if (!lm.missing[token]) continue;
    if (!have_unk) {
      unk = score_label(lm, state, V);
      unk.score += lm.missing_offset;
      have_unk = true;
    }
    scores[token] = unk.score;
    next_states[token] = unk.next;
  }
}

void finish_ngram(NgramLm::Impl& impl) {
  impl.arcs = impl.host.arcs();
  impl.bytes = impl.host.bytes();
  for (std::size_t i = 0; i < impl.host.words.size(); ++i) {
    if (!impl.host.words[i].empty()) impl.word_ids.emplace(impl.host.words[i], static_cast<std::int32_t>(i));
  }
  if (impl.device.is_cuda()) {
#if ASRDEC_WITH_CUDA
    upload_ngram(impl);
#else
    throw Unsupported(cuda_info().reason);
#endif
  }
}

}  // namespace detail

NgramLm::NgramLm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NgramLm::~NgramLm() = default;
NgramLm::NgramLm(const NgramLm&) = default;
NgramLm& NgramLm::operator=(const NgramLm&) = default;
// A move shares the tables instead of emptying the source: the LM is immutable, and an engine that moved one by
// mistake gets a working LM rather than a null dereference.
NgramLm::NgramLm(NgramLm&& other) noexcept : impl_(other.impl_) {}
NgramLm& NgramLm::operator=(NgramLm&& other) noexcept {
  impl_ = other.impl_;
  return *this;
}

void NgramLmOptions::validate() const {
  switch (vocabulary) {
    case LmVocabularyKind::token_level:
      // 0 is allowed here: an LM image knows its V (an ARPA file does not, and the builder says so).
      ASRDEC_CHECK_ARG(vocab_size >= 0 && vocab_size <= detail::kMaxLmVocabulary,
                       "NgramLmOptions.vocab_size: a token-level LM needs V (the ASR model's blank id) in [1, ",
                       detail::kMaxLmVocabulary, "], got ", vocab_size);
      return;
    case LmVocabularyKind::symbol_table:
      ASRDEC_CHECK_ARG(!symbol_table.empty(), "NgramLmOptions.symbol_table: a symbol-table LM needs the table's path");
      return;
    case LmVocabularyKind::arpa_words:
      return;
  }
  throw InvalidArgument(detail::concat("NgramLmOptions.vocabulary: unknown kind ", static_cast<int>(vocabulary)));
}

NgramLm NgramLm::load(const std::string& path, const NgramLmOptions& options, Device device) {
  options.validate();
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  ASRDEC_EXPECTS(!detail::is_kenlm_binary(path), Unsupported, path,
                 " is a KenLM binary model (build_binary's format), which asrdec does not read: load the ARPA file it "
                 "was built from (.arpa or .arpa.gz), or convert that ARPA once to asrdec's memory-mapped image with "
                 "`asrdec lm convert --lm LM.arpa -o LM.bin`");
  if (detail::is_binary_image(path)) {
    impl->host = detail::read_binary(path);
    // arpa_words means "the file's own vocabulary", which an image records; an explicit kind must match it.
    const bool image_token_level = impl->host.vocabulary == LmVocabularyKind::token_level;
    const bool want_token_level = options.vocabulary == LmVocabularyKind::token_level;
    ASRDEC_CHECK_ARG(options.vocabulary == LmVocabularyKind::arpa_words || image_token_level == want_token_level,
                     "vocabulary mismatch: ", path, " is a ", image_token_level ? "token-level" : "word-level",
                     " LM image, loaded as a ", want_token_level ? "token-level" : "word-level", " LM");
    if (want_token_level && options.vocab_size > 0) {
      ASRDEC_CHECK_ARG(options.vocab_size == impl->host.vocab_size, "vocabulary mismatch: ", path,
                       " was built for V = ", impl->host.vocab_size, " tokens, the decoder has ", options.vocab_size);
    } else if (options.vocabulary == LmVocabularyKind::symbol_table) {  // (a word-level image here)
      ASRDEC_CHECK_ARG(SymbolTable::load(options.symbol_table).symbols() == impl->host.words,
                       "vocabulary mismatch: ", path, " was built with another word table than ", options.symbol_table);
    }
  } else {
    impl->host = detail::build_ngram_tables(detail::read_arpa(path, options.clamp_positive_probabilities), options);
  }
  detail::finish_ngram(*impl);
  return NgramLm(std::move(impl));
}

Device NgramLm::device() const noexcept { return impl_->device; }
std::int64_t NgramLm::vocab_size() const noexcept { return impl_->host.vocab_size; }
int NgramLm::order() const noexcept { return impl_->host.order; }
std::int64_t NgramLm::num_states() const noexcept { return ref().states; }
std::int64_t NgramLm::num_arcs() const noexcept { return impl_->arcs; }
std::size_t NgramLm::memory_bytes() const noexcept { return impl_->bytes; }

NgramLmRef NgramLm::ref() const noexcept { return impl_->device.is_cuda() ? impl_->device_ref : impl_->host.ref(); }

void NgramLm::advance(const std::int32_t* states, std::int64_t batch, float* scores, std::int32_t* next_states,
                      StreamHandle stream) const {
  if (impl_->device.is_cuda()) {
#if ASRDEC_WITH_CUDA
    detail::advance_cuda(*impl_, states, batch, scores, next_states, stream);
    return;
#endif
  }
  (void)stream;
  const NgramLmRef lm = ref();
  for (std::int64_t b = 0; b < batch; ++b) {
    ASRDEC_CHECK_ARG(states[b] >= 0 && states[b] < lm.states, "LM state ", states[b], " out of range [0, ", lm.states,
                     ")");
    detail::advance_row(lm, states[b], scores + b * lm.vocab_size, next_states + b * lm.vocab_size);
  }
}

std::pair<float, std::int32_t> NgramLm::score(std::int32_t state, std::int32_t token) const {
  ASRDEC_EXPECTS(impl_->device.is_cpu(), Unsupported, "NgramLm::score needs a CPU LM; this one is on ",
                 impl_->device.to_string());
  const NgramLmRef lm = ref();
  ASRDEC_CHECK_ARG(state >= 0 && state < lm.states, "LM state ", state, " out of range [0, ", lm.states, ")");
  ASRDEC_CHECK_ARG(token >= 0 && token < lm.vocab_size, "token ", token, " outside the LM vocabulary of ",
                   lm.vocab_size);
  const detail::NgramStep step = detail::score_token(lm, state, token);
  return {step.score, step.next};
}

std::pair<float, std::int32_t> NgramLm::score_unknown(std::int32_t state) const {
  ASRDEC_EXPECTS(impl_->device.is_cpu(), Unsupported, "NgramLm::score_unknown needs a CPU LM; this one is on ",
                 impl_->device.to_string());
  const NgramLmRef lm = ref();
  ASRDEC_CHECK_ARG(state >= 0 && state < lm.states, "LM state ", state, " out of range [0, ", lm.states, ")");
  const detail::NgramStep step = detail::score_label(lm, state, lm.vocab_size);
  return {step.score, step.next};
}

float NgramLm::final_score(std::int32_t state) const {
  ASRDEC_EXPECTS(impl_->device.is_cpu(), Unsupported, "NgramLm::final_score needs a CPU LM; this one is on ",
                 impl_->device.to_string());
  const NgramLmRef lm = ref();
  ASRDEC_CHECK_ARG(state >= 0 && state < lm.states, "LM state ", state, " out of range [0, ", lm.states, ")");
  return lm.final_weight[state];
}

void NgramLm::final_scores(const std::int32_t* states, std::int64_t batch, float* out, StreamHandle stream) const {
  if (impl_->device.is_cuda()) {
#if ASRDEC_WITH_CUDA
    detail::final_scores_cuda(*impl_, states, batch, out, stream);
    return;
#endif
  }
  (void)stream;
  for (std::int64_t b = 0; b < batch; ++b) out[b] = final_score(states[b]);
}

std::optional<std::int32_t> NgramLm::id_of(const std::string& symbol) const {
  if (impl_->host.vocabulary != LmVocabularyKind::token_level) {
    const auto found = impl_->word_ids.find(symbol);
    if (found == impl_->word_ids.end()) return std::nullopt;
    return found->second;
  }
  // U+(t+100), UTF-8 encoded.
  const std::int64_t code = detail::single_code_point(symbol);
  if (code < 0) return std::nullopt;
  const std::int64_t token = code - 100;
  if (token < 0 || token >= vocab_size()) return std::nullopt;
  return static_cast<std::int32_t>(token);
}

std::string NgramLm::symbol_of(std::int32_t id) const {
  if (impl_->host.vocabulary != LmVocabularyKind::token_level) {
    return id >= 0 && static_cast<std::size_t>(id) < impl_->host.words.size()
               ? impl_->host.words[static_cast<std::size_t>(id)]
               : std::string("<unk>");
  }
  const std::uint32_t code = static_cast<std::uint32_t>(id) + 100u;
  std::string out;
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xc0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xe0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  }
  return out;
}

void NgramLm::save_binary(const std::string& path) const {
  ASRDEC_EXPECTS(impl_->device.is_cpu(), Unsupported, "save_binary needs a CPU LM");
  detail::write_binary(impl_->host, path);
}

std::string NgramLm::describe() const {
  const char* kind = "word-level (symbol table)";
  if (impl_->host.vocabulary == LmVocabularyKind::token_level) kind = "token-level";
  if (impl_->host.vocabulary == LmVocabularyKind::arpa_words) kind = "word-level (ARPA symbols)";
  return detail::concat(order(), "-gram ", kind, " LM, V = ", vocab_size(), ", ", num_states(), " states, ", num_arcs(),
                        " arcs, ", static_cast<double>(memory_bytes()) / (1024.0 * 1024.0), " MiB on ",
                        device().to_string());
}

}  // namespace asrdec
