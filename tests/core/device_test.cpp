#include "support/test_support.hpp"

namespace asrdec {
namespace {

TEST(Device, CpuIsDefaultAndPrints) {
  EXPECT_TRUE(Device().is_cpu());
  EXPECT_EQ(Device::cpu().to_string(), "cpu");
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
}

TEST(Device, DiscoveryNeverThrowsAndExplainsAbsence) {
  const CudaInfo& info = cuda_info();
  EXPECT_EQ(&info, &cuda_info());  // cached
  if (info.available) {
    EXPECT_TRUE(info.reason.empty());
    EXPECT_GT(cuda_device_count(), 0);
    EXPECT_FALSE(info.devices.front().name.empty());
  } else {
    EXPECT_EQ(info.reason.rfind("no CUDA device: ", 0), 0u) << info.reason;
    EXPECT_EQ(cuda_device_count(), 0);
    ASRDEC_EXPECT_THROW_MSG(Device::cuda(0), Unsupported, "no CUDA device: ");
    ASRDEC_EXPECT_THROW_MSG(Device::parse("cuda"), Unsupported, "no CUDA device: ");
  }
  EXPECT_EQ(info.compiled, ASRDEC_WITH_CUDA == 1);
}

TEST(Device, ParseRejectsUnknownNames) {
  ASRDEC_EXPECT_THROW_MSG(Device::parse("gpu"), InvalidArgument,
                          "unknown device 'gpu': expected cpu, cuda, cuda:N or auto");
  ASRDEC_EXPECT_THROW_MSG(Device::parse("cuda:"), InvalidArgument, "unknown device 'cuda:'");
  ASRDEC_EXPECT_THROW_MSG(Device::parse("cuda:1x"), InvalidArgument, "unknown device 'cuda:1x'");
}

TEST(Device, AutoIsCudaZeroWhenUsableElseTheCpu) {
  EXPECT_EQ(Device::parse("auto"), cuda_info().available ? Device::cuda(0) : Device::cpu());
}

TEST(Device, VersionNumbersFormat) {
  EXPECT_EQ(format_cuda_version(12040), "12.4");
  EXPECT_EQ(format_cuda_version(13000), "13.0");
  EXPECT_EQ(format_cuda_version(0), "none");
}

TEST(DeviceCUDA, IndexOutOfRangeIsInvalidArgument) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  EXPECT_EQ(Device::cuda(0).to_string(), "cuda:0");
  EXPECT_EQ(Device::parse("cuda:0"), Device::cuda(0));
  ASRDEC_EXPECT_THROW_MSG(Device::cuda(cuda_device_count()), InvalidArgument, "out of range");
  ASRDEC_EXPECT_THROW_MSG(Device::cuda(-1), InvalidArgument, "out of range");
}

TEST(StreamCUDA, CreatesSynchronisesAndMoves) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  Stream stream(Device::cuda(0));
  EXPECT_NE(stream.handle(), nullptr);
  stream.synchronize();
  Stream moved(std::move(stream));
  EXPECT_EQ(stream.handle(), nullptr);
  moved.synchronize();
}

TEST(Stream, CpuStreamIsEmptyNoOp) {
  Stream stream(Device::cpu());
  EXPECT_EQ(stream.handle(), nullptr);
  stream.synchronize();
}

TEST(TimerCUDA, MeasuresNonNegativeTime) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  const Device device = Device::cuda(0);
  Stream stream(device);
  CudaEventTimer timer(device);
  DeviceBuffer<float> buffer(1 << 20, device);
  timer.start(stream.handle());
  fill_bytes_async(buffer.data(), device, 0, buffer.bytes(), stream.handle());
  timer.stop(stream.handle());
  EXPECT_GE(timer.elapsed_ms(), 0.0f);
}

TEST(Timer, RejectsCpuDevice) {
  ASRDEC_EXPECT_THROW_MSG(CudaEventTimer{Device::cpu()}, InvalidArgument, "CudaEventTimer needs a CUDA device");
}

}  // namespace
}  // namespace asrdec
