#pragma once
// Internal: the CUDA executor behind WfstDecoder. Whole utterances (decode) stay on the device from the start to
// their best path, and streams (decode_chunks) keep their channels on the device between chunks (wfst_rows_kernel.hpp);
// the host turns paths into results with the CPU's code. N-best lists keep their channels (wfst_channel.hpp) on the
// host: the executor decodes their frames on the device and appends the frames' tokens to them.

#include <memory>
#include <vector>

#include "asrdec/config.hpp"
#include "core/ctc_input.hpp"
#include "wfst/wfst_channel.hpp"

namespace asrdec::detail {

/** One row of a decode_chunks call: the chunk of a stream. */
struct WfstChunk {
  WfstChannel* channel;  ///< the stream's host channel: started (with its boosts) on a fresh row
  std::int32_t slot;     ///< the stream's channel slot, in [0, max_open_utterances)
  bool fresh;            ///< the stream starts with this chunk
  bool last;             ///< the stream ends with this chunk
  std::int64_t offset;   ///< frames of the stream before this chunk
};

class WfstBackend {
 public:
  virtual ~WfstBackend() = default;
  /** Throws InvalidArgument for the first NaN or +inf among the frames that are read (before any channel changes),
   *  with the CPU executor's message. */
  virtual void check_values(const CtcInput& problem, StreamHandle stream) = 0;
  /** Decodes frames [0, lengths[b]) of every row b through channels[b] on `stream` (nullptr: the legacy default
   *  stream); returns when they are in the channels. */
  virtual void advance(const CtcInput& problem, const std::vector<WfstChannel*>& channels, StreamHandle stream) = 0;
  /** Stream chunks: frames [0, lengths[b]) of row b continue its stream, and its result after them (partial, or by
   *  the final rule on the last chunk; WfstSearcher::result's). A stream's state stays in the executor by slot
   *  between calls; `chunks[b].channel` holds it only for streams the executor continues on the host. Values must
   *  have been checked. */
  virtual std::vector<WfstResult> decode_chunks(const CtcInput& problem, const std::vector<WfstChunk>& chunks,
                                                StreamHandle stream) = 0;
  /** Whole utterances: frames [0, lengths[b]) of every row b from the start, and the result of its best path by the
   *  final rule (as WfstSearcher::start, advance and result(final = true)); `boost_rows[b]`: row b's boosts by word
   *  (WfstSearcher::boost_row; empty: none). Values must have been checked. */
  virtual std::vector<WfstResult> decode(const CtcInput& problem, const std::vector<std::vector<float>>& boost_rows,
                                         StreamHandle stream) = 0;
  virtual GraphMode graph_mode() const noexcept = 0;
  /** Device bytes of one lane of decode() (WfstDecoder::lane_device_bytes). */
  virtual std::int64_t lane_device_bytes() const = 0;
  /** Rows of decode() decoded on the CPU since construction (WfstDecoder::host_fallbacks). */
  virtual std::int64_t host_fallbacks() const = 0;
};

#if ASRDEC_WITH_CUDA
/** `searcher` (which appends frames to channels) must outlive the executor. */
std::unique_ptr<WfstBackend> make_wfst_cuda(const WfstGraph& graph, const WfstDecoderConfig& config, Device device,
                                            const WfstSearcher& searcher);
#endif

}  // namespace asrdec::detail
