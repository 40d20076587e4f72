#include "codecs/CodecState.h"

#include <cstring>
#include <limits>

#include <torch/types.h>

#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {
constexpr std::uint8_t kStateVersion = 1;
constexpr std::uint8_t kKindTensor = 1;
constexpr std::uint8_t kKindU64 = 2;
constexpr std::uint8_t kKindBytes = 3;
constexpr const char* kWhat = "codec state";

void put_string(ByteWriter& w, const std::string& s) {
  w.u16(static_cast<std::uint16_t>(s.size()));
  w.raw(s.data(), s.size());
}

std::string get_string(ByteReader& r, const char* field) {
  const std::uint16_t len = r.u16(field);
  const std::uint8_t* p = r.take(len, 1, field);
  return std::string(reinterpret_cast<const char*>(p), len);
}
}  // namespace

void CodecState::put_tensor(const std::string& key, const torch::Tensor& t) {
  if (!t.defined()) return;
  const torch::Tensor c = t.to(torch::kFloat).contiguous().reshape({-1});
  const float* p = c.data_ptr<float>();
  tensors_[key] = std::vector<float>(p, p + c.numel());
}

void CodecState::put_u64(const std::string& key, std::uint64_t v) { ints_[key] = v; }

torch::Tensor CodecState::tensor(const std::string& key) const {
  const auto it = tensors_.find(key);
  if (it == tensors_.end()) return {};
  torch::Tensor t = torch::empty({static_cast<std::int64_t>(it->second.size())}, torch::kFloat);
  if (!it->second.empty()) {
    std::memcpy(t.data_ptr<float>(), it->second.data(), it->second.size() * sizeof(float));
  }
  return t;
}

std::uint64_t CodecState::u64(const std::string& key, std::uint64_t fallback) const {
  const auto it = ints_.find(key);
  return it == ints_.end() ? fallback : it->second;
}

std::int64_t CodecState::counter(const std::string& key) const {
  const std::uint64_t v = u64(key);
  if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    throw DecodeError(codec_ + " state: " + key + " " + std::to_string(v) + " is out of range");
  }
  return static_cast<std::int64_t>(v);
}

void CodecState::put_bytes(const std::string& key, const Bytes& b) { blobs_[key] = b; }

Bytes CodecState::bytes(const std::string& key) const {
  const auto it = blobs_.find(key);
  return it == blobs_.end() ? Bytes{} : it->second;
}

bool CodecState::has(const std::string& key) const {
  return ints_.count(key) != 0 || tensors_.count(key) != 0 || blobs_.count(key) != 0;
}

Bytes CodecState::serialize() const {
  ByteWriter w;
  w.raw("GWST", 4);
  w.u8(kStateVersion);
  put_string(w, codec_);
  w.u32(static_cast<std::uint32_t>(ints_.size() + tensors_.size() + blobs_.size()));
  for (const auto& [key, v] : ints_) {
    w.u8(kKindU64);
    put_string(w, key);
    w.u64(v);
  }
  for (const auto& [key, v] : tensors_) {
    w.u8(kKindTensor);
    put_string(w, key);
    w.u64(v.size());
    w.f32_array(v.data(), v.size());
  }
  for (const auto& [key, b] : blobs_) {
    w.u8(kKindBytes);
    put_string(w, key);
    w.u64(b.size());
    w.raw(b.data(), b.size());
  }
  return w.take();
}

CodecState CodecState::parse(ByteSpan bytes, const std::string& codec) {
  ByteReader r(bytes, kWhat);
  const std::uint8_t* magic = r.take(4, 1, "magic");
  if (std::memcmp(magic, "GWST", 4) != 0) r.fail("not a gradwire codec state file (bad magic)");
  const std::uint8_t version = r.u8("version");
  if (version != kStateVersion) r.fail("unsupported state version " + std::to_string(version));
  const std::string name = get_string(r, "codec name");
  if (name != codec) {
    r.fail("state belongs to codec '" + name + "', not '" + codec + "'");
  }
  CodecState st(codec);
  const std::uint32_t count = r.u32("entry count");
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint8_t kind = r.u8("entry kind");
    const std::string key = get_string(r, "entry key");
    if (st.has(key)) r.fail("duplicate state entry '" + key + "'");
    if (kind == kKindU64) {
      st.ints_[key] = r.u64("integer entry");
    } else if (kind == kKindTensor) {
      const std::uint64_t n = r.u64("tensor length");
      if (n > r.remaining() / 4) {
        r.fail("tensor '" + key + "' states " + std::to_string(n) + " floats, " +
               std::to_string(r.remaining()) + " bytes left");
      }
      const std::uint8_t* p = r.take(static_cast<std::size_t>(n), 4, "tensor values");
      std::vector<float> v(static_cast<std::size_t>(n));
      for (std::size_t j = 0; j < v.size(); ++j) v[j] = load_f32_le(p + 4 * j);
      st.tensors_[key] = std::move(v);
    } else if (kind == kKindBytes) {
      const std::uint64_t n = r.u64("bytes length");
      if (n > r.remaining()) {
        r.fail("entry '" + key + "' states " + std::to_string(n) + " bytes, " +
               std::to_string(r.remaining()) + " left");
      }
      const std::uint8_t* p = r.take(static_cast<std::size_t>(n), 1, "bytes entry");
      st.blobs_[key] = Bytes(p, p + n);
    } else {
      r.fail("unknown entry kind " + std::to_string(kind));
    }
  }
  r.expect_end();
  return st;
}

}  // namespace gradwire
