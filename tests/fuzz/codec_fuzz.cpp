// libFuzzer target: every registered codec's decode, load_state and (summable codecs)
// accumulate on arbitrary bytes, plain and inside the error_feedback and zstd wrappers.
//
// Input: byte 0 picks the codec (an index into kCodecs), byte 1 the operation (% 3) and the
// wrapper (/ 3 % 3); the rest is the payload or state. Codecs are built from the registry
// with their default parameters for a small gradient with a layout (a 4x8 matrix and a bias),
// as a worker would build them.
//
// What must hold: bad bytes raise DecodeError and nothing else (Codec.h). A payload that
// decodes gives a 1-D float32 tensor no longer than the gradient its header states. A state that
// loads leaves a codec that encodes, and whose payload decodes to the gradient's length.
// Run with --write-seeds=DIR to write the seed corpus (payloads and states of each codec).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "codecs/Codec.h"
#include "codecs/CodecRegistry.h"
#include "codecs/wire/WireFormat.h"
#include "common/ConfigError.h"

namespace {

using namespace gradwire;

/// Every codec the registry holds. Committed seeds name codecs by their index here, so a new
/// codec is appended at the end; startup fails while this list and the registry differ.
const std::vector<std::string> kCodecs = {
    "adacomp", "bf16",     "compose",   "dgc",        "efsignsgd", "fp16",
    "gradient_dropping",   "gradiveq",  "lgc_ps",     "lgc_ring",  "natural",
    "natural_dithering",   "none",      "onebit",     "powersgd",  "qsgd",
    "randomk", "sdagc",    "signsgd",   "signum",     "terngrad",  "topk",
    "topk_natural"};

enum Operation { kDecode = 0, kLoadState = 1, kAccumulate = 2, kOperations = 3 };
enum Wrapper { kPlain = 0, kErrorFeedback = 1, kZstd = 2, kWrappers = 3 };

constexpr std::int64_t kNumel = 40;

CodecContext context() {
  CodecContext ctx;
  ctx.rank = 0;
  ctx.workers = 2;
  ctx.seed = 1;
  ctx.numel = kNumel;
  ctx.layers = {LayerSlice{"fc.weight", 0, {4, 8}}, LayerSlice{"fc.bias", 32, {8}}};
  ctx.steps_per_epoch = 4;
  return ctx;
}

/// The codec object of kCodecs[index] with `wrapper`; null when the registry refuses the
/// combination (multi-round codecs take neither wrapper).
std::unique_ptr<Codec> make_codec(std::size_t index, int wrapper) {
  nlohmann::json object = {{"kind", kCodecs[index]}};
  if (wrapper == kErrorFeedback) object["error_feedback"] = true;
  if (wrapper == kZstd) object["zstd"] = true;
  try {
    const CodecRegistry& registry = CodecRegistry::builtin();
    return registry.create(registry.resolve(object, "codec"), context());
  } catch (const ConfigError&) {
    return nullptr;
  }
}

torch::Tensor gradient(int step);

/// One instance per codec and wrapper for decode and accumulate, which do not change a codec,
/// with the payload of one encode (what accumulate adds to).
struct SharedCodec {
  std::unique_ptr<Codec> codec;
  Bytes payload;
};

const SharedCodec& shared_codec(std::size_t index, int wrapper) {
  static std::vector<SharedCodec> codecs(kCodecs.size() * kWrappers);
  static std::vector<bool> made(kCodecs.size() * kWrappers, false);
  const std::size_t slot = index * kWrappers + static_cast<std::size_t>(wrapper);
  if (!made[slot]) {
    codecs[slot].codec = make_codec(index, wrapper);
    if (codecs[slot].codec) codecs[slot].payload = codecs[slot].codec->encode(gradient(1));
    made[slot] = true;
  }
  return codecs[slot];
}

torch::Tensor gradient(int step) {
  // Deterministic values of both signs and several magnitudes, different each step.
  return torch::sin(torch::arange(kNumel, torch::kFloat) * (0.7 + 0.1 * step)) *
         torch::pow(torch::full({kNumel}, 1.3f), torch::arange(kNumel, torch::kFloat) % 7);
}

/// A decoded payload is a 1-D float32 tensor of at most the gradient length its header states:
/// all of it, or (GradiVeQ's ring chunks, cut at whole slices) the range the payload covers.
void check_decoded(const torch::Tensor& t, std::int64_t numel) {
  if (t.dim() != 1 || t.scalar_type() != torch::kFloat || t.numel() > numel) std::abort();
}

void decode(const Codec& codec, ByteSpan payload) {
  torch::Tensor t;
  try {
    t = codec.decode(payload);
  } catch (const DecodeError&) {
    return;
  }
  check_decoded(t, static_cast<std::int64_t>(peek_header(payload).numel));
}

void load_state(std::size_t index, int wrapper, ByteSpan state) {
  std::unique_ptr<Codec> codec = make_codec(index, wrapper);
  if (!codec) return;
  try {
    codec->load_state(state);
  } catch (const DecodeError&) {
    return;
  }
  // A state that loads must leave a codec that encodes (`gradwire codec encode --state` goes
  // on). Most codecs check a state's buffers against the gradient at the next encode, not at
  // load (ensure_state, codecs/GradientChecks.h): a buffer of another length is then that
  // encode's std::invalid_argument, which the command reports as bad input. A state may hold
  // values large enough that the payload overflows to infinity, which decode refuses as it
  // would from a diverged gradient: DecodeError, never anything else.
  Bytes payload;
  try {
    payload = codec->encode(gradient(0));
  } catch (const std::invalid_argument&) {
    return;
  }
  try {
    check_decoded(codec->decode(ByteSpan(payload)), kNumel);
  } catch (const DecodeError&) {
  }
}

void accumulate(const SharedCodec& shared, ByteSpan other) {
  const Codec& codec = *shared.codec;
  if (codec.traits().aggregation != Aggregation::kSummable) return;
  Bytes acc = shared.payload;
  try {
    codec.accumulate(acc, other);
  } catch (const DecodeError&) {
    return;
  }
  check_decoded(codec.decode(ByteSpan(acc)), kNumel);
}

void check_registry() {
  std::vector<std::string> registered;
  for (const CodecInfo& info : CodecRegistry::builtin().list()) registered.push_back(info.name);
  std::vector<std::string> listed = kCodecs;
  std::sort(registered.begin(), registered.end());
  std::sort(listed.begin(), listed.end());
  if (registered == listed) return;
  for (const auto& name : registered) {
    if (!std::binary_search(listed.begin(), listed.end(), name)) {
      std::fprintf(stderr, "codec_fuzz: codec '%s' is registered but not fuzzed; append it to kCodecs\n",
                   name.c_str());
    }
  }
  for (const auto& name : listed) {
    if (!std::binary_search(registered.begin(), registered.end(), name)) {
      std::fprintf(stderr, "codec_fuzz: kCodecs names '%s', which is not registered\n", name.c_str());
    }
  }
  std::exit(1);
}

void write_seed(const std::string& dir, const std::string& name, std::size_t index, int op,
                int wrapper, const Bytes& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.put(static_cast<char>(index));
  out.put(static_cast<char>(op + kOperations * wrapper));
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "codec_fuzz: cannot write %s/%s\n", dir.c_str(), name.c_str());
    std::exit(1);
  }
}

/// A payload and a state of every codec and wrapper, after three encodes.
void write_seeds(const std::string& dir) {
  const char* wrapper_names[kWrappers] = {"", "-ef", "-zstd"};
  for (std::size_t i = 0; i < kCodecs.size(); ++i) {
    for (int w = 0; w < kWrappers; ++w) {
      std::unique_ptr<Codec> codec = make_codec(i, w);
      if (!codec) continue;
      Bytes payload;
      for (int step = 0; step < 3; ++step) payload = codec->encode(gradient(step));
      const std::string stem = kCodecs[i] + wrapper_names[w];
      write_seed(dir, stem + "-payload", i, kDecode, w, payload);
      const Bytes state = codec->save_state();
      if (!state.empty()) write_seed(dir, stem + "-state", i, kLoadState, w, state);
      if (codec->traits().aggregation == Aggregation::kSummable) {
        write_seed(dir, stem + "-sum", i, kAccumulate, w, payload);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  check_registry();
  // libFuzzer ignores arguments that start with "--".
  const std::string flag = "--write-seeds=";
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = (*argv)[i];
    if (arg.rfind(flag, 0) == 0) {
      write_seeds(arg.substr(flag.size()));
      std::exit(0);
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const std::size_t index = data[0] % kCodecs.size();
  const int op = data[1] % kOperations;
  const int wrapper = data[1] / kOperations % kWrappers;
  const ByteSpan bytes(data + 2, size - 2);
  if (op == kLoadState) {
    load_state(index, wrapper, bytes);
    return 0;
  }
  const SharedCodec& shared = shared_codec(index, wrapper);
  if (!shared.codec) return 0;
  if (op == kDecode) decode(*shared.codec, bytes);
  if (op == kAccumulate) accumulate(shared, bytes);
  return 0;
}
