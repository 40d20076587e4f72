#include "sim/cli/NpyFile.h"

#include <cstring>
#include <regex>
#include <sstream>

#include "common/AtomicOutput.h"
#include "common/ByteIo.h"
#include "common/InputFile.h"

namespace gradwire {

namespace {

/// The most elements a .npy array may state.
constexpr std::uint64_t kMaxNpyElements = std::uint64_t{1} << 40;

}  // namespace

std::vector<float> parse_npy_f32(ByteSpan bytes, const std::string& where,
                                 std::vector<std::int64_t>* shape_out) {
  if (bytes.size < 10 || std::memcmp(bytes.data, "\x93NUMPY", 6) != 0) {
    throw NpyError(where + "not a .npy file (missing the \\x93NUMPY magic)");
  }
  const int major = bytes.data[6];
  std::size_t header_len = 0;
  std::size_t pos = 0;
  if (major == 1) {
    header_len = bytes.data[8] | (bytes.data[9] << 8);
    pos = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size < 12) throw NpyError(where + "truncated .npy preamble");
    header_len = load_u32_le(bytes.data + 8);
    pos = 12;
  } else {
    throw NpyError(where + "unsupported .npy format version " + std::to_string(major));
  }
  if (header_len > bytes.size - pos) throw NpyError(where + "truncated .npy header");
  const std::string header(reinterpret_cast<const char*>(bytes.data + pos), header_len);
  pos += header_len;

  std::smatch m;
  static const std::regex descr_re(R"('descr'\s*:\s*'([^']*)')");
  static const std::regex fortran_re(R"('fortran_order'\s*:\s*(True|False))");
  static const std::regex shape_re(R"('shape'\s*:\s*\(([^)]*)\))");
  if (!std::regex_search(header, m, descr_re)) throw NpyError(where + "header has no 'descr'");
  const std::string descr = m[1];
  if (descr != "<f4" && descr != "f4") {
    throw NpyError(where + "dtype '" + descr + "' is not little-endian float32 ('<f4'); convert with arr.astype('<f4')");
  }
  if (!std::regex_search(header, m, fortran_re)) throw NpyError(where + "header has no 'fortran_order'");
  const bool fortran = m[1] == "True";
  if (!std::regex_search(header, m, shape_re)) throw NpyError(where + "header has no 'shape'");
  std::vector<std::int64_t> shape;
  std::stringstream dims(m[1].str());
  std::string item;
  std::uint64_t count = 1;
  while (std::getline(dims, item, ',')) {
    const auto b = item.find_first_not_of(" \t\n");
    if (b == std::string::npos) continue;  // trailing comma of a 1-tuple
    const std::string t = item.substr(b, item.find_last_not_of(" \t\nL") - b + 1);
    if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos || t.size() > 12) {
      throw NpyError(where + "bad dimension '" + t + "' in shape");
    }
    const std::int64_t d = std::stoll(t);
    // Checked before multiplying: dimensions up to 10^12 each would otherwise wrap the product
    // around (2^32 x 2^32 is 0) and pass for a small array.
    if (d > 0 && count > kMaxNpyElements / static_cast<std::uint64_t>(d)) {
      throw NpyError(where + "array is implausibly large");
    }
    shape.push_back(d);
    count *= static_cast<std::uint64_t>(d);
  }
  int non_trivial = 0;
  for (auto d : shape) non_trivial += d > 1 ? 1 : 0;
  if (fortran && non_trivial > 1) {
    throw NpyError(where + "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  }
  const std::size_t data = bytes.size - pos;
  if (data != 4 * count) {
    throw NpyError(where + "data has " + std::to_string(data) + " bytes, the shape needs " +
                   std::to_string(4 * count));
  }
  std::vector<float> values(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = load_f32_le(bytes.data + pos + 4 * i);
  if (shape_out) *shape_out = shape;
  return values;
}

Bytes format_npy_f32(const std::vector<float>& values, const std::vector<std::int64_t>& shape) {
  std::string dims;
  for (auto d : shape) dims += std::to_string(d) + ", ";
  if (shape.size() > 1) dims.erase(dims.size() - 2);
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Pad so magic (6) + version (2) + length (2) + header ends on a 64-byte boundary, with '\n'.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  ByteWriter w(10 + header.size() + 4 * values.size());
  w.raw("\x93NUMPY", 6);
  w.u8(1);
  w.u8(0);
  w.u16(static_cast<std::uint16_t>(header.size()));
  w.raw(header.data(), header.size());
  w.f32_array(values.data(), values.size());
  return w.take();
}

std::vector<float> read_npy_f32(const std::string& path, std::vector<std::int64_t>* shape_out,
                                std::uint64_t max_bytes) {
  std::string bytes;
  try {
    bytes = read_input_file(path, max_bytes, ".npy file");
  } catch (const InputFileError& e) {
    throw NpyError(e.what());
  }
  return parse_npy_f32(ByteSpan(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
                       "'" + path + "': ", shape_out);
}

void write_npy_f32(const std::string& path, const std::vector<float>& values,
                   const std::vector<std::int64_t>& shape) {
  const Bytes image = format_npy_f32(values, shape);
  write_file_atomically(path, std::string(image.begin(), image.end()));
}

}  // namespace gradwire
