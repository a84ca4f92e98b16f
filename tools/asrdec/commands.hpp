#pragma once
// Each subcommand registers itself on the application; main() only dispatches and reports errors.

#include <CLI/CLI.hpp>

namespace asrdec::cli {

void add_info_command(CLI::App& app);
/** `asrdec decode ctc-greedy`; later decoders add their own `decode` subcommands beside it. */
void add_decode_ctc_greedy_command(CLI::App& decode);
/** `asrdec decode rnnt` and `asrdec decode tdt`. */
void add_decode_transducer_commands(CLI::App& decode);

}  // namespace asrdec::cli
