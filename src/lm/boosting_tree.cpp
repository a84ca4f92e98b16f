// Building the phrase-boosting automata (boosting_tree.hpp) into the n-gram tables: one trie per phrase list,
// Aho-Corasick fail links as backoff links, node scores accumulated in double precision and rounded once per
// weight (as NeMo builds them in Python floats and stores fp32).

#include "asrdec/lm/boosting_tree.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>

#include "asrdec/core/buffer.hpp"
#include "asrdec/core/error.hpp"
#include "asrdec/core/memory.hpp"
#include "lm/ngram_lm_impl.hpp"
#include "lm/ngram_step.hpp"

namespace asrdec {
namespace {

struct TrieNode {
  std::map<std::int32_t, std::int32_t> children;  // token -> node, ordered (arcs are sorted by label)
  double score = 0.0;                             // the potential: bonus accumulated from the root
  std::int32_t depth = 0;
  std::int32_t fail = 0;
  bool is_end = false;
};

// One list's trie, node 0 the root, in insertion order.
std::vector<TrieNode> build_trie(const PhraseList& phrases, const BoostingTreeOptions& options) {
  std::vector<TrieNode> nodes(1);
  for (const auto& phrase : phrases) {
    std::int32_t at = 0;
    for (std::size_t i = 0; i < phrase.size(); ++i) {
      const std::int32_t token = phrase[i];
      const auto found = nodes[static_cast<std::size_t>(at)].children.find(token);
      std::int32_t child;
      if (found != nodes[static_cast<std::size_t>(at)].children.end()) {
        child = found->second;  // a shared prefix: with one context score its potential does not change
      } else {
        const double token_score = i > 0 && !options.uniform_weights
                                       ? static_cast<double>(options.context_score) * options.depth_scaling +
                                             std::log(static_cast<double>(i) + 1.0)
                                       : static_cast<double>(options.context_score);
        child = static_cast<std::int32_t>(nodes.size());
        TrieNode node;
        node.score = nodes[static_cast<std::size_t>(at)].score + token_score;
        node.depth = static_cast<std::int32_t>(i) + 1;
        nodes.push_back(node);
        nodes[static_cast<std::size_t>(at)].children.emplace(token, child);
      }
      if (i + 1 == phrase.size()) nodes[static_cast<std::size_t>(child)].is_end = true;
      at = child;
    }
  }
  return nodes;
}

// Aho-Corasick fail links, breadth first: the longest proper suffix that is also a prefix in the trie. Returns
// the nodes in breadth-first order (the root first), which numbers every fail link below its node.
std::vector<std::int32_t> link_failures(std::vector<TrieNode>& nodes) {
  std::vector<std::int32_t> order{0};
  std::deque<std::int32_t> queue;
  for (const auto& [token, child] : nodes[0].children) {
    nodes[static_cast<std::size_t>(child)].fail = 0;
    queue.push_back(child);
  }
  while (!queue.empty()) {
    const std::int32_t at = queue.front();
    queue.pop_front();
    order.push_back(at);
    for (const auto& [token, child] : nodes[static_cast<std::size_t>(at)].children) {
      std::int32_t fail = nodes[static_cast<std::size_t>(at)].fail;
      for (;;) {
        const auto& candidates = nodes[static_cast<std::size_t>(fail)].children;
        const auto found = candidates.find(token);
        if (found != candidates.end()) {
          fail = found->second;
          break;
        }
        if (fail == 0) break;
        fail = nodes[static_cast<std::size_t>(fail)].fail;
      }
      nodes[static_cast<std::size_t>(child)].fail = fail;
      queue.push_back(child);
    }
  }
  return order;
}

}  // namespace

void BoostingTreeOptions::validate() const {
  ASRDEC_CHECK_ARG(std::isfinite(context_score) && context_score > 0.0f,
                   "BoostingTreeOptions.context_score must be positive and finite, got ", context_score);
  ASRDEC_CHECK_ARG(std::isfinite(depth_scaling) && depth_scaling >= 1.0f,
                   "BoostingTreeOptions.depth_scaling must be at least 1, got ", depth_scaling);
  ASRDEC_CHECK_ARG(std::isfinite(unk_score), "BoostingTreeOptions.unk_score must be finite, got ", unk_score);
  ASRDEC_CHECK_ARG(std::isfinite(final_eos_score), "BoostingTreeOptions.final_eos_score must be finite, got ",
                   final_eos_score);
}

struct BoostingTree::Impl {
  NgramLm graph;
  std::vector<std::int32_t> roots;
  std::int64_t phrases = 0;
  BoostingTreeOptions options;
  DeviceBuffer<std::int32_t> device_roots;  // CUDA trees: a copy of `roots` for the kernels
};

BoostingTree::BoostingTree(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BoostingTree::~BoostingTree() = default;
BoostingTree::BoostingTree(const BoostingTree&) = default;
BoostingTree& BoostingTree::operator=(const BoostingTree&) = default;
// As for NgramLm: a move shares the immutable tree rather than leaving a null one behind.
BoostingTree::BoostingTree(BoostingTree&& other) noexcept : impl_(other.impl_) {}
BoostingTree& BoostingTree::operator=(BoostingTree&& other) noexcept {
  impl_ = other.impl_;
  return *this;
}

BoostingTree BoostingTree::build(const std::vector<PhraseList>& lists, std::int64_t vocab_size,
                                 const BoostingTreeOptions& options, Device device) {
  options.validate();
  ASRDEC_CHECK_ARG(!lists.empty(), "a boosting tree needs at least one phrase list");
  ASRDEC_CHECK_ARG(vocab_size >= 1 && vocab_size < std::numeric_limits<std::int32_t>::max(),
                   "boosting tree vocabulary size ", vocab_size, " out of range");
  const auto V = static_cast<std::int32_t>(vocab_size);
  std::int64_t phrases = 0;
  for (std::size_t u = 0; u < lists.size(); ++u) {
    for (std::size_t k = 0; k < lists[u].size(); ++k) {
      const auto& phrase = lists[u][k];
      ASRDEC_CHECK_ARG(!phrase.empty(), "phrase ", k, " of phrase list ", u, " is empty");
      for (std::int32_t token : phrase) {
        ASRDEC_CHECK_ARG(token >= 0 && token < V, "phrase ", k, " of phrase list ", u, " has token ", token,
                         " outside the vocabulary [0, ", V, ")");
      }
      ++phrases;
    }
  }

  detail::NgramTables t;
  t.vocab_size = V;
  t.order = 1;
  t.missing.assign(static_cast<std::size_t>(V), 0);
  std::vector<std::int32_t> roots;
  t.arc_begin.push_back(0);
  for (const PhraseList& list : lists) {
    std::vector<TrieNode> nodes = build_trie(list, options);
    const std::vector<std::int32_t> order = link_failures(nodes);
    const auto base = static_cast<std::int64_t>(t.backoff_to.size());
    ASRDEC_CHECK_ARG(base + static_cast<std::int64_t>(nodes.size()) < std::numeric_limits<std::int32_t>::max(),
                     "the phrase lists need more than 2^31 boosting-tree states");
    std::vector<std::int32_t> state_of(nodes.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
      state_of[static_cast<std::size_t>(order[k])] = static_cast<std::int32_t>(base + static_cast<std::int64_t>(k));
    }
    roots.push_back(static_cast<std::int32_t>(base));
    for (const std::int32_t n : order) {
      const TrieNode& node = nodes[static_cast<std::size_t>(n)];
      t.order = std::max(t.order, node.depth + 1);
      auto add_arc = [&](std::int32_t label, std::int32_t target, float weight) {
        t.arc_label.push_back(label);
        t.arc_target.push_back(target);
        t.arc_weight.push_back(weight);
      };
      if (n == 0) {
        // The root holds every label (and <unk>, label V): tokens that start no phrase loop with unk_score.
        for (std::int32_t label = 0; label <= V; ++label) {
          const auto child = node.children.find(label);
          if (child != node.children.end()) {
            const TrieNode& next = nodes[static_cast<std::size_t>(child->second)];
            add_arc(label, state_of[static_cast<std::size_t>(child->second)], static_cast<float>(next.score));
          } else {
            add_arc(label, state_of[0], options.unk_score);
          }
        }
        t.backoff_to.push_back(-1);
        t.backoff_weight.push_back(0.0f);
        t.final_weight.push_back(0.0f);
      } else {
        for (const auto& [label, child] : node.children) {
          const TrieNode& next = nodes[static_cast<std::size_t>(child)];
          double weight = next.score - node.score;
          if (options.uniform_weights && next.is_end) weight += next.score;
          add_arc(label, state_of[static_cast<std::size_t>(child)], static_cast<float>(weight));
        }
        // A phrase end keeps its bonus when the match cannot go on; with uniform weights only a first-level
        // end does (the NeMo layout); otherwise the fail arc takes the partial bonus back.
        const bool keep_bonus = node.is_end && (!options.uniform_weights || node.depth == 1);
        const TrieNode& fail = nodes[static_cast<std::size_t>(node.fail)];
        t.backoff_to.push_back(state_of[static_cast<std::size_t>(node.fail)]);
        t.backoff_weight.push_back(keep_bonus ? 0.0f : static_cast<float>(fail.score - node.score));
        t.final_weight.push_back(node.is_end ? options.final_eos_score : 0.0f);
      }
      ASRDEC_CHECK_ARG(t.arc_label.size() < static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()),
                       "the phrase lists need more than 2^31 boosting-tree arcs");
      t.arc_begin.push_back(static_cast<std::int32_t>(t.arc_label.size()));
    }
  }

  auto graph = std::make_unique<NgramLm::Impl>();
  graph->device = device;
  graph->host = std::move(t);
  detail::finish_ngram(*graph);
  auto impl = std::make_unique<Impl>(Impl{NgramLm(std::move(graph)), std::move(roots), phrases, options, {}});
  if (device.is_cuda()) {
    impl->device_roots = DeviceBuffer<std::int32_t>(impl->roots.size(), device);
    Stream stream(device);
    copy_bytes_async(impl->device_roots.data(), device, impl->roots.data(), Device::cpu(), impl->roots.size() * 4,
                     stream.handle());
    stream.synchronize();
  }
  return BoostingTree(std::move(impl));
}

Device BoostingTree::device() const noexcept { return impl_->graph.device(); }
std::int64_t BoostingTree::vocab_size() const noexcept { return impl_->graph.vocab_size(); }
std::int64_t BoostingTree::num_lists() const noexcept { return static_cast<std::int64_t>(impl_->roots.size()); }
std::int64_t BoostingTree::num_phrases() const noexcept { return impl_->phrases; }
std::int64_t BoostingTree::num_states() const noexcept { return impl_->graph.num_states(); }
std::size_t BoostingTree::memory_bytes() const noexcept { return impl_->graph.memory_bytes(); }
const BoostingTreeOptions& BoostingTree::options() const noexcept { return impl_->options; }
NgramLmRef BoostingTree::ref() const noexcept { return impl_->graph.ref(); }
const std::int32_t* BoostingTree::list_roots() const noexcept {
  return device().is_cuda() ? impl_->device_roots.data() : impl_->roots.data();
}

std::int32_t BoostingTree::root_state(std::int64_t list) const {
  ASRDEC_CHECK_ARG(list >= 0 && list < num_lists(), "phrase list ", list, " out of range [0, ", num_lists(), ")");
  return impl_->roots[static_cast<std::size_t>(list)];
}

void BoostingTree::check_batch(std::int64_t batch) const {
  ASRDEC_CHECK_ARG(num_lists() == 1 || num_lists() == batch, "the boosting tree has ", num_lists(),
                   " phrase lists but the batch has ", batch,
                   " utterances; give one list for all utterances or one per utterance");
}

std::int32_t BoostingTree::root_for(std::int64_t b, std::int64_t batch) const {
  check_batch(batch);
  return root_state(num_lists() == 1 ? 0 : b);
}

void BoostingTree::advance(const std::int32_t* states, std::int64_t batch, float* scores, std::int32_t* next_states,
                           StreamHandle stream) const {
  impl_->graph.advance(states, batch, scores, next_states, stream);
}

std::pair<float, std::int32_t> BoostingTree::score(std::int32_t state, std::int32_t token) const {
  ASRDEC_EXPECTS(device().is_cpu(), Unsupported, "BoostingTree::score needs a CPU tree; this one is on ",
                 device().to_string());
  return impl_->graph.score(state, token);
}

float BoostingTree::final_score(std::int32_t state) const {
  ASRDEC_EXPECTS(device().is_cpu(), Unsupported, "BoostingTree::final_score needs a CPU tree; this one is on ",
                 device().to_string());
  return impl_->graph.final_score(state);
}

std::string BoostingTree::describe() const {
  return detail::concat("boosting tree: ", num_lists(), " phrase list(s), ", num_phrases(), " phrases, ", num_states(),
                        " states, V = ", vocab_size(), ", context_score ", impl_->options.context_score,
                        ", depth_scaling ", impl_->options.depth_scaling,
                        impl_->options.uniform_weights ? ", uniform weights" : "", ", ", memory_bytes(), " bytes on ",
                        device().to_string());
}

}  // namespace asrdec
