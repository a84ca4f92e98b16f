#pragma once
// Internal: the CUDA executor behind WfstDecoder. Channels (per-stream state, wfst_channel.hpp) stay on the host;
// the executor decodes their frames on the device, lane by lane, and appends the frames' tokens to them, so
// results, streaming and history collection are the CPU's code.

#include <memory>
#include <vector>

#include "asrdec/config.hpp"
#include "core/ctc_input.hpp"
#include "wfst/wfst_channel.hpp"

namespace asrdec::detail {

class WfstBackend {
 public:
  virtual ~WfstBackend() = default;
  /** Throws InvalidArgument for the first NaN or +inf among the frames that are read (before any channel changes),
   *  with the CPU executor's message. */
  virtual void check_values(const CtcInput& problem, StreamHandle stream) = 0;
  /** Decodes frames [0, lengths[b]) of every row b through channels[b] on `stream` (nullptr: the legacy default
   *  stream); returns when they are in the channels. */
  virtual void advance(const CtcInput& problem, const std::vector<WfstChannel*>& channels, StreamHandle stream) = 0;
  virtual GraphMode graph_mode() const noexcept = 0;
  /** Device bytes of one lane (WfstDecoder::lane_device_bytes). */
  virtual std::int64_t lane_device_bytes() const = 0;
};

#if ASRDEC_WITH_CUDA
/** `searcher` (which appends frames to channels) must outlive the executor. */
std::unique_ptr<WfstBackend> make_wfst_cuda(const WfstGraph& graph, const WfstDecoderConfig& config, Device device,
                                            const WfstSearcher& searcher);
#endif

}  // namespace asrdec::detail
