#include "netmodels/WifiEnergyPhyListener.h"

#include <ns3/simulator.h>

namespace gradwire {

void WifiEnergyPhyListener::NotifyCcaBusyStart(ns3::Time duration,
                                               ns3::WifiChannelListType channel,
                                               const std::vector<ns3::Time>& per_20mhz) {
  // The PHY's state is CCA_BUSY only for the primary channel, and never during TX or RX.
  if (channel != ns3::WIFI_CHANLIST_PRIMARY || state_->IsStateTx() || state_->IsStateRx()) {
    return;
  }
  model_->NotifyCcaBusyStart(duration, channel, per_20mhz);
}

void WifiEnergyPhyListener::NotifyTxStart(ns3::Time duration, double tx_power_dbm) {
  model_->NotifyTxStart(duration, tx_power_dbm);
  // Scheduled after the model's listener scheduled its switch to IDLE, so it runs after it.
  ns3::Simulator::Schedule(duration, &WifiEnergyPhyListener::renew_cca_busy, this);
}

void WifiEnergyPhyListener::renew_cca_busy() {
  if (!state_->IsStateCcaBusy()) return;
  model_->NotifyCcaBusyStart(state_->GetDelayUntilIdle(), ns3::WIFI_CHANLIST_PRIMARY, {});
}

}  // namespace gradwire
