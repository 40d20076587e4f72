// Datasets, partitions and shard loaders: Fashion-MNIST IDX parsing (on tiny files written
// here, and on Debian's real files when installed), the synthetic mixture, IID and Dirichlet
// splits, and per-epoch reshuffling.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "OneTorchThread.h"
#include "nodes/training/Dataset.h"
#include "nodes/training/ImageAugmentation.h"
#include "nodes/training/Partition.h"
#include "nodes/training/ShardLoader.h"

namespace fs = std::filesystem;
using namespace gradwire;

namespace {

constexpr float kMean = 0.2860F;
constexpr float kStd = 0.3530F;

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 24));
  out.push_back(static_cast<std::uint8_t>(v >> 16));
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v));
}

void write_gz(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  gzFile file = gzopen(path.string().c_str(), "wb");
  ASSERT_NE(file, nullptr);
  ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(file), Z_OK);
}

/// IDX images: pixel p of image i is (i * 31 + p) % 256, so every value is checkable.
std::vector<std::uint8_t> idx_images(std::uint32_t count, std::uint32_t stored,
                                     std::uint32_t magic = 2051, std::uint32_t side = 28) {
  std::vector<std::uint8_t> out;
  put_u32(out, magic);
  put_u32(out, count);
  put_u32(out, side);
  put_u32(out, side);
  for (std::uint32_t i = 0; i < stored; ++i) {
    for (std::uint32_t p = 0; p < side * side; ++p) {
      out.push_back(static_cast<std::uint8_t>((i * 31 + p) % 256));
    }
  }
  return out;
}

std::vector<std::uint8_t> idx_labels(std::uint32_t count, std::uint32_t magic = 2049) {
  std::vector<std::uint8_t> out;
  put_u32(out, magic);
  put_u32(out, count);
  for (std::uint32_t i = 0; i < count; ++i) out.push_back(static_cast<std::uint8_t>((i * 7) % 10));
  return out;
}

/// A fresh directory under the system temp dir, removed with the fixture.
class TinyIdx : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gradwire-dataset-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void write_all(std::uint32_t train, std::uint32_t test) {
    write_gz(dir_ / "train-images-idx3-ubyte.gz", idx_images(train, train));
    write_gz(dir_ / "train-labels-idx1-ubyte.gz", idx_labels(train));
    write_gz(dir_ / "t10k-images-idx3-ubyte.gz", idx_images(test, test));
    write_gz(dir_ / "t10k-labels-idx1-ubyte.gz", idx_labels(test));
  }
  /// Runs the loader and returns the DatasetError message ("" if nothing was thrown).
  std::string load_error() {
    try {
      load_fashion_mnist(dir_.string());
    } catch (const DatasetError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

// CIFAR files in the real binary format, written small: `records` per file, label byte(s) then
// 1024 red, 1024 green, 1024 blue bytes. Red pixels hold 10 + record, green 100, blue 200 + label.
class TinyCifar : public ::testing::Test {
 protected:
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gradwire-cifar-" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }

  void write(const std::string& name, int records, int label_bytes, int first_label) {
    std::ofstream out(dir / name, std::ios::binary);
    for (int r = 0; r < records; ++r) {
      const int label = (first_label + r) % (label_bytes == 1 ? 10 : 100);
      if (label_bytes == 2) out.put(static_cast<char>(label / 5));  // coarse label
      out.put(static_cast<char>(label));
      for (int c = 0; c < 3; ++c) {
        const int value = c == 0 ? 10 + r : c == 1 ? 100 : 200 + label % 50;
        for (int p = 0; p < 1024; ++p) out.put(static_cast<char>(value));
      }
    }
  }
};

TEST_F(TinyCifar, Cifar10ReadsEveryBatchChannelsFirstAndNormalisesPerChannel) {
  for (int b = 1; b <= 5; ++b) write("data_batch_" + std::to_string(b) + ".bin", 3, 1, b);
  write("test_batch.bin", 2, 1, 7);
  const DatasetSplit d = load_cifar(dir.string(), 10);
  EXPECT_EQ(d.train.size(), 15);
  EXPECT_EQ(d.test.size(), 2);
  EXPECT_EQ(d.train.sample_shape, (std::vector<std::int64_t>{3, 32, 32}));
  EXPECT_EQ(d.train.classes, 10);
  EXPECT_EQ(d.train.labels[0].item<std::int64_t>(), 1);
  EXPECT_EQ(d.train.labels[3].item<std::int64_t>(), 2);  // second batch starts at its label 2
  EXPECT_EQ(d.test.labels[1].item<std::int64_t>(), 8);
  // Training statistics per channel: red varies, green is constant (std clamped), blue varies.
  const torch::Tensor mean = d.train.inputs.mean({0, 2, 3});
  EXPECT_NEAR(mean[0].item<double>(), 0.0, 1e-4);
  EXPECT_NEAR(mean[2].item<double>(), 0.0, 1e-4);
  EXPECT_NEAR(d.train.inputs.select(1, 0).std(false).item<double>(), 1.0, 1e-4);
  // The first record's red pixel is the smallest red value: below the red mean.
  EXPECT_LT(d.train.inputs[0][0][5][7].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(d.train.inputs[0][0][0][0].item<float>(), d.train.inputs[0][0][31][31].item<float>());
}

TEST_F(TinyCifar, Cifar100UsesFineLabelsAndLimits) {
  write("train.bin", 6, 2, 95);
  write("test.bin", 4, 2, 0);
  const DatasetSplit d = load_cifar(dir.string(), 100, 4, 2);
  EXPECT_EQ(d.train.size(), 4);
  EXPECT_EQ(d.test.size(), 2);
  EXPECT_EQ(d.train.classes, 100);
  EXPECT_EQ(d.train.labels[0].item<std::int64_t>(), 95);
  EXPECT_EQ(d.train.labels[3].item<std::int64_t>(), 98);
}

TEST_F(TinyCifar, MissingOrMalformedFilesSayWhatIsExpected) {
  try {
    load_cifar(dir.string(), 10);
    ADD_FAILURE() << "no files accepted";
  } catch (const DatasetError& e) {
    EXPECT_NE(std::string(e.what()).find("data_batch_1.bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test_batch.bin"), std::string::npos) << e.what();
  }
  write("train.bin", 2, 2, 0);
  {
    std::ofstream cut(dir / "test.bin", std::ios::binary);
    cut << "short";
  }
  try {
    load_cifar(dir.string(), 100);
    ADD_FAILURE() << "a truncated file was accepted";
  } catch (const DatasetError& e) {
    EXPECT_NE(std::string(e.what()).find("3074-byte records"), std::string::npos) << e.what();
  }
}

TEST_F(TinyIdx, ReadsValuesAndNormalises) {
  write_all(5, 3);
  const DatasetSplit split = load_fashion_mnist(dir_.string());
  ASSERT_EQ(split.train.size(), 5);
  ASSERT_EQ(split.test.size(), 3);
  EXPECT_EQ(split.train.inputs.sizes(), (std::vector<std::int64_t>{5, 1, 28, 28}));
  EXPECT_EQ(split.train.inputs.scalar_type(), torch::kFloat);
  EXPECT_EQ(split.train.labels.scalar_type(), torch::kLong);
  EXPECT_EQ(split.train.classes, 10);
  EXPECT_EQ(split.train.sample_shape, (std::vector<std::int64_t>{1, 28, 28}));
  EXPECT_EQ(split.test.sample_shape, (std::vector<std::int64_t>{1, 28, 28}));

  const auto pixels = split.train.inputs.accessor<float, 4>();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(split.train.labels[i].item<std::int64_t>(), (i * 7) % 10);
    for (int p : {0, 1, 27, 28, 400, 783}) {
      const float raw = static_cast<float>((i * 31 + p) % 256);
      EXPECT_NEAR(pixels[i][0][p / 28][p % 28], (raw / 255.0F - kMean) / kStd, 1e-5F)
          << "image " << i << " pixel " << p;
    }
  }
}

TEST_F(TinyIdx, LimitsKeepTheFirstSamples) {
  write_all(6, 4);
  const DatasetSplit all = load_fashion_mnist(dir_.string());
  const DatasetSplit some = load_fashion_mnist(dir_.string(), 2, 3);
  ASSERT_EQ(some.train.size(), 2);
  ASSERT_EQ(some.test.size(), 3);
  EXPECT_TRUE(torch::equal(some.train.inputs, all.train.inputs.slice(0, 0, 2)));
  EXPECT_TRUE(torch::equal(some.test.labels, all.test.labels.slice(0, 0, 3)));
  // A limit beyond the file keeps everything.
  EXPECT_EQ(load_fashion_mnist(dir_.string(), 100, 100).train.size(), 6);
}

TEST_F(TinyIdx, MissingFileNamesTheFileAndThePackage) {
  const std::string message = load_error();
  EXPECT_NE(message.find((dir_ / "train-images-idx3-ubyte.gz").string()), std::string::npos)
      << message;
  EXPECT_NE(message.find("dataset-fashion-mnist"), std::string::npos) << message;
  EXPECT_NE(message.find("dataset.path"), std::string::npos) << message;

  // Train present, test labels missing: the error names that file.
  write_all(2, 2);
  fs::remove(dir_ / "t10k-labels-idx1-ubyte.gz");
  const std::string second = load_error();
  EXPECT_NE(second.find("t10k-labels-idx1-ubyte.gz"), std::string::npos) << second;
}

TEST_F(TinyIdx, TruncatedImagesAreAnError) {
  write_all(2, 2);
  // The header claims 5 images, the file holds 3.
  write_gz(dir_ / "train-images-idx3-ubyte.gz", idx_images(5, 3));
  write_gz(dir_ / "train-labels-idx1-ubyte.gz", idx_labels(5));
  const std::string message = load_error();
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("train-images-idx3-ubyte.gz"), std::string::npos) << message;
}

TEST_F(TinyIdx, CutGzipStreamIsAnError) {
  write_all(4, 2);
  // Chop the compressed file itself: zlib must report the broken stream, not return garbage.
  const fs::path path = dir_ / "train-images-idx3-ubyte.gz";
  fs::resize_file(path, fs::file_size(path) / 2);
  const std::string message = load_error();
  EXPECT_FALSE(message.empty());
  EXPECT_NE(message.find("train-images-idx3-ubyte.gz"), std::string::npos) << message;
}

TEST_F(TinyIdx, BadMagicIsAnError) {
  write_all(2, 2);
  write_gz(dir_ / "t10k-images-idx3-ubyte.gz", idx_images(2, 2, 1234));
  const std::string message = load_error();
  EXPECT_NE(message.find("magic"), std::string::npos) << message;
  EXPECT_NE(message.find("t10k-images-idx3-ubyte.gz"), std::string::npos) << message;

  // Label and image files swapped: both magic numbers are checked.
  write_all(2, 2);
  write_gz(dir_ / "train-labels-idx1-ubyte.gz", idx_images(2, 2));
  EXPECT_NE(load_error().find("magic"), std::string::npos);
}

TEST_F(TinyIdx, WrongSizesAndCountsAreErrors) {
  write_all(2, 2);
  write_gz(dir_ / "train-images-idx3-ubyte.gz", idx_images(2, 2, 2051, 27));
  EXPECT_NE(load_error().find("27x27"), std::string::npos);

  write_all(2, 2);
  write_gz(dir_ / "train-labels-idx1-ubyte.gz", idx_labels(3));
  const std::string message = load_error();
  EXPECT_NE(message.find("2 images"), std::string::npos) << message;
  EXPECT_NE(message.find("3 labels"), std::string::npos) << message;

  write_all(2, 2);
  std::vector<std::uint8_t> bad_label = idx_labels(2);
  bad_label.back() = 10;
  write_gz(dir_ / "train-labels-idx1-ubyte.gz", bad_label);
  EXPECT_NE(load_error().find("label 10"), std::string::npos);
}

TEST(FashionMnist, RealFilesWhenInstalled) {
  if (!fs::exists(kDefaultFashionMnistDir)) {
    GTEST_SKIP() << kDefaultFashionMnistDir << " not installed";
  }
  const DatasetSplit split = load_fashion_mnist(kDefaultFashionMnistDir, 2000, 500);
  EXPECT_EQ(split.train.inputs.sizes(), (std::vector<std::int64_t>{2000, 1, 28, 28}));
  EXPECT_EQ(split.test.inputs.sizes(), (std::vector<std::int64_t>{500, 1, 28, 28}));
  for (const Dataset* d : {&split.train, &split.test}) {
    EXPECT_GE(d->labels.min().item<std::int64_t>(), 0);
    EXPECT_LT(d->labels.max().item<std::int64_t>(), 10);
    // Every class occurs among the first few hundred samples.
    EXPECT_EQ(std::get<0>(torch::_unique(d->labels)).numel(), 10);
  }
  // Normalised with the training statistics: mean near 0 and std near 1.
  EXPECT_NEAR(split.train.inputs.mean().item<float>(), 0.0F, 0.05F);
  EXPECT_NEAR(split.train.inputs.std().item<float>(), 1.0F, 0.05F);
}

TEST(FashionMnist, FullFilesWhenInstalled) {
  if (!fs::exists(kDefaultFashionMnistDir)) {
    GTEST_SKIP() << kDefaultFashionMnistDir << " not installed";
  }
  const DatasetSplit split = load_fashion_mnist(kDefaultFashionMnistDir);
  EXPECT_EQ(split.train.size(), 60000);
  EXPECT_EQ(split.test.size(), 10000);
  // The constants in the loader are the full training set's statistics.
  EXPECT_NEAR(split.train.inputs.mean().item<double>(), 0.0, 1e-3);
  EXPECT_NEAR(split.train.inputs.std().item<double>(), 1.0, 1e-3);
  // Fashion-MNIST is balanced: 6000 training and 1000 test images per class.
  EXPECT_TRUE(torch::equal(torch::bincount(split.train.labels),
                           torch::full({10}, 6000, torch::kLong)));
  EXPECT_TRUE(torch::equal(torch::bincount(split.test.labels),
                           torch::full({10}, 1000, torch::kLong)));
}

TEST(Synthetic, SameSeedIsBitIdenticalWhateverTheGlobalRng) {
  SyntheticConfig config;
  config.train_samples = 500;
  config.test_samples = 100;
  torch::manual_seed(1);
  const DatasetSplit a = make_synthetic(config, 42);
  torch::manual_seed(999);
  (void)torch::randn({100});
  const DatasetSplit b = make_synthetic(config, 42);
  EXPECT_TRUE(torch::equal(a.train.inputs, b.train.inputs));
  EXPECT_TRUE(torch::equal(a.train.labels, b.train.labels));
  EXPECT_TRUE(torch::equal(a.test.inputs, b.test.inputs));
  EXPECT_TRUE(torch::equal(a.test.labels, b.test.labels));

  const DatasetSplit c = make_synthetic(config, 43);
  EXPECT_FALSE(torch::equal(a.train.inputs, c.train.inputs));
}

TEST(Synthetic, ShapesAndLabels) {
  SyntheticConfig config;
  config.classes = 4;
  config.features = 7;
  config.train_samples = 300;
  config.test_samples = 50;
  const DatasetSplit s = make_synthetic(config, 1);
  EXPECT_EQ(s.train.inputs.sizes(), (std::vector<std::int64_t>{300, 7}));
  EXPECT_EQ(s.test.inputs.sizes(), (std::vector<std::int64_t>{50, 7}));
  EXPECT_EQ(s.train.inputs.scalar_type(), torch::kFloat);
  EXPECT_EQ(s.train.labels.scalar_type(), torch::kLong);
  EXPECT_EQ(s.train.sample_shape, (std::vector<std::int64_t>{7}));
  EXPECT_EQ(s.train.classes, 4);
  EXPECT_EQ(s.train.labels.min().item<std::int64_t>(), 0);
  EXPECT_EQ(s.train.labels.max().item<std::int64_t>(), 3);
}

void expect_disjoint(const Shards& shards, std::int64_t samples, bool covering) {
  std::vector<int> seen(static_cast<std::size_t>(samples), 0);
  for (const auto& shard : shards) {
    for (std::int64_t i : shard) {
      ASSERT_GE(i, 0);
      ASSERT_LT(i, samples);
      ++seen[static_cast<std::size_t>(i)];
    }
  }
  for (std::int64_t i = 0; i < samples; ++i) {
    ASSERT_LE(seen[static_cast<std::size_t>(i)], 1) << "sample " << i << " in two shards";
    if (covering) {
      ASSERT_EQ(seen[static_cast<std::size_t>(i)], 1) << "sample " << i << " unused";
    }
  }
}

TEST(Partition, IidIsDisjointEqualAndCovering) {
  const Shards shards = partition_iid(1000, 4, 7);
  ASSERT_EQ(shards.size(), 4U);
  for (const auto& s : shards) EXPECT_EQ(s.size(), 250U);
  expect_disjoint(shards, 1000, true);
  EXPECT_EQ(partition_iid(1000, 4, 7), shards);
  EXPECT_NE(partition_iid(1000, 4, 8), shards);

  // 1003 over 4: equal shards of 250, three samples left out, none twice.
  const Shards uneven = partition_iid(1003, 4, 7);
  for (const auto& s : uneven) EXPECT_EQ(s.size(), 250U);
  expect_disjoint(uneven, 1003, false);

  EXPECT_THROW(partition_iid(3, 4, 1), std::invalid_argument);
  EXPECT_THROW(partition_iid(10, 0, 1), std::invalid_argument);
}

/// Mean over workers of the total-variation distance between the worker's label histogram and
/// the global one: 0 for perfectly mixed shards, near 1 when each worker holds one class.
double label_skew(const Shards& shards, const torch::Tensor& labels, std::int64_t classes) {
  const auto l = labels.accessor<std::int64_t, 1>();
  std::vector<double> global(static_cast<std::size_t>(classes), 0.0);
  for (std::int64_t i = 0; i < labels.size(0); ++i) global[static_cast<std::size_t>(l[i])] += 1.0;
  for (double& g : global) g /= static_cast<double>(labels.size(0));
  double total = 0.0;
  for (const auto& shard : shards) {
    std::vector<double> local(static_cast<std::size_t>(classes), 0.0);
    for (std::int64_t i : shard) local[static_cast<std::size_t>(l[i])] += 1.0;
    double tv = 0.0;
    for (std::size_t c = 0; c < local.size(); ++c) {
      tv += std::abs(local[c] / static_cast<double>(shard.size()) - global[c]);
    }
    total += tv / 2.0;
  }
  return total / static_cast<double>(shards.size());
}

TEST(Partition, DirichletCoversExactlyOnceAndIsDeterministic) {
  const torch::Tensor labels = torch::arange(5000, torch::kLong).remainder(10);
  for (double alpha : {0.01, 0.1, 1.0, 100.0}) {
    const Shards shards = partition_dirichlet(labels, 10, 8, alpha, 3);
    ASSERT_EQ(shards.size(), 8U);
    for (const auto& s : shards) EXPECT_FALSE(s.empty()) << "alpha " << alpha;
    expect_disjoint(shards, 5000, true);
    EXPECT_EQ(partition_dirichlet(labels, 10, 8, alpha, 3), shards) << "alpha " << alpha;
  }
  EXPECT_NE(partition_dirichlet(labels, 10, 8, 0.5, 3), partition_dirichlet(labels, 10, 8, 0.5, 4));
}

TEST(Partition, DirichletSkewGrowsAsAlphaShrinks) {
  const torch::Tensor labels = torch::arange(10000, torch::kLong).remainder(10);
  double skewed = 0.0;
  double mixed = 0.0;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    skewed += label_skew(partition_dirichlet(labels, 10, 10, 0.1, seed), labels, 10) / 3.0;
    mixed += label_skew(partition_dirichlet(labels, 10, 10, 100.0, seed), labels, 10) / 3.0;
  }
  EXPECT_GT(skewed, 0.5);
  EXPECT_LT(mixed, 0.1);
  EXPECT_GT(skewed, 4.0 * mixed);
}

TEST(Partition, DirichletFillsEveryWorkerEvenWhenSamplesAreScarce) {
  // Ten samples of one class over ten workers: Dirichlet(0.01) puts nearly all on one worker,
  // the top-up must hand one to each.
  const torch::Tensor labels = torch::zeros({10}, torch::kLong);
  const Shards shards = partition_dirichlet(labels, 1, 10, 0.01, 5);
  for (const auto& s : shards) EXPECT_EQ(s.size(), 1U);
  expect_disjoint(shards, 10, true);
  EXPECT_THROW(partition_dirichlet(labels, 1, 11, 1.0, 5), std::invalid_argument);
  EXPECT_THROW(partition_dirichlet(labels, 1, 2, 0.0, 5), std::invalid_argument);
  EXPECT_THROW(partition_dirichlet(torch::full({4}, 3, torch::kLong), 2, 2, 1.0, 5),
               std::invalid_argument);
}

/// A dataset whose every input row holds its own index, so batches reveal which samples they are.
Dataset indexed_dataset(std::int64_t n) {
  Dataset d;
  d.inputs = torch::arange(n, torch::kFloat).unsqueeze(1).repeat({1, 3});
  d.labels = torch::arange(n, torch::kLong).remainder(10);
  d.classes = 10;
  d.sample_shape = {3};
  return d;
}

std::vector<std::int64_t> batch_ids(const std::pair<torch::Tensor, torch::Tensor>& batch) {
  const torch::Tensor ids = batch.first.select(1, 0).to(torch::kLong);
  return {ids.data_ptr<std::int64_t>(), ids.data_ptr<std::int64_t>() + ids.numel()};
}

TEST(ShardLoader, YieldsTheShardOncePerEpochAndReshuffles) {
  const Dataset data = indexed_dataset(100);
  std::vector<std::int64_t> shard;
  for (std::int64_t i = 0; i < 100; i += 4) shard.push_back(i);  // 25 samples
  ShardLoader loader(data, shard, 5, 11);
  EXPECT_EQ(loader.shard_size(), 25);

  std::vector<std::vector<std::int64_t>> epochs(2);
  for (int e = 0; e < 2; ++e) {
    EXPECT_EQ(loader.epoch(), e);
    for (int b = 0; b < 5; ++b) {
      const auto batch = loader.next();
      ASSERT_EQ(batch.first.sizes(), (std::vector<std::int64_t>{5, 3}));
      ASSERT_EQ(batch.second.sizes(), (std::vector<std::int64_t>{5}));
      const auto ids = batch_ids(batch);
      for (std::size_t k = 0; k < ids.size(); ++k) {
        EXPECT_EQ(batch.second[static_cast<std::int64_t>(k)].item<std::int64_t>(), ids[k] % 10);
      }
      epochs[static_cast<std::size_t>(e)].insert(epochs[static_cast<std::size_t>(e)].end(),
                                                 ids.begin(), ids.end());
    }
  }
  EXPECT_EQ(loader.epoch(), 2);
  for (const auto& order : epochs) {
    std::vector<std::int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, shard);  // each epoch visits every shard sample exactly once
  }
  EXPECT_NE(epochs[0], epochs[1]);  // and in a new order
  EXPECT_NE(epochs[0], shard);      // shuffled from the first epoch on

  // Same seed, same batches.
  ShardLoader again(data, shard, 5, 11);
  std::vector<std::int64_t> replay;
  for (int b = 0; b < 5; ++b) {
    const auto ids = batch_ids(again.next());
    replay.insert(replay.end(), ids.begin(), ids.end());
  }
  EXPECT_EQ(replay, epochs[0]);
}

TEST(ShardLoader, BatchLargerThanShardWraps) {
  const Dataset data = indexed_dataset(20);
  const std::vector<std::int64_t> shard{2, 5, 9};
  ShardLoader loader(data, shard, 7, 3);
  const auto ids = batch_ids(loader.next());
  ASSERT_EQ(ids.size(), 7U);
  // Samples 0-2 and 3-5 are two complete epochs; the 7th starts the third.
  for (int e = 0; e < 2; ++e) {
    std::vector<std::int64_t> epoch(ids.begin() + 3 * e, ids.begin() + 3 * e + 3);
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, shard);
  }
  EXPECT_EQ(loader.epoch(), 2);
}

TEST(ShardLoader, RejectsBadShards) {
  const Dataset data = indexed_dataset(10);
  EXPECT_THROW(ShardLoader(data, {}, 4, 1), std::invalid_argument);
  EXPECT_THROW(ShardLoader(data, {3, 10}, 4, 1), std::invalid_argument);
  ShardLoader empty(data, {}, 0, 1);
  EXPECT_EQ(empty.next().first.size(0), 0);
}

}  // namespace

namespace {

// One bright pixel per image: where it lands after augmentation shows the crop offset and the
// flip that were drawn.
std::pair<std::int64_t, std::int64_t> bright_pixel(const torch::Tensor& image) {
  const std::int64_t at = image[0].flatten().argmax().item<std::int64_t>();
  return {at / image.size(2), at % image.size(2)};
}

TEST(ImageAugmentation, CropsWithinFourPixelsFlipsHalfTheTimeAndRepeatsFromItsSeed) {
  const std::int64_t n = 400;
  torch::Tensor images = torch::zeros({n, 1, 16, 16});
  images.index_put_({torch::indexing::Slice(), 0, 8, 3}, 1.0f);  // row 8, column 3
  std::mt19937_64 rng(5);
  const torch::Tensor out = ImageAugmentation::crop_and_flip(images, rng);
  ASSERT_EQ(out.sizes(), images.sizes());
  std::set<std::int64_t> rows;
  int flipped = 0;
  int lost = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    if (out[i].max().item<float>() == 0.0f) {  // cropped away: only when shifted off the edge
      ++lost;
      continue;
    }
    const auto [row, col] = bright_pixel(out[i]);
    EXPECT_LE(std::abs(row - 8), ImageAugmentation::kPadding);
    rows.insert(row);
    const bool mirror = std::abs((15 - col) - 3) <= ImageAugmentation::kPadding;
    const bool plain = std::abs(col - 3) <= ImageAugmentation::kPadding;
    EXPECT_TRUE(mirror || plain) << "column " << col;
    if (mirror && !plain) ++flipped;
    EXPECT_FLOAT_EQ(out[i].sum().item<float>(), 1.0f);  // padding is zeros, nothing invented
  }
  EXPECT_EQ(rows.size(), 9u);  // every offset in [-4, 4] occurs
  EXPECT_GT(flipped, n / 4);
  EXPECT_LT(flipped, 3 * n / 4);
  EXPECT_LT(lost, n / 5);  // a crop 4 pixels left of column 3 loses it: 1 in 9
  std::mt19937_64 again(5);
  EXPECT_TRUE(ImageAugmentation::crop_and_flip(images, again).equal(out));
}

TEST(ShardLoader, AugmentsTrainingImagesOnlyWhenTheDatasetSaysSo) {
  SyntheticConfig config;
  config.shape = {3, 8, 8};
  config.train_samples = 64;
  const DatasetSplit data = make_synthetic(config, 3);
  Dataset images = data.train;  // loaders hold a reference: one dataset each
  images.augment = true;
  std::vector<std::int64_t> shard(64);
  std::iota(shard.begin(), shard.end(), 0);
  ShardLoader plain(data.train, shard, 16, 9);
  ShardLoader augmented(images, shard, 16, 9);
  ShardLoader augmented_again(images, shard, 16, 9);
  const auto [x0, y0] = plain.next();
  const auto [x1, y1] = augmented.next();
  const auto [x2, y2] = augmented_again.next();
  EXPECT_TRUE(y0.equal(y1));       // the same samples in the same order...
  EXPECT_FALSE(x0.equal(x1));      // ...cropped and flipped
  EXPECT_TRUE(x1.equal(x2));       // from the loader's seed alone
}

}  // namespace
