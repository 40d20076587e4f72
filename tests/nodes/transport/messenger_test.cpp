// Real bytes through ns-3: what one host sends is what the other receives, bit for bit, and
// framing survives any split of the TCP byte stream.
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "TestNames.h"
#include "NetworkFixture.h"
#include "nodes/transport/FrameReader.h"

namespace gradwire {
namespace {

Message random_message(std::mt19937& rng, std::size_t size, std::uint32_t kind) {
  Message m;
  m.kind = kind;
  m.round = rng() % 7;
  m.step = rng();
  m.payload.resize(size);
  for (auto& b : m.payload) b = static_cast<std::uint8_t>(rng());
  return m;
}

TEST(FrameReader, ReassemblesFramesSplitAtEveryByte) {
  std::mt19937 rng(3);
  std::vector<Message> sent;
  std::vector<std::uint8_t> stream;
  for (std::size_t size : {0u, 1u, 31u, 32u, 1000u}) {
    sent.push_back(random_message(rng, size, 5));
    append_frame(sent.back(), stream);
  }
  FrameReader reader;
  std::vector<Message> got;
  for (std::uint8_t byte : stream) {
    reader.feed(&byte, 1, [&](Message&& m) { got.push_back(std::move(m)); });
  }
  ASSERT_EQ(got.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(got[i].payload, sent[i].payload);
    EXPECT_EQ(got[i].step, sent[i].step);
    EXPECT_EQ(got[i].round, sent[i].round);
    EXPECT_EQ(got[i].kind, sent[i].kind);
  }
  EXPECT_EQ(reader.pending(), 0u);
}

TEST(FrameReader, RejectsCorruptStream) {
  std::vector<std::uint8_t> garbage(64, 0xAB);
  FrameReader reader;
  EXPECT_THROW(reader.feed(garbage.data(), garbage.size(), [](Message&&) {}), FrameError);

  Message m;
  std::vector<std::uint8_t> frame;
  append_frame(m, frame);
  frame[24] = 0xFF;  // payload length far beyond kMaxFramePayload
  frame[31] = 0x7F;
  FrameReader reader2;
  EXPECT_THROW(reader2.feed(frame.data(), frame.size(), [](Message&&) {}), FrameError);
}

TEST(FrameReader, AnnouncedLengthIsNotAllocatedBeforeTheBytesArrive) {
  // A header claiming the largest payload allowed (64 GiB) is held as 32 pending bytes; the
  // reader must not reserve the claim (more than this machine's memory: std::bad_alloc).
  Message m;
  std::vector<std::uint8_t> frame;
  append_frame(m, frame);
  const std::uint64_t claim = kMaxFramePayload;
  std::memcpy(frame.data() + 24, &claim, sizeof claim);
  FrameReader reader;
  EXPECT_NO_THROW(reader.feed(frame.data(), frame.size(), [](Message&&) { ADD_FAILURE(); }));
  EXPECT_EQ(reader.pending(), kFrameHeaderBytes);
}

// Host 0 and host 1 both send `sizes` (and half of each) to host 2: every byte arrives, in order.
void expect_payloads_intact(const EthernetConfig& config, const std::vector<std::size_t>& sizes) {
  testing::StarWithMessengers star(config, 3);
  std::mt19937 rng(11);
  std::vector<Message> sent;
  for (std::size_t size : sizes) {
    sent.push_back(random_message(rng, size, 1));
    sent.push_back(random_message(rng, size / 2 + 1, 2));
  }
  std::vector<Message> received;
  star.messengers[2]->SetHandler([&](Message&& m) { received.push_back(std::move(m)); });
  ns3::Simulator::Schedule(ns3::MilliSeconds(1), [&] {
    for (const auto& m : sent) star.messengers[m.kind - 1]->Send(2, m);
  });
  ns3::Simulator::Run();

  ASSERT_EQ(received.size(), sent.size());
  std::uint64_t bytes_sent = star.messengers[0]->bytes_sent() + star.messengers[1]->bytes_sent();
  EXPECT_EQ(star.messengers[2]->bytes_received(), bytes_sent);
  // Per sender, order is preserved and every byte is equal.
  for (std::uint32_t src : {0u, 1u}) {
    std::vector<const Message*> a, b;
    for (const auto& m : sent) if (m.kind - 1 == src) a.push_back(&m);
    for (const auto& m : received) if (m.source == src) b.push_back(&m);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i]->payload, b[i]->payload) << "message " << i << " from host " << src;
      EXPECT_EQ(a[i]->step, b[i]->step);
    }
  }
}

class MessengerTest : public ::testing::TestWithParam<std::uint32_t> {};

TEST_P(MessengerTest, PayloadsCrossTheNetworkIntact) {
  EthernetConfig config;
  config.mtu = GetParam();
  expect_payloads_intact(config, {1, 1400, 65536, 1000003, 3000000});
}

// A send buffer of a few frames hands TCP chunks of whatever room it has, so packets start at
// every kind of offset in a frame (inside its header, just past it, deep in the payload):
// headers are written in front of each without touching the payload, with offload and without.
TEST(Messenger, PayloadsCrossIntactWhenASmallSendBufferCutsTheChunks) {
  for (const bool offload : {true, false}) {
    EthernetConfig config;
    config.offload = offload;
    config.tcp_buffer_bytes = 5000;
    expect_payloads_intact(config, {1, 100, 129, 4000, 70000, 300001});
  }
}

INSTANTIATE_TEST_SUITE_P(Mtu, MessengerTest, ::testing::Values(1500u, 9000u),
                         [](const auto& info) { return "mtu_" + std::to_string(info.param); });

TEST(Messenger, LargeTransferTakesAboutSizeOverRate) {
  // 10 MB over two 1 Gbps hops: serialisation dominates, so the transfer should take a little
  // more than 8e7 bits / 1e9 bps (TCP/IP header overhead 52/1500, handshake, slow start).
  EthernetConfig config;
  testing::StarWithMessengers star(config, 2);
  const std::size_t size = 10'000'000;
  double arrival = -1;
  star.messengers[1]->SetHandler([&](Message&&) { arrival = ns3::Simulator::Now().GetSeconds(); });
  Message m;
  m.payload.assign(size, 7);
  ns3::Simulator::Schedule(ns3::Seconds(0), [&] { star.messengers[0]->Send(1, m); });
  ns3::Simulator::Run();
  const double ideal = 8.0 * size / 1e9;
  EXPECT_GT(arrival, ideal);
  EXPECT_LT(arrival, ideal * 1.10);
}

}  // namespace
}  // namespace gradwire
