#include "transducer/transducer_input.hpp"

#include <cstddef>
#include <cstring>

#include "asrdec/config.hpp"
#include "asrdec/core/error.hpp"

#if ASRDEC_WITH_CUDA
#include "core/cuda/check.hpp"
#include "core/cuda/executor_lifecycle.hpp"
#endif

namespace asrdec::detail {

TransducerInput make_transducer_input(const TransducerModel& model, const TensorView& enc_proj,
                                      const TensorView& lengths, StreamHandle stream) {
  TensorCheck(enc_proj, "enc_proj")
      .ndim(3, "[B, T, J]")
      .dtype_one_of({DType::f32, DType::f16, DType::bf16})
      .device(model.device())
      .dim(2, model.joint_hidden(), "J, the joint hidden size of the model")
      .not_null()
      .non_negative_strides();
  TransducerInput p;
  p.enc_proj = enc_proj;
  p.batch = enc_proj.size(0);
  p.frames = enc_proj.size(1);
  ASRDEC_CHECK_ARG(p.frames < (std::int64_t{1} << 30) && p.batch < (std::int64_t{1} << 30),
                   "enc_proj: too many utterances or frames in one call ", enc_proj.shape_string());
  p.enc = EncodedView{enc_proj.data(), enc_proj.dtype(), enc_proj.stride(0), enc_proj.stride(1), enc_proj.stride(2)};
  TensorCheck(lengths, "lengths")
      .ndim(1, "[B]")
      .dtype_one_of({DType::i32, DType::i64})
      .dim(0, p.batch, "the batch size B of enc_proj")
      .not_null()
      .non_negative_strides();
  ASRDEC_CHECK_ARG(lengths.device().is_cpu() || lengths.device() == model.device(), "lengths: expected data on cpu or ",
                   model.device().to_string(), ", got ", lengths.device().to_string());
  std::vector<std::int64_t> raw(static_cast<std::size_t>(p.batch));
  const std::int64_t stride = p.batch > 0 ? lengths.stride(0) : 1;
  const std::size_t element = dtype_size(lengths.dtype());
  if (lengths.device().is_cpu()) {
    for (std::int64_t b = 0; b < p.batch; ++b) {
      raw[static_cast<std::size_t>(b)] = lengths.dtype() == DType::i32
                                             ? static_cast<const std::int32_t*>(lengths.data())[b * stride]
                                             : static_cast<const std::int64_t*>(lengths.data())[b * stride];
    }
  } else {
#if ASRDEC_WITH_CUDA
    // Device lengths are read back once (one strided copy): the host needs them to size and validate the decode.
    std::vector<std::byte> host(static_cast<std::size_t>(p.batch) * element);
    if (p.batch > 0) {
      ASRDEC_CUDA_CHECK(
          cudaMemcpy2DAsync(host.data(), element, lengths.data(), static_cast<std::size_t>(stride) * element, element,
                            static_cast<std::size_t>(p.batch), cudaMemcpyDeviceToHost, caller_stream(stream)));
      ASRDEC_CUDA_CHECK(cudaStreamSynchronize(caller_stream(stream)));
    }
    for (std::int64_t b = 0; b < p.batch; ++b) {
      std::int64_t value = 0;
      if (element == 4) {
        std::int32_t v32;
        std::memcpy(&v32, host.data() + b * 4, 4);
        value = v32;
      } else {
        std::memcpy(&value, host.data() + b * 8, 8);
      }
      raw[static_cast<std::size_t>(b)] = value;
    }
#else
    (void)stream;
    (void)element;
#endif
  }
  p.lengths.resize(raw.size());
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t length = raw[static_cast<std::size_t>(b)];
    ASRDEC_CHECK_ARG(length >= 0 && length <= p.frames, "lengths[", b, "] = ", length, " is outside [0, ", p.frames,
                     "] (T, the frames of enc_proj)");
    p.lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(length);
  }
  return p;
}

}  // namespace asrdec::detail
