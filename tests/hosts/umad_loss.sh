#!/bin/bash
# MAD services under loss (issue 19, item 3): libibumad's requests, their
# retries and RMPP's ACK window and time-outs through the project's
# software cable with 5 % loss each way (tests/progs/umad_vendor): 20 Gets
# each answered once the retries get through, an RMPP response and an
# RMPP request of 50000 bytes (232 segments) whole and byte-exact (lost
# segments and ACKs sent again after the window's time-out; a lost
# response to the request sends it again from its first segment), a
# request nobody answers still ETIMEDOUT; the daemon counts the lost
# windows' resends as MADs sent beyond the segments.
# Needs root (ip netns).
# Usage: tests/hosts/umad_loss.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

if ! sof_hosts_up 2 wire; then
	not_ok "hosts/umad_loss: set-up" "two hosts on the cable did not come up"
	exit 0
fi
GA="::ffff:$(sof_host_ip a)"
IB=$(sof_host_gid b) || IB=0
UV=$SOF_PROGS/umad_vendor
# the cable impairs packets, not GRO's merged frames
sof_hosts_per_packet || not_ok "hosts/umad_loss: per packet" "cannot turn segmentation off"
if ! sof_netem a loss 5% || ! sof_netem b loss 5%; then
	not_ok "hosts/umad_loss: set-up" "no loss on the cable"
	exit 0
fi
tx_a=$(sof_counter a counters.mad_tx)
sof_snap "$SOF_TMP/snap0" || not_ok "hosts/umad_loss: counters" "cannot read them before the run"
name="5 % loss each way"
sof_host_bg "$name.srv" a 120 "$SOFTOFED" run -- "$UV" server -n 0 -T 110
for _ in $(seq 100); do
	grep -q 'server listening' "$(sof_out "$name.srv")" 2>/dev/null && break
	sleep 0.05
done
sof_host_bg "$name.cli" b 120 "$SOFTOFED" run -- "$UV" client -g "$GA" -i "$IB" -n 20 -r 50000 -R 8
sof_wait "$name.cli" 120
crc=$?
sof_kill "$name.srv"
sent=$(sof_counter_since a counters.mad_tx "$tx_a")
sof_snap "$SOF_TMP/snap1" && sof_snap_delta "$SOF_TMP/snap0" "$SOF_TMP/snap1" >"$SOF_TMP/delta"
lost=$(awk '$1 == "wire.wa.dropped" || $1 == "wire.wb.dropped" { n += $2 } END { print n + 0 }' \
	"$SOF_TMP/delta" 2>/dev/null)
if [ $crc -eq 0 ] && grep -q '^client ok' "$(sof_out "$name.cli")" && [ "${lost:-0}" -gt 0 ]; then
	ok "hosts/umad_loss: $name: $(grep '^client ok' "$(sof_out "$name.cli")" | sed 's/^client ok: //'); the cable dropped $lost frames, host a sent ${sent:-?} MADs"
else
	not_ok "hosts/umad_loss: $name" "client exit status $crc, frames dropped ${lost:-?}"
	sof_dump "$(sof_out "$name.srv")" "$(sof_out "$name.cli")"
fi
sof_netem_clear a
sof_netem_clear b
