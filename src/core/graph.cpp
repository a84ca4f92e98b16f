#include "asrdec/core/graph.hpp"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "asrdec/config.hpp"
#include "asrdec/core/error.hpp"
#include "asrdec/core/log.hpp"

#if ASRDEC_WITH_CUDA
#include "asrdec/core/buffer.hpp"
#include "core/cuda/capture_calls.hpp"
#include "core/cuda/check.hpp"
#include "core/cuda/graph_kernels.hpp"
#endif

namespace asrdec {

const char* to_string(GraphMode mode) noexcept {
  switch (mode) {
    case GraphMode::automatic:
      return "auto";
    case GraphMode::conditional:
      return "conditional";
    case GraphMode::per_step:
      return "per_step";
    case GraphMode::eager:
      return "eager";
  }
  return "unknown";
}

GraphMode parse_graph_mode(std::string_view name) {
  if (name == "auto" || name == "automatic") return GraphMode::automatic;
  if (name == "conditional") return GraphMode::conditional;
  if (name == "per_step" || name == "per-step") return GraphMode::per_step;
  if (name == "eager") return GraphMode::eager;
  throw InvalidArgument(
      detail::concat("unknown graph mode '", name, "': expected auto, conditional, per_step or eager"));
}

StreamProgram& StreamProgram::then(Launch launch) {
  ASRDEC_CHECK_ARG(static_cast<bool>(launch), "StreamProgram::then: empty launch function");
  Node node;
  node.launch = std::move(launch);
  nodes_.push_back(std::move(node));
  return *this;
}

StreamProgram& StreamProgram::loop_while(const std::int32_t* device_flag, StreamProgram body,
                                         std::int64_t max_iterations) {
  ASRDEC_CHECK_ARG(device_flag != nullptr, "StreamProgram::loop_while: null loop flag");
  ASRDEC_CHECK_ARG(max_iterations >= 1, "StreamProgram::loop_while: max_iterations must be at least 1, got ",
                   max_iterations);
  // A body that does not run any step could not rewrite the flag and would loop forever.
  ASRDEC_CHECK_ARG(!body.nodes().empty(), "StreamProgram::loop_while: empty loop body");
  Node node;
  node.flag = device_flag;
  node.body = std::make_shared<StreamProgram>(std::move(body));
  node.max_iterations = max_iterations;
  nodes_.push_back(std::move(node));
  return *this;
}

#if ASRDEC_WITH_CUDA

namespace {

// Ends a stream capture if an exception leaves the capturing scope, so the stream is usable again.
class CaptureGuard {
 public:
  CaptureGuard(cudaStream_t stream, bool owns_graph) : stream_(stream), owns_graph_(owns_graph) {}
  ~CaptureGuard() {
    if (stream_ != nullptr) {
      cudaGraph_t graph = nullptr;
      (void)cudaStreamEndCapture(stream_, &graph);
      if (owns_graph_ && graph != nullptr) {
        (void)cudaGraphDestroy(graph);
      }
      (void)cudaGetLastError();
    }
  }
  cudaGraph_t finish() {
    cudaGraph_t graph = nullptr;
    cudaStream_t stream = std::exchange(stream_, nullptr);
    ASRDEC_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    return graph;
  }
  CaptureGuard(const CaptureGuard&) = delete;
  CaptureGuard& operator=(const CaptureGuard&) = delete;

 private:
  cudaStream_t stream_;
  bool owns_graph_;
};

cudaGraphExec_t instantiate(cudaGraph_t graph) {
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  (void)cudaGraphDestroy(graph);  // the executable graph is independent of its template
  if (status != cudaSuccess) {
    detail::throw_cuda_error(status, "cudaGraphInstantiate", __FILE__, __LINE__);
  }
  return exec;
}

}  // namespace

struct GraphExecutor::Impl {
  // A maximal run of steps (captured as one graph in per_step mode) or a loop over a nested block.
  struct Item {
    std::vector<StreamProgram::Launch> launches;
    cudaGraphExec_t exec = nullptr;
    const std::int32_t* flag = nullptr;
    std::int64_t max_iterations = 0;
    std::vector<Item> body;
  };

  Impl(Device device_, GraphMode requested_, GraphMode mode_, StreamProgram program_)
      : device(device_),
        requested(requested_),
        mode(mode_),
        program(std::move(program_)),
        own_stream(device_),
        host_flag(1),
        overflow(1) {
    ASRDEC_CHECK_ARG(!program.nodes().empty(), "GraphExecutor: empty program");
    detail::DeviceGuard guard(device);
    detail::preload_graph_kernels();
    blocks = compile(program);
    overflow[0] = 0;
    if (mode == GraphMode::conditional) {
      // Each loop's iterations are counted on the device (for its cap), one counter per loop; loop bodies are
      // captured from side streams, one per nesting level, created now, never mid-capture.
      iterations = DeviceBuffer<std::int64_t>(std::max<std::size_t>(count_loops(program), 1), device);
      for (std::size_t depth = loop_depth(program); side_streams.size() < depth;) {
        side_streams.emplace_back(device);
      }
    }
  }

  static std::size_t count_loops(const StreamProgram& source) {
    std::size_t loops = 0;
    for (const StreamProgram::Node& node : source.nodes()) {
      if (!node.launch) loops += 1 + count_loops(*node.body);
    }
    return loops;
  }

  static std::size_t loop_depth(const StreamProgram& source) {
    std::size_t depth = 0;
    for (const StreamProgram::Node& node : source.nodes()) {
      if (!node.launch) depth = std::max(depth, 1 + loop_depth(*node.body));
    }
    return depth;
  }
  ~Impl() { drop_graphs(); }

  static std::vector<Item> compile(const StreamProgram& source) {
    std::vector<Item> items;
    for (const StreamProgram::Node& node : source.nodes()) {
      if (node.launch) {
        if (items.empty() || items.back().flag != nullptr) {
          items.emplace_back();
        }
        items.back().launches.push_back(node.launch);
      } else {
        Item loop;
        loop.flag = node.flag;
        loop.max_iterations = node.max_iterations;
        loop.body = compile(*node.body);
        items.push_back(std::move(loop));
      }
    }
    return items;
  }

  static void drop_graphs(std::vector<Item>& items) noexcept {
    for (Item& item : items) {
      if (item.exec != nullptr) {
        (void)cudaGraphExecDestroy(item.exec);
        item.exec = nullptr;
      }
      drop_graphs(item.body);
    }
  }

  void drop_graphs() noexcept {
    if (whole != nullptr) {
      (void)cudaGraphExecDestroy(whole);
      whole = nullptr;
    }
    drop_graphs(blocks);
  }

  cudaStream_t side_stream(std::size_t depth) { return side_streams.at(depth).handle(); }

  // --- conditional mode: the whole program as one graph -----------------------------------------------------

  void emit(const StreamProgram& source, cudaStream_t stream, std::size_t depth) {
    for (const StreamProgram::Node& node : source.nodes()) {
      if (node.launch) {
        node.launch(stream);
      } else {
        emit_loop(node, stream, depth);
      }
    }
  }

  void emit_loop(const StreamProgram::Node& node, cudaStream_t stream, std::size_t depth) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
    ASRDEC_CUDA_CHECK(detail::capture_info(stream, &status, nullptr, &graph, nullptr, nullptr, nullptr));
    ASRDEC_CHECK_ARG(status == cudaStreamCaptureStatusActive, "GraphExecutor: stream is not capturing");
    cudaGraphConditionalHandle handle{};
    ASRDEC_CUDA_CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 0, 0));
    // Loops are numbered from 1 in the order they are emitted; 0 in the overflow word means "none overflowed".
    const auto loop_id = static_cast<std::int32_t>(++emitted_loops);
    std::int64_t* counter = iterations.data() + (loop_id - 1);
    detail::launch_loop_enter(handle, node.flag, counter, stream);  // entry test

    const cudaGraphNode_t* dependencies = nullptr;
    const cudaGraphEdgeData* edges = nullptr;
    std::size_t dependency_count = 0;
    ASRDEC_CUDA_CHECK(detail::capture_info(stream, &status, nullptr, &graph, &dependencies, &edges, &dependency_count));
    cudaGraphNodeParams params{};
    params.type = cudaGraphNodeTypeConditional;
    params.conditional.handle = handle;
    params.conditional.type = cudaGraphCondTypeWhile;
    params.conditional.size = 1;
    cudaGraphNode_t loop_node = nullptr;
    ASRDEC_CUDA_CHECK(detail::add_graph_node(&loop_node, graph, dependencies, edges, dependency_count, &params));
    cudaGraph_t body_graph = params.conditional.phGraph_out[0];
    ASRDEC_CUDA_CHECK(
        detail::update_capture_dependencies(stream, &loop_node, nullptr, 1, cudaStreamSetCaptureDependencies));

    // The body is captured from a second stream straight into the node's body graph.
    cudaStream_t side = side_stream(depth);
    ASRDEC_CUDA_CHECK(
        cudaStreamBeginCaptureToGraph(side, body_graph, nullptr, nullptr, 0, cudaStreamCaptureModeThreadLocal));
    CaptureGuard capture(side, /*owns_graph=*/false);
    emit(*node.body, side, depth + 1);
    // continue test; the overflow word is pinned host memory, written by the device through unified addressing
    detail::launch_loop_continue(handle, node.flag, counter, node.max_iterations, loop_id, overflow.data(), side);
    (void)capture.finish();
  }

  void capture_whole() {
    cudaStream_t stream = own_stream.handle();
    ASRDEC_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CaptureGuard capture(stream, /*owns_graph=*/true);
    emitted_loops = 0;
    detail::launch_clear_word(overflow.data(), stream);
    emit(program, stream, 0);
    whole = instantiate(capture.finish());
  }

  // --- per_step and eager: host-driven loops ----------------------------------------------------------------

  cudaGraphExec_t capture_segment(const Item& item) {
    cudaStream_t stream = own_stream.handle();
    ASRDEC_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CaptureGuard capture(stream, /*owns_graph=*/true);
    for (const auto& launch : item.launches) {
      launch(stream);
    }
    return instantiate(capture.finish());
  }

  bool read_flag(const std::int32_t* flag, cudaStream_t stream) {
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(host_flag.data(), flag, sizeof(std::int32_t), cudaMemcpyDeviceToHost, stream));
    ASRDEC_CUDA_CHECK(cudaStreamSynchronize(stream));
    ++host_checks;
    return host_flag[0] != 0;
  }

  void run_items(std::vector<Item>& items, cudaStream_t stream) {
    for (Item& item : items) {
      if (item.flag == nullptr) {
        if (mode == GraphMode::per_step) {
          if (item.exec == nullptr) {
            item.exec = capture_segment(item);
          }
          ASRDEC_CUDA_CHECK(cudaGraphLaunch(item.exec, stream));
        } else {
          for (const auto& launch : item.launches) {
            launch(stream);
          }
        }
      } else {
        std::int64_t done = 0;
        while (read_flag(item.flag, stream)) {
          ASRDEC_EXPECTS(done < item.max_iterations, Error, "internal error: a decode loop ran ", done,
                         " iterations, its cap, and would go on (", to_string(mode), " graph mode)");
          run_items(item.body, stream);
          ++done;
        }
      }
    }
  }

  void run(StreamHandle user_stream) {
    detail::DeviceGuard guard(device);
    // The own stream only captures; work runs on the caller's (nullptr: the legacy default stream).
    cudaStream_t stream = detail::caller_stream(user_stream);
    host_checks = 0;
    if (mode == GraphMode::conditional && whole == nullptr) {
      try {
        capture_whole();
      } catch (const CudaError& error) {
        // The support probe passed, but this program's nodes (e.g. a library's kernels) cannot live inside a
        // conditional body: keep decoding with per-step graphs and say so once.
        warn_once(detail::concat("graph-capture-fallback:", device.to_string()),
                  detail::concat("capturing a decode loop as one conditional CUDA graph failed (", error.what(),
                                 "); using per_step graphs"));
        mode = GraphMode::per_step;
      }
    }
    if (mode == GraphMode::conditional) {
      ASRDEC_CUDA_CHECK(cudaGraphLaunch(whole, stream));
    } else {
      run_items(blocks, stream);
    }
  }

  Device device;
  GraphMode requested;
  GraphMode mode;
  StreamProgram program;
  Stream own_stream;
  std::vector<Stream> side_streams;
  PinnedBuffer<std::int32_t> host_flag;
  PinnedBuffer<std::int32_t> overflow;  // conditional mode: the id of a loop stopped at its cap, or 0
  DeviceBuffer<std::int64_t> iterations;
  std::size_t emitted_loops = 0;
  cudaGraphExec_t whole = nullptr;
  std::vector<Item> blocks;
  std::int64_t host_checks = 0;
};

namespace {

// Runs a nested counting loop (3 outer iterations of 2 inner ones) as one conditional graph and checks the
// counts, so that "supported" means "works here", not just "the version number is high enough".
GraphSupport probe(Device device) {
  GraphSupport support;
  const CudaInfo& info = cuda_info();
  if (!info.available) {
    support.reason = info.reason;
    return support;
  }
  if (device.index() < 0 || device.index() >= cuda_device_count()) {
    support.reason = detail::concat("no CUDA device ", device.to_string());
    return support;
  }
  try {
    detail::DeviceGuard guard(device);
    Stream stream(device);
    // counters: outer, inner, total; flags: outer, inner; limits: outer = 3, inner = 2
    DeviceBuffer<std::int32_t> scratch(8, device);
    std::int32_t* outer = scratch.data();
    std::int32_t* inner = outer + 1;
    std::int32_t* total = outer + 2;
    std::int32_t* outer_flag = outer + 3;
    std::int32_t* inner_flag = outer + 4;
    std::int32_t* outer_limit = outer + 5;
    std::int32_t* inner_limit = outer + 6;
    const std::int32_t init[8] = {0, 0, 0, 0, 0, 3, 2, 0};
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(outer, init, sizeof init, cudaMemcpyHostToDevice, stream.handle()));

    StreamProgram inner_body;
    inner_body.then([=](StreamHandle s) {
      detail::launch_counter_add(total, s);
      detail::launch_counter_step(inner, inner_flag, inner_limit, s);
    });
    StreamProgram outer_body;
    outer_body.then([=](StreamHandle s) { detail::launch_counter_reset(inner, inner_flag, inner_limit, s); })
        .loop_while(inner_flag, inner_body)
        .then([=](StreamHandle s) { detail::launch_counter_step(outer, outer_flag, outer_limit, s); });
    StreamProgram program;
    program.then([=](StreamHandle s) { detail::launch_counter_reset(outer, outer_flag, outer_limit, s); })
        .loop_while(outer_flag, outer_body);

    {
      GraphExecutor::Impl per_step(device, GraphMode::per_step, GraphMode::per_step, program);
      per_step.run(stream.handle());
      stream.synchronize();
      support.graphs = true;
    }
    if (info.runtime_version < 12040 || info.driver_version < 12040) {
      support.reason = detail::concat("conditional graph nodes need CUDA runtime and driver 12.4 or newer (runtime ",
                                      format_cuda_version(info.runtime_version), ", driver ",
                                      format_cuda_version(info.driver_version), ")");
      return support;
    }
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(total, init, sizeof(std::int32_t), cudaMemcpyHostToDevice, stream.handle()));
    GraphExecutor::Impl conditional(device, GraphMode::conditional, GraphMode::conditional, program);
    conditional.run(stream.handle());
    std::int32_t counted = -1;
    ASRDEC_CUDA_CHECK(cudaMemcpyAsync(&counted, total, sizeof counted, cudaMemcpyDeviceToHost, stream.handle()));
    stream.synchronize();
    if (counted != 6) {
      support.reason = detail::concat("conditional graph probe counted ", counted, " iterations instead of 6");
      return support;
    }
    support.conditional = true;
  } catch (const std::exception& error) {
    (void)cudaGetLastError();
    support.reason = detail::concat("graph probe failed: ", error.what());
  }
  return support;
}

}  // namespace

GraphSupport graph_support(Device device) noexcept {
  if (device.is_cpu()) {
    return GraphSupport{false, false, "CUDA graphs need a CUDA device"};
  }
  static std::mutex mutex;
  static std::map<int, GraphSupport> cache;
  try {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = cache.find(device.index());
    if (found == cache.end()) {
      found = cache.emplace(device.index(), probe(device)).first;
    }
    return found->second;
  } catch (...) {
    return GraphSupport{false, false, "graph support probe failed"};
  }
}

#else  // !ASRDEC_WITH_CUDA

struct GraphExecutor::Impl {};

GraphSupport graph_support(Device) noexcept { return GraphSupport{false, false, cuda_info().reason}; }

#endif

GraphMode resolve_graph_mode(GraphMode requested, Device device) noexcept {
  if (device.is_cpu() || requested == GraphMode::eager) {
    return GraphMode::eager;
  }
  const GraphSupport support = graph_support(device);
  GraphMode resolved = GraphMode::eager;
  if (requested != GraphMode::per_step && support.conditional) {
    resolved = GraphMode::conditional;
  } else if (support.graphs) {
    resolved = GraphMode::per_step;
  }
  if (resolved != requested && requested != GraphMode::automatic) {
    try {
      warn_once(detail::concat("graph-mode:", device.to_string(), ":", to_string(requested)),
                detail::concat("CUDA graph mode '", to_string(requested), "' is not available on ", device.to_string(),
                               " (", support.reason, "); using '", to_string(resolved), "'"));
    } catch (...) {
    }
  } else if (requested == GraphMode::automatic && resolved != GraphMode::conditional) {
    try {
      warn_once(detail::concat("graph-mode:", device.to_string(), ":auto"),
                detail::concat("conditional CUDA graphs are not available on ", device.to_string(), " (",
                               support.reason, "); graph mode 'auto' uses '", to_string(resolved), "'"));
    } catch (...) {
    }
  }
  return resolved;
}

GraphExecutor::GraphExecutor(Device device, GraphMode requested, StreamProgram program) {
  ASRDEC_EXPECTS(device.is_cuda(), Unsupported, "GraphExecutor needs a CUDA device, got ", device.to_string());
#if ASRDEC_WITH_CUDA
  if (!cuda_info().available) {
    throw Unsupported(cuda_info().reason);
  }
  const GraphMode mode = resolve_graph_mode(requested, device);
  impl_ = std::make_unique<Impl>(device, requested, mode, std::move(program));
#else
  (void)requested;
  (void)program;
  throw Unsupported(cuda_info().reason);
#endif
}

GraphExecutor::~GraphExecutor() = default;
GraphExecutor::GraphExecutor(GraphExecutor&&) noexcept = default;
GraphExecutor& GraphExecutor::operator=(GraphExecutor&&) noexcept = default;

#if ASRDEC_WITH_CUDA
void GraphExecutor::run(StreamHandle stream) { impl_->run(stream); }
void GraphExecutor::check_loops() const {
  const std::int32_t loop = *static_cast<volatile const std::int32_t*>(impl_->overflow.data());
  ASRDEC_EXPECTS(loop == 0, Error, "internal error: decode loop ", loop,
                 " of a conditional CUDA graph reached its iteration cap and was stopped");
}
void GraphExecutor::reset() noexcept { impl_->drop_graphs(); }
GraphMode GraphExecutor::requested_mode() const noexcept { return impl_->requested; }
GraphMode GraphExecutor::mode() const noexcept { return impl_->mode; }
std::int64_t GraphExecutor::last_host_checks() const noexcept { return impl_->host_checks; }
StreamHandle GraphExecutor::stream() const noexcept { return impl_->own_stream.handle(); }
#else
void GraphExecutor::run(StreamHandle) {}
void GraphExecutor::check_loops() const {}
void GraphExecutor::reset() noexcept {}
GraphMode GraphExecutor::requested_mode() const noexcept { return GraphMode::eager; }
GraphMode GraphExecutor::mode() const noexcept { return GraphMode::eager; }
std::int64_t GraphExecutor::last_host_checks() const noexcept { return 0; }
StreamHandle GraphExecutor::stream() const noexcept { return nullptr; }
#endif

}  // namespace asrdec
