#include "support/test_support.hpp"

namespace asrdec {
namespace {

TEST(Error, ParseErrorCarriesFileLineAndDetail) {
  const ParseError error("lm.arpa", 12, "positive log probability 0.5");
  EXPECT_STREQ(error.what(), "lm.arpa:12: positive log probability 0.5");
  EXPECT_EQ(error.file(), "lm.arpa");
  EXPECT_EQ(error.line(), 12);
  EXPECT_EQ(error.detail(), "positive log probability 0.5");
}

TEST(Error, ParseErrorOfBinaryFileHasNoLine) {
  const ParseError error("x.npy", 0, "truncated");
  EXPECT_STREQ(error.what(), "x.npy: truncated");
}

TEST(Error, CudaErrorNamesCallErrorAndPlace) {
  const CudaError error("cudaMalloc(&p, n)", 2, "cudaErrorMemoryAllocation", "out of memory", "src/core/memory.cpp",
                        42);
  EXPECT_STREQ(error.what(),
               "CUDA call cudaMalloc(&p, n) failed: out of memory (cudaErrorMemoryAllocation, error 2) at "
               "src/core/memory.cpp:42");
  EXPECT_EQ(error.code(), 2);
  EXPECT_EQ(error.call(), "cudaMalloc(&p, n)");
}

TEST(Error, HierarchyDerivesFromError) {
  EXPECT_THROW(throw InvalidArgument("x"), Error);
  EXPECT_THROW(throw Unsupported("x"), Error);
  EXPECT_THROW(throw ParseError("f", 1, "x"), Error);
  EXPECT_THROW(throw CudaError("c", 1, "n", "s", "f", 1), Error);
  EXPECT_THROW(throw FileError("f", "x"), Error);
}

// The same mistake, the same type: every reader and writer reports a file it cannot open as FileError naming it.
TEST(Error, EveryReaderThrowsFileErrorNamingAMissingFile) {
  const std::string missing = ::testing::TempDir() + "asrdec_no_such_dir/no_such_file";
  const auto expect_file_error = [&](const char* reader, const auto& read) {
    try {
      read();
      ADD_FAILURE() << reader << " read a missing file";
    } catch (const FileError& error) {
      EXPECT_EQ(error.file(), missing) << reader;
      EXPECT_NE(std::string(error.what()).find(missing), std::string::npos) << reader << ": " << error.what();
    } catch (const std::exception& error) {
      ADD_FAILURE() << reader << " threw another type: " << error.what();
    }
  };
  expect_file_error("read_npy", [&] { read_npy(missing); });
  expect_file_error("SafetensorsFile", [&] { SafetensorsFile{missing}; });
  expect_file_error("TransducerModel::load", [&] { TransducerModel::load(missing, Device::cpu()); });
  expect_file_error("Vocabulary::load", [&] { Vocabulary::load(missing); });
  expect_file_error("SymbolTable::load", [&] { SymbolTable::load(missing); });
  NgramLmOptions lm_options;
  lm_options.vocab_size = 16;
  expect_file_error("NgramLm::load", [&] { NgramLm::load(missing, lm_options); });
  expect_file_error("read_phrase_list", [&] { read_phrase_list(missing); });
  expect_file_error("WfstGraph::load", [&] { WfstGraph::load(missing); });
  const std::int32_t value = 0;
  expect_file_error("write_npy", [&] { write_npy(missing, TensorView(&value, DType::i32, {1})); });
}

TEST(Error, CheckMacrosBuildMessagesOnlyOnFailure) {
  int evaluated = 0;
  const auto expensive = [&] {
    ++evaluated;
    return std::string("detail");
  };
  ASRDEC_CHECK_ARG(true, "never ", expensive());
  EXPECT_EQ(evaluated, 0);
  ASRDEC_EXPECT_THROW_MSG(ASRDEC_CHECK_ARG(1 + 1 == 3, "value ", 7, " is ", expensive()), InvalidArgument,
                          "value 7 is detail");
  EXPECT_EQ(evaluated, 1);
  ASRDEC_EXPECT_THROW_MSG(ASRDEC_EXPECTS(false, Unsupported, "no ", "way"), Unsupported, "no way");
}

TEST(Log, HandlerReceivesMessagesAndWarnOnceWarnsOnce) {
  std::vector<std::pair<LogLevel, std::string>> seen;
  set_log_handler([&](LogLevel level, const std::string& message) { seen.emplace_back(level, message); });
  log(LogLevel::info, "hello");
  const std::string key = "log-test-" + std::to_string(testing::test_seed());
  EXPECT_TRUE(warn_once(key, "first"));
  EXPECT_FALSE(warn_once(key, "second"));
  set_log_handler(nullptr);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].first, LogLevel::info);
  EXPECT_EQ(seen[0].second, "hello");
  EXPECT_EQ(seen[1].first, LogLevel::warning);
  EXPECT_EQ(seen[1].second, "first");
  EXPECT_STREQ(to_string(LogLevel::error), "error");
}

}  // namespace
}  // namespace asrdec
