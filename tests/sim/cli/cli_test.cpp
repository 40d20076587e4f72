// The gradwire executable: exit codes, messages naming the JSON path, nothing written on error.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "RunGradwire.h"
#include "common/ConfigError.h"
#include "sim/cli/EmulateCommand.h"
#include "sim/engine/Scenario.h"

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

// Radios report energy even where the workers name no device (so their compute has no watts):
// the run ends normally and its last line gives the radios' joules alone.
TEST_F(Cli, ARadioRunWithoutDeviceProfilesReportsTheRadiosEnergy) {
  const std::string scenario = write("wifi.json", R"({"gradwire": 1, "name": "cli-wifi",
    "model": {"kind": "mlp", "hidden": [16]},
    "dataset": {"kind": "synthetic", "train_samples": 400, "test_samples": 100},
    "training": {"workers": 2, "steps": 4, "batch": 8, "eval_every": 2},
    "compute": {"mode": "fixed", "seconds": 0.001, "threads": 1},
    "topology": {"kind": "ps"},
    "network": {"family": "wifi", "standard": "ax", "width_mhz": 80, "server": "ap"}})");
  const Result r = run("run --out " + (dir_ / "runs").string() + " " + scenario);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("J in the radios over the run"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(dir_ / "runs" / "cli-wifi" / "summary.json")) << r.output;
}

TEST_F(Cli, ProgressLinesSayWhenTheRunWillBeDone) {
  // Evaluations always print a line: the one at step 2 of 6 is mid-run and carries an ETA, the
  // last one none.
  const Result r = run("run --out " + (dir_ / "runs").string() + " " + write("good.json", kGood) +
                       " --set training.steps=6 --set training.eval_every=2");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto at = r.output.find("step 2/6");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
  EXPECT_NE(line.find("  ETA "), std::string::npos) << line;
  const auto last = r.output.find("step 6/6");
  ASSERT_NE(last, std::string::npos) << r.output;
  EXPECT_EQ(r.output.substr(last, r.output.find('\n', last) - last).find("ETA"), std::string::npos);
}

TEST_F(Cli, ADivergedRunStopsAtTheStepItsLossWasLostAndLeavesNothing) {
  // lr 100 sends the MLP's loss to infinity within a few steps.
  const Result r = run("run -q --out " + (dir_ / "runs").string() + " " + write("good.json", kGood) +
                       " --set training.steps=40 --set training.optimizer.lr=100");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("training diverged at step "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("worker 0: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("training.optimizer.lr"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "runs" / "cli" / "summary.json"));
  // The same scenario at its own lr trains to the end.
  EXPECT_EQ(run("run -q --out " + (dir_ / "runs").string() + " " + (dir_ / "good.json").string() +
                " --set training.steps=40").code, 0);
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

// Starts gradwire with `args` in the background; returns its pid.
pid_t start_gradwire(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv{const_cast<char*>(GRADWIRE_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (FILE* null = std::fopen("/dev/null", "w")) ::dup2(fileno(null), 2);
    ::execv(GRADWIRE_BINARY, argv.data());
    ::_exit(127);
  }
  return pid;
}

bool has_staging_folder(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".partial-") != std::string::npos) return true;
  }
  return false;
}

TEST_F(Cli, AnInterruptedRunLeavesNothingBehind) {
  const std::string long_run = write("long.json", R"({"gradwire": 1, "name": "long",
    "model": {"kind": "mlp", "hidden": [16]}, "dataset": {"kind": "synthetic"},
    "training": {"workers": 2, "steps": 100000000, "eval_every": 100000000},
    "compute": {"mode": "fixed", "seconds": 0.001, "threads": 1}})");
  for (const int signal : {SIGTERM, SIGINT}) {
    const fs::path out = dir_ / ("out-" + std::to_string(signal));
    fs::create_directories(out);
    const pid_t pid = start_gradwire({"run", long_run, "--out", out.string()});
    bool started = false;
    for (int i = 0; i < 300 && !started; ++i) {  // up to 30 s for LibTorch to load
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      started = has_staging_folder(out);
    }
    ASSERT_TRUE(started) << "the run never made its staging folder";
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // training under way
    ::kill(pid, signal);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "ended by a signal instead of cleaning up";
    EXPECT_EQ(WEXITSTATUS(status), 128 + signal);
    EXPECT_FALSE(has_staging_folder(out));
    EXPECT_FALSE(fs::exists(out / "long"));
  }
  // A staging folder whose process is gone (killed outright) is removed by the next run.
  const fs::path out = dir_ / "stale";
  fs::create_directories(out / ".cli.partial-999999999");
  EXPECT_EQ(run("run " + write("s.json", kGood) + " --out " + out.string()).code, 0);
  EXPECT_FALSE(has_staging_folder(out));
  EXPECT_TRUE(fs::exists(out / "cli" / "summary.json"));
}

// A run killed with SIGKILL may not be reaped yet when the next run starts (its parent, a
// sweep, was killed too): a zombie's staging folder is removed, a running process's is kept.
TEST_F(Cli, StagingFoldersOfZombiesAreRemovedThoseOfRunningProcessesKept) {
  const pid_t zombie = ::fork();
  if (zombie == 0) ::_exit(0);
  const pid_t sleeper = ::fork();
  if (sleeper == 0) {
    ::execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Not reaped: until waitpid, kill(zombie, 0) still finds it.
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(zombie) + "/stat");
    std::string text;
    std::getline(stat, text);
    if (text.find(") Z ") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const fs::path out = dir_ / "restart";
  const fs::path of_zombie = out / (".cli.partial-" + std::to_string(zombie));
  const fs::path of_sleeper = out / (".cli.partial-" + std::to_string(sleeper));
  fs::create_directories(of_zombie);
  fs::create_directories(of_sleeper);
  const Result r = run("run -q " + write("s.json", kGood) + " --out " + out.string());
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_FALSE(fs::exists(of_zombie));
  EXPECT_TRUE(fs::exists(of_sleeper));
  EXPECT_TRUE(fs::exists(out / "cli" / "summary.json"));
  ::kill(sleeper, SIGKILL);
  ::waitpid(sleeper, nullptr, 0);
  ::waitpid(zombie, nullptr, 0);
}

// A SIGINT that arrives once the run folder is in place does not make the run exit 130. The
// run is held between its commit and its exit by a full stdout pipe: "results:" is the only
// thing `run -q` writes there, after the commit.
TEST_F(Cli, ASigintAfterTheResultsAreCommittedDoesNotFailTheRun) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const int capacity = ::fcntl(pipe_fds[1], F_GETPIPE_SZ);
  ASSERT_GT(capacity, 0);
  ::fcntl(pipe_fds[1], F_SETFL, O_NONBLOCK);
  const std::string filler(static_cast<std::size_t>(capacity), 'x');
  while (::write(pipe_fds[1], filler.data(), filler.size()) > 0) {
  }
  ::fcntl(pipe_fds[1], F_SETFL, 0);
  const fs::path out = dir_ / "late";
  const std::string scenario = write("s.json", kGood);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(pipe_fds[1], 1);
    ::close(pipe_fds[0]);
    if (FILE* null = std::fopen("/dev/null", "w")) ::dup2(fileno(null), 2);
    ::execl(GRADWIRE_BINARY, GRADWIRE_BINARY, "run", "-q", scenario.c_str(), "--out",
            out.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  bool committed = false;
  for (int i = 0; i < 600 && !committed; ++i) {  // up to 60 s for LibTorch to load and train
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    committed = fs::exists(out / "cli" / "summary.json");
  }
  EXPECT_TRUE(committed);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // blocked on stdout by now
  ::kill(pid, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::string tail;
  char buf[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) tail.append(buf, static_cast<std::size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(tail.find("results: "), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "cli" / "summary.json"));
}

struct OptionCase {
  std::string args;
  std::string option;
};

void expect_exit_two_naming_the_option(const std::vector<OptionCase>& cases) {
  for (const OptionCase& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.option), std::string::npos) << c.args << "\n" << r.output;
  }
}

// Every duration option is a finite number of seconds > 0 that the clocks can hold (1e300 s
// once fired at once) and NaN is no limit: exit 2 naming the option, before anything runs.
TEST_F(Cli, DurationsThatAreNotFinitePositiveAndHoldableExitTwoNamingTheOption) {
  const std::string scenario = write("s.json", kGood);
  std::vector<OptionCase> cases;
  for (const std::string v : {"nan", "1e300", "0"}) {
    cases.push_back({"serve " + scenario + " --bind tcp://127.0.0.1:* --register-timeout " + v,
                     "--register-timeout"});
    cases.push_back({"serve " + scenario + " --register-timeout 1 --bind tcp://127.0.0.1:* "
                     "--client-timeout " + v, "--client-timeout"});
    cases.push_back({"worker --connect tcp://127.0.0.1:1 --rank 0 --timeout " + v, "--timeout"});
    cases.push_back({"emulate " + scenario + " --timeout " + v + " -- true", "--timeout"});
    cases.push_back({"emulate " + scenario + " --max-lag " + v + " -- true", "--max-lag"});
  }
  cases.push_back({"advise " + scenario + " --budget nan", "--budget"});
  expect_exit_two_naming_the_option(cases);
}

// A port outside 1-65535 is exit 2 naming the option (ZeroMQ took 99999 as 34463).
TEST_F(Cli, PortsOutsideOneTo65535ExitTwoNamingTheOption) {
  const std::string scenario = write("s.json", kGood);
  std::vector<OptionCase> cases;
  for (const std::string port : {"99999", "0", "x"}) {
    cases.push_back({"serve " + scenario + " --register-timeout 1 --bind tcp://127.0.0.1:" + port,
                     "--bind"});
    cases.push_back({"worker --rank 0 --timeout 1 --connect tcp://127.0.0.1:" + port, "--connect"});
  }
  expect_exit_two_naming_the_option(cases);
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

TEST_F(Cli, DevicesListsSpeedPowerAndSources) {
  const Result plain = run("devices");
  EXPECT_EQ(plain.code, 0) << plain.output;
  EXPECT_NE(plain.output.find("raspberry-pi-5"), std::string::npos) << plain.output;
  EXPECT_NE(plain.output.find("power: busy 7 W, idle 2.7 W"), std::string::npos) << plain.output;
  const Result json = run("devices --json");
  EXPECT_EQ(json.code, 0);
  EXPECT_NE(json.output.find("\"busy_watts\": 15.0"), std::string::npos) << json.output;
  EXPECT_NE(json.output.find("\"power_source\""), std::string::npos) << json.output;
}

// A device list that does not match the workers is bad input: exit 2 naming the list, for
// validate and run alike, and nothing written.
TEST_F(Cli, ADeviceListOfTheWrongLengthExitsTwoNamingThePath) {
  std::string bad = kGood;
  bad.replace(bad.find("\"mode\": \"fixed\", \"seconds\": 0.001"), 33,
              "\"mode\": \"profile\", \"profile\": [\"jetson-orin-nano\"]");
  const std::string file = write("short-list.json", bad);
  for (const std::string& cmd :
       std::vector<std::string>{"validate ", "run --out " + (dir_ / "runs").string() + " "}) {
    const Result r = run(cmd + file);
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("compute.profile"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("2 workers"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir_ / "runs" / "cli"));
}

// Ranking by energy needs energy: fixed compute names no device, so advise refuses before it
// screens anything.
TEST_F(Cli, AdviseByEnergyNeedsNamedDevices) {
  std::string fixed = kGood;
  fixed.replace(fixed.find("\"eval_every\": 5"), 15, "\"eval_every\": 5, \"target_accuracy\": 0.5");
  const Result r = run("advise --rank-by energy --out " + (dir_ / "advice").string() + " " +
                       write("fixed.json", fixed));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--rank-by"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "advice" / "advise-cli"));
  EXPECT_EQ(run("advise --rank-by watts " + write("fixed2.json", fixed)).code, 2);
}

}  // namespace

// Emulation trains nothing, so a network-only scenario (as scenarios/emulation/ ships them)
// must load on a machine without Fashion-MNIST, the default dataset; a dataset the scenario
// does name is still checked.
TEST(EmulationScenario, NeedsNoDatasetWhenItNamesNone) {
  const nlohmann::json network_only = {{"gradwire", 1},
                                       {"name", "emulated"},
                                       {"training", {{"workers", 3}}},
                                       {"network", {{"family", "ethernet"}, {"rate", "100Mbps"}}}};
  const gradwire::Scenario s = gradwire::load_emulation_scenario(network_only);
  EXPECT_EQ(s.dataset.kind, "synthetic");
  EXPECT_EQ(s.training.workers, 3);

  nlohmann::json missing_data = network_only;
  missing_data["dataset"] = {{"kind", "fashion-mnist"}, {"path", "/nonexistent/fashion-mnist"}};
  try {
    gradwire::load_emulation_scenario(missing_data);
    FAIL() << "a named dataset's missing folder was accepted";
  } catch (const gradwire::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("dataset.path"), std::string::npos) << e.what();
  }
}
