#pragma once
/**
 * @file
 * CUDA-graph execution of device loops, the helper every GPU decoder uses.
 *
 * A decoder describes its work once as a StreamProgram: steps that enqueue kernels on a stream, and loops
 * "while (*flag != 0) { body }" whose int32 flag lives in device memory and is rewritten by the body's own
 * kernels. A GraphExecutor then runs the program in one of three ways:
 *
 * - `conditional`: the whole program is one CUDA graph; each loop is a conditional WHILE node whose body is
 *   captured from a stream (cudaStreamBeginCaptureToGraph) and whose condition is set from the flag by a small
 *   kernel compiled ahead of time with nvcc. No host synchronisation at all. Needs CUDA runtime and driver
 *   12.4 or newer; detected at run time by building and running a probe graph.
 * - `per_step`: every run of consecutive steps is captured into its own graph; loop conditions are read back
 *   and tested on the host (one synchronisation per iteration).
 * - `eager`: the same decomposition launched directly on the stream, for debugging and for drivers where
 *   graphs misbehave.
 * - `automatic` ("auto"): conditional when supported, otherwise per_step.
 *
 * A program without loops becomes one graph in both graph modes. When the requested mode is not supported
 * the executor falls back (conditional -> per_step), logs a warning once per process and reports the mode it
 * really uses through mode().
 *
 * Rules for the launch functions of a program: they only enqueue work on the stream they are given (kernels,
 * memsets, device-to-device copies), never synchronise or allocate, and use the same device pointers on every
 * call (captured graphs replay those pointers). Call reset() after reallocating anything they use.
 *
 * Thread safety: a GraphExecutor has one owner at a time.
 */

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "asrdec/core/device.hpp"
#include "asrdec/core/export.hpp"
#include "asrdec/core/stream.hpp"

namespace asrdec {

enum class GraphMode { automatic, conditional, per_step, eager };

/** "auto", "conditional", "per_step" or "eager". */
ASRDEC_API const char* to_string(GraphMode mode) noexcept;
/** Parses the names to_string() gives; throws InvalidArgument listing them. */
ASRDEC_API GraphMode parse_graph_mode(std::string_view name);

/** What the driver of one device supports, probed once per device and cached; never throws. */
struct ASRDEC_API GraphSupport {
  bool graphs = false;       ///< stream capture and graph launch work
  bool conditional = false;  ///< conditional WHILE nodes work
  std::string reason;        ///< why a capability is missing (empty when both are there)
};
ASRDEC_API GraphSupport graph_support(Device device) noexcept;

/** The mode a request resolves to on `device`: automatic -> conditional or per_step; conditional without
 *  support -> per_step (with a one-time warning); a CPU device -> eager. Never throws. */
ASRDEC_API GraphMode resolve_graph_mode(GraphMode requested, Device device) noexcept;

/** A sequence of stream steps and device-flag loops (see the file comment). Cheap to copy. */
class ASRDEC_API StreamProgram {
 public:
  using Launch = std::function<void(StreamHandle)>;

  /** Appends a step. */
  StreamProgram& then(Launch launch);
  /** Appends "while (*device_flag != 0) { body }". The flag is read when the loop is entered and after every
   *  iteration, so the steps before the loop and the body must both write it. A loop whose body has run
   *  `max_iterations` times with the flag still set stops: run() (per_step, eager) or check_loops() (conditional)
   *  then throws Error, so a runaway loop is an error, never a hung GPU. Decoders pass the bound their algorithm
   *  guarantees (e.g. frames × (symbols per frame + 1)). */
  StreamProgram& loop_while(const std::int32_t* device_flag, StreamProgram body,
                            std::int64_t max_iterations = kDefaultLoopCap);
  /** The cap of loops that state none. */
  static constexpr std::int64_t kDefaultLoopCap = std::int64_t{1} << 31;

  struct Node;
  const std::vector<Node>& nodes() const noexcept { return nodes_; }

 private:
  std::vector<Node> nodes_;
};

struct ASRDEC_API StreamProgram::Node {
  Launch launch;                        ///< set for a step
  const std::int32_t* flag = nullptr;   ///< set for a loop
  std::shared_ptr<StreamProgram> body;  ///< set for a loop
  std::int64_t max_iterations = 0;      ///< set for a loop
};

/** Runs a StreamProgram on a CUDA device in the resolved graph mode; graphs are captured on first run(). */
class ASRDEC_API GraphExecutor {
 public:
  /** Throws Unsupported for a CPU device or a build without CUDA, InvalidArgument for an empty program. */
  GraphExecutor(Device device, GraphMode requested, StreamProgram program);
  ~GraphExecutor();
  GraphExecutor(GraphExecutor&&) noexcept;
  GraphExecutor& operator=(GraphExecutor&&) noexcept;

  /** Runs the program once on `stream` (nullptr: the legacy default stream), after the work enqueued there
   *  before. Asynchronous in conditional mode; per_step and eager synchronise once per loop test. Graphs are
   *  captured on the executor's own stream and launched on `stream`. Throws CudaError. */
  void run(StreamHandle stream);
  /** Once the stream has passed the last run() (after a synchronisation): throws Error naming the loop if a
   *  conditional loop stopped at its iteration cap. Nothing to check in per_step and eager mode (run() throws). */
  void check_loops() const;
  /** Drops captured graphs; the next run() captures again. */
  void reset() noexcept;
  GraphMode requested_mode() const noexcept;
  /** The mode actually used. */
  GraphMode mode() const noexcept;
  /** Loop conditions tested on the host during the last run() (always 0 in conditional mode). */
  std::int64_t last_host_checks() const noexcept;
  /** The executor's own stream, on which graphs are captured. */
  StreamHandle stream() const noexcept;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace asrdec
