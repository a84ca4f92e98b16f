#pragma once
// Internal: the CUDA executor behind WfstDecoder. Whole utterances (decode) stay on the device from the start to
// their best path, and streams (decode_chunks) keep their channels on the device between chunks (wfst_rows_kernel.hpp);
// the host turns paths into results with the CPU's code. N-best lists need every token of an utterance's last frame
// and the paths to them: the executor decodes the utterances on the device and hands their channels to the host,
// where the CPU's code ranks them (WfstSearcher::nbest).

#include <memory>
#include <vector>

#include "asrdec/config.hpp"
#include "core/ctc_input.hpp"
#include "wfst/wfst_channel.hpp"

namespace asrdec::detail {

/** One row of a decode_chunks call: the chunk of a stream (decode_into: a whole utterance as a stream of one chunk). */
struct WfstChunk {
  WfstChannel* channel;  ///< the stream's host channel: started (with its boosts) on a fresh row
  std::int32_t slot;  ///< the stream's device channel, in [0, max_open_utterances) (decode_into: the row's in a group)
  bool fresh;         ///< the stream starts with this chunk
  bool last;          ///< the stream ends with this chunk
  std::int64_t offset;  ///< frames of the stream before this chunk
};

class WfstBackend {
 public:
  virtual ~WfstBackend() = default;
  /** Throws InvalidArgument for the first NaN or +inf among the frames that are read (before any channel changes),
   *  with the CPU executor's message. */
  virtual void check_values(const CtcInput& problem, StreamHandle stream) = 0;
  /** Whole utterances into host channels: frames [0, lengths[b]) of every row b from the start, into channels[b],
   *  which the caller started (WfstSearcher::start, with the row's boosts). Each channel then holds what the CPU
   *  executor's would after the same frames: the last frame's tokens (all of them) with the paths to them, the active
   *  tokens, the frame count and the overflow flag; its older history may be collected differently. Runs on `stream`
   *  (nullptr: the legacy default stream); values must have been checked. */
  virtual void decode_into(const CtcInput& problem, const std::vector<WfstChannel*>& channels, StreamHandle stream) = 0;
  /** Stream chunks: frames [0, lengths[b]) of row b continue its stream, and its result after them (partial, or by
   *  the final rule on the last chunk; WfstSearcher::result's). A stream's state stays in the executor by slot
   *  between calls; `chunks[b].channel` holds it only for streams the executor continues on the host. Values must
   *  have been checked. */
  virtual std::vector<WfstResult> decode_chunks(const CtcInput& problem, const std::vector<WfstChunk>& chunks,
                                                StreamHandle stream) = 0;
  /** Whole utterances: frames [0, lengths[b]) of every row b from the start, and the result of its best path by the
   *  final rule (as WfstSearcher::start, advance and result(final = true)); `boost_rows[b]`: row b's boosts by word
   *  (WfstSearcher::boost_row; empty: none). With `check_values`, throws check_values' InvalidArgument for a bad
   *  value instead of returning results (checked alongside decoding, with one synchronisation for both: nothing the
   *  call changes outlives it); without, values must have been checked. */
  virtual std::vector<WfstResult> decode(const CtcInput& problem, const std::vector<std::vector<float>>& boost_rows,
                                         bool check_values, StreamHandle stream) = 0;
  virtual GraphMode graph_mode() const noexcept = 0;
  /** Device bytes the executor holds now (WfstDecoder::device_bytes). */
  virtual std::int64_t device_bytes() const = 0;
  /** Device bytes of one lane of decode() (WfstDecoder::lane_device_bytes). */
  virtual std::int64_t lane_device_bytes() const = 0;
  /** Rows of decode() and decode_into() and chunks of decode_chunks() decoded on the CPU since construction
   *  (WfstDecoder::host_fallbacks). */
  virtual std::int64_t host_fallbacks() const = 0;
};

#if ASRDEC_WITH_CUDA
std::unique_ptr<WfstBackend> make_wfst_cuda(const WfstGraph& graph, const WfstDecoderConfig& config, Device device);
#endif

}  // namespace asrdec::detail
