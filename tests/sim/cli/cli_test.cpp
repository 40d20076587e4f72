// The gradwire executable: exit codes, messages naming the JSON path, nothing written on error.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "RunGradwire.h"

namespace {

namespace fs = std::filesystem;

using Result = gradwire::testing::CommandResult;

Result run(const std::string& args) { return gradwire::testing::run_gradwire(args); }

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gradwire-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

const char* kGood = R"({"gradwire": 1, "name": "cli", "model": {"kind": "mlp", "hidden": [16]},
  "dataset": {"kind": "synthetic", "train_samples": 400, "test_samples": 100},
  "training": {"workers": 2, "steps": 5, "batch": 8, "eval_every": 5},
  "compute": {"mode": "fixed", "seconds": 0.001}})";

TEST_F(Cli, ValidateAcceptsAGoodScenario) {
  const Result r = run("validate " + write("good.json", kGood));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("ok"), std::string::npos);
}

TEST_F(Cli, BadScenarioExitsTwoNamingThePath) {
  std::string bad = kGood;
  bad.replace(bad.find("\"steps\": 5"), 10, "\"steps\": \"many\"");
  const std::string file = write("bad.json", bad);
  for (const std::string& cmd :
       std::vector<std::string>{"validate ", "run --out " + (dir_ / "runs").string() + " "}) {
    const Result r = run(cmd + file);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("training.steps"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir_ / "runs" / "cli"));
}

TEST_F(Cli, SyntaxErrorAndMissingFileExitTwo) {
  EXPECT_EQ(run("validate " + write("broken.json", "{\"gradwire\": 1,")).code, 2);
  EXPECT_EQ(run("validate " + (dir_ / "absent.json").string()).code, 2);
  EXPECT_EQ(run("frobnicate").code, 2);
}

TEST_F(Cli, RunWritesResultsAndSetOverrides) {
  const Result r = run("run -q --out " + (dir_ / "runs").string() + " " + write("good.json", kGood) +
                       " --set training.steps=7 --set name=cli-7");
  ASSERT_EQ(r.code, 0) << r.output;
  const fs::path summary = dir_ / "runs" / "cli-7" / "summary.json";
  ASSERT_TRUE(fs::exists(summary)) << r.output;
  std::ifstream in(summary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"steps\": 7"), std::string::npos) << text;
}

TEST_F(Cli, CodecsListsParameters) {
  const Result r = run("codecs");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("topk"), std::string::npos);
  EXPECT_NE(r.output.find("ratio"), std::string::npos);
  EXPECT_EQ(run("--help").code, 0);
  EXPECT_EQ(run("run --help").code, 0);
}

TEST_F(Cli, AnUnusableOutputFolderExitsTwoBeforeTheRun) {
  const std::string scenario = write("s.json", kGood);
  const std::string file = write("a-file", "x");
  Result r = run("run " + scenario + " --out " + file);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--out"), std::string::npos) << r.output;
  r = run("run " + scenario + " --set output.dir=/proc/gradwire-runs");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("output.dir"), std::string::npos) << r.output;
}

TEST_F(Cli, ModelsListsTheZooWithItsKeys) {
  const Result plain = run("models");
  EXPECT_EQ(plain.code, 0) << plain.output;
  EXPECT_NE(plain.output.find("resnet20"), std::string::npos) << plain.output;
  EXPECT_NE(plain.output.find("hidden_size"), std::string::npos) << plain.output;
  const Result json = run("models --json");
  EXPECT_EQ(json.code, 0);
  EXPECT_NE(json.output.find("\"kind\": \"lstm_lm\""), std::string::npos) << json.output;
  EXPECT_NE(json.output.find("\"data\": \"tokens\""), std::string::npos) << json.output;
  const Result markdown = run("models --markdown");
  EXPECT_EQ(markdown.code, 0);
  EXPECT_EQ(markdown.output.rfind("| kind | data |", 0), 0u) << markdown.output;
}

}  // namespace
