#include "sim/engine/StepTraceFile.h"

#include <array>
#include <cstring>
#include <sys/stat.h>

#include <zstd.h>

#include "common/AtomicOutput.h"
#include "common/ByteIo.h"
#include "common/DecodeError.h"
#include "common/InputFile.h"

namespace gradwire {

namespace {

constexpr char kMagic[8] = {'G', 'W', 'T', 'R', 'A', 'C', 'E', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint64_t kMaxTraceBytes = std::uint64_t{16} << 30;
// A section's content, once decompressed, is at most this much: a corrupt frame header cannot
// make the reader allocate more.
constexpr std::uint64_t kMaxSectionBytes = std::uint64_t{8} << 30;
constexpr int kZstdLevel = 3;

/// Steps and codec calls repeat from step to step (the same payload sizes and headers): zstd
/// makes them small.
Bytes compress(const Bytes& raw) {
  Bytes out(ZSTD_compressBound(raw.size()));
  const std::size_t n = ZSTD_compress(out.data(), out.size(), raw.data(), raw.size(), kZstdLevel);
  if (ZSTD_isError(n)) throw std::runtime_error(std::string("step trace: zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

std::uint32_t crc32(const std::uint8_t* data, std::size_t size) {
  static const std::array<std::uint32_t, 256> table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) c = table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

void f64(ByteWriter& w, double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  w.u64(bits);
}

double f64(ByteReader& r, const char* field) {
  const std::uint64_t bits = r.u64(field);
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

void work(ByteWriter& w, const CodecWork& c) {
  f64(w, c.memory_bytes);
  f64(w, c.flops);
  f64(w, c.select_elements);
  f64(w, c.select_compares);
}

CodecWork work(ByteReader& r) {
  CodecWork c;
  c.memory_bytes = f64(r, "work.memory_bytes");
  c.flops = f64(r, "work.flops");
  c.select_elements = f64(r, "work.select_elements");
  c.select_compares = f64(r, "work.select_compares");
  return c;
}

/// A count of items that each take at least `item_bytes`: at most what the rest can hold, so a
/// corrupt count cannot ask for a huge allocation.
std::uint64_t count(ByteReader& r, std::uint64_t value, std::size_t item_bytes, const char* field) {
  if (item_bytes > 0 && value > r.remaining() / item_bytes) {
    r.fail(std::string(field) + " " + std::to_string(value) + " at offset " +
           std::to_string(r.offset()) + " exceeds what the remaining " +
           std::to_string(r.remaining()) + " bytes can hold");
  }
  return value;
}

void section(ByteWriter& out, const char tag[5], const Bytes& body) {
  out.raw(tag, 4);
  out.u64(body.size());
  out.raw(body.data(), body.size());
  out.u32(crc32(body.data(), body.size()));
}

Bytes meta_section(const StepTrace& t) {
  const nlohmann::json meta = {
      {"format", "gradwire step trace"},
      {"scenario", t.scenario},
      {"parameters", t.parameters},
      {"workers", t.steps.size()},
      {"steps", t.steps.empty() ? 0 : t.steps.front().size()},
      {"buckets", t.codecs.size()}};
  const std::string text = meta.dump();
  return Bytes(text.begin(), text.end());
}

Bytes step_section(const StepTrace& t) {
  ByteWriter w;
  w.u32(static_cast<std::uint32_t>(t.steps.size()));
  for (const auto& rank : t.steps) {
    w.u64(rank.size());
    for (const StepRecord& s : rank) {
      w.u8(s.participated ? 1 : 0);
      f64(w, s.loss);
      f64(w, s.compute_s);
      f64(w, s.optimizer_s);
      w.u32(static_cast<std::uint32_t>(s.release_s.size()));
      for (double x : s.release_s) f64(w, x);
    }
  }
  return w.take();
}

Bytes eval_section(const StepTrace& t) {
  ByteWriter w;
  w.u64(t.evaluations.size());
  for (const RecordedEvaluation& e : t.evaluations) {
    w.u64(static_cast<std::uint64_t>(e.step));
    f64(w, e.result.accuracy);
    f64(w, e.result.top5_accuracy);
    f64(w, e.result.loss);
    f64(w, e.result.perplexity);
    w.u64(static_cast<std::uint64_t>(e.result.samples));
    f64(w, e.consensus_distance);
  }
  return w.take();
}

Bytes codec_section(const StepTrace& t) {
  ByteWriter w;
  w.u32(static_cast<std::uint32_t>(t.codecs.size()));
  w.u32(static_cast<std::uint32_t>(t.codecs.empty() ? 0 : t.codecs.front().size()));
  for (const auto& bucket : t.codecs) {
    for (const CodecCallLog& log : bucket) {
      w.u64(log.calls.size());
      for (const CodecCall& c : log.calls) {
        w.u8(static_cast<std::uint8_t>(c.kind));
        w.u8(static_cast<std::uint8_t>((c.has_work ? 1 : 0) | (c.last ? 2 : 0) |
                                       (c.tensor_sends.empty() ? 0 : 4)));
        if (c.has_work) work(w, c.work);
        switch (c.kind) {
          case CodecCall::Kind::kEncode:
          case CodecCall::Kind::kEncodeChunks:
            f64(w, c.density);
            if (!c.tensor_sends.empty()) {
              w.u32(static_cast<std::uint32_t>(c.tensor_sends.size()));
              for (const TensorSend& t : c.tensor_sends) {
                w.u64(static_cast<std::uint64_t>(t.sent));
                f64(w, t.bytes);
              }
            }
            break;
          case CodecCall::Kind::kRound:
            f64(w, c.density);
            w.u8(c.round_op);
            w.u32(static_cast<std::uint32_t>(c.root));
            w.u64(static_cast<std::uint64_t>(c.values));
            w.u64(static_cast<std::uint64_t>(c.nonzero));
            break;
          case CodecCall::Kind::kFinalize:
          case CodecCall::Kind::kReduce:
            w.u64(static_cast<std::uint64_t>(c.values));
            w.u64(static_cast<std::uint64_t>(c.nonzero));
            break;
          case CodecCall::Kind::kObserve: w.u64(static_cast<std::uint64_t>(c.values)); break;
        }
        w.u32(static_cast<std::uint32_t>(c.payloads.size()));
        for (const PayloadShape& p : c.payloads) {
          w.u64(p.bytes);
          w.u8(static_cast<std::uint8_t>(p.head.size()));
          w.raw(p.head.data(), p.head.size());
        }
      }
      w.u64(log.stateless_work.size());
      for (const auto& [key, value] : log.stateless_work) {
        w.u8(std::get<0>(key));
        w.u64(static_cast<std::uint64_t>(std::get<1>(key)));
        w.u64(std::get<2>(key));
        work(w, value);
      }
      w.u8(log.ambiguous_work ? 1 : 0);
      w.u64(log.decoded_numel.size());
      for (const auto& [key, numel] : log.decoded_numel) {
        w.u64(key.first);
        w.u8(static_cast<std::uint8_t>(key.second.size()));
        w.raw(key.second.data(), key.second.size());
        w.u64(static_cast<std::uint64_t>(numel));
      }
    }
  }
  return w.take();
}

std::int64_t as_count(std::uint64_t v) { return static_cast<std::int64_t>(v); }

void read_steps(ByteReader& r, StepTrace& t, std::uint64_t workers, std::uint64_t steps) {
  const std::uint32_t ranks = r.u32("STEP.workers");
  if (ranks != workers) r.fail("STEP holds " + std::to_string(ranks) + " workers, META says " + std::to_string(workers));
  t.steps.resize(ranks);
  for (std::uint32_t w = 0; w < ranks; ++w) {
    auto& rank = t.steps[w];
    const std::uint64_t n = count(r, r.u64("STEP.steps"), 29, "STEP.steps");
    if (n != steps) r.fail("a worker has " + std::to_string(n) + " steps, META says " + std::to_string(steps));
    rank.resize(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      StepRecord& s = rank[i];
      s.rank = static_cast<int>(w);
      s.step = as_count(i);
      const std::uint8_t flags = r.u8("step.participated");
      if (flags > 1) r.fail("step flags " + std::to_string(flags) + " at offset " + std::to_string(r.offset() - 1));
      s.participated = flags == 1;
      s.loss = f64(r, "step.loss");
      s.compute_s = f64(r, "step.compute_s");
      s.optimizer_s = f64(r, "step.optimizer_s");
      const std::uint64_t releases = count(r, r.u32("step.releases"), 8, "step.releases");
      for (std::uint64_t k = 0; k < releases; ++k) s.release_s.push_back(f64(r, "step.release_s"));
    }
  }
}

void read_evaluations(ByteReader& r, StepTrace& t) {
  const std::uint64_t n = count(r, r.u64("EVAL.count"), 56, "EVAL.count");
  for (std::uint64_t i = 0; i < n; ++i) {
    RecordedEvaluation e;
    e.step = as_count(r.u64("eval.step"));
    e.result.accuracy = f64(r, "eval.accuracy");
    e.result.top5_accuracy = f64(r, "eval.top5_accuracy");
    e.result.loss = f64(r, "eval.loss");
    e.result.perplexity = f64(r, "eval.perplexity");
    e.result.samples = as_count(r.u64("eval.samples"));
    e.consensus_distance = f64(r, "eval.consensus_distance");
    t.evaluations.push_back(e);
  }
}

void read_codecs(ByteReader& r, StepTrace& t, std::uint64_t buckets, std::uint64_t workers) {
  const std::uint32_t b = r.u32("CODE.buckets");
  const std::uint32_t instances = r.u32("CODE.instances");
  if (b != buckets || instances != workers + 1) {
    r.fail("CODE holds " + std::to_string(b) + " x " + std::to_string(instances) +
           " codec logs, META says " + std::to_string(buckets) + " x " + std::to_string(workers + 1));
  }
  t.codecs.assign(b, std::vector<CodecCallLog>(instances));
  for (auto& bucket : t.codecs) {
    for (CodecCallLog& log : bucket) {
      const std::uint64_t calls = count(r, r.u64("codec.calls"), 6, "codec.calls");
      log.calls.resize(calls);
      for (CodecCall& c : log.calls) {
        const std::size_t at = r.offset();
        const std::uint8_t kind = r.u8("call.kind");
        if (kind < 1 || kind > 6) r.fail("unknown codec call kind " + std::to_string(kind) + " at offset " + std::to_string(at));
        c.kind = static_cast<CodecCall::Kind>(kind);
        const std::uint8_t flags = r.u8("call.flags");
        if (flags > 7) r.fail("call flags " + std::to_string(flags) + " at offset " + std::to_string(at + 1));
        c.has_work = (flags & 1) != 0;
        c.last = (flags & 2) != 0;
        if (c.has_work) c.work = work(r);
        switch (c.kind) {
          case CodecCall::Kind::kEncode:
          case CodecCall::Kind::kEncodeChunks:
            c.density = f64(r, "call.density");
            if ((flags & 4) != 0) {
              const std::uint64_t tensors = count(r, r.u32("call.tensors"), 16, "call.tensors");
              c.tensor_sends.resize(tensors);
              for (TensorSend& t : c.tensor_sends) {
                t.sent = as_count(r.u64("tensor.sent"));
                t.bytes = f64(r, "tensor.bytes");
                if (t.sent < 0 || !(t.bytes >= 0)) r.fail("a tensor's sent count or bytes is negative at offset " + std::to_string(r.offset() - 16));
              }
            }
            break;
          case CodecCall::Kind::kRound:
            c.density = f64(r, "call.density");
            c.round_op = r.u8("call.round_op");
            if (c.round_op > 2) r.fail("unknown round operation " + std::to_string(c.round_op) + " at offset " + std::to_string(r.offset() - 1));
            c.root = static_cast<std::int32_t>(r.u32("call.root"));
            c.values = as_count(r.u64("call.values"));
            c.nonzero = as_count(r.u64("call.nonzero"));
            break;
          case CodecCall::Kind::kFinalize:
          case CodecCall::Kind::kReduce:
            c.values = as_count(r.u64("call.values"));
            c.nonzero = as_count(r.u64("call.nonzero"));
            break;
          case CodecCall::Kind::kObserve: c.values = as_count(r.u64("call.values")); break;
        }
        // A round's count describes the sum it received, which may be longer than its values.
        if (c.values < 0 || c.nonzero < 0 ||
            (c.nonzero > c.values && c.kind != CodecCall::Kind::kRound)) {
          r.fail("element counts of the call at offset " + std::to_string(at) + " are inconsistent");
        }
        const std::uint64_t payloads = count(r, r.u32("call.payloads"), 9, "call.payloads");
        for (std::uint64_t p = 0; p < payloads; ++p) {
          PayloadShape shape;
          shape.bytes = r.u64("payload.bytes");
          const std::uint8_t head = r.u8("payload.head");
          if (head > 12 || head > shape.bytes) r.fail("payload header of " + std::to_string(head) + " bytes at offset " + std::to_string(r.offset() - 1));
          const std::uint8_t* h = r.take(head, 1, "payload.head");
          shape.head.assign(h, h + head);
          c.payloads.push_back(std::move(shape));
        }
      }
      const std::uint64_t keys = count(r, r.u64("codec.work_keys"), 49, "codec.work_keys");
      for (std::uint64_t k = 0; k < keys; ++k) {
        const std::uint8_t op = r.u8("work.op");
        const std::int64_t numel = as_count(r.u64("work.numel"));
        const std::uint64_t bytes = r.u64("work.bytes");
        log.stateless_work[CodecCallLog::WorkKey{op, numel, bytes}] = work(r);
      }
      const std::uint8_t ambiguous = r.u8("codec.ambiguous_work");
      if (ambiguous > 1) r.fail("flag " + std::to_string(ambiguous) + " at offset " + std::to_string(r.offset() - 1));
      log.ambiguous_work = ambiguous == 1;
      const std::uint64_t lengths = count(r, r.u64("codec.decoded_lengths"), 17, "codec.decoded_lengths");
      for (std::uint64_t k = 0; k < lengths; ++k) {
        const std::uint64_t bytes = r.u64("decoded.bytes");
        const std::uint8_t head = r.u8("decoded.head");
        if (head > 12 || head > bytes) r.fail("payload header of " + std::to_string(head) + " bytes at offset " + std::to_string(r.offset() - 1));
        const std::uint8_t* h = r.take(head, 1, "decoded.head");
        const std::int64_t numel = as_count(r.u64("decoded.numel"));
        if (numel < -1) r.fail("a decoded length below -1 at offset " + std::to_string(r.offset() - 8));
        log.decoded_numel[{bytes, std::vector<std::uint8_t>(h, h + head)}] = numel;
      }
    }
  }
}

}  // namespace

Bytes encode_step_trace(const StepTrace& trace) {
  ByteWriter out;
  out.raw(kMagic, sizeof kMagic);
  out.u32(kVersion);
  section(out, "META", meta_section(trace));
  section(out, "STEP", compress(step_section(trace)));
  section(out, "EVAL", compress(eval_section(trace)));
  section(out, "CODE", compress(codec_section(trace)));
  section(out, "END.", {});
  return out.take();
}

StepTrace decode_step_trace(ByteSpan bytes, const std::string& name) {
  StepTrace t;
  try {
    ByteReader file(bytes, "step trace " + name);
    const std::uint8_t* magic = file.take(sizeof kMagic, 1, "magic");
    if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) file.fail("not a gradwire step trace (bad magic at offset 0)");
    const std::uint32_t version = file.u32("version");
    if (version != kVersion) {
      file.fail("format version " + std::to_string(version) + " at offset 8; this gradwire reads version " + std::to_string(kVersion));
    }
    const char* order[] = {"META", "STEP", "EVAL", "CODE", "END."};
    std::uint64_t workers = 0, steps = 0, buckets = 0;
    for (const char* expected : order) {
      const std::size_t at = file.offset();
      const std::uint8_t* tag = file.take(4, 1, "section tag");
      if (std::memcmp(tag, expected, 4) != 0) {
        file.fail("expected section " + std::string(expected) + " at offset " + std::to_string(at));
      }
      const std::uint64_t length = file.u64("section length");
      if (length > file.remaining()) {
        file.fail("section " + std::string(expected) + " at offset " + std::to_string(at) + " is " +
                  std::to_string(length) + " bytes, only " + std::to_string(file.remaining()) + " remain");
      }
      const std::size_t body_at = file.offset();
      const std::uint8_t* body = file.take(static_cast<std::size_t>(length), 1, "section body");
      if (file.u32("section checksum") != crc32(body, static_cast<std::size_t>(length))) {
        file.fail("section " + std::string(expected) + " at offset " + std::to_string(at) + " fails its checksum");
      }
      const std::string tag_name(expected);
      if (tag_name != "META" && tag_name != "END.") {
        // Offsets in a compressed section's messages count from the start of its content.
        const std::string where = "step trace " + name + ", section " + tag_name + " (at offset " +
                                  std::to_string(at) + ") after decompression";
        const unsigned long long size = ZSTD_getFrameContentSize(body, static_cast<std::size_t>(length));
        if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN || size > kMaxSectionBytes) {
          file.fail("section " + tag_name + " at offset " + std::to_string(at) +
                    " is not a zstd frame of a stated size of at most " + std::to_string(kMaxSectionBytes) + " bytes");
        }
        Bytes content(static_cast<std::size_t>(size));
        const std::size_t got = ZSTD_decompress(content.data(), content.size(), body, static_cast<std::size_t>(length));
        if (ZSTD_isError(got) || got != content.size()) {
          file.fail("section " + tag_name + " at offset " + std::to_string(at) + " does not decompress: " +
                    (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short"));
        }
        ByteReader r(content, where);
        if (tag_name == "STEP") read_steps(r, t, workers, steps);
        if (tag_name == "EVAL") read_evaluations(r, t);
        if (tag_name == "CODE") read_codecs(r, t, buckets, workers);
        if (r.remaining() != 0) {
          r.fail(std::to_string(r.remaining()) + " bytes it does not use at offset " + std::to_string(r.offset()));
        }
        continue;
      }
      // Offsets in the sections' messages count from the start of the file.
      ByteReader r(ByteSpan(bytes.data, body_at + static_cast<std::size_t>(length)), "step trace " + name);
      r.take(body_at, 1, "preceding sections");
      if (tag_name == "META") {
        nlohmann::json meta = nlohmann::json::parse(body, body + length, nullptr, false);
        if (meta.is_discarded() || !meta.is_object() || meta.value("format", "") != "gradwire step trace" ||
            !meta.contains("scenario") || !meta["scenario"].is_object()) {
          r.fail("section META at offset " + std::to_string(at) + " is not the trace's description");
        }
        const auto number = [&](const char* key) -> std::uint64_t {
          if (!meta.contains(key) || !meta[key].is_number_unsigned()) {
            r.fail(std::string("section META at offset ") + std::to_string(at) + " lacks \"" + key + "\"");
          }
          return meta[key].get<std::uint64_t>();
        };
        t.scenario = meta["scenario"];
        t.parameters = as_count(number("parameters"));
        workers = number("workers");
        steps = number("steps");
        buckets = number("buckets");
        if (workers == 0 || workers > 100000 || buckets == 0 || buckets > 100000) {
          r.fail("section META at offset " + std::to_string(at) + " states " + std::to_string(workers) +
                 " workers and " + std::to_string(buckets) + " buckets");
        }
        continue;
      }
      if (r.remaining() != 0) {
        r.fail("section " + tag_name + " at offset " + std::to_string(at) + " has " +
               std::to_string(r.remaining()) + " bytes it does not use");
      }
    }
    if (file.remaining() != 0) {
      file.fail(std::to_string(file.remaining()) + " bytes after the END. section at offset " + std::to_string(file.offset()));
    }
  } catch (const DecodeError& e) {
    throw StepTraceError(e.what());
  }
  return t;
}

void write_step_trace(const StepTrace& trace, const std::string& path) {
  const Bytes bytes = encode_step_trace(trace);
  write_file_atomically(path, std::string(bytes.begin(), bytes.end()));
}

std::string step_trace_path(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path + "/" + kStepTraceFile;
  return path;
}

StepTrace read_step_trace(const std::string& path) {
  const std::string file = step_trace_path(path);
  std::string content;
  try {
    content = read_input_file(file, kMaxTraceBytes, "step trace");
  } catch (const InputFileError& e) {
    throw StepTraceError(e.what());
  }
  return decode_step_trace(
      ByteSpan(reinterpret_cast<const std::uint8_t*>(content.data()), content.size()), file);
}

}  // namespace gradwire
