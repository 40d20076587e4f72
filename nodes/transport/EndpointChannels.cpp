#include "nodes/transport/EndpointChannels.h"

#include <stdexcept>
#include <string>

namespace gradwire {


class EndpointChannels::View : public Endpoint {
 public:
  View(Endpoint& base, std::uint64_t channel) : base_(base), channel_(channel) {}
  void SetHandler(Handler handler) override { handler_ = std::move(handler); }
  void Send(std::uint32_t destination, Message message) override {
    if (message.step != training_step(message.step)) {
      throw std::logic_error("EndpointChannels: step " + std::to_string(message.step) +
                             " does not fit in 48 bits");
    }
    message.step |= channel_ << kStepBits;
    base_.Send(destination, std::move(message));
  }
  std::uint32_t self() const override { return base_.self(); }
  std::uint64_t bytes_sent() const override { return base_.bytes_sent(); }
  void deliver(Message&& m) {
    if (handler_) handler_(std::move(m));
  }

 private:
  Endpoint& base_;
  std::uint64_t channel_;
  Handler handler_;
};

EndpointChannels::EndpointChannels(Endpoint& base, int channels) : base_(base) {
  if (channels < 1 || channels > kMaxChannels) {
    throw std::invalid_argument("EndpointChannels: between 1 and 65536 channels, got " +
                                std::to_string(channels));
  }
  for (int c = 0; c < channels; ++c) {
    views_.push_back(std::make_unique<View>(base, static_cast<std::uint64_t>(c)));
  }
  base_.SetHandler([this](Message&& m) { deliver(std::move(m)); });
}

EndpointChannels::~EndpointChannels() { base_.SetHandler(nullptr); }

Endpoint& EndpointChannels::channel(int c) { return *views_.at(static_cast<std::size_t>(c)); }

void EndpointChannels::deliver(Message&& message) {
  const std::uint64_t c = message.step >> kStepBits;
  if (c >= views_.size()) {
    ++dropped_;
    return;
  }
  message.step = training_step(message.step);
  views_[c]->deliver(std::move(message));
}

}  // namespace gradwire
