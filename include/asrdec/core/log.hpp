#pragma once
/**
 * @file
 * Where asrdec's few messages go (e.g. "conditional CUDA graphs unsupported, falling back to per_step").
 * By default warnings and errors are written to stderr; an engine installs its own handler to route them
 * into its logger. The handler may be called from any thread; calls are serialised by the library.
 */

#include <functional>
#include <string>

#include "asrdec/core/export.hpp"

namespace asrdec {

enum class LogLevel { debug, info, warning, error };

using LogHandler = std::function<void(LogLevel, const std::string&)>;

/** Replaces the handler; an empty function restores the default (stderr, warning and above). */
ASRDEC_API void set_log_handler(LogHandler handler);

/** Sends one message to the handler. */
ASRDEC_API void log(LogLevel level, const std::string& message);

/** Logs a warning the first time `key` is seen in this process and never again, so that a fallback that
 *  happens on every call is reported once. Returns true when the message was emitted. */
ASRDEC_API bool warn_once(const std::string& key, const std::string& message);

ASRDEC_API const char* to_string(LogLevel level) noexcept;

}  // namespace asrdec
