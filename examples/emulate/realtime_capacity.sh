#!/usr/bin/env bash
# What traffic this machine's ns-3 carries in real time, per network family: one bulk TCP
# transfer between two emulated hosts (tests/sim/emulate/bulk_tcp.py) per network, with the
# goodput the kernels saw and how far ns-3 fell behind the wall clock (summary.json's lag).
# A network is sustained when the lag stays small (p99 of a few ms); when ns-3 cannot keep up
# the lag grows without bound and the run stops at --max-lag.
#   sudo examples/emulate/realtime_capacity.sh [build/gradwire]
set -euo pipefail
gradwire=$(realpath "${1:-build/gradwire}")
here=$(cd "$(dirname "$0")/../.." && pwd)
tool="$here/tests/sim/emulate/bulk_tcp.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run() {  # name bytes server_addr network-json
  local name=$1 bytes=$2 server=$3 network=$4
  cat > "$work/$name.json" <<JSON
{"gradwire": 1, "name": "$name", "training": {"workers": 2}, "network": $network,
 "output": {"dir": "$work/runs"}}
JSON
  local out
  out=$("$gradwire" emulate "$work/$name.json" --quiet --max-lag 2000 --timeout 120 \
        --host 0 -- /usr/bin/python3 "$tool" server 5001 "$bytes" -- \
        /usr/bin/python3 "$tool" client "$server" 5001 "$bytes" 2>&1) || true
  local goodput
  goodput=$(printf '%s\n' "$out" | sed -n 's/.*"goodput_bps": \([0-9.e+]*\).*/\1/p' | head -1)
  python3 - "$work/runs/$name-emulate/summary.json" "$name" "${goodput:-0}" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<22} goodput {float(sys.argv[3]) / 1e6:8.2f} Mbit/s   lag max "
      f"{s['lag']['max_ms']:8.2f} ms  p99 {s['lag']['p99_ms']:8.2f} ms  mean "
      f"{s['lag']['mean_ms']:7.2f} ms  behind {100 * s['lag']['behind_fraction']:5.1f} %  "
      f"outcome {s['outcome']}")
PY
}

run ethernet-10M    4000000 10.1.0.1 '{"family": "ethernet", "rate": "10Mbps"}'
run ethernet-100M  30000000 10.1.0.1 '{"family": "ethernet", "rate": "100Mbps"}'
run ethernet-1G   100000000 10.1.0.1 '{"family": "ethernet", "rate": "1Gbps"}'
run ethernet-1G-9k 100000000 10.1.0.1 '{"family": "ethernet", "rate": "1Gbps", "mtu": 9000}'
run wifi-n-20MHz   10000000 192.168.1.2 '{"family": "wifi", "standard": "n", "band": "2.4GHz", "width_mhz": 20}'
run wifi-ax-80MHz  30000000 192.168.1.2 '{"family": "wifi", "standard": "ax", "width_mhz": 80}'
run lte-ue-to-ue    8000000 7.0.0.2 '{"family": "lte", "server": "ue"}'
run lte-edge-to-ue  8000000 7.0.0.2 '{"family": "lte", "server": "edge"}'
