#include "common/bench_support.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>
#include <vector>

namespace asrdec::bench {
namespace {

std::string slug(std::string text) {
  std::string out;
  for (char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

std::string command_output(const std::string& command) {
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buffer[256];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
    ::pclose(pipe);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      return line.substr(line.find(':') + 2);
    }
  }
  return "unknown";
}

std::string today() {
  const std::time_t now = std::time(nullptr);
  char buffer[16];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d", std::gmtime(&now));
  return buffer;
}

}  // namespace

std::vector<std::int64_t> cpu_thread_counts() {
  const auto cores = static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::int64_t> counts = {1};
  for (std::int64_t n = 2; n < cores; n *= 2) counts.push_back(n);
  if (cores > 1) counts.push_back(cores);
  return counts;
}

std::string device_slug() {
  const CudaInfo& info = cuda_info();
  if (info.available) {
    return slug(info.devices.front().name);
  }
  return "cpu-" + slug(cpu_model());
}

std::string cuda_unavailable_reason() { return cuda_info().available ? std::string() : cuda_info().reason; }

ScopedEnv::ScopedEnv(const char* name, const char* value, bool active) : name_(name), active_(active) {
  if (active_) ::setenv(name_, value, 1);
}

ScopedEnv::~ScopedEnv() {
  if (active_) ::unsetenv(name_);
}

void set_rtfx(benchmark::State& state, std::int64_t frames_per_iteration, double frame_shift_seconds) {
  state.counters["RTFx"] = benchmark::Counter(static_cast<double>(frames_per_iteration) * frame_shift_seconds,
                                              benchmark::Counter::kIsIterationInvariantRate);
  state.counters["frames"] = static_cast<double>(frames_per_iteration);
}

int run_benchmarks(int argc, char** argv, const std::string& bench_name) {
  std::vector<char*> args(argv, argv + argc);
  const auto has_flag = [&args](const char* flag) {
    return std::any_of(args.begin(), args.end(), [flag](const char* a) { return std::string(a).rfind(flag, 0) == 0; });
  };
  // Listing the benchmarks runs none, so it writes no (empty) results file.
  const bool has_out = has_flag("--benchmark_out=") || has_flag("--benchmark_list_tests");
  const std::string date = today();
  std::string out_flag;
  std::string format_flag = "--benchmark_out_format=json";
  if (!has_out) {
    const char* dir = std::getenv("ASRDEC_BENCH_RESULTS");
    out_flag = "--benchmark_out=" + std::string(dir != nullptr ? dir : ASRDEC_BENCH_RESULTS_DIR) + "/" + bench_name +
               "-" + device_slug() + "-" + date + ".json";
    args.push_back(out_flag.data());
    args.push_back(format_flag.data());
  }
  // ASRDEC_PHASE_TIMES=1: the persistent kernels log their time by phase at info level, which the default handler
  // drops; here it goes to stderr with the warnings.
  const char* phase_times = std::getenv("ASRDEC_PHASE_TIMES");
  if (phase_times != nullptr && std::string(phase_times) == "1") {
    set_log_handler([](LogLevel level, const std::string& message) {
      if (level >= LogLevel::info) std::fprintf(stderr, "asrdec %s: %s\n", to_string(level), message.c_str());
    });
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) {
    return 1;
  }
  const char* commit_env = std::getenv("ASRDEC_GIT_COMMIT");
  const std::string commit =
      commit_env != nullptr
          ? commit_env
          : command_output("git -C '" + std::string(ASRDEC_SOURCE_DIR) + "' rev-parse --short HEAD 2>/dev/null");
  const std::string dirty = command_output("git -C '" + std::string(ASRDEC_SOURCE_DIR) +
                                           "' status --porcelain --untracked-files=no 2>/dev/null");
  const CudaInfo& cuda = cuda_info();
  benchmark::AddCustomContext("asrdec_bench", bench_name);
  benchmark::AddCustomContext("asrdec_version", ASRDEC_VERSION_STRING);
  benchmark::AddCustomContext("asrdec_commit", commit.empty() ? "unknown" : commit + (dirty.empty() ? "" : "-dirty"));
  benchmark::AddCustomContext("asrdec_date", date);
  benchmark::AddCustomContext("asrdec_device", cuda.available ? cuda.devices.front().name : "none");
  benchmark::AddCustomContext("asrdec_cpu", cpu_model());
  benchmark::AddCustomContext("asrdec_cuda", cuda.available ? "runtime " + format_cuda_version(cuda.runtime_version) +
                                                                  ", driver " + format_cuda_version(cuda.driver_version)
                                                            : cuda.reason);
  benchmark::AddCustomContext("asrdec_build", std::string(ASRDEC_BUILD_TYPE) + ", " + ASRDEC_CXX_COMPILER +
                                                  ", CUDA architectures " + ASRDEC_CUDA_ARCHITECTURES);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (!has_out) {
    std::fprintf(stderr, "results written to %s\n", out_flag.substr(std::string("--benchmark_out=").size()).c_str());
  }
  return 0;
}

bool skip_if(benchmark::State& state, const std::string& reason) {
  if (reason.empty()) return false;
  state.SkipWithError(reason.c_str());
  for (auto _ : state) {
  }
  return true;
}

}  // namespace asrdec::bench
