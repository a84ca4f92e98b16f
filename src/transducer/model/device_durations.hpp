#pragma once
// Internal: the TDT duration table in device memory, as the CUDA greedy and beam executors read it ({0} for RNN-T,
// so that kernels always have one entry to read).

#include <cstdint>
#include <vector>

#include "asrdec/core/buffer.hpp"
#include "asrdec/core/memory.hpp"
#include "asrdec/core/stream.hpp"
#include "asrdec/transducer/transducer_model.hpp"

namespace asrdec::detail {

inline DeviceBuffer<std::int32_t> device_durations(const TransducerModel& model) {
  std::vector<std::int32_t> durations = model.durations();
  if (durations.empty()) durations.push_back(0);
  DeviceBuffer<std::int32_t> table(durations.size(), model.device());
  Stream setup(model.device());
  copy_bytes_async(table.data(), model.device(), durations.data(), Device::cpu(),
                   durations.size() * sizeof(std::int32_t), setup.handle());
  setup.synchronize();
  return table;
}

}  // namespace asrdec::detail
