// Files a user names are read only when they are regular files within a size limit: a FIFO,
// a device or a directory is refused at once, naming the path, instead of hanging or reading
// until memory runs out. Each refusal runs in a child process with a deadline, so a reader
// that blocks fails the test instead of blocking it.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/InputFile.h"

namespace gradwire {
namespace {

namespace fs = std::filesystem;

class InputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gradwire-input-file-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string fifo() {
    const std::string p = (dir_ / "pipe").string();
    EXPECT_EQ(::mkfifo(p.c_str(), 0600), 0);
    return p;
  }
  fs::path dir_;
};

/// Runs `read` in a child process: "refused" when it throws InputFileError whose message
/// contains `expected`, "read" when it returns, "hung" when it takes more than 10 s.
std::string outcome(const std::function<void()>& read, const std::string& expected) {
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      read();
    } catch (const InputFileError& e) {
      ::_exit(std::string(e.what()).find(expected) != std::string::npos ? 0 : 3);
    } catch (...) {
      ::_exit(4);
    }
    ::_exit(1);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int status = 0;
  while (::waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      return "hung";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!WIFEXITED(status)) return "crashed";
  switch (WEXITSTATUS(status)) {
    case 0: return "refused";
    case 1: return "read";
    case 3: return "refused without naming the path and the reason";
    default: return "another error";
  }
}

TEST_F(InputFile, ReadsARegularFileAndALinkToOne) {
  const std::string file = write("a.txt", "rank,start_s,end_s\n0,0,1\n");
  EXPECT_EQ(read_input_file(file, 1024, "trace"), "rank,start_s,end_s\n0,0,1\n");
  const fs::path link = dir_ / "link.txt";
  fs::create_symlink(file, link);
  EXPECT_EQ(check_input_file(link.string(), 1024, "trace"), 25u);
  EXPECT_EQ(read_input_file(write("empty", ""), 0, "trace"), "");
}

TEST_F(InputFile, RefusesAFifoWithoutWaitingForAWriter) {
  const std::string p = fifo();
  EXPECT_EQ(outcome([&] { read_input_file(p, 1 << 20, "payload"); }, p + " is a FIFO"), "refused");
  EXPECT_EQ(outcome([&] { check_input_file(p, 1 << 20, "model"); }, p + " is a FIFO"), "refused");
}

TEST_F(InputFile, RefusesDevicesInsteadOfReadingThemForever) {
  for (const std::string device : {"/dev/zero", "/dev/urandom", "/dev/null"}) {
    EXPECT_EQ(outcome([&] { read_input_file(device, std::uint64_t{1} << 40, "payload"); },
                      device + " is a character device"),
              "refused")
        << device;
  }
}

TEST_F(InputFile, RefusesADirectory) {
  const std::string d = dir_.string();
  EXPECT_EQ(outcome([&] { read_input_file(d, 1 << 20, "state file"); }, d + " is a directory"),
            "refused");
}

TEST_F(InputFile, RefusesAFileLargerThanTheLimitNamingTheLimit) {
  const std::string file = write("big", std::string(2048, 'x'));
  EXPECT_EQ(outcome([&] { read_input_file(file, 1024, "trace"); }, "at most 1024 bytes"),
            "refused");
  EXPECT_EQ(outcome([&] { check_input_file(file, 1024, "trace"); }, file), "refused");
  EXPECT_EQ(read_input_file(file, 2048, "trace").size(), 2048u);
}

TEST_F(InputFile, MissingAndEmptyPathsAreRefusedNamingThem) {
  const std::string absent = (dir_ / "absent").string();
  EXPECT_EQ(outcome([&] { read_input_file(absent, 1024, "trace"); },
                    absent + ": cannot read the trace (No such file"),
            "refused");
  EXPECT_EQ(outcome([&] { read_input_file("", 1024, "trace"); }, "empty"), "refused");
}

TEST(ByteLimitText, StatesWholeUnits) {
  EXPECT_EQ(byte_limit_text(std::uint64_t{16} << 20), "16 MiB");
  EXPECT_EQ(byte_limit_text(std::uint64_t{2} << 30), "2 GiB");
  EXPECT_EQ(byte_limit_text(1000), "1000 bytes");
}

}  // namespace
}  // namespace gradwire
