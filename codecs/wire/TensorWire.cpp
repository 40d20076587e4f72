#include "codecs/wire/TensorWire.h"

#include <torch/types.h>

namespace gradwire {

torch::Tensor read_f32_tensor(ByteReader& reader, std::int64_t count, const char* field) {
  const std::uint8_t* p = reader.take(static_cast<std::size_t>(count), 4, field);
  torch::Tensor t = torch::empty({count}, torch::kFloat);
  float* dst = t.data_ptr<float>();
  for (std::int64_t i = 0; i < count; ++i) dst[i] = load_f32_le(p + 4 * i);
  return t;
}

void write_f32_tensor(ByteWriter& writer, const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kFloat).contiguous();
  writer.f32_array(c.data_ptr<float>(), static_cast<std::size_t>(c.numel()));
}

}  // namespace gradwire
