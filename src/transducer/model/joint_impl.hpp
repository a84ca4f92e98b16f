#pragma once
// Internal: what TransducerJoint holds. CPU models keep float copies of the (dtype-rounded) weights; CUDA models
// keep the weights in their dtype in device memory.

#include <vector>

#include "asrdec/core/buffer.hpp"
#include "asrdec/transducer/transducer_model.hpp"

namespace asrdec {

struct TransducerJoint::Impl {
  std::int64_t hidden = 0;   // J
  std::int64_t outputs = 0;  // V + 1 + D
  JointActivation activation = JointActivation::relu;
  DType weight_dtype = DType::f32;
  Device device;
  std::vector<float> host_weight;         // [outputs, hidden], CPU models
  std::vector<float> host_bias;           // [outputs]
  DeviceBuffer<std::byte> device_weight;  // [outputs, hidden] in weight_dtype, CUDA models
  DeviceBuffer<float> device_bias;
};

}  // namespace asrdec
