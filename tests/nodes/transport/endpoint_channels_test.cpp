// Channels over one endpoint: each protocol sees only its own messages, with its own step
// numbers, over the same simulated connections; frames keep their size.
#include <gtest/gtest.h>

#include "NetworkFixture.h"
#include "nodes/transport/EndpointChannels.h"

namespace gradwire {
namespace {

TEST(EndpointChannels, EachChannelGetsOnlyItsOwnMessages) {
  testing::StarWithMessengers star(EthernetConfig(), 2);
  EndpointChannels a(*star.messengers[0], 3);
  EndpointChannels b(*star.messengers[1], 3);
  std::vector<std::vector<Message>> got(3);
  for (int c = 0; c < 3; ++c) {
    b.channel(c).SetHandler([&got, c](Message&& m) { got[static_cast<std::size_t>(c)].push_back(std::move(m)); });
  }
  ns3::Simulator::Schedule(ns3::Seconds(0), [&] {
    for (int c = 0; c < 3; ++c) {
      Message m;
      m.kind = 7;
      m.step = 41 + static_cast<std::uint64_t>(c);
      m.payload.assign(static_cast<std::size_t>(100 * (c + 1)), static_cast<std::uint8_t>(c));
      a.channel(c).Send(1, std::move(m));
    }
  });
  ns3::Simulator::Run();
  for (int c = 0; c < 3; ++c) {
    ASSERT_EQ(got[static_cast<std::size_t>(c)].size(), 1u) << "channel " << c;
    const Message& m = got[static_cast<std::size_t>(c)][0];
    EXPECT_EQ(m.step, 41u + static_cast<std::uint64_t>(c));  // the channel is stripped again
    EXPECT_EQ(m.payload.size(), static_cast<std::size_t>(100 * (c + 1)));
    EXPECT_EQ(m.payload[0], static_cast<std::uint8_t>(c));
    EXPECT_EQ(m.source, 0u);
  }
  // Three frames of 32-byte headers and their payloads: no extra bytes for the channels.
  EXPECT_EQ(a.channel(0).bytes_sent(), 3 * 32u + 100 + 200 + 300);
  EXPECT_EQ(b.dropped(), 0u);
}

TEST(EndpointChannels, AMessageForAnUnknownChannelIsDroppedAndCounted) {
  testing::StarWithMessengers star(EthernetConfig(), 2);
  EndpointChannels two(*star.messengers[0], 3);  // the sender has a channel 2
  EndpointChannels one(*star.messengers[1], 2);  // the receiver does not
  int delivered = 0;
  one.channel(0).SetHandler([&](Message&&) { ++delivered; });
  one.channel(1).SetHandler([&](Message&&) { ++delivered; });
  ns3::Simulator::Schedule(ns3::Seconds(0), [&] {
    two.channel(2).Send(1, Message{});
    two.channel(1).Send(1, Message{});
  });
  ns3::Simulator::Run();
  EXPECT_EQ(delivered, 1);
  EXPECT_EQ(one.dropped(), 1u);
  EXPECT_EQ(EndpointChannels::training_step((std::uint64_t{2} << 48) | 9), 9u);
  EXPECT_THROW(EndpointChannels(*star.messengers[0], 0), std::invalid_argument);
}

}  // namespace
}  // namespace gradwire
