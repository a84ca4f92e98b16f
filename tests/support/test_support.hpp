#pragma once
// Shared helpers of the asrdec test suite: seeds, device parameters, CUDA skips, expected-error checks.

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "asrdec/asrdec.hpp"

namespace asrdec::testing {

/** The seed of a randomised test: $ASRDEC_TEST_SEED when set (to replay a failure), else a fresh one.
 *  Tests wrap their body in SCOPED_TRACE(seed_message(seed)) so every failure prints it. */
std::uint64_t test_seed();
std::string seed_message(std::uint64_t seed);

/** A path in the test temporary directory, unique within the process. */
std::string temp_path(const std::string& name);

/** Writes `bytes` to a new temp_path(name) and returns the path (files crafted by a test). */
std::string write_temp_file(const std::string& name, const std::string& bytes);

/** The repository's source tree (for examples/data and tests/data). */
std::string source_path(const std::string& relative);

/** True when a CUDA device can run the CUDA cases; otherwise false, with the reason. */
bool cuda_test_device_available(std::string* reason);

/** Copies host bytes into a new device buffer (synchronously). */
DeviceBuffer<std::byte> to_device(const void* data, std::size_t bytes, Device device);

/** Host float32 values as a [b, t, c] tensor on `device`: in place on the CPU, else copied into `storage`. */
TensorView f32_on(const std::vector<float>& values, std::int64_t b, std::int64_t t, std::int64_t c, Device device,
                  DeviceBuffer<std::byte>& storage);

/** While it lives, the environment variable `name` is `value` (unset where `value` is null); the previous value
 *  comes back when it ends. For the decoders' diagnostic switches, read when a decoder is built. */
class ScopedEnvironmentVariable {
 public:
  ScopedEnvironmentVariable(const char* name, const char* value);
  ~ScopedEnvironmentVariable();
  ScopedEnvironmentVariable(const ScopedEnvironmentVariable&) = delete;
  ScopedEnvironmentVariable& operator=(const ScopedEnvironmentVariable&) = delete;

 private:
  std::string name_;
  bool had_value_;
  std::string saved_;
};

/** While it lives, the CUDA decoders built (and buffers grown) use the fused small-batch kernels when `on`
 *  (ASRDEC_FUSED_KERNELS=1; they are off by default, docs/cuda-contract.md). The random CUDA tests alternate, so that
 *  both paths meet the oracle. */
class ScopedFusedKernels {
 public:
  explicit ScopedFusedKernels(bool on) : on_(on), variable_("ASRDEC_FUSED_KERNELS", on ? "1" : nullptr) {}
  /** "fused kernels on" or "fused kernels off", for a test's trace. */
  std::string describe() const { return on_ ? "fused kernels on" : "fused kernels off"; }

 private:
  bool on_;
  ScopedEnvironmentVariable variable_;
};

/** A greedy CUDA test case's kernels, in turn by case number: the default path (cuBLAS and small kernels in CUDA
 *  graphs), the fused small-batch kernels (ASRDEC_FUSED_KERNELS=1), and label looping as one persistent kernel
 *  (ASRDEC_PERSISTENT_GREEDY=1, for the decoders it takes; the others keep the default path). CPU cases: the
 *  default. */
class ScopedGreedyKernels {
 public:
  ScopedGreedyKernels(bool cuda, int case_index)
      : choice_(cuda ? case_index % 3 : 0),
        fused_("ASRDEC_FUSED_KERNELS", choice_ == 1 ? "1" : nullptr),
        persistent_("ASRDEC_PERSISTENT_GREEDY", choice_ == 2 ? "1" : nullptr) {}
  /** For a test's trace. */
  std::string describe() const {
    return choice_ == 0 ? "default kernels" : choice_ == 1 ? "fused kernels on" : "persistent kernel on";
  }

 private:
  int choice_;
  ScopedEnvironmentVariable fused_;
  ScopedEnvironmentVariable persistent_;
};

}  // namespace asrdec::testing

/** Skips a CUDA case with the reason when no device can run it ("no CUDA device: ..."). */
#define ASRDEC_SKIP_WITHOUT_CUDA()                                              \
  do {                                                                          \
    std::string asrdec_skip_reason_;                                            \
    if (!::asrdec::testing::cuda_test_device_available(&asrdec_skip_reason_)) { \
      GTEST_SKIP() << asrdec_skip_reason_;                                      \
    }                                                                           \
  } while (false)

// Whether this build runs under AddressSanitizer, whose allocator aborts on a request past its largest size instead
// of failing it as operator new would.
#if defined(__SANITIZE_ADDRESS__)
#define ASRDEC_TESTS_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASRDEC_TESTS_UNDER_ASAN 1
#endif
#endif

/** Skips a case that asks the host allocator for more memory than any machine has (to see the call fail cleanly)
 *  where AddressSanitizer would abort the process instead. */
#if defined(ASRDEC_TESTS_UNDER_ASAN)
#define ASRDEC_SKIP_UNDER_ASAN() \
  GTEST_SKIP() << "AddressSanitizer aborts on an allocation past its largest size instead of failing it"
#else
#define ASRDEC_SKIP_UNDER_ASAN() \
  do {                           \
  } while (false)
#endif

/** Expects `statement` to throw `Type` whose what() contains `substring`. */
#define ASRDEC_EXPECT_THROW_MSG(statement, Type, substring)                                       \
  do {                                                                                            \
    try {                                                                                         \
      statement;                                                                                  \
      ADD_FAILURE() << "expected " #Type " containing \"" << (substring) << "\", nothing thrown"; \
    } catch (const Type& asrdec_error_) {                                                         \
      EXPECT_NE(std::string(asrdec_error_.what()).find(substring), std::string::npos)             \
          << "message: " << asrdec_error_.what() << "\nexpected to contain: " << (substring);     \
    } catch (const std::exception& asrdec_error_) {                                               \
      ADD_FAILURE() << "expected " #Type ", got another exception: " << asrdec_error_.what();     \
    }                                                                                             \
  } while (false)
