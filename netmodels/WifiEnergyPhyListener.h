// Passes a Wi-Fi PHY's state notifications on to ns-3's WifiRadioEnergyModel, so that the
// model is in the state the PHY itself reports (WifiPhyStateHelper). ns-3.37's own listener
// lets every clear-channel-assessment notification put the model in CCA_BUSY, also one that
// arrives while the radio transmits or receives (another station's frame reaching it during
// its own transmission) and one about a secondary 20 MHz channel: the PHY stays in TX or RX
// (or IDLE) and its energy would be counted at the CCA-busy current. Those notifications are
// not passed on; when the transmission or reception ends the PHY notifies the CCA state anew.
// That renewal can come at the very instant ns-3's listener ends the transmission (it puts the
// model in IDLE by an event scheduled when the transmission started), after which the model
// would be IDLE while the PHY is CCA busy: the channel's state is passed on again then.
#pragma once

#include <vector>

#include <ns3/nstime.h>
#include <ns3/ptr.h>
#include <ns3/wifi-phy-listener.h>
#include <ns3/wifi-phy-state-helper.h>

namespace gradwire {

class WifiEnergyPhyListener : public ns3::WifiPhyListener {
 public:
  /// `model` is the energy model's listener (WifiRadioEnergyModel::GetPhyListener()), `state`
  /// the PHY's state helper.
  WifiEnergyPhyListener(ns3::WifiPhyListener* model, ns3::Ptr<ns3::WifiPhyStateHelper> state)
      : model_(model), state_(state) {}

  void NotifyRxStart(ns3::Time duration) override { model_->NotifyRxStart(duration); }
  void NotifyRxEndOk() override { model_->NotifyRxEndOk(); }
  void NotifyRxEndError() override { model_->NotifyRxEndError(); }
  void NotifyTxStart(ns3::Time duration, double tx_power_dbm) override;
  void NotifyCcaBusyStart(ns3::Time duration, ns3::WifiChannelListType channel,
                          const std::vector<ns3::Time>& per_20mhz) override;
  void NotifySwitchingStart(ns3::Time duration) override { model_->NotifySwitchingStart(duration); }
  void NotifySleep() override { model_->NotifySleep(); }
  void NotifyOff() override { model_->NotifyOff(); }
  void NotifyWakeup() override { model_->NotifyWakeup(); }
  void NotifyOn() override { model_->NotifyOn(); }

 private:
  /// After the model's own end of a transmission: the PHY's CCA state, if busy.
  void renew_cca_busy();

  ns3::WifiPhyListener* model_;
  ns3::Ptr<ns3::WifiPhyStateHelper> state_;
};

}  // namespace gradwire
