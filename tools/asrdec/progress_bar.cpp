#include "progress_bar.hpp"

#include <unistd.h>

#include <cstdio>

#include "asrdec/core/error.hpp"

namespace asrdec::cli {

ProgressBar::ProgressBar(const std::string& policy, bool json_output, std::int64_t total, std::string unit)
    : total_(total), unit_(std::move(unit)) {
  ASRDEC_CHECK_ARG(policy == "auto" || policy == "always" || policy == "never",
                   "--progress must be auto, always or never, got '", policy, "'");
  if (policy == "always") {
    enabled_ = true;
  } else if (policy == "auto") {
    enabled_ = ::isatty(STDERR_FILENO) && !(json_output && !::isatty(STDOUT_FILENO));
  }
  enabled_ = enabled_ && total_ > 0;
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(std::int64_t done) {
  if (!enabled_ || finished_) {
    return;
  }
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total_);
  if (filled == last_width_ && done != total_) {
    return;  // redraw only when the bar moves
  }
  last_width_ = filled;
  std::string bar(static_cast<std::size_t>(filled), '=');
  bar.resize(kWidth, ' ');
  std::fprintf(stderr, "\rdecoding [%s] %lld/%lld %s", bar.c_str(), static_cast<long long>(done),
               static_cast<long long>(total_), unit_.c_str());
  std::fflush(stderr);
}

void ProgressBar::finish() {
  if (enabled_ && !finished_) {
    std::fprintf(stderr, "\n");
    finished_ = true;
  }
}

}  // namespace asrdec::cli
