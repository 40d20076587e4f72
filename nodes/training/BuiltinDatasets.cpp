// Every built-in dataset kind: its keys, their checks, the samples it yields and its loader.
// Nothing is downloaded: image sets are read from the folder a scenario names.
#include "nodes/training/BuiltinDatasets.h"

#include <algorithm>
#include <sys/stat.h>

#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "common/InputFile.h"

namespace gradwire {

namespace {

using namespace params;

// Fashion-MNIST's and CIFAR's training and test set sizes (Xiao et al. 2017; Krizhevsky 2009).
constexpr std::int64_t kFashionTrain = 60000;
constexpr std::int64_t kCifarTrain = 50000;
constexpr std::int64_t kImageTest = 10000;

// A folder or file of samples and how many of them to use: every kind read from disk.
FieldTable<DatasetSpec> file_keys(ParamSpec path) {
  FieldTable<DatasetSpec> keys;
  keys.add(std::move(path), &DatasetSpec::path)
      .add(integer("train_limit", 0, 0, 100000000, "use only the first N training samples (0: all)"),
           &DatasetSpec::train_limit)
      .add(integer("test_limit", 0, 0, 100000000, "use only the first N test samples (0: all)"),
           &DatasetSpec::test_limit);
  return keys;
}

std::int64_t limited(const DatasetSpec& d, std::int64_t all) {
  return d.train_limit > 0 ? std::min(d.train_limit, all) : all;
}

std::int64_t image_test_size(const DatasetSpec& d) {
  return d.test_limit > 0 ? std::min(d.test_limit, kImageTest) : kImageTest;
}

/// The first `limit` samples of `d` (all when limit is 0).
void keep_first(Dataset& d, std::int64_t limit) {
  if (limit <= 0 || limit >= d.size()) return;
  d.inputs = d.inputs.slice(0, 0, limit);
  d.labels = d.labels.slice(0, 0, limit);
}

}  // namespace

DatasetInfo fashion_mnist_dataset() {
  DatasetInfo d;
  d.name = "fashion-mnist";
  d.summary = "Fashion-MNIST: 28x28 grey images of 10 clothing classes, 60000 for training and "
              "10000 for testing (Debian's dataset-fashion-mnist)";
  d.declare(file_keys(text("path", kDefaultFashionMnistDir, "the folder holding its gz IDX files")));
  d.check = [](DatasetSpec& s, const JsonFields& f) {
    if (!is_directory(s.path)) {
      throw ConfigError(f.path_of("path"),
                        "Fashion-MNIST directory not found: " + s.path +
                            "; expected a folder with its gz IDX files (apt-get install "
                            "dataset-fashion-mnist, or set dataset.path)");
    }
  };
  d.input = [](const DatasetSpec&) { return ModelInput{{1, 28, 28}, 10, false}; };
  d.train_size = [](const DatasetSpec& s) { return limited(s, kFashionTrain); };
  d.test_size = image_test_size;
  d.load = [](const DatasetSpec& s, std::uint64_t) {
    return load_fashion_mnist(s.path, s.train_limit, s.test_limit);
  };
  return d;
}

DatasetInfo cifar_dataset(std::int64_t classes) {
  DatasetInfo d;
  const std::string name = "cifar" + std::to_string(classes);
  d.name = name;
  d.augment_by_default = true;
  d.summary = "CIFAR-" + std::to_string(classes) + ": 32x32 colour images of " +
              std::to_string(classes) + " classes, 50000 for training and 10000 for testing, "
              "from its binary files; augmented by default";
  d.declare(file_keys(text("path", "", "the folder holding the binary files (required; " +
                                           std::string(classes == 10
                                                           ? "data_batch_1.bin ... test_batch.bin"
                                                           : "train.bin and test.bin") +
                                           ")")));
  d.check = [name](DatasetSpec& s, const JsonFields& f) {
    if (!f.has("path")) {
      throw ConfigError(f.path_of("path"),
                        "missing; expected the folder holding the " + name +
                            " binary files (nothing is downloaded: data_batch_1.bin ... "
                            "test_batch.bin for cifar10, train.bin and test.bin for cifar100)");
    }
    if (!is_directory(s.path)) {
      throw ConfigError(f.path_of("path"), name + " directory not found: " + s.path);
    }
  };
  d.input = [classes](const DatasetSpec&) { return ModelInput{{3, 32, 32}, classes, false}; };
  d.train_size = [](const DatasetSpec& s) { return limited(s, kCifarTrain); };
  d.test_size = image_test_size;
  d.load = [classes](const DatasetSpec& s, std::uint64_t) {
    return load_cifar(s.path, classes, s.train_limit, s.test_limit);
  };
  return d;
}

DatasetInfo text_dataset() {
  DatasetInfo d;
  d.name = "text";
  d.summary = "a UTF-8 text file or a folder of them, as words or characters cut into "
              "sequences for language modelling; its last part is held out for testing";
  const TextConfig t;
  FieldTable<DatasetSpec> keys = file_keys(text("path", t.path, "a UTF-8 text file or a folder of them"));
  keys.add(choice("unit", t.unit, {"word", "char"}, "tokens: whitespace-separated words "
                                                    "(lower-cased) or characters"),
           &DatasetSpec::text, &TextConfig::unit)
      .add(integer("bptt", t.bptt, 1, 100000, "tokens per training sequence"),
           &DatasetSpec::text, &TextConfig::bptt)
      // The vocabulary holds the unknown token (and, for words, the end of line) besides at
      // least one unit of the text.
      .add(derived(integer("vocab", t.vocab, 2, 1000000,
                           "the most frequent units kept; the rest become <unk>"),
                   "10000 (at least 3 for words, 2 for characters)"),
           &DatasetSpec::text, &TextConfig::vocab,
           [](ParamSpec spec, const DatasetSpec& s) {
             spec.min = s.text.unit == "word" ? 3 : 2;
             return spec;
           })
      .add(number("test_fraction", t.test_fraction, 0, 0.9,
                  "the text's last tokens held out for evaluation", true),
           &DatasetSpec::text, &TextConfig::test_fraction);
  d.declare(std::move(keys));
  d.check = [](DatasetSpec& s, const JsonFields& f) {
    s.text.path = s.path;
    struct stat st {};
    if (::stat(s.path.c_str(), &st) != 0) {
      throw ConfigError(f.path_of("path"), "not found: " + s.path + "; expected a UTF-8 text "
                                           "file or a folder of them");
    }
  };
  d.input = [](const DatasetSpec& s) { return ModelInput{{s.text.bptt}, s.text.vocab, true}; };
  d.train_size = [](const DatasetSpec& s) {
    try {
      return limited(s, load_text(s.text).train.size());
    } catch (const DatasetError& e) {
      throw ConfigError("dataset.path", e.what());
    }
  };
  d.load = [](const DatasetSpec& s, std::uint64_t) {
    DatasetSplit split = load_text(s.text);
    keep_first(split.train, s.train_limit);
    keep_first(split.test, s.test_limit);
    return split;
  };
  return d;
}

DatasetInfo synthetic_dataset() {
  DatasetInfo d;
  d.name = "synthetic";
  d.summary = "seeded synthetic data: a Gaussian mixture of labelled samples (features or a "
              "shape), or token sequences from a sparse Markov chain (with vocab)";
  const SyntheticConfig y;
  const auto labelled = [](const DatasetSpec& s) { return s.synthetic.vocab == 0; };
  FieldTable<DatasetSpec> keys;
  keys.add(integer("classes", y.classes, 2, 1000, "labelled samples: classes"),
           &DatasetSpec::synthetic, &SyntheticConfig::classes)
      .written_when(labelled)
      .add(integer("features", y.features, 1, 100000, "labelled samples: features per sample"),
           &DatasetSpec::synthetic, &SyntheticConfig::features)
      .written_when([](const DatasetSpec& s) {
        return s.synthetic.vocab == 0 && s.synthetic.shape.empty();
      })
      .add(list("shape", "labelled samples: 1 to 3 dimensions instead of features, e.g. [3, 32, 32]"),
           [](const JsonFields& f, const ParamSpec& spec, DatasetSpec& s) {
             s.synthetic.shape = declared_integer_list(f, spec.name, {}, 1);
             if (f.has(spec.name) && (s.synthetic.shape.empty() || s.synthetic.shape.size() > 3)) {
               throw ConfigError(f.path_of(spec.name), "expected 1 to 3 dimensions, e.g. [3, 32, 32]");
             }
           },
           [](const DatasetSpec& s, const ParamSpec& spec, nlohmann::json& out) {
             out[spec.name] = s.synthetic.shape;
           })
      .written_when([](const DatasetSpec& s) {
        return s.synthetic.vocab == 0 && !s.synthetic.shape.empty();
      })
      .add(integer("vocab", 0, 2, 1000000, "token sequences over this vocabulary (instead of "
                                           "labelled samples)"),
           &DatasetSpec::synthetic, &SyntheticConfig::vocab)
      .written_when([](const DatasetSpec& s) { return s.synthetic.vocab > 0; })
      .add(integer("bptt", y.seq_len, 1, 100000, "tokens per sequence (with vocab)"),
           &DatasetSpec::synthetic, &SyntheticConfig::seq_len)
      .written_when([](const DatasetSpec& s) { return s.synthetic.vocab > 0; })
      .add(integer("train_samples", y.train_samples, 1, 10000000, "training samples"),
           &DatasetSpec::synthetic, &SyntheticConfig::train_samples)
      .add(integer("test_samples", y.test_samples, 1, 10000000, "test samples"),
           &DatasetSpec::synthetic, &SyntheticConfig::test_samples)
      .add(number("separation", y.separation, 0, 1e6,
                  "standard deviation of the class means (the noise's is 1)", true),
           &DatasetSpec::synthetic, &SyntheticConfig::separation)
      .written_when(labelled);
  d.declare(std::move(keys));
  d.check = [](DatasetSpec& s, const JsonFields& f) {
    if (s.synthetic.vocab > 0 && (f.has("shape") || f.has("classes") || f.has("features"))) {
      throw ConfigError(f.path_of("vocab"), "token sequences take vocab and bptt, not shape, "
                                            "classes or features");
    }
    if (s.synthetic.vocab == 0 && f.has("bptt")) {
      throw ConfigError(f.path_of("bptt"), "expected only with dataset.vocab (token sequences)");
    }
  };
  d.input = [](const DatasetSpec& s) {
    const auto& c = s.synthetic;
    if (c.vocab > 0) return ModelInput{{c.seq_len}, c.vocab, true};
    if (!c.shape.empty()) return ModelInput{c.shape, c.classes, false};
    return ModelInput{{c.features}, c.classes, false};
  };
  d.train_size = [](const DatasetSpec& s) { return s.synthetic.train_samples; };
  d.test_size = [](const DatasetSpec& s) { return s.synthetic.test_samples; };
  d.load = [](const DatasetSpec& s, std::uint64_t seed) { return make_synthetic(s.synthetic, seed); };
  return d;
}

}  // namespace gradwire
