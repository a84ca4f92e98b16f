#pragma once
// Each subcommand registers itself on the application; main() only dispatches and reports errors.

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace asrdec::cli {

void add_info_command(CLI::App& app);
/** `asrdec decode ctc-greedy`; later decoders add their own `decode` subcommands beside it. */
void add_decode_ctc_greedy_command(CLI::App& decode);
/** `asrdec decode ctc-beam`. */
void add_decode_ctc_beam_command(CLI::App& decode);
/** `asrdec decode ctc-wfst`. */
void add_decode_ctc_wfst_command(CLI::App& decode);
/** `asrdec decode aed`. */
void add_decode_aed_command(CLI::App& decode);
/** `asrdec lm score` and `asrdec lm convert`. */
void add_lm_commands(CLI::App& app);
/** `asrdec graph build`. */
void add_graph_commands(CLI::App& app);
/** `asrdec decode rnnt` and `asrdec decode tdt`. */
void add_decode_transducer_commands(CLI::App& decode);

}  // namespace asrdec::cli
