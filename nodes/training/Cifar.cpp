// CIFAR-10 and CIFAR-100 from the binary version the dataset's authors distribute (nothing is
// downloaded): CIFAR-10's data_batch_1.bin ... data_batch_5.bin and test_batch.bin, each record
// one label byte then 3072 pixel bytes (1024 red, 1024 green, 1024 blue, row-major 32x32);
// CIFAR-100's train.bin and test.bin, each record a coarse and a fine label byte then the same
// 3072 bytes. Labels used: CIFAR-10's, CIFAR-100's fine ones.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "common/InputFile.h"
#include "nodes/training/Dataset.h"

namespace gradwire {

namespace {

constexpr std::int64_t kSide = 32;
constexpr std::int64_t kPixels = 3 * kSide * kSide;

struct Records {
  std::vector<std::uint8_t> pixels;
  std::vector<std::int64_t> labels;
};

std::string expected_files(std::int64_t classes) {
  return classes == 10 ? "data_batch_1.bin ... data_batch_5.bin and test_batch.bin "
                         "(the CIFAR-10 binary version, folder cifar-10-batches-bin)"
                       : "train.bin and test.bin (the CIFAR-100 binary version, folder "
                         "cifar-100-binary)";
}

/// Appends the records of one file, at most `limit` in all (0: no limit).
void read_records(const std::filesystem::path& file, std::int64_t classes, std::int64_t limit,
                  Records& out) {
  // CIFAR-100's train.bin, the largest file, has 153,700,000 bytes.
  constexpr std::uint64_t kMaxCifarFileBytes = std::uint64_t{1} << 30;
  try {
    check_input_file(file.string(), kMaxCifarFileBytes,
                     "CIFAR-" + std::to_string(classes) + " file");
  } catch (const InputFileError& e) {
    throw DatasetError(std::string(e.what()) + "; dataset.path must hold " +
                       expected_files(classes));
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    throw DatasetError("CIFAR-" + std::to_string(classes) + ": cannot read " + file.string() +
                       " (" + std::strerror(errno) + "); dataset.path must hold " +
                       expected_files(classes));
  }
  const std::int64_t label_bytes = classes == 10 ? 1 : 2;
  const std::int64_t record = label_bytes + kPixels;
  in.seekg(0, std::ios::end);
  const std::int64_t size = static_cast<std::int64_t>(in.tellg());
  in.seekg(0);
  if (size <= 0 || size % record != 0) {
    throw DatasetError("CIFAR-" + std::to_string(classes) + ": " + file.string() + " has " +
                       std::to_string(size) + " bytes, not a whole number of " +
                       std::to_string(record) + "-byte records");
  }
  std::vector<std::uint8_t> buffer(static_cast<std::size_t>(record));
  for (std::int64_t i = 0; i < size / record; ++i) {
    if (limit > 0 && static_cast<std::int64_t>(out.labels.size()) >= limit) return;
    in.read(reinterpret_cast<char*>(buffer.data()), record);
    if (!in) throw DatasetError("CIFAR: " + file.string() + " ended early");
    const std::int64_t label = buffer[static_cast<std::size_t>(label_bytes - 1)];
    if (label >= classes) {
      throw DatasetError("CIFAR-" + std::to_string(classes) + ": " + file.string() + " record " +
                         std::to_string(i) + " has label " + std::to_string(label));
    }
    out.labels.push_back(label);
    out.pixels.insert(out.pixels.end(), buffer.begin() + label_bytes, buffer.end());
  }
}

Dataset to_dataset(Records&& r, std::int64_t classes) {
  Dataset d;
  const auto n = static_cast<std::int64_t>(r.labels.size());
  d.inputs = torch::from_blob(r.pixels.data(), {n, 3, kSide, kSide}, torch::kUInt8)
                 .to(torch::kFloat32)
                 .div_(255.0);
  d.labels = torch::from_blob(r.labels.data(), {n}, torch::kInt64).clone();
  d.classes = classes;
  d.sample_shape = {3, kSide, kSide};
  return d;
}

}  // namespace

DatasetSplit load_cifar(const std::string& dir, std::int64_t classes, std::int64_t train_limit,
                        std::int64_t test_limit) {
  if (classes != 10 && classes != 100) throw std::invalid_argument("CIFAR has 10 or 100 classes");
  const std::filesystem::path root(dir);
  Records train;
  Records test;
  if (classes == 10) {
    for (int b = 1; b <= 5; ++b) {
      read_records(root / ("data_batch_" + std::to_string(b) + ".bin"), 10, train_limit, train);
    }
    read_records(root / "test_batch.bin", 10, test_limit, test);
  } else {
    read_records(root / "train.bin", 100, train_limit, train);
    read_records(root / "test.bin", 100, test_limit, test);
  }
  DatasetSplit split{to_dataset(std::move(train), classes), to_dataset(std::move(test), classes)};
  // Per-channel normalisation with the training set's statistics, applied to both sets.
  const torch::Tensor mean = split.train.inputs.mean({0, 2, 3}, /*keepdim=*/true);
  const torch::Tensor std = split.train.inputs.std({0, 2, 3}, /*unbiased=*/false, /*keepdim=*/true)
                                .clamp_min(1e-6);
  split.train.inputs.sub_(mean).div_(std);
  split.test.inputs.sub_(mean).div_(std);
  return split;
}

}  // namespace gradwire
