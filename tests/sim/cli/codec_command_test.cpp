// `gradwire codec encode|decode`: .npy in and out, state across calls, exit code 2 on bad input.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "codecs/CodecRegistry.h"
#include "sim/cli/Cli.h"
#include "sim/cli/CodecCommand.h"
#include "sim/cli/NpyFile.h"

namespace gradwire {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result cli(std::vector<std::string> args) {
  args.insert(args.begin(), "gradwire");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream out;
  std::ostringstream err;
  const int code = run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

class CodecCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gradwire_codec_cmd_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  torch::manual_seed(seed);
  const torch::Tensor t = torch::randn({static_cast<std::int64_t>(n)});
  return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + n);
}

Bytes slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(CodecCommand, EncodeDecodeMatchesTheLibraryAndCarriesState) {
  const std::size_t n = 20000;
  const char* obj = R"({"kind":"dgc","density":0.01,"warmup":false})";
  CodecContext ctx;
  ctx.numel = static_cast<std::int64_t>(n);
  auto reference = CodecRegistry::builtin().create(nlohmann::json::parse(obj), ctx);
  for (int step = 0; step < 3; ++step) {
    std::vector<float> g = random_values(n, 10 + step);
    write_npy_f32(path("g.npy"), g, {100, 200});  // N-D: flattened in C order
    const Result r = cli({"codec", "encode", "--codec", "dgc", "--param", "density=0.01",
                          "--param", "warmup=false", "--in", path("g.npy"), "--out",
                          path("p.bin"), "--state", path("state.bin")});
    ASSERT_EQ(r.code, 0) << r.err;
    const Bytes expected = reference->encode(torch::from_blob(g.data(), {static_cast<std::int64_t>(n)}));
    EXPECT_EQ(slurp(path("p.bin")), expected) << "step " << step;
  }
  const Result d = cli({"codec", "decode", "--codec", "dgc", "--in", path("p.bin"), "--out", path("d.npy")});
  ASSERT_EQ(d.code, 0) << d.err;
  std::vector<std::int64_t> shape;
  const std::vector<float> back = read_npy_f32(path("d.npy"), &shape);
  EXPECT_EQ(shape, std::vector<std::int64_t>{static_cast<std::int64_t>(n)});
  const Bytes payload = slurp(path("p.bin"));
  const torch::Tensor t = reference->decode(ByteSpan(payload));
  EXPECT_TRUE(torch::equal(torch::from_blob(const_cast<float*>(back.data()), {static_cast<std::int64_t>(n)}), t));
}

TEST_F(CodecCommand, PowerSgdUsesTheGivenShape) {
  // A rank-2 matrix: PowerSGD with rank 2 reconstructs it (nearly) exactly in one call.
  torch::manual_seed(4);
  const torch::Tensor m = torch::randn({60, 2}).mm(torch::randn({2, 80})).contiguous();
  const std::vector<float> g(m.data_ptr<float>(), m.data_ptr<float>() + m.numel());
  write_npy_f32(path("m.npy"), g, {60, 80});
  const Result e = cli({"codec", "encode", "--codec", "powersgd", "--shape", "60", "80", "--in",
                        path("m.npy"), "--out", path("p.bin")});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(slurp(path("p.bin")).size(), 12u + 4u + 4u * (60u + 80u) * 2u);
  const Result d = cli({"codec", "decode", "--codec", "powersgd", "--shape", "60", "80", "--in",
                        path("p.bin"), "--out", path("d.npy")});
  ASSERT_EQ(d.code, 0) << d.err;
  std::vector<std::int64_t> shape;
  const std::vector<float> back = read_npy_f32(path("d.npy"), &shape);
  EXPECT_EQ(shape, (std::vector<std::int64_t>{60, 80}));
  EXPECT_TRUE(torch::allclose(torch::from_blob(const_cast<float*>(back.data()), {60, 80}), m, 1e-3, 1e-3));
  // A shape that does not match the data is bad input.
  const Result bad = cli({"codec", "encode", "--codec", "powersgd", "--shape", "7", "7", "--in",
                          path("m.npy"), "--out", path("p.bin")});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--shape"), std::string::npos) << bad.err;
}

TEST_F(CodecCommand, TopKWithErrorFeedbackAndZstd) {
  std::vector<float> g = random_values(5000, 3);
  write_npy_f32(path("g.npy"), g, {5000});
  for (int i = 0; i < 2; ++i) {
    const Result r = cli({"codec", "encode", "--codec", "topk", "--param", "error_feedback=true",
                          "--param", "zstd=true", "--in", path("g.npy"), "--out", path("p.bin"),
                          "--state", path("s.bin")});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const Result d = cli({"codec", "decode", "--codec", "topk", "--param", "zstd=true", "--in",
                        path("p.bin"), "--out", path("d.npy")});
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(read_npy_f32(path("d.npy")).size(), 5000u);
}

TEST(NpyFile, ShapesWhoseProductWrapsAroundAreRefused) {
  // 2^32 x 2^32 elements is 0 modulo 2^64: it must not pass for the empty array it would match.
  const Bytes empty = format_npy_f32({}, {0});
  std::string text(empty.begin(), empty.end());
  // Written over the header's padding, so its length (and the preamble) stays right.
  const std::string shape_text = "(4294967296, 4294967296), }";
  text.replace(text.find("(0, ), }"), shape_text.size(), shape_text);
  ASSERT_EQ(text.size(), empty.size());
  ASSERT_EQ(text.back(), '\n');
  const Bytes wrapped(text.begin(), text.end());
  EXPECT_THROW(parse_npy_f32(ByteSpan(wrapped), "wrapped: "), NpyError);
  std::vector<std::int64_t> shape;
  EXPECT_TRUE(parse_npy_f32(ByteSpan(empty), "empty: ", &shape).empty());
  EXPECT_EQ(shape, std::vector<std::int64_t>{0});
}

TEST_F(CodecCommand, BadInputExitsWithTwoAndSaysWhy) {
  std::vector<float> g = random_values(100, 1);
  write_npy_f32(path("g.npy"), g, {100});
  // Not a .npy file.
  { std::ofstream(path("junk.npy")) << "hello"; }
  Result r = cli({"codec", "encode", "--codec", "topk", "--in", path("junk.npy"), "--out", path("p")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not a .npy file"), std::string::npos) << r.err;
  // Wrong dtype.
  Bytes b = slurp(path("g.npy"));
  std::string text(b.begin(), b.end());
  text.replace(text.find("<f4"), 3, "<f8");
  { std::ofstream(path("f8.npy"), std::ios::binary) << text; }
  r = cli({"codec", "encode", "--codec", "topk", "--in", path("f8.npy"), "--out", path("p")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("float32"), std::string::npos) << r.err;
  // Truncated data.
  b.resize(b.size() - 4);
  { std::ofstream(path("short.npy"), std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size())); }
  r = cli({"codec", "encode", "--codec", "topk", "--in", path("short.npy"), "--out", path("p")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("the shape needs"), std::string::npos) << r.err;
  // A directory where a file belongs.
  r = cli({"codec", "encode", "--codec", "topk", "--in", dir_.string(), "--out", path("p")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
  r = cli({"codec", "decode", "--codec", "topk", "--in", dir_.string(), "--out", path("d.npy")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
  // Missing file, unknown codec, unknown parameter, bad value.
  EXPECT_EQ(cli({"codec", "encode", "--codec", "topk", "--in", path("nope.npy"), "--out", path("p")}).code, 2);
  EXPECT_EQ(cli({"codec", "encode", "--codec", "nope", "--in", path("g.npy"), "--out", path("p")}).code, 2);
  r = cli({"codec", "encode", "--codec", "dgc", "--param", "densty=0.1", "--in", path("g.npy"), "--out", path("p")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("codec.densty"), std::string::npos) << r.err;
  EXPECT_EQ(cli({"codec", "encode", "--codec", "dgc", "--param", "density=2", "--in", path("g.npy"), "--out", path("p")}).code, 2);
  EXPECT_EQ(cli({"codec", "frobnicate", "--codec", "dgc", "--in", path("g.npy"), "--out", path("p")}).code, 2);
  // Corrupt payload and corrupt state.
  ASSERT_EQ(cli({"codec", "encode", "--codec", "dgc", "--in", path("g.npy"), "--out", path("p.bin"), "--state", path("s.bin")}).code, 0);
  Bytes p = slurp(path("p.bin"));
  p.pop_back();
  { std::ofstream(path("bad.bin"), std::ios::binary).write(reinterpret_cast<const char*>(p.data()), static_cast<std::streamsize>(p.size())); }
  r = cli({"codec", "decode", "--codec", "dgc", "--in", path("bad.bin"), "--out", path("d.npy")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("corrupt input"), std::string::npos) << r.err;
  { std::ofstream(path("s.bin"), std::ios::binary) << "GWSTxx"; }
  r = cli({"codec", "encode", "--codec", "dgc", "--in", path("g.npy"), "--out", path("p.bin"), "--state", path("s.bin")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("codec state"), std::string::npos) << r.err;
  // State of another codec.
  ASSERT_EQ(cli({"codec", "encode", "--codec", "adacomp", "--in", path("g.npy"), "--out", path("p.bin"), "--state", path("a.bin")}).code, 0);
  r = cli({"codec", "encode", "--codec", "dgc", "--in", path("g.npy"), "--out", path("p.bin"), "--state", path("a.bin")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("belongs to codec 'adacomp'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gradwire
