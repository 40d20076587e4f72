// A small, self-checking serialisation for codec state (what `gradwire codec --state FILE`
// carries between calls): a tagged list of named tensors and integers.
//
//   "GWST" | u8 version (1) | u16 name length | name | u32 entry count | entries
//   entry: u8 kind (1 tensor, 2 u64, 3 bytes) | u16 key length | key | payload
//   payload: tensor: u64 n, 4n f32 | u64: 8 bytes | bytes: u64 n, n bytes (a nested state)
//
// Readers check the codec name, every length and the exact end, and throw DecodeError.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codecs/Codec.h"

namespace gradwire {

class CodecState {
 public:
  explicit CodecState(std::string codec) : codec_(std::move(codec)) {}

  /// Undefined tensors are stored as absent.
  void put_tensor(const std::string& key, const at::Tensor& t);
  void put_u64(const std::string& key, std::uint64_t v);
  void put_bytes(const std::string& key, const Bytes& b);
  /// Empty when absent.
  Bytes bytes(const std::string& key) const;
  /// An undefined tensor when absent.
  at::Tensor tensor(const std::string& key) const;
  std::uint64_t u64(const std::string& key, std::uint64_t fallback = 0) const;
  /// A u64 entry read as a signed count (a step counter), 0 when absent. DecodeError above
  /// INT64_MAX, which a cast would turn negative.
  std::int64_t counter(const std::string& key) const;
  bool has(const std::string& key) const;

  Bytes serialize() const;
  /// Parses `bytes`; the stored codec name must equal `codec` (DecodeError otherwise).
  static CodecState parse(ByteSpan bytes, const std::string& codec);

 private:
  std::string codec_;
  std::map<std::string, std::uint64_t> ints_;
  std::map<std::string, std::vector<float>> tensors_;
  std::map<std::string, Bytes> blobs_;
};

}  // namespace gradwire
