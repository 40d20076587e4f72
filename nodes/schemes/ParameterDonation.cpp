#include "nodes/schemes/ParameterDonation.h"

#include <ATen/ATen.h>

#include "codecs/DenseCodec.h"
#include "nodes/schemes/WallClockAccount.h"
#include "nodes/transport/Endpoint.h"

namespace gradwire {

void donate_parameters(Endpoint& from, std::vector<std::pair<int, std::int64_t>>& pending,
                       std::int64_t step, std::uint32_t kind,
                       const std::function<at::Tensor()>& parameters, WallClockAccount* account) {
  for (auto it = pending.begin(); it != pending.end();) {
    if (it->second != step) {
      ++it;
      continue;
    }
    Message m;
    m.kind = kind;
    m.step = static_cast<std::uint64_t>(step);
    {
      WallClockAccount::Charge charge(account);
      m.payload = DenseCodec::encode_dense(parameters());
    }
    from.Send(static_cast<std::uint32_t>(it->first), std::move(m));
    it = pending.erase(it);
  }
}

}  // namespace gradwire
