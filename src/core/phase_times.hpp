#pragma once
// Internal: where a persistent kernel's time goes, phase by phase (core/cuda/phase_clock.cuh measures it on the
// device; ncu times a persistent kernel only as a whole, and nsys does not run on the lent GPU machines). Off by
// default: ASRDEC_PHASE_TIMES=1 turns it on when a decoder sizes its buffers, and each call that ran the kernel then
// logs (LogLevel::info) its time a step by phase. Host-only, tested on the CPU.

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/environment_switch.hpp"

namespace asrdec::detail {

/** Whether the persistent kernels time their phases (ASRDEC_PHASE_TIMES=1). */
inline bool phase_times_enabled() { return environment_switch("ASRDEC_PHASE_TIMES", false); }

/** "what: N steps; a step: name1 a µs, name2 b µs, ..., all c µs": the totals (ns, one per name) over `steps`. */
inline std::string format_phase_times(const std::string& what, const std::vector<std::string>& names,
                                      const std::vector<std::uint64_t>& totals_ns, std::int64_t steps) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(2);
  out << what << ": " << steps << " steps";
  if (steps <= 0) return out.str();
  out << "; a step:";
  const auto per_step_us = [steps](std::uint64_t ns) {
    return static_cast<double>(ns) / 1000.0 / static_cast<double>(steps);
  };
  std::uint64_t all = 0;
  for (std::size_t i = 0; i < names.size() && i < totals_ns.size(); ++i) {
    out << (i == 0 ? " " : ", ") << names[i] << ' ' << per_step_us(totals_ns[i]) << " us";
    all += totals_ns[i];
  }
  out << ", all " << per_step_us(all) << " us";
  return out.str();
}

}  // namespace asrdec::detail
