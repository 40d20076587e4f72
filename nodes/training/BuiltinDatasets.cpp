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

ParamSpec train_limit() {
  return integer("train_limit", 0, 0, 100000000, "use only the first N training samples (0: all)");
}
ParamSpec test_limit() {
  return integer("test_limit", 0, 0, 100000000, "use only the first N test samples (0: all)");
}

void read_limits(const JsonFields& f, DatasetSpec& d) {
  d.train_limit = declared_integer(f, train_limit());
  d.test_limit = declared_integer(f, test_limit());
}

void write_files(const DatasetSpec& d, nlohmann::json& out) {
  out.update({{"path", d.path}, {"train_limit", d.train_limit}, {"test_limit", d.test_limit}});
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
  d.params = {text("path", kDefaultFashionMnistDir, "the folder holding its gz IDX files"),
              train_limit(), test_limit()};
  d.read = [](const JsonFields& f, DatasetSpec& s) {
    s.path = f.string("path", kDefaultFashionMnistDir);
    read_limits(f, s);
    if (!is_directory(s.path)) {
      throw ConfigError(f.path_of("path"),
                        "Fashion-MNIST directory not found: " + s.path +
                            "; expected a folder with its gz IDX files (apt-get install "
                            "dataset-fashion-mnist, or set dataset.path)");
    }
  };
  d.write = write_files;
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
  d.params = {text("path", "", "the folder holding the binary files (required; " +
                                   std::string(classes == 10 ? "data_batch_1.bin ... test_batch.bin"
                                                             : "train.bin and test.bin") +
                                   ")"),
              train_limit(), test_limit()};
  d.read = [name](const JsonFields& f, DatasetSpec& s) {
    if (!f.has("path")) {
      throw ConfigError(f.path_of("path"),
                        "missing; expected the folder holding the " + name +
                            " binary files (nothing is downloaded: data_batch_1.bin ... "
                            "test_batch.bin for cifar10, train.bin and test.bin for cifar100)");
    }
    s.path = f.string("path", "");
    read_limits(f, s);
    if (!is_directory(s.path)) {
      throw ConfigError(f.path_of("path"), name + " directory not found: " + s.path);
    }
  };
  d.write = write_files;
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
  d.params = {text("path", t.path, "a UTF-8 text file or a folder of them"),
              train_limit(), test_limit(),
              choice("unit", t.unit, {"word", "char"}, "tokens: whitespace-separated words "
                                                       "(lower-cased) or characters"),
              integer("bptt", t.bptt, 1, 100000, "tokens per training sequence"),
              derived(integer("vocab", t.vocab, 2, 1000000,
                              "the most frequent units kept; the rest become <unk>"),
                      "10000 (at least 3 for words, 2 for characters)"),
              number("test_fraction", t.test_fraction, 0, 0.9,
                     "the text's last tokens held out for evaluation", true)};
  d.read = [params = d.params](const JsonFields& f, DatasetSpec& s) {
    s.path = f.string("path", s.text.path);
    read_limits(f, s);
    s.text.path = s.path;
    s.text.unit = declared_string(f, param_named(params, "unit"));
    s.text.bptt = declared_integer(f, param_named(params, "bptt"));
    // The vocabulary holds the unknown token (and, for words, the end of line) besides at
    // least one unit of the text.
    const std::int64_t least_vocab = s.text.unit == "word" ? 3 : 2;
    s.text.vocab = f.integer("vocab", s.text.vocab, least_vocab, 1000000);
    s.text.test_fraction = declared_number(f, param_named(params, "test_fraction"));
    struct stat st {};
    if (::stat(s.path.c_str(), &st) != 0) {
      throw ConfigError(f.path_of("path"), "not found: " + s.path + "; expected a UTF-8 text "
                                           "file or a folder of them");
    }
  };
  d.write = [](const DatasetSpec& s, nlohmann::json& out) {
    write_files(s, out);
    const auto& x = s.text;
    out.update({{"unit", x.unit}, {"bptt", x.bptt}, {"vocab", x.vocab},
                {"test_fraction", x.test_fraction}});
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
  d.params = {
      integer("classes", y.classes, 2, 1000, "labelled samples: classes"),
      integer("features", y.features, 1, 100000, "labelled samples: features per sample"),
      list("shape", "labelled samples: 1 to 3 dimensions instead of features, e.g. [3, 32, 32]"),
      integer("vocab", 0, 2, 1000000, "token sequences over this vocabulary (instead of "
                                      "labelled samples)"),
      integer("bptt", y.seq_len, 1, 100000, "tokens per sequence (with vocab)"),
      integer("train_samples", y.train_samples, 1, 10000000, "training samples"),
      integer("test_samples", y.test_samples, 1, 10000000, "test samples"),
      number("separation", y.separation, 0, 1e6,
             "standard deviation of the class means (the noise's is 1)", true)};
  d.read = [params = d.params](const JsonFields& f, DatasetSpec& s) {
    const auto spec = [&params](const char* key) -> const ParamSpec& {
      return param_named(params, key);
    };
    auto& c = s.synthetic;
    c.classes = declared_integer(f, spec("classes"));
    c.features = declared_integer(f, spec("features"));
    c.shape = declared_integer_list(f, "shape", {}, 1);
    if (f.has("shape") && (c.shape.empty() || c.shape.size() > 3)) {
      throw ConfigError(f.path_of("shape"), "expected 1 to 3 dimensions, e.g. [3, 32, 32]");
    }
    c.vocab = declared_integer(f, spec("vocab"));
    c.seq_len = declared_integer(f, spec("bptt"));
    if (c.vocab > 0 && (f.has("shape") || f.has("classes") || f.has("features"))) {
      throw ConfigError(f.path_of("vocab"), "token sequences take vocab and bptt, not shape, "
                                            "classes or features");
    }
    if (c.vocab == 0 && f.has("bptt")) {
      throw ConfigError(f.path_of("bptt"), "expected only with dataset.vocab (token sequences)");
    }
    c.train_samples = declared_integer(f, spec("train_samples"));
    c.test_samples = declared_integer(f, spec("test_samples"));
    c.separation = declared_number(f, spec("separation"));
  };
  d.write = [](const DatasetSpec& s, nlohmann::json& out) {
    const auto& c = s.synthetic;
    if (c.vocab > 0) {
      out.update({{"vocab", c.vocab}, {"bptt", c.seq_len}});
    } else {
      out.update({{"classes", c.classes}, {"separation", c.separation}});
      if (c.shape.empty()) {
        out["features"] = c.features;
      } else {
        out["shape"] = c.shape;
      }
    }
    out.update({{"train_samples", c.train_samples}, {"test_samples", c.test_samples}});
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
