// The built gradwire refuses what it cannot read or run before it starts, with exit 2 naming
// the path: a FIFO, a device or a directory where a file is read (scenario, sweep, data set
// files, availability trace, TorchScript model, codec input and state), and sizes that would
// allocate terabytes (data, activations, attention; sizes past int64). Every command runs
// under `timeout`, so a reader that blocks on a FIFO fails the test (exit 124) instead of
// blocking it.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "RunGradwire.h"
#include "sim/cli/NpyFile.h"

namespace {

namespace fs = std::filesystem;

using Result = gradwire::testing::CommandResult;

/// gradwire with `args` and no standard input, killed after 30 s (exit 124); stdout and
/// stderr together.
Result run(const std::string& args) {
  return gradwire::testing::run_gradwire(args + " < /dev/null", "timeout -k 5 30");
}

class InputFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gradwire-input-files-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "folder");
    fifo_ = (dir_ / "pipe").string();
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  /// The paths a reader must refuse: a FIFO nobody writes, two devices that never end, a folder.
  std::vector<std::string> not_files() const {
    return {fifo_, "/dev/zero", "/dev/urandom", (dir_ / "folder").string()};
  }
  /// Exit 2, naming `key` and `path`, without a LibTorch backtrace.
  static void expect_refused(const Result& r, const std::string& key, const std::string& path) {
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find(key), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("frame #"), std::string::npos) << r.output;
  }
  fs::path dir_;
  std::string fifo_;
};

std::string scenario(const std::string& model, const std::string& dataset,
                     const std::string& extra = "") {
  return R"({"gradwire": 1, "name": "files", "model": )" + model + R"(, "dataset": )" + dataset +
         R"(, "training": {"workers": 2, "steps": 2, "batch": 8},
             "compute": {"mode": "fixed", "seconds": 0.001})" + extra + "}";
}

const char* kMlp = R"({"kind": "mlp", "hidden": [8]})";
const char* kSynthetic = R"({"kind": "synthetic", "train_samples": 64, "test_samples": 16})";
const char* kSmallTransformer =
    R"({"kind": "transformer", "d_model": 8, "heads": 8, "ff": 8, "layers": 1})";

TEST_F(InputFiles, SizesThatWouldAllocateTerabytesAreRefusedByValidateAndRun) {
  struct Case {
    std::string name, model, dataset, key;
  };
  const std::vector<Case> cases = {
      {"data", R"({"kind": "cnn"})",
       R"({"kind": "synthetic", "shape": [3, 256, 256], "train_samples": 10000000})", "dataset"},
      {"overflow", kSmallTransformer,
       R"({"kind": "synthetic", "shape": [3, 4294967296, 4294967296], "train_samples": 64})",
       "model"},
      {"attention", kSmallTransformer,
       R"({"kind": "synthetic", "vocab": 100, "bptt": 100000, "train_samples": 64})",
       "training.batch"},
  };
  for (const Case& c : cases) {
    const std::string file = write(c.name + ".json", scenario(c.model, c.dataset));
    for (const std::string& command :
         {std::string("validate "), "run -q --out " + (dir_ / "runs").string() + " "}) {
      const Result r = run(command + file);
      EXPECT_EQ(r.code, 2) << c.name << ": " << r.output;
      EXPECT_NE(r.output.find("error: " + c.key + ": expected a run that fits in memory"),
                std::string::npos)
          << c.name << ": " << r.output;
    }
  }
  EXPECT_FALSE(fs::exists(dir_ / "runs" / "files"));
}

TEST_F(InputFiles, AScenarioOrSweepThatIsNoFileIsRefused) {
  for (const std::string& path : not_files()) {
    expect_refused(run("validate " + path), "(file)", path);
    expect_refused(run("sweep -q --out " + (dir_ / "sweeps").string() + " " + path), "", path);
  }
}

TEST_F(InputFiles, DatasetFilesThatAreNoFilesAreRefused) {
  const char* kLanguageModel =
      R"({"kind": "lstm_lm", "embedding": 8, "hidden_size": 8, "layers": 1})";
  for (const std::string& path : {fifo_, std::string("/dev/zero"), std::string("/dev/urandom")}) {
    const std::string text = write(
        "text.json", scenario(kLanguageModel, R"({"kind": "text", "unit": "char", "bptt": 8,
                                                  "path": ")" + path + "\"}"));
    expect_refused(run("validate " + text), "dataset.path", path);
  }
  // Image sets are read when a run starts: each file of the folder is checked first.
  const fs::path cifar = dir_ / "cifar";
  fs::create_directories(cifar);
  ASSERT_EQ(::mkfifo((cifar / "data_batch_1.bin").c_str(), 0600), 0);
  const fs::path fashion = dir_ / "fashion";
  fs::create_directories(fashion / "train-images-idx3-ubyte.gz");
  for (const auto& [kind, folder, file] :
       {std::tuple<std::string, fs::path, std::string>{"cifar10", cifar, "data_batch_1.bin"},
        {"fashion-mnist", fashion, "train-images-idx3-ubyte.gz"}}) {
    const std::string doc = write(
        kind + ".json", scenario(R"({"kind": "cnn"})", R"({"kind": ")" + kind +
                                                           R"(", "path": ")" + folder.string() +
                                                           "\"}"));
    expect_refused(run("run -q --out " + (dir_ / "runs").string() + " " + doc), "dataset.path",
                   (folder / file).string());
  }
}

TEST_F(InputFiles, AnAvailabilityTraceOrAModelThatIsNoFileIsRefused) {
  for (const std::string& path : not_files()) {
    const std::string trace = write(
        "trace.json",
        scenario(kMlp, kSynthetic,
                 R"(, "topology": {"kind": "ps"}, "participation": {"clients_per_round": 1,
                     "deadline": "1s", "availability": {"trace": ")" + path + "\"}}"));
    expect_refused(run("validate " + trace), "participation.availability.trace", path);
    const std::string model = write(
        "model.json", scenario(R"({"kind": "torchscript", "path": ")" + path + "\"}",
                               R"({"kind": "synthetic", "train_samples": 64})"));
    expect_refused(run("validate " + model), "model.path", path);
  }
}

TEST_F(InputFiles, CodecInputAndStateFilesThatAreNoFilesAreRefused) {
  const std::string npy = (dir_ / "g.npy").string();
  gradwire::write_npy_f32(npy, std::vector<float>(64, 0.5F), {64});
  const std::string out = (dir_ / "out.bin").string();
  const std::string topk = "codec encode --codec topk --param ratio=0.1 ";
  const std::string with_feedback = topk + "--param error_feedback=true --in " + npy;
  for (const std::string& path : not_files()) {
    expect_refused(run(topk + "--in " + path + " --out " + out), "", path);
    expect_refused(run("codec decode --codec topk --in " + path + " --out " + out), "", path);
    expect_refused(run(with_feedback + " --out " + out + " --state " + path), "state file", path);
  }
  // A state file that is not there yet is the first encode's, and is written.
  const std::string state = (dir_ / "state.bin").string();
  const Result first = run(with_feedback + " --out " + out + " --state " + state);
  EXPECT_EQ(first.code, 0) << first.output;
  EXPECT_TRUE(fs::is_regular_file(state));
}

}  // namespace
