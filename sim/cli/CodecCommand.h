// `gradwire codec encode|decode`: runs one codec outside a simulation, on plain .npy float32
// arrays, so codecs can be scripted and cross-checked (e.g. against a Python reference).
//
//   gradwire codec encode --codec NAME [--param k=v ...] --in GRAD.npy --out PAYLOAD [--state FILE]
//   gradwire codec decode --codec NAME [--param k=v ...] --in PAYLOAD --out GRAD.npy
//
// encode reads a float32 .npy array of any shape (flattened in C order), writes the payload
// bytes; with --state, loads the codec's state from FILE when it exists and writes the updated
// state back (error-feedback residuals, DGC's momentum, step counters), so consecutive calls
// behave like consecutive training steps. decode writes a 1-D float32 .npy.
// `--param k=v` values are JSON when they parse as JSON, else strings; `error_feedback=true`
// and `zstd=true` work as in scenario files. Bad input (files, .npy headers, parameters,
// corrupt payloads or state) exits with 2 and a message saying what is wrong.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace gradwire {

struct CodecCommandOptions {
  std::string action;               ///< "encode" or "decode"
  std::string codec;                ///< registry name
  std::vector<std::string> params;  ///< "key=value"
  std::string in;
  std::string out;
  std::string state;                ///< optional state file (encode)
  std::uint64_t seed = 1;
  int rank = 0;
  int workers = 1;
  std::uint64_t max_elements = std::uint64_t{1} << 28;  ///< decode allocation bound
  /// Tensor shape for layout-aware codecs (powersgd views [n, ...] as n x m); payloads carry
  /// only the element count, so encode and decode take the same --shape. Empty: no layout.
  std::vector<std::int64_t> shape;
};

/// Registers the `codec` subcommand on `app`, storing what it parses in `options` (which must
/// outlive parsing). Returns the subcommand, to test with `if (*sub)` after parsing.
CLI::App* add_codec_command(CLI::App& app, CodecCommandOptions& options);

/// Runs a parsed `codec` command. Returns the process exit code (0 ok, 2 bad input, 1 other).
int run_codec_command(const CodecCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace gradwire
