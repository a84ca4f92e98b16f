#include "asrdec/core/log.hpp"

#include <cstdio>
#include <mutex>
#include <set>

namespace asrdec {
namespace {

struct LogState {
  std::mutex mutex;
  LogHandler handler;
  std::set<std::string> warned;
};

LogState& state() {
  static LogState instance;
  return instance;
}

void default_handler(LogLevel level, const std::string& message) {
  if (level >= LogLevel::warning) {
    std::fprintf(stderr, "asrdec %s: %s\n", to_string(level), message.c_str());
  }
}

}  // namespace

const char* to_string(LogLevel level) noexcept {
  switch (level) {
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warning:
      return "warning";
    case LogLevel::error:
      return "error";
  }
  return "unknown";
}

void set_log_handler(LogHandler handler) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().handler = std::move(handler);
}

void log(LogLevel level, const std::string& message) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (state().handler) {
    state().handler(level, message);
  } else {
    default_handler(level, message);
  }
}

bool warn_once(const std::string& key, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (!state().warned.insert(key).second) {
      return false;
    }
  }
  log(LogLevel::warning, message);
  return true;
}

}  // namespace asrdec
