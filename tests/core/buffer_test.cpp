#include <numeric>

#include "support/test_support.hpp"

#if ASRDEC_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace asrdec {
namespace {

TEST(Buffer, HostBufferAllocatesMovesAndGrows) {
  HostBuffer<float> a(100);
  EXPECT_EQ(a.size(), 100u);
  EXPECT_EQ(a.bytes(), 400u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a.data()) % 64, 0u);
  std::iota(a.data(), a.data() + a.size(), 0.0f);
  HostBuffer<float> b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b[99], 99.0f);
  EXPECT_FALSE(b.reserve_discard(50));
  EXPECT_EQ(b[99], 99.0f);  // no reallocation, contents kept
  EXPECT_TRUE(b.reserve_discard(200));
  EXPECT_EQ(b.size(), 200u);
  HostBuffer<float> c;
  EXPECT_TRUE(c.empty());
  c = std::move(b);
  EXPECT_EQ(c.size(), 200u);
  EXPECT_TRUE(c.device().is_cpu());
}

TEST(Buffer, ViewsCheckTheirSize) {
  HostBuffer<std::int32_t> buffer(12);
  const TensorView view = buffer.view({3, 4});
  EXPECT_EQ(view.dtype(), DType::i32);
  EXPECT_EQ(view.numel(), 12);
  ASRDEC_EXPECT_THROW_MSG(buffer.view({4, 4}), InvalidArgument,
                          "buffer view [4, 4] needs 16 elements, the buffer holds 12");
}

TEST(Buffer, HostCopiesCheckRanges) {
  HostBuffer<int> src(10);
  HostBuffer<int> dst(10);
  std::iota(src.data(), src.data() + 10, 0);
  copy_async(dst, src, 4, nullptr, 6, 2);
  EXPECT_EQ(dst[6], 2);
  EXPECT_EQ(dst[9], 5);
  ASRDEC_EXPECT_THROW_MSG(copy_async(dst, src, 5, nullptr, 6, 0), InvalidArgument,
                          "destination range [6, 11) outside a buffer of 10 elements");
  ASRDEC_EXPECT_THROW_MSG(copy_async(dst, src, 3, nullptr, 0, 8), InvalidArgument,
                          "source range [8, 11) outside a buffer of 10 elements");
}

TEST(Buffer, DeviceBufferNeedsCudaDevice) {
  ASRDEC_EXPECT_THROW_MSG(DeviceBuffer<float>(4, Device::cpu()), InvalidArgument,
                          "a device buffer needs a CUDA device, got cpu");
  if (!cuda_info().available) {
    ASRDEC_EXPECT_THROW_MSG(PinnedBuffer<float>(4), Unsupported, "pinned host memory needs CUDA: no CUDA device: ");
  }
}

TEST(BufferCUDA, RoundTripThroughDeviceAndPinnedMemory) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937 rng(static_cast<unsigned>(seed));
  const Device device = Device::cuda(0);
  Stream stream(device);
  const std::size_t n = 1000 + rng() % 5000;
  HostBuffer<float> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<float>(rng()) / 7.0f;
  DeviceBuffer<float> device_buffer(n, device);
  PinnedBuffer<float> pinned(n);
  DeviceBuffer<float> second(n, device);
  copy_async(device_buffer, host, n, stream.handle());
  copy_async(second, device_buffer, n, stream.handle());
  copy_async(pinned, second, n, stream.handle());
  stream.synchronize();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(pinned[i], host[i]) << i;
  fill_bytes_async(second.data(), device, 0, second.bytes(), stream.handle());
  copy_to_async(pinned.data(), Device::cpu(), second, n, stream.handle());
  stream.synchronize();
  EXPECT_EQ(pinned[n - 1], 0.0f);
  EXPECT_EQ(device_buffer.device(), device);
}

void synchronize_legacy_stream() {
#if ASRDEC_WITH_CUDA
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
#endif
}

TEST(BufferCUDA, NullStreamIsTheLegacyDefaultStream) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const std::uint64_t seed = testing::test_seed();
  SCOPED_TRACE(testing::seed_message(seed));
  std::mt19937 rng(static_cast<unsigned>(seed));
  const std::size_t n = 1 + rng() % 4096;
  HostBuffer<int> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<int>(rng());
  DeviceBuffer<int> device_buffer(n, Device::cuda(0));
  PinnedBuffer<int> back(n);
  // Both copies and the fill run on the legacy stream in order; synchronizing it makes them visible.
  copy_async(device_buffer, host, n, nullptr);
  copy_async(back, device_buffer, n, nullptr);
  synchronize_legacy_stream();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], host[i]) << i;
  fill_bytes_async(device_buffer.data(), Device::cuda(0), 0xff, device_buffer.bytes(), nullptr);
  copy_async(back, device_buffer, n, nullptr);
  synchronize_legacy_stream();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], -1) << i;
}

}  // namespace
}  // namespace asrdec
