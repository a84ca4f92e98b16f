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

// One list's automaton in the n-gram layout, its states numbered from `base` (the root) and its arcs from
// `arc_base`, breadth first. arc_begin holds one entry per state plus the end of the last state's arcs.
struct ListAutomaton {
  std::vector<std::int32_t> arc_begin, arc_label, arc_target, backoff_to;
  std::vector<float> arc_weight, backoff_weight, final_weight;
  std::int32_t max_depth = 0;
  std::int32_t root = 0;  ///< its number: `base`
  std::int64_t states() const { return static_cast<std::int64_t>(backoff_to.size()); }
};

ListAutomaton build_automaton(const PhraseList& list, const BoostingTreeOptions& options, std::int32_t V,
                              std::int64_t base, std::int64_t arc_base) {
  std::vector<TrieNode> nodes = build_trie(list, options);
  const std::vector<std::int32_t> order = link_failures(nodes);
  ASRDEC_CHECK_ARG(base + static_cast<std::int64_t>(nodes.size()) < std::numeric_limits<std::int32_t>::max(),
                   "the phrase lists need more than 2^31 boosting-tree states");
  std::vector<std::int32_t> state_of(nodes.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    state_of[static_cast<std::size_t>(order[k])] = static_cast<std::int32_t>(base + static_cast<std::int64_t>(k));
  }
  ListAutomaton a;
  a.root = state_of[0];
  a.arc_begin.push_back(static_cast<std::int32_t>(arc_base));
  const auto add_arc = [&](std::int32_t label, std::int32_t target, float weight) {
    a.arc_label.push_back(label);
    a.arc_target.push_back(target);
    a.arc_weight.push_back(weight);
  };
  for (const std::int32_t n : order) {
    const TrieNode& node = nodes[static_cast<std::size_t>(n)];
    a.max_depth = std::max(a.max_depth, node.depth);
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
      a.backoff_to.push_back(-1);
      a.backoff_weight.push_back(0.0f);
      a.final_weight.push_back(0.0f);
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
      a.backoff_to.push_back(state_of[static_cast<std::size_t>(node.fail)]);
      a.backoff_weight.push_back(keep_bonus ? 0.0f : static_cast<float>(fail.score - node.score));
      a.final_weight.push_back(node.is_end ? options.final_eos_score : 0.0f);
    }
    ASRDEC_CHECK_ARG(arc_base + static_cast<std::int64_t>(a.arc_label.size()) <
                         static_cast<std::int64_t>(std::numeric_limits<std::int32_t>::max()),
                     "the phrase lists need more than 2^31 boosting-tree arcs");
    a.arc_begin.push_back(static_cast<std::int32_t>(arc_base + static_cast<std::int64_t>(a.arc_label.size())));
  }
  return a;
}

// Checks the phrases of list `name` (non-empty, tokens in [0, V)); returns how many there are.
std::int64_t check_phrases(const PhraseList& list, std::int32_t V, const std::string& name) {
  for (std::size_t k = 0; k < list.size(); ++k) {
    const auto& phrase = list[k];
    ASRDEC_CHECK_ARG(!phrase.empty(), "phrase ", k, " of ", name, " is empty");
    for (std::int32_t token : phrase) {
      ASRDEC_CHECK_ARG(token >= 0 && token < V, "phrase ", k, " of ", name, " has token ", token,
                       " outside the vocabulary [0, ", V, ")");
    }
  }
  return static_cast<std::int64_t>(list.size());
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
  // Slotted trees (with_slots): each list in fixed ranges of the tables, replaced by set_list.
  BoostingSlots slots{};
  std::vector<std::int64_t> slot_phrases;  // phrases in each slot
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
  for (std::size_t u = 0; u < lists.size(); ++u)
    phrases += check_phrases(lists[u], V, detail::concat("phrase list ", u));

  detail::NgramTables t;
  t.vocab_size = V;
  t.order = 1;
  t.missing.assign(static_cast<std::size_t>(V), 0);
  std::vector<std::int32_t> roots;
  t.arc_begin.push_back(0);
  for (const PhraseList& list : lists) {
    const ListAutomaton a = build_automaton(list, options, V, static_cast<std::int64_t>(t.backoff_to.size()),
                                            static_cast<std::int64_t>(t.arc_label.size()));
    roots.push_back(static_cast<std::int32_t>(t.backoff_to.size()));
    t.order = std::max(t.order, a.max_depth + 1);
    t.arc_begin.insert(t.arc_begin.end(), a.arc_begin.begin() + 1, a.arc_begin.end());
    t.arc_label.insert(t.arc_label.end(), a.arc_label.begin(), a.arc_label.end());
    t.arc_target.insert(t.arc_target.end(), a.arc_target.begin(), a.arc_target.end());
    t.arc_weight.insert(t.arc_weight.end(), a.arc_weight.begin(), a.arc_weight.end());
    t.backoff_to.insert(t.backoff_to.end(), a.backoff_to.begin(), a.backoff_to.end());
    t.backoff_weight.insert(t.backoff_weight.end(), a.backoff_weight.begin(), a.backoff_weight.end());
    t.final_weight.insert(t.final_weight.end(), a.final_weight.begin(), a.final_weight.end());
  }
  return BoostingTree(finish(std::move(t), std::move(roots), phrases, options, device));
}

std::unique_ptr<BoostingTree::Impl> BoostingTree::finish(detail::NgramTables tables, std::vector<std::int32_t> roots,
                                                         std::int64_t phrases, const BoostingTreeOptions& options,
                                                         Device device) {
  auto graph = std::make_unique<NgramLm::Impl>();
  graph->device = device;
  graph->host = std::move(tables);
  detail::finish_ngram(*graph);
  auto impl = std::make_unique<Impl>(Impl{NgramLm(std::move(graph)), std::move(roots), phrases, options, {}, {}, {}});
  if (device.is_cuda()) {
    impl->device_roots = DeviceBuffer<std::int32_t>(impl->roots.size(), device);
    Stream stream(device);
    copy_bytes_async(impl->device_roots.data(), device, impl->roots.data(), Device::cpu(), impl->roots.size() * 4,
                     stream.handle());
    stream.synchronize();
  }
  return impl;
}

void BoostingSlots::validate(std::int64_t vocab_size) const {
  ASRDEC_CHECK_ARG(slots >= 1 && slots <= (std::int64_t{1} << 20), "BoostingSlots.slots = ", slots,
                   " is outside [1, 2^20]");
  ASRDEC_CHECK_ARG(states_per_slot >= 1 && states_per_slot <= (std::int64_t{1} << 24),
                   "BoostingSlots.states_per_slot = ", states_per_slot, " is outside [1, 2^24]");
  ASRDEC_CHECK_ARG(max_phrase_tokens >= 1 && max_phrase_tokens <= 4096,
                   "BoostingSlots.max_phrase_tokens = ", max_phrase_tokens, " is outside [1, 4096]");
  // Every slot holds its states plus one that ends it, and its root's V + 1 arcs plus one arc per other state.
  const std::int64_t states = slots * (states_per_slot + 1);
  const std::int64_t arcs = slots * (vocab_size + states_per_slot);
  ASRDEC_CHECK_ARG(states < std::numeric_limits<std::int32_t>::max() && arcs < std::numeric_limits<std::int32_t>::max(),
                   "BoostingSlots: ", slots, " slots of ", states_per_slot, " states over V = ", vocab_size,
                   " need more than 2^31 states or arcs");
}

namespace {

// Writes `a` (built at the slot's bases) into slot k of `t`, and pads the slot's other states: no arcs, backing off to
// the slot's root at no cost. No query reaches them, but a stream still holding a state of the list this one replaced
// (which the contract forbids: a list stays while its streams are open) then continues from the new list's root
// rather than from a state with no way on (next state -1, which the next query would index with).
void write_slot(detail::NgramTables& t, const ListAutomaton& a, std::int64_t k, std::int64_t slot_states,
                std::int64_t slot_arcs) {
  const std::int64_t base = k * slot_states, arc_base = k * slot_arcs;
  const std::int64_t used = a.states();
  for (std::int64_t i = 0; i < used; ++i) {
    t.arc_begin[static_cast<std::size_t>(base + i)] = a.arc_begin[static_cast<std::size_t>(i)];
    t.backoff_to[static_cast<std::size_t>(base + i)] = a.backoff_to[static_cast<std::size_t>(i)];
    t.backoff_weight[static_cast<std::size_t>(base + i)] = a.backoff_weight[static_cast<std::size_t>(i)];
    t.final_weight[static_cast<std::size_t>(base + i)] = a.final_weight[static_cast<std::size_t>(i)];
  }
  const std::int32_t end = a.arc_begin.back();
  for (std::int64_t i = used; i < slot_states; ++i) {  // unreachable; the last one spans the slot's unused arcs
    t.arc_begin[static_cast<std::size_t>(base + i)] = end;
    t.backoff_to[static_cast<std::size_t>(base + i)] = a.root;
    t.backoff_weight[static_cast<std::size_t>(base + i)] = 0.0f;
    t.final_weight[static_cast<std::size_t>(base + i)] = 0.0f;
  }
  std::copy(a.arc_label.begin(), a.arc_label.end(), t.arc_label.begin() + arc_base);
  std::copy(a.arc_target.begin(), a.arc_target.end(), t.arc_target.begin() + arc_base);
  std::copy(a.arc_weight.begin(), a.arc_weight.end(), t.arc_weight.begin() + arc_base);
}

}  // namespace

BoostingTree BoostingTree::with_slots(std::int64_t vocab_size, const BoostingSlots& capacity,
                                      const BoostingTreeOptions& options, Device device) {
  options.validate();
  ASRDEC_CHECK_ARG(vocab_size >= 1 && vocab_size < std::numeric_limits<std::int32_t>::max(),
                   "boosting tree vocabulary size ", vocab_size, " out of range");
  capacity.validate(vocab_size);
  const auto V = static_cast<std::int32_t>(vocab_size);
  const std::int64_t slot_states = capacity.states_per_slot + 1, slot_arcs = vocab_size + capacity.states_per_slot;
  const auto states = static_cast<std::size_t>(capacity.slots * slot_states);
  const auto arcs = static_cast<std::size_t>(capacity.slots * slot_arcs);
  detail::NgramTables t;
  t.vocab_size = V;
  t.order = capacity.max_phrase_tokens + 1;
  t.missing.assign(static_cast<std::size_t>(V), 0);
  t.arc_begin.assign(states + 1, static_cast<std::int32_t>(arcs));
  t.arc_label.assign(arcs, V);
  t.arc_target.assign(arcs, 0);
  t.arc_weight.assign(arcs, 0.0f);
  t.backoff_to.assign(states, -1);
  t.backoff_weight.assign(states, 0.0f);
  t.final_weight.assign(states, 0.0f);
  std::vector<std::int32_t> roots;
  for (std::int64_t k = 0; k < capacity.slots; ++k) {
    roots.push_back(static_cast<std::int32_t>(k * slot_states));
    write_slot(t, build_automaton({}, options, V, k * slot_states, k * slot_arcs), k, slot_states, slot_arcs);
  }
  auto impl = finish(std::move(t), std::move(roots), 0, options, device);
  impl->slots = capacity;
  impl->slot_phrases.assign(static_cast<std::size_t>(capacity.slots), 0);
  return BoostingTree(std::move(impl));
}

void BoostingTree::set_list(std::int64_t slot, const PhraseList& phrases) {
  Impl& impl = *impl_;
  ASRDEC_CHECK_ARG(impl.slots.slots > 0,
                   "BoostingTree::set_list needs a tree made by with_slots; this one was built "
                   "from fixed lists");
  ASRDEC_CHECK_ARG(slot >= 0 && slot < impl.slots.slots, "BoostingTree::set_list: slot ", slot, " is outside [0, ",
                   impl.slots.slots, ")");
  const auto V = static_cast<std::int32_t>(vocab_size());
  const std::string name = detail::concat("the phrase list for slot ", slot);
  const std::int64_t count = check_phrases(phrases, V, name);
  for (std::size_t k = 0; k < phrases.size(); ++k) {
    ASRDEC_CHECK_ARG(static_cast<std::int64_t>(phrases[k].size()) <= impl.slots.max_phrase_tokens, "phrase ", k, " of ",
                     name, " has ", phrases[k].size(),
                     " tokens, more than the tree's max_phrase_tokens = ", impl.slots.max_phrase_tokens);
  }
  const std::int64_t slot_states = impl.slots.states_per_slot + 1,
                     slot_arcs = vocab_size() + impl.slots.states_per_slot;
  const ListAutomaton a = build_automaton(phrases, impl.options, V, slot * slot_states, slot * slot_arcs);
  ASRDEC_EXPECTS(a.states() <= impl.slots.states_per_slot, OutOfMemory, name, " needs ", a.states(),
                 " boosting-tree states, more than the tree's states_per_slot = ", impl.slots.states_per_slot,
                 " (make the tree with more states per slot, or split the list)");
  NgramLm::Impl& graph = *impl.graph.impl_;
  if (device().is_cpu()) {
    write_slot(graph.host, a, slot, slot_states, slot_arcs);
  } else {
#if ASRDEC_WITH_CUDA
    // The slot's ranges, staged on the host (values absolute, positions from the slot's start) and copied over the
    // device tables' (the kernels' pointers stay).
    detail::NgramTables staged;
    staged.arc_begin.assign(static_cast<std::size_t>(slot_states), 0);
    staged.backoff_to.assign(static_cast<std::size_t>(slot_states), 0);
    staged.backoff_weight.assign(staged.backoff_to.size(), 0.0f);
    staged.final_weight.assign(staged.backoff_to.size(), 0.0f);
    staged.arc_label.assign(static_cast<std::size_t>(slot_arcs), 0);
    staged.arc_target.assign(staged.arc_label.size(), 0);
    staged.arc_weight.assign(staged.arc_label.size(), 0.0f);
    write_slot(staged, a, 0, slot_states, slot_arcs);
    Stream stream(device());
    const auto states_at = static_cast<std::size_t>(slot * slot_states);
    const auto arcs_at = static_cast<std::size_t>(slot * slot_arcs);
    const auto n_states = static_cast<std::size_t>(slot_states), n_arcs = a.arc_label.size();
    const auto copy = [&](auto& to, const auto& from, std::size_t at, std::size_t elements) {
      copy_bytes_async(to.data() + at, device(), from.data(), Device::cpu(), elements * sizeof(from[0]),
                       stream.handle());
    };
    copy(graph.arc_begin, staged.arc_begin, states_at, n_states);
    copy(graph.backoff_to, staged.backoff_to, states_at, n_states);
    copy(graph.backoff_weight, staged.backoff_weight, states_at, n_states);
    copy(graph.final_weight, staged.final_weight, states_at, n_states);
    copy(graph.arc_label, staged.arc_label, arcs_at, n_arcs);
    copy(graph.arc_target, staged.arc_target, arcs_at, n_arcs);
    copy(graph.arc_weight, staged.arc_weight, arcs_at, n_arcs);
    stream.synchronize();
#else
    throw Unsupported(cuda_info().reason);
#endif
  }
  impl.phrases += count - impl.slot_phrases[static_cast<std::size_t>(slot)];
  impl.slot_phrases[static_cast<std::size_t>(slot)] = count;
}

const BoostingSlots& BoostingTree::slots() const noexcept { return impl_->slots; }

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
  if (impl_->slots.slots > 0) {
    ASRDEC_CHECK_ARG(batch <= num_lists(), "the boosting tree has ", num_lists(), " slots but the batch has ", batch,
                     " utterances; utterance b uses slot b");
    return;
  }
  ASRDEC_CHECK_ARG(num_lists() == 1 || num_lists() == batch, "the boosting tree has ", num_lists(),
                   " phrase lists but the batch has ", batch,
                   " utterances; give one list for all utterances or one per utterance");
}

std::int32_t BoostingTree::root_for(std::int64_t b, std::int64_t batch) const {
  check_batch(batch);
  return root_state(num_lists() == 1 && impl_->slots.slots == 0 ? 0 : b);
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
