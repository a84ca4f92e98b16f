// asrdec: command-line front end of the library (decode sample or user data, inspect the build).

#include <cstdio>
#include <exception>

#include "asrdec/asrdec.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"asrdec " ASRDEC_VERSION_STRING ": exact, fast decoding of CTC and transducer model outputs", "asrdec"};
  app.require_subcommand(1);
  // The library's own version and build line; it makes no CUDA call, so --version never loads a GPU library.
  app.set_version_flag("--version", [] { return asrdec::build_info().to_string(); });
  asrdec::cli::add_info_command(app);
  CLI::App* decode = app.add_subcommand("decode", "Decode model outputs stored in .npy files");
  decode->require_subcommand(1);
  asrdec::cli::add_decode_ctc_greedy_command(*decode);
  asrdec::cli::add_decode_ctc_beam_command(*decode);
  asrdec::cli::add_decode_ctc_wfst_command(*decode);
  asrdec::cli::add_decode_transducer_commands(*decode);
  asrdec::cli::add_decode_aed_command(*decode);
  asrdec::cli::add_lm_commands(app);
  asrdec::cli::add_graph_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  } catch (const asrdec::Error& error) {
    std::fprintf(stderr, "asrdec: error: %s\n", error.what());
    return 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "asrdec: unexpected error: %s\n", error.what());
    return 2;
  }
  return 0;
}
