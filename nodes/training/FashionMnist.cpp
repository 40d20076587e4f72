// Fashion-MNIST from the gz IDX files that Debian's dataset-fashion-mnist installs.
//
// IDX layout (big-endian): u32 magic, u32 count, [u32 rows, u32 cols for images], then one
// unsigned byte per pixel or label. Every header field and every byte count is checked, so a
// missing, truncated or foreign file ends in a DatasetError naming it, never in a crash or in
// silently wrong tensors.
#include "nodes/training/Dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "common/InputFile.h"

namespace gradwire {
namespace {

constexpr std::uint32_t kImagesMagic = 2051;  // 0x00000803: unsigned bytes, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 2049;  // 0x00000801: unsigned bytes, 1 dimension
constexpr std::int64_t kRows = 28;
constexpr std::int64_t kCols = 28;
constexpr std::int64_t kClasses = 10;

// Mean and standard deviation of the 60,000 training images' pixels after scaling to [0,1].
// The test set is normalised with the same (training) statistics, as it must be: the test set
// stands for unseen data whose statistics the trainer cannot know.
constexpr float kPixelMean = 0.2860F;
constexpr float kPixelStd = 0.3530F;

// Images are read in blocks of this many samples and appended, so a corrupt header that claims
// billions of images fails at the end of the real data instead of in one huge allocation.
constexpr std::int64_t kImagesPerBlock = 4096;

/// Owns one open gz file; all reads are exact-length or throw DatasetError naming the file.
/// gzopen also reads uncompressed files transparently, so plain IDX files work too.
class GzFile {
 public:
  explicit GzFile(std::string path) : path_(std::move(path)) {
    std::error_code ec;
    if (!std::filesystem::exists(path_, ec)) {
      throw DatasetError("Fashion-MNIST file not found: " + path_ +
                         ". Install Debian's dataset-fashion-mnist (apt-get install "
                         "dataset-fashion-mnist) or set dataset.path");
    }
    // The compressed training images have 26,421,880 bytes.
    constexpr std::uint64_t kMaxFileBytes = std::uint64_t{1} << 30;
    try {
      check_input_file(path_, kMaxFileBytes, "Fashion-MNIST file");
    } catch (const InputFileError& e) {
      throw DatasetError(e.what());
    }
    file_ = gzopen(path_.c_str(), "rb");
    if (file_ == nullptr) {
      throw DatasetError("cannot open Fashion-MNIST file " + path_ + ": " +
                         std::strerror(errno));
    }
  }
  ~GzFile() {
    if (file_ != nullptr) gzclose(file_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  const std::string& path() const { return path_; }

  /// Reads exactly `bytes` bytes into `dst`; `what` names the field for the error message.
  void read(void* dst, std::size_t bytes, const std::string& what) {
    auto* out = static_cast<unsigned char*>(dst);
    while (bytes > 0) {
      // gzread takes an unsigned int length; stay well inside it.
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(bytes, 1U << 30));
      const int got = gzread(file_, out, chunk);
      if (got < 0) {
        int code = Z_OK;
        const char* message = gzerror(file_, &code);
        throw DatasetError("corrupt Fashion-MNIST file " + path_ + " while reading " + what +
                           ": " + (message != nullptr ? message : "zlib error"));
      }
      if (got == 0) {
        throw DatasetError("truncated Fashion-MNIST file " + path_ + ": it ends while reading " +
                           what);
      }
      out += got;
      bytes -= static_cast<std::size_t>(got);
    }
  }

  std::uint32_t read_u32(const std::string& what) {
    unsigned char b[4];
    read(b, sizeof b, what);
    return (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) |
           (std::uint32_t{b[2]} << 8) | std::uint32_t{b[3]};
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

void expect_magic(GzFile& file, std::uint32_t expected, const char* kind) {
  const std::uint32_t magic = file.read_u32("the magic number");
  if (magic != expected) {
    throw DatasetError("not an IDX " + std::string(kind) + " file: " + file.path() +
                       " (magic number " + std::to_string(magic) + ", expected " +
                       std::to_string(expected) + ")");
  }
}

std::int64_t keep_count(std::int64_t available, std::int64_t limit) {
  return limit > 0 ? std::min(available, limit) : available;
}

/// One split (train or t10k): checks both headers against each other before reading any data.
Dataset load_split(const std::string& dir, const std::string& prefix, std::int64_t limit) {
  GzFile images(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  GzFile labels(dir + "/" + prefix + "-labels-idx1-ubyte.gz");

  expect_magic(images, kImagesMagic, "images");
  const std::int64_t image_count = images.read_u32("the image count");
  const std::int64_t rows = images.read_u32("the row count");
  const std::int64_t cols = images.read_u32("the column count");
  if (rows != kRows || cols != kCols) {
    throw DatasetError("unexpected image size in " + images.path() + ": " +
                       std::to_string(rows) + "x" + std::to_string(cols) + ", Fashion-MNIST has " +
                       std::to_string(kRows) + "x" + std::to_string(kCols));
  }

  expect_magic(labels, kLabelsMagic, "labels");
  const std::int64_t label_count = labels.read_u32("the label count");
  if (label_count != image_count) {
    throw DatasetError("Fashion-MNIST files disagree: " + images.path() + " holds " +
                       std::to_string(image_count) + " images but " + labels.path() + " holds " +
                       std::to_string(label_count) + " labels");
  }
  if (image_count == 0) throw DatasetError("Fashion-MNIST file holds no images: " + images.path());

  const std::int64_t n = keep_count(image_count, limit);
  const std::int64_t pixels_per_image = kRows * kCols;

  std::vector<std::uint8_t> pixels;
  for (std::int64_t done = 0; done < n;) {
    const std::int64_t block = std::min(kImagesPerBlock, n - done);
    const std::size_t offset = pixels.size();
    pixels.resize(offset + static_cast<std::size_t>(block * pixels_per_image));
    images.read(pixels.data() + offset, static_cast<std::size_t>(block * pixels_per_image),
                "image " + std::to_string(done) + " onwards");
    done += block;
  }

  std::vector<std::uint8_t> raw_labels(static_cast<std::size_t>(n));
  labels.read(raw_labels.data(), raw_labels.size(), "the labels");

  Dataset out;
  out.classes = kClasses;
  out.sample_shape = {1, kRows, kCols};
  out.labels = at::empty({n}, at::kLong);
  auto* label_data = out.labels.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t label = raw_labels[static_cast<std::size_t>(i)];
    if (label >= kClasses) {
      throw DatasetError("corrupt Fashion-MNIST file " + labels.path() + ": label " +
                         std::to_string(label) + " at index " + std::to_string(i) +
                         " is outside [0, 10)");
    }
    label_data[i] = label;
  }

  at::Tensor bytes = at::empty({n, 1, kRows, kCols}, at::kByte);
  std::memcpy(bytes.data_ptr<std::uint8_t>(), pixels.data(), pixels.size());
  out.inputs = bytes.to(at::kFloat).div_(255.0).sub_(kPixelMean).div_(kPixelStd);
  return out;
}

}  // namespace

DatasetSplit load_fashion_mnist(const std::string& dir, std::int64_t train_limit,
                                std::int64_t test_limit) {
  DatasetSplit split;
  split.train = load_split(dir, "train", train_limit);
  split.test = load_split(dir, "t10k", test_limit);
  return split;
}

}  // namespace gradwire
