#include "support/test_support.hpp"

namespace asrdec {
namespace {

TEST(TensorView, ContiguousStridesAndShape) {
  float data[24] = {};
  const TensorView v(data, DType::f32, {2, 3, 4});
  EXPECT_EQ(v.ndim(), 3);
  EXPECT_EQ(v.stride(0), 12);
  EXPECT_EQ(v.stride(1), 4);
  EXPECT_EQ(v.stride(2), 1);
  EXPECT_EQ(v.numel(), 24);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.shape_string(), "[2, 3, 4]");
  EXPECT_EQ(v.data_as<float>(), data);
  ASRDEC_EXPECT_THROW_MSG(v.data_as<std::int32_t>(), InvalidArgument, "tensor holds float32, accessed as int32");
  ASRDEC_EXPECT_THROW_MSG(v.size(3), InvalidArgument, "dimension 3 out of range for a 3-d tensor");
}

TEST(TensorView, StridedViewsAndErrors) {
  float data[64] = {};
  // [T=4, B=2, V=8] memory seen as [B, T, V]
  const TensorView v(data, DType::f32, {2, 4, 8}, {8, 16, 1});
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_EQ(v.stride(1), 16);
  ASRDEC_EXPECT_THROW_MSG(TensorView(data, DType::f32, {2, -1}), InvalidArgument, "dimension 1 has negative size -1");
  ASRDEC_EXPECT_THROW_MSG(TensorView(data, DType::f32, {1, 1, 1, 1, 1}), InvalidArgument,
                          "at most 4 dimensions, got 5");
  ASRDEC_EXPECT_THROW_MSG(TensorView(data, DType::f32, {2, 2}, {1}), InvalidArgument, "2 dimensions but 1 strides");
  const TensorView pinned_like = v.on(Device::cpu());
  EXPECT_TRUE(pinned_like.device().is_cpu());
}

TEST(TensorCheck, MessagesNameTheArgumentAndExpectedVersusGot) {
  std::int32_t ints[8] = {};
  const TensorView v(ints, DType::i32, {2, 4});
  ASRDEC_EXPECT_THROW_MSG(TensorCheck(v, "logprobs").ndim(3, "[B, T, V+1]"), InvalidArgument,
                          "logprobs: expected 3 dimensions [B, T, V+1], got 2 dimensions [2, 4]");
  ASRDEC_EXPECT_THROW_MSG(TensorCheck(v, "logprobs").dtype_one_of({DType::f32, DType::f16, DType::bf16}),
                          InvalidArgument, "logprobs: expected dtype float32, float16 or bfloat16, got int32");
  ASRDEC_EXPECT_THROW_MSG(TensorCheck(v, "lengths").dim(0, 3, "the batch size"), InvalidArgument,
                          "lengths: dimension 0 must be 3 (the batch size), got 2 in shape [2, 4]");
  ASRDEC_EXPECT_THROW_MSG(TensorCheck(TensorView(nullptr, DType::f32, {2}), "x").not_null(), InvalidArgument,
                          "x: null data pointer for a tensor of shape [2]");
  ASRDEC_EXPECT_THROW_MSG(TensorCheck(TensorView(ints, DType::i32, {2}, {-1}), "x").non_negative_strides(),
                          InvalidArgument, "x: negative stride -1 in dimension 0");
  TensorCheck(v, "ok").ndim(2, "[B, T]").dtype(DType::i32).dim(1, 4, "T").device(Device::cpu()).not_null();
  TensorCheck(TensorView(nullptr, DType::f32, {0, 3}), "empty").not_null();
}

TEST(TensorCheckCUDA, DeviceMismatchIsReported) {
  ASRDEC_SKIP_WITHOUT_CUDA();
  float x = 0;
  ASRDEC_EXPECT_THROW_MSG(TensorCheck(TensorView(&x, DType::f32, {1}), "enc").device(Device::cuda(0)), InvalidArgument,
                          "enc: expected data on cuda:0, got cpu");
}

}  // namespace
}  // namespace asrdec
