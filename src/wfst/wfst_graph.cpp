// WfstGraph: loading an OpenFst file into CSR arrays (wfst/openfst_file.cpp), and the checks every graph passes
// before a decoder sees it.

#include "asrdec/wfst/wfst_graph.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "asrdec/core/error.hpp"
#include "wfst/openfst_file.hpp"

namespace asrdec {
namespace {

using detail::concat;

// A path cost with its length: ordered by cost, then by more arcs first, so that a Bellman–Ford pass finds cycles
// of cost exactly 0 as "negative" ones (a zero-cost cycle adds (0, 1) arcs, which compares below (0, 0)).
struct CycleCost {
  double cost;
  std::int64_t arcs;
};

bool less(const CycleCost& a, const CycleCost& b) { return a.cost < b.cost || (a.cost == b.cost && a.arcs > b.arcs); }

// The strongly connected components of the ε-subgraph that contain a cycle. Tarjan's algorithm with an explicit
// stack (graphs have millions of states: recursion would overflow the thread's stack), visiting from every state, not
// only the start: a cycle unreachable by ε from the start is reachable after a frame.
struct EpsilonComponents {
  std::vector<std::int32_t> component;            // [states]
  std::vector<std::vector<std::int32_t>> cyclic;  // members of each component with a cycle
};

EpsilonComponents epsilon_components(const WfstGraphArrays& g) {
  EpsilonComponents out;
  bool any = false;
  for (std::int32_t s = 0; s < g.num_states && !any; ++s) any = g.epsilon_begin[s] < g.emitting_begin[s + 1];
  if (!any) return out;
  const auto n = static_cast<std::size_t>(g.num_states);
  constexpr std::int32_t kUnvisited = -1;
  std::vector<std::int32_t> index(n, kUnvisited), low(n, 0);
  std::vector<bool> on_stack(n, false);
  std::vector<std::int32_t> members;                          // Tarjan's stack of visited, unassigned states
  std::vector<std::pair<std::int32_t, std::int64_t>> frames;  // the DFS: (state, next ε-arc to follow)
  out.component.assign(n, kUnvisited);
  std::int32_t next_index = 0, next_component = 0;
  for (std::int32_t root = 0; root < g.num_states; ++root) {
    if (index[root] != kUnvisited) continue;
    frames.emplace_back(root, g.epsilon_begin[root]);
    index[root] = low[root] = next_index++;
    members.push_back(root);
    on_stack[root] = true;
    while (!frames.empty()) {
      auto& [s, a] = frames.back();
      if (a < g.emitting_begin[s + 1]) {
        const std::int32_t to = g.next_state[a++];
        if (index[to] == kUnvisited) {
          index[to] = low[to] = next_index++;
          members.push_back(to);
          on_stack[to] = true;
          frames.emplace_back(to, g.epsilon_begin[to]);
        } else if (on_stack[to]) {
          low[s] = std::min(low[s], index[to]);
        }
        continue;
      }
      const std::int32_t done = s;
      frames.pop_back();
      if (!frames.empty()) low[frames.back().first] = std::min(low[frames.back().first], low[done]);
      if (low[done] != index[done]) continue;
      // `done` roots a component: its members are on the stack down to it.
      std::vector<std::int32_t> component;
      std::int32_t member;
      do {
        member = members.back();
        members.pop_back();
        on_stack[member] = false;
        out.component[member] = next_component;
        component.push_back(member);
      } while (member != done);
      ++next_component;
      bool cyclic = component.size() > 1;
      for (std::int64_t e = g.epsilon_begin[done]; e < g.emitting_begin[done + 1] && !cyclic; ++e) {
        cyclic = g.next_state[e] == done;
      }
      if (cyclic) {
        std::sort(component.begin(), component.end());
        out.cyclic.push_back(std::move(component));
      }
    }
  }
  return out;
}

// Arc relaxations the ε-cycle check may spend on one graph: far beyond what real graphs need (their ε-components are
// small), and a bound on what a crafted graph can cost (Bellman–Ford is O(states × arcs) at worst).
constexpr std::int64_t kMaxCycleCheckRelaxations = std::int64_t{1} << 26;

// True if the parent pointers of `members` (set by strict improvements only) close a cycle: such a cycle costs ≤ 0.
// `seen` holds walk stamps; stamps above this check's start belong to its walks, and a walk that reaches a state an
// earlier walk of this check passed stops there (that walk went on from it without closing a cycle).
bool parents_close_a_cycle(const std::vector<std::int32_t>& members, const std::vector<std::int32_t>& parent,
                           std::vector<std::int64_t>& seen, std::int64_t& stamp) {
  const std::int64_t check_start = stamp;
  for (const std::int32_t start : members) {
    if (seen[static_cast<std::size_t>(start)] > check_start) continue;
    const std::int64_t walk = ++stamp;
    for (std::int32_t s = start; s >= 0; s = parent[static_cast<std::size_t>(s)]) {
      std::int64_t& mark = seen[static_cast<std::size_t>(s)];
      if (mark == walk) return true;
      if (mark > check_start) break;
      mark = walk;
    }
  }
  return false;
}

// Throws InvalidArgument (`what` first) if some cycle of ε-arcs costs ≤ 0, arc a costing weight[a] minus the boost
// of its output label (boost_by_word may be empty). Bellman–Ford inside each cyclic component, which stops as soon as
// the parent pointers close a cycle (so a long ring of cost ≤ 0 is found in one round, not one round per state);
// Unsupported when the check would take more than kMaxCycleCheckRelaxations.
void check_epsilon_cycles(const WfstGraphArrays& g, const EpsilonComponents& c, const std::vector<float>& boost_by_word,
                          const std::string& what) {
  const auto cost_of = [&](std::int64_t a) {
    const std::int32_t word = g.olabel[a];
    const double boost = word != 0 && static_cast<std::size_t>(word) < boost_by_word.size()
                             ? static_cast<double>(boost_by_word[static_cast<std::size_t>(word)])
                             : 0.0;
    return static_cast<double>(g.weight[a]) - boost;
  };
  const auto n = static_cast<std::size_t>(g.num_states);
  std::vector<CycleCost> distance(n, CycleCost{0.0, 0});
  std::vector<std::int32_t> parent(n, -1);
  std::vector<std::int64_t> seen(n, -1);
  std::int64_t stamp = 0, work = 0;
  for (const auto& component : c.cyclic) {
    const auto id = c.component[static_cast<std::size_t>(component.front())];
    // Every member starts at distance 0 (a virtual source); a relaxation in round |component| proves a cycle.
    for (std::int32_t s : component) {
      distance[static_cast<std::size_t>(s)] = CycleCost{0.0, 0};
      parent[static_cast<std::size_t>(s)] = -1;
    }
    for (std::size_t round = 0; round <= component.size(); ++round) {
      bool changed = false;
      for (std::int32_t s : component) {
        const CycleCost from = distance[static_cast<std::size_t>(s)];
        for (std::int64_t a = g.epsilon_begin[s]; a < g.emitting_begin[s + 1]; ++a) {
          ++work;
          const std::int32_t to = g.next_state[a];
          if (c.component[static_cast<std::size_t>(to)] != id) continue;
          const CycleCost via{from.cost + cost_of(a), from.arcs + 1};
          if (less(via, distance[static_cast<std::size_t>(to)])) {
            distance[static_cast<std::size_t>(to)] = via;
            parent[static_cast<std::size_t>(to)] = s;
            changed = true;
          }
        }
      }
      if (!changed) break;
      ASRDEC_CHECK_ARG(round < component.size() && !parents_close_a_cycle(component, parent, seen, stamp), what,
                       " a cycle of ε-arcs (through state ", component.front(),
                       ") whose total cost is ≤ 0; the ε-closure of a frame would not end");
      ASRDEC_EXPECTS(work <= kMaxCycleCheckRelaxations, Unsupported, what, " a strongly connected ε-subgraph of ",
                     component.size(), " states whose cycles take more than ", kMaxCycleCheckRelaxations,
                     " arc relaxations to check; split its ε-cycles");
    }
  }
}

}  // namespace

struct WfstGraph::Impl {
  WfstGraphArrays arrays;
  std::string source;
  std::int32_t max_input_label = 0;
  std::int32_t max_output_label = 0;
  EpsilonComponents epsilon;
  std::vector<std::int32_t> words_on_epsilon_cycles;  // sorted
};

WfstGraph::WfstGraph(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

WfstGraph WfstGraph::from_arrays(WfstGraphArrays a, std::string source) {
  const auto states = static_cast<std::size_t>(std::max(a.num_states, 0));
  ASRDEC_CHECK_ARG(a.num_states > 0, source, ": the graph has no states");
  ASRDEC_CHECK_ARG(a.start >= 0 && a.start < a.num_states, source, ": start state ", a.start, " is not one of the ",
                   a.num_states, " states");
  ASRDEC_CHECK_ARG(
      a.emitting_begin.size() == states + 1 && a.epsilon_begin.size() == states + 1 && a.final_weight.size() == states,
      source, ": offset or final-weight arrays do not match ", states, " states");
  const auto arcs = static_cast<std::size_t>(a.emitting_begin.back());
  ASRDEC_CHECK_ARG(a.emitting_begin.front() == 0 && a.ilabel.size() == arcs && a.olabel.size() == arcs &&
                       a.weight.size() == arcs && a.next_state.size() == arcs,
                   source, ": arc arrays do not match the offsets");
  auto impl = std::make_shared<Impl>();
  for (std::int32_t s = 0; s < a.num_states; ++s) {
    ASRDEC_CHECK_ARG(a.emitting_begin[s] <= a.epsilon_begin[s] && a.epsilon_begin[s] <= a.emitting_begin[s + 1], source,
                     ": offsets of state ", s, " are out of order");
    ASRDEC_CHECK_ARG(!std::isnan(a.final_weight[s]) && a.final_weight[s] != -std::numeric_limits<float>::infinity(),
                     source, ": state ", s, " has final weight ", a.final_weight[s]);
    for (std::int64_t i = a.emitting_begin[s]; i < a.emitting_begin[s + 1]; ++i) {
      const bool emitting = i < a.epsilon_begin[s];
      ASRDEC_CHECK_ARG(emitting ? a.ilabel[i] > 0 : a.ilabel[i] == 0, source, ": arc ", i, " of state ", s,
                       " has input label ", a.ilabel[i], " in the ", emitting ? "emitting" : "ε", " group");
      ASRDEC_CHECK_ARG(a.olabel[i] >= 0, source, ": arc ", i, " of state ", s, " has output label ", a.olabel[i]);
      ASRDEC_CHECK_ARG(a.next_state[i] >= 0 && a.next_state[i] < a.num_states, source, ": arc ", i, " of state ", s,
                       " goes to state ", a.next_state[i], ", not one of the ", a.num_states, " states");
      ASRDEC_CHECK_ARG(!std::isnan(a.weight[i]) && a.weight[i] != -std::numeric_limits<float>::infinity(), source,
                       ": arc ", i, " of state ", s, " has weight ", a.weight[i]);
      impl->max_input_label = std::max(impl->max_input_label, a.ilabel[i]);
      impl->max_output_label = std::max(impl->max_output_label, a.olabel[i]);
    }
  }
  impl->epsilon = epsilon_components(a);
  check_epsilon_cycles(a, impl->epsilon, {}, concat(source, ": the graph has"));
  for (const auto& component : impl->epsilon.cyclic) {
    for (std::int32_t s : component) {
      for (std::int64_t i = a.epsilon_begin[s]; i < a.emitting_begin[s + 1]; ++i) {
        const auto to = static_cast<std::size_t>(a.next_state[i]);
        if (a.olabel[i] != 0 && impl->epsilon.component[to] == impl->epsilon.component[static_cast<std::size_t>(s)]) {
          impl->words_on_epsilon_cycles.push_back(a.olabel[i]);
        }
      }
    }
  }
  std::sort(impl->words_on_epsilon_cycles.begin(), impl->words_on_epsilon_cycles.end());
  impl->words_on_epsilon_cycles.erase(
      std::unique(impl->words_on_epsilon_cycles.begin(), impl->words_on_epsilon_cycles.end()),
      impl->words_on_epsilon_cycles.end());
  impl->arrays = std::move(a);
  impl->source = std::move(source);
  return WfstGraph(std::move(impl));
}

WfstGraph WfstGraph::load(const std::string& path) {
  WfstGraphArrays arrays = detail::read_openfst_file(path);
  // from_arrays checks the graph as an argument; read from a file, a bad graph is bad file content.
  try {
    return from_arrays(std::move(arrays), path);
  } catch (const InvalidArgument& error) {
    throw ParseError(path, 0, error.what());
  }
}

std::int32_t WfstGraph::num_states() const noexcept { return impl_->arrays.num_states; }
std::int64_t WfstGraph::num_arcs() const noexcept { return impl_->arrays.emitting_begin.back(); }
std::int64_t WfstGraph::num_emitting_arcs() const noexcept {
  std::int64_t count = 0;
  const WfstGraphArrays& a = impl_->arrays;
  for (std::int32_t s = 0; s < a.num_states; ++s) count += a.epsilon_begin[s] - a.emitting_begin[s];
  return count;
}
std::int32_t WfstGraph::start_state() const noexcept { return impl_->arrays.start; }
std::int32_t WfstGraph::max_input_label() const noexcept { return impl_->max_input_label; }
std::int32_t WfstGraph::max_output_label() const noexcept { return impl_->max_output_label; }
const std::string& WfstGraph::source() const noexcept { return impl_->source; }
const WfstGraphArrays& WfstGraph::arrays() const noexcept { return impl_->arrays; }

void WfstGraph::check_word_boosts(const std::vector<float>& boost_by_word) const {
  bool touched = false;
  for (const std::int32_t word : impl_->words_on_epsilon_cycles) {
    touched = touched || (static_cast<std::size_t>(word) < boost_by_word.size() &&
                          boost_by_word[static_cast<std::size_t>(word)] != 0.0f);
  }
  if (!touched) return;
  check_epsilon_cycles(impl_->arrays, impl_->epsilon, boost_by_word,
                       concat("word boosting: with these boosts ", impl_->source, " has"));
}

}  // namespace asrdec
