#include "support/test_support.hpp"

#if ASRDEC_WITH_CUDA
#include "src/core/cuda/graph_kernels.hpp"
#endif

namespace asrdec {
namespace {

TEST(GraphMode, NamesParseAndPrint) {
  for (GraphMode mode : {GraphMode::automatic, GraphMode::conditional, GraphMode::per_step, GraphMode::eager}) {
    EXPECT_EQ(parse_graph_mode(to_string(mode)), mode);
  }
  EXPECT_EQ(parse_graph_mode("per-step"), GraphMode::per_step);
  ASRDEC_EXPECT_THROW_MSG(parse_graph_mode("full_graph"), InvalidArgument,
                          "unknown graph mode 'full_graph': expected auto, conditional, per_step or eager");
}

TEST(GraphMode, CpuResolvesToEagerAndHasNoGraphs) {
  EXPECT_EQ(resolve_graph_mode(GraphMode::conditional, Device::cpu()), GraphMode::eager);
  const GraphSupport support = graph_support(Device::cpu());
  EXPECT_FALSE(support.graphs);
  EXPECT_FALSE(support.conditional);
  EXPECT_FALSE(support.reason.empty());
}

TEST(StreamProgram, RejectsEmptyPieces) {
  StreamProgram program;
  ASRDEC_EXPECT_THROW_MSG(program.then(nullptr), InvalidArgument, "empty launch function");
  std::int32_t flag = 0;
  ASRDEC_EXPECT_THROW_MSG(program.loop_while(nullptr, StreamProgram().then([](StreamHandle) {})), InvalidArgument,
                          "null loop flag");
  ASRDEC_EXPECT_THROW_MSG(program.loop_while(&flag, StreamProgram()), InvalidArgument, "empty loop body");
  program.then([](StreamHandle) {}).loop_while(&flag, StreamProgram().then([](StreamHandle) {}));
  ASSERT_EQ(program.nodes().size(), 2u);
  EXPECT_TRUE(static_cast<bool>(program.nodes()[0].launch));
  EXPECT_EQ(program.nodes()[1].flag, &flag);
}

TEST(StreamProgram, RejectsANonPositiveLoopCap) {
  std::int32_t flag = 0;
  ASRDEC_EXPECT_THROW_MSG(StreamProgram().loop_while(&flag, StreamProgram().then([](StreamHandle) {}), 0),
                          InvalidArgument, "max_iterations must be at least 1, got 0");
}

TEST(GraphExecutor, CpuDeviceIsUnsupported) {
  StreamProgram program;
  program.then([](StreamHandle) {});
  ASRDEC_EXPECT_THROW_MSG(GraphExecutor(Device::cpu(), GraphMode::automatic, program), Unsupported,
                          "GraphExecutor needs a CUDA device, got cpu");
}

#if ASRDEC_WITH_CUDA

// Device-side counters: [counter, flag, limit, outer, outer_flag, outer_limit, total].
struct Counters {
  explicit Counters(Device device) : buffer(8, device) {}
  std::int32_t* counter() { return buffer.data(); }
  std::int32_t* flag() { return buffer.data() + 1; }
  std::int32_t* limit() { return buffer.data() + 2; }
  std::int32_t* outer() { return buffer.data() + 3; }
  std::int32_t* outer_flag() { return buffer.data() + 4; }
  std::int32_t* outer_limit() { return buffer.data() + 5; }
  std::int32_t* total() { return buffer.data() + 6; }
  void set(std::int32_t* where, std::int32_t value, Stream& stream) {
    copy_bytes_async(where, buffer.device(), &value, Device::cpu(), sizeof value, stream.handle());
    stream.synchronize();
  }
  std::int32_t get(std::int32_t* where, Stream& stream) {
    std::int32_t value = -1;
    copy_bytes_async(&value, Device::cpu(), where, buffer.device(), sizeof value, stream.handle());
    stream.synchronize();
    return value;
  }
  DeviceBuffer<std::int32_t> buffer;
};

// reset; while (flag) { step }: counts c.counter() up to *c.limit().
StreamProgram counting_program(Counters& c) {
  StreamProgram body;
  body.then([&c](StreamHandle s) { detail::launch_counter_step(c.counter(), c.flag(), c.limit(), s); });
  StreamProgram program;
  program.then([&c](StreamHandle s) { detail::launch_counter_reset(c.counter(), c.flag(), c.limit(), s); })
      .loop_while(c.flag(), body);
  return program;
}

class GraphLoopCUDA : public ::testing::TestWithParam<GraphMode> {};

TEST_P(GraphLoopCUDA, CountsExactlyNIterations) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device device = Device::cuda(0);
  Stream stream(device);
  Counters c(device);
  GraphExecutor executor(device, GetParam(), counting_program(c));
  if (GetParam() != GraphMode::automatic) {
    const GraphSupport support = graph_support(device);
    if (GetParam() == GraphMode::conditional && !support.conditional) {
      EXPECT_EQ(executor.mode(), GraphMode::per_step) << "fallback must be reported";
    } else {
      EXPECT_EQ(executor.mode(), GetParam());
    }
  }
  // The same captured graph serves every N: the limit lives in device memory.
  for (std::int32_t n : {0, 1, 1000, 1, 0}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    c.set(c.limit(), n, stream);
    c.set(c.counter(), -7, stream);
    executor.run(stream.handle());
    EXPECT_EQ(c.get(c.counter(), stream), n);
    EXPECT_EQ(c.get(c.flag(), stream), 0);
    if (executor.mode() == GraphMode::conditional) {
      EXPECT_EQ(executor.last_host_checks(), 0);
    } else {
      EXPECT_EQ(executor.last_host_checks(), n + 1);
    }
  }
  executor.reset();
  c.set(c.limit(), 5, stream);
  executor.run(stream.handle());
  EXPECT_EQ(c.get(c.counter(), stream), 5);
}

TEST_P(GraphLoopCUDA, NestedLoopsRunOuterTimesInner) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device device = Device::cuda(0);
  Stream stream(device);
  Counters c(device);
  StreamProgram inner;
  inner.then([&](StreamHandle s) {
    detail::launch_counter_add(c.total(), s);
    detail::launch_counter_step(c.counter(), c.flag(), c.limit(), s);
  });
  StreamProgram outer;
  outer.then([&](StreamHandle s) { detail::launch_counter_reset(c.counter(), c.flag(), c.limit(), s); })
      .loop_while(c.flag(), inner)
      .then([&](StreamHandle s) { detail::launch_counter_step(c.outer(), c.outer_flag(), c.outer_limit(), s); });
  StreamProgram program;
  program.then([&](StreamHandle s) { detail::launch_counter_reset(c.outer(), c.outer_flag(), c.outer_limit(), s); })
      .loop_while(c.outer_flag(), outer);
  GraphExecutor executor(device, GetParam(), program);
  for (auto [a, b] : {std::pair{3, 4}, std::pair{0, 5}, std::pair{5, 0}, std::pair{17, 1}}) {
    SCOPED_TRACE(std::to_string(a) + " x " + std::to_string(b));
    c.set(c.outer_limit(), a, stream);
    c.set(c.limit(), b, stream);
    c.set(c.total(), 0, stream);
    executor.run(stream.handle());
    EXPECT_EQ(c.get(c.total(), stream), a * b);
    EXPECT_EQ(c.get(c.outer(), stream), a);
  }
}

TEST_P(GraphLoopCUDA, RunsOnTheCallersStreamInOrder) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device device = Device::cuda(0);
  Stream stream(device);
  Counters c(device);
  GraphExecutor executor(device, GetParam(), counting_program(c));
  // Work queued before run() on the same stream must be visible to the graph: set the limit asynchronously.
  const std::int32_t limit = 42;
  copy_bytes_async(c.limit(), device, &limit, Device::cpu(), sizeof limit, stream.handle());
  executor.run(stream.handle());
  std::int32_t counted = -1;
  copy_bytes_async(&counted, Device::cpu(), c.counter(), device, sizeof counted, stream.handle());
  stream.synchronize();
  EXPECT_EQ(counted, 42);
}

// A loop whose flag is never cleared is stopped at its cap: an error, never a hung GPU. The executor stays usable.
TEST_P(GraphLoopCUDA, RunawayLoopStopsAtItsIterationCap) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device device = Device::cuda(0);
  Stream stream(device);
  Counters c(device);
  StreamProgram body;
  body.then([&](StreamHandle s) { detail::launch_counter_add(c.total(), s); });
  StreamProgram program;
  program.then([](StreamHandle) {}).loop_while(c.flag(), body, 7);
  GraphExecutor executor(device, GetParam(), program);
  c.set(c.flag(), 1, stream);
  c.set(c.total(), 0, stream);
  if (executor.mode() == GraphMode::conditional) {
    executor.run(stream.handle());
    stream.synchronize();
    ASRDEC_EXPECT_THROW_MSG(executor.check_loops(), Error, "reached its iteration cap");
  } else {
    ASRDEC_EXPECT_THROW_MSG(executor.run(stream.handle()), Error, "iterations, its cap");
  }
  EXPECT_EQ(c.get(c.total(), stream), 7);
  c.set(c.flag(), 0, stream);
  executor.run(stream.handle());
  stream.synchronize();
  executor.check_loops();
  EXPECT_EQ(c.get(c.total(), stream), 7);
}

INSTANTIATE_TEST_SUITE_P(Modes, GraphLoopCUDA,
                         ::testing::Values(GraphMode::automatic, GraphMode::conditional, GraphMode::per_step,
                                           GraphMode::eager),
                         [](const ::testing::TestParamInfo<GraphMode>& info) {
                           return std::string(to_string(info.param));
                         });

TEST(GraphSupportCUDA, ProbeFindsGraphsAndReportsConditionalSupport) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device device = Device::cuda(0);
  const GraphSupport support = graph_support(device);
  EXPECT_TRUE(support.graphs) << support.reason;
  const CudaInfo& info = cuda_info();
  if (info.runtime_version >= 12040 && info.driver_version >= 12040) {
    EXPECT_TRUE(support.conditional) << support.reason;
  }
  if (!support.conditional) {
    EXPECT_FALSE(support.reason.empty());
    EXPECT_EQ(resolve_graph_mode(GraphMode::automatic, device), GraphMode::per_step);
  } else {
    EXPECT_EQ(resolve_graph_mode(GraphMode::automatic, device), GraphMode::conditional);
  }
  EXPECT_EQ(resolve_graph_mode(GraphMode::eager, device), GraphMode::eager);
}

#endif

}  // namespace
}  // namespace asrdec
