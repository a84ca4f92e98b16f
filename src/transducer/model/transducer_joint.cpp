#include "asrdec/config.hpp"
#include "core/weights.hpp"
#include "transducer/model/joint_impl.hpp"

namespace asrdec {

const char* to_string(TransducerType type) noexcept { return type == TransducerType::rnnt ? "rnnt" : "tdt"; }

const char* to_string(JointActivation activation) noexcept {
  switch (activation) {
    case JointActivation::relu:
      return "relu";
    case JointActivation::tanh:
      return "tanh";
    case JointActivation::sigmoid:
      return "sigmoid";
  }
  return "unknown";
}

TransducerJoint::TransducerJoint(const TensorView& out_weight, const TensorView& out_bias, JointActivation activation,
                                 DType weight_dtype, Device device)
    : impl_(std::make_unique<Impl>()) {
  ASRDEC_CHECK_ARG(is_floating(weight_dtype), "joint weight dtype must be float32, float16 or bfloat16, got ",
                   dtype_name(weight_dtype));
  ASRDEC_CHECK_ARG(out_weight.ndim() == 2, "joint.out.weight: expected [V+1+D, J], got ", out_weight.shape_string());
  impl_->outputs = out_weight.size(0);
  impl_->hidden = out_weight.size(1);
  ASRDEC_CHECK_ARG(impl_->outputs >= 1 && impl_->hidden >= 1, "joint.out.weight: empty shape ",
                   out_weight.shape_string());
  detail::expect_shape(out_weight, "joint.out.weight", {impl_->outputs, impl_->hidden});
  detail::expect_shape(out_bias, "joint.out.bias", {impl_->outputs});
  impl_->activation = activation;
  impl_->weight_dtype = weight_dtype;
  impl_->device = device;
  if (device.is_cpu()) {
    impl_->host_weight = detail::to_floats(out_weight, weight_dtype, "joint.out.weight");
    impl_->host_bias = detail::to_floats(out_bias, DType::f32, "joint.out.bias");
    return;
  }
#if ASRDEC_WITH_CUDA
  const std::vector<std::byte> weight = detail::to_bytes(out_weight, weight_dtype, "joint.out.weight");
  const std::vector<float> bias = detail::to_floats(out_bias, DType::f32, "joint.out.bias");
  Stream stream(device);
  impl_->device_weight = DeviceBuffer<std::byte>(weight.size(), device);
  impl_->device_bias = DeviceBuffer<float>(bias.size(), device);
  copy_bytes_async(impl_->device_weight.data(), device, weight.data(), Device::cpu(), weight.size(), stream.handle());
  copy_bytes_async(impl_->device_bias.data(), device, bias.data(), Device::cpu(), bias.size() * 4, stream.handle());
  stream.synchronize();
#else
  throw Unsupported(cuda_info().reason);
#endif
}

TransducerJoint::~TransducerJoint() = default;
TransducerJoint::TransducerJoint(TransducerJoint&&) noexcept = default;
TransducerJoint& TransducerJoint::operator=(TransducerJoint&&) noexcept = default;

std::int64_t TransducerJoint::hidden_size() const noexcept { return impl_->hidden; }
std::int64_t TransducerJoint::output_size() const noexcept { return impl_->outputs; }
JointActivation TransducerJoint::activation() const noexcept { return impl_->activation; }
DType TransducerJoint::weight_dtype() const noexcept { return impl_->weight_dtype; }
Device TransducerJoint::device() const noexcept { return impl_->device; }

}  // namespace asrdec
