#pragma once
// A one-line progress bar on stderr for long decodes. Shown only when stderr is a terminal, and not when JSON
// goes to a pipe unless asked for ("always"), so that logs and pipelines stay clean.

#include <cstdint>
#include <string>

namespace asrdec::cli {

class ProgressBar {
 public:
  /** policy: "auto", "always" or "never". */
  ProgressBar(const std::string& policy, bool json_output, std::int64_t total, std::string unit);
  ~ProgressBar();
  void update(std::int64_t done);
  void finish();
  bool enabled() const noexcept { return enabled_; }

 private:
  bool enabled_ = false;
  bool finished_ = false;
  std::int64_t total_;
  std::string unit_;
  int last_width_ = -1;
};

}  // namespace asrdec::cli
