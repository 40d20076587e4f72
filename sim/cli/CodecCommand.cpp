#include "sim/cli/CodecCommand.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <ostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "codecs/CodecRegistry.h"
#include "codecs/wire/WireFormat.h"
#include "common/ConfigError.h"
#include "common/InputFile.h"
#include "common/JsonFields.h"
#include "sim/cli/Cli.h"
#include "sim/cli/NpyFile.h"

namespace gradwire {

namespace {

/// Bad input of the command (file missing, unreadable...): exit code 2.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The largest codec file (payload, state, .npy input) a run accepts: 16 bytes for each of
/// --max-elements elements (the widest encoding: a 64-bit index and a value, with room for a
/// codec's several buffers of state) and 1 MiB of headers.
std::uint64_t max_codec_file_bytes(const CodecCommandOptions& o) {
  constexpr std::uint64_t kHeaders = std::uint64_t{1} << 20;
  constexpr std::uint64_t kMost = std::numeric_limits<std::uint64_t>::max();
  return o.max_elements > (kMost - kHeaders) / 16 ? kMost : 16 * o.max_elements + kHeaders;
}

Bytes read_file(const std::string& path, const char* what, std::uint64_t max_bytes) {
  try {
    const std::string bytes = read_input_file(path, max_bytes, what);
    return Bytes(bytes.begin(), bytes.end());
  } catch (const InputFileError& e) {
    throw InputError(e.what());
  }
}

void write_file(const std::string& path, const Bytes& bytes) {
  // Temp file + rename, so a failed write never leaves a half file behind.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error("cannot write '" + path + "'");
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("write to '" + path + "' failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("cannot rename '" + tmp + "' to '" + path + "'");
  }
}

nlohmann::json codec_object(const CodecCommandOptions& o) {
  nlohmann::json obj = nlohmann::json::object();
  obj["kind"] = o.codec;
  for (const std::string& p : o.params) {
    const auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw ConfigError("--param", "expected key=value, got '" + p + "'");
    }
    const std::string key = p.substr(0, eq);
    const std::string text = p.substr(eq + 1);
    try {
      obj[key] = parse_json(text);
    } catch (const JsonTooDeep&) {
      throw ConfigError("--param", key + ": expected a value nested at most " +
                                       std::to_string(kMaxJsonDepth) + " levels deep");
    } catch (const JsonSyntaxError&) {
      obj[key] = text;  // bare words are strings: --param values=fp16
    }
  }
  return obj;
}

}  // namespace

CLI::App* add_codec_command(CLI::App& app, CodecCommandOptions& o) {
  CLI::App* sub = app.add_subcommand(
      "codec", "Encode a .npy float32 gradient to a payload file, or decode one back");
  sub->add_option("action", o.action, "encode or decode")
      ->required()
      ->check(CLI::IsMember({"encode", "decode"}));
  sub->add_option("--codec", o.codec, "codec name (see `gradwire codecs`)")->required();
  sub->add_option("--param", o.params, "codec parameter key=value (repeatable)");
  sub->add_option("--in", o.in, "input: .npy (encode) or payload (decode)")->required();
  sub->add_option("--out", o.out, "output: payload (encode) or .npy (decode)")->required();
  sub->add_option("--state", o.state, "codec state file, read if present and rewritten (encode)");
  sub->add_option("--seed", o.seed, "seed for shared-randomness codecs (randomk), default 1");
  sub->add_option("--rank", o.rank, "worker rank the codec acts for, default 0");
  sub->add_option("--workers", o.workers, "number of workers (DGC's clipping), default 1")
      ->check(CLI::PositiveNumber);
  sub->add_option("--shape", o.shape,
                  "tensor shape for layout-aware codecs such as powersgd, e.g. --shape 64 128 "
                  "(give the same shape to encode and decode)");
  sub->add_option("--max-elements", o.max_elements,
                  "largest element count decode accepts, default 2^28");
  return sub;
}

namespace {
/// One layer of `shape` (no layout for 1-D shapes, as before shapes were read: layout-aware
/// codecs would otherwise treat a plain vector as a bias); its size must be the array's.
std::vector<LayerSlice> layout_of(const std::vector<std::int64_t>& shape, std::int64_t numel) {
  if (shape.size() < 2) return {};
  std::int64_t count = 1;
  for (auto d : shape) {
    if (d < 1) throw InputError("--shape: dimensions must be >= 1");
    count *= d;
  }
  if (count != numel) {
    throw InputError("--shape describes " + std::to_string(count) + " elements, the data has " +
                     std::to_string(numel));
  }
  return {LayerSlice{"array", 0, shape}};
}
}  // namespace

int run_codec_command(const CodecCommandOptions& o, std::ostream& out, std::ostream& err) {
  try {
    const CodecRegistry& registry = CodecRegistry::builtin();
    const nlohmann::json resolved = registry.resolve(codec_object(o), "codec");
    CodecContext ctx;
    ctx.rank = o.rank;
    ctx.workers = o.workers;
    ctx.seed = o.seed;
    if (o.action == "encode") {
      std::vector<std::int64_t> shape;
      std::vector<float> values = read_npy_f32(o.in, &shape, max_codec_file_bytes(o));
      ctx.numel = static_cast<std::int64_t>(values.size());
      ctx.layers = layout_of(o.shape, ctx.numel);
      std::unique_ptr<Codec> codec = registry.create(resolved, ctx);
      if (!o.state.empty()) {
        // No state file yet is the first encode; whatever is there must be a regular file
        // (a dangling link is reported as unreadable, not taken for a first encode).
        std::error_code ec;
        if (std::filesystem::exists(o.state, ec) || std::filesystem::is_symlink(o.state, ec)) {
          const Bytes st = read_file(o.state, "state file", max_codec_file_bytes(o));
          codec->load_state(ByteSpan(st));
        }
      }
      const torch::Tensor grad =
          torch::from_blob(values.data(), {static_cast<std::int64_t>(values.size())}, torch::kFloat);
      const Bytes payload = codec->encode(grad);
      write_file(o.out, payload);
      if (!o.state.empty()) write_file(o.state, codec->save_state());
      out << "encoded " << values.size() << " elements into " << payload.size()
          << " bytes (density " << codec->last_density() << ")\n";
      return kExitOk;
    }
    const Bytes payload = read_file(o.in, "payload", max_codec_file_bytes(o));
    const PayloadHeader h = peek_header(ByteSpan(payload));
    if (h.numel > o.max_elements) {
      throw DecodeError("payload states " + std::to_string(h.numel) +
                        " elements, more than --max-elements " + std::to_string(o.max_elements));
    }
    ctx.numel = static_cast<std::int64_t>(h.numel);
    ctx.layers = layout_of(o.shape, ctx.numel);
    std::unique_ptr<Codec> codec = registry.create(resolved, ctx);
    const torch::Tensor t = codec->decode(ByteSpan(payload)).contiguous();
    const float* p = t.data_ptr<float>();
    write_npy_f32(o.out, std::vector<float>(p, p + t.numel()),
                  o.shape.empty() ? std::vector<std::int64_t>{t.numel()} : o.shape);
    out << "decoded " << t.numel() << " elements\n";
    return kExitOk;
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
  } catch (const NpyError& e) {
    err << "error: " << e.what() << "\n";
  } catch (const DecodeError& e) {
    err << "error: corrupt input: " << e.what() << "\n";
  } catch (const InputError& e) {
    err << "error: " << e.what() << "\n";
  } catch (const std::invalid_argument& e) {
    err << "error: " << e.what() << "\n";
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitBadInput;
}

}  // namespace gradwire
